package policies_test

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The table tests build their objects with test/fixture's builders (the descheduler's style:
// a constructor with defaults, then mutator funcs) and their Redis clusters with redisCluster,
// labelled as test/scenario labels them.

// redisCluster describes a Redis cluster as the operator builds it: one StatefulSet per shard
// whose template carries constraints.Generate for N = shards × perShard, and the pods placed as
// place says.
type redisCluster struct {
	name             string // the cluster label's value ("redis" when empty)
	shards, perShard int
	zones            []string // allowed zones written into node affinity (zone-<z>)
	legacyZoneKey    bool     // write failure-domain.beta.kubernetes.io/zone instead
	relaxed          bool     // the relaxed ("at most") maxSkew
	// place[shard][ordinal] is the node the pod runs on; "" leaves it Pending (Unschedulable),
	// "-" does not create it.
	place [][]string
	// replicas overrides the StatefulSets' spec.replicas (all of them).
	replicas *int32
	// bare creates the pods without StatefulSets (no controller).
	bare bool
	// roles labels ordinal 0 master and the others replica (scenario.RoleLabel).
	roles bool
	// podOpts apply to the running pods; templateOpts to the StatefulSet templates only.
	podOpts, templateOpts []fixture.PodOption
}

func (rc redisCluster) clusterName() string {
	if rc.name == "" {
		return "redis"
	}
	return rc.name
}

func (rc redisCluster) shardName(s int) string { return fmt.Sprintf("%s-s%d", rc.clusterName(), s) }

func (rc redisCluster) podName(s, o int) string { return fmt.Sprintf("%s-%d", rc.shardName(s), o) }

func (rc redisCluster) clusterLabels() map[string]string {
	return map[string]string{scenario.AppLabel: scenario.AppValue, policies.DefaultClusterLabel: rc.clusterName()}
}

// objects returns the StatefulSets and pods.
func (rc redisCluster) objects() ([]*appsv1.StatefulSet, []*corev1.Pod) {
	zoneKey := corev1.LabelTopologyZone
	if rc.legacyZoneKey {
		zoneKey = corev1.LabelFailureDomainBetaZone
	}
	var zones []string
	for _, z := range rc.zones {
		zones = append(zones, "zone-"+z)
	}
	var stss []*appsv1.StatefulSet
	var pods []*corev1.Pod
	for s := 0; s < rc.shards; s++ {
		shard := map[string]string{scenario.ShardLabel: rc.shardName(s)}
		spread, aff, err := constraints.Generate(constraints.Input{
			ClusterLabels: rc.clusterLabels(), ShardLabels: shard, Shards: rc.shards, PodsPerShard: rc.perShard,
			Zones: zones, ZoneKey: zoneKey, Relaxed: rc.relaxed,
		})
		if err != nil {
			panic(err)
		}
		tmpl := fixture.Pod("template", func(p *corev1.Pod) {
			p.Labels = rc.clusterLabels()
			p.Labels[scenario.ShardLabel] = rc.shardName(s)
			p.Spec.TopologySpreadConstraints = spread
			p.Spec.Affinity = aff
		})
		replicas := int32(rc.perShard)
		if rc.replicas != nil {
			replicas = *rc.replicas
		}
		selector := map[string]string{policies.DefaultClusterLabel: rc.clusterName(), scenario.ShardLabel: rc.shardName(s)}
		sts := fixture.StatefulSet(rc.shardName(s), replicas, selector, fixture.TemplateOf(tmpl))
		for o := 0; o < rc.perShard; o++ {
			where := ""
			if s < len(rc.place) && o < len(rc.place[s]) {
				where = rc.place[s][o]
			}
			if where == "-" {
				continue
			}
			opts := []fixture.PodOption{fixture.Unschedulable()}
			if where != "" {
				opts = []fixture.PodOption{fixture.On(where)}
			}
			if rc.bare {
				opts = append(opts, func(p *corev1.Pod) { p.OwnerReferences = nil })
			}
			if rc.roles {
				role := "replica"
				if o == 0 {
					role = "master"
				}
				opts = append(opts, fixture.WithLabels(scenario.RoleLabel, role))
			}
			pods = append(pods, fixture.StatefulSetPod(sts, o, append(opts, rc.podOpts...)...))
		}
		if len(rc.templateOpts) > 0 {
			t := fixture.Pod("template", func(p *corev1.Pod) {
				p.Labels, p.Spec = sts.Spec.Template.Labels, sts.Spec.Template.Spec
			})
			for _, opt := range rc.templateOpts {
				opt(t)
			}
			sts.Spec.Template = fixture.TemplateOf(t)
		}
		if !rc.bare {
			stss = append(stss, sts)
		}
	}
	return stss, pods
}

// snapshotOf assembles a snapshot from nodes, clusters and loose objects (pods, PDBs, PVCs, PVs,
// namespaces, CSINodes).
func snapshotOf(nodes []*corev1.Node, clusters []redisCluster, objs ...any) *policies.Snapshot {
	snap := &policies.Snapshot{Nodes: nodes}
	for _, rc := range clusters {
		stss, pods := rc.objects()
		snap.StatefulSets = append(snap.StatefulSets, stss...)
		snap.Pods = append(snap.Pods, pods...)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			snap.Pods = append(snap.Pods, o)
		case *policyv1.PodDisruptionBudget:
			snap.PodDisruptionBudgets = append(snap.PodDisruptionBudgets, o)
		case *corev1.PersistentVolumeClaim:
			snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, o)
		case *corev1.PersistentVolume:
			snap.PersistentVolumes = append(snap.PersistentVolumes, o)
		case *corev1.Namespace:
			snap.Namespaces = append(snap.Namespaces, o)
		case *storagev1.CSINode:
			snap.CSINodes = append(snap.CSINodes, o)
		case *appsv1.StatefulSet:
			snap.StatefulSets = append(snap.StatefulSets, o)
		default:
			panic(fmt.Sprintf("snapshotOf: unexpected %T", o))
		}
	}
	return snap
}

// hit is a violation reduced to what the tables compare.
type hit struct {
	Rule   policies.Rule
	Domain string
	Count  int
	Limit  int
	Soft   bool
}

func hits(vs []policies.Violation) []hit {
	var out []hit
	for _, v := range vs {
		out = append(out, hit{v.Rule, v.Domain, v.Count, v.Limit, v.Soft})
	}
	return out
}

func hardHitsOf(vs []policies.Violation) []hit { return hits(policies.Hard(vs)) }

// memberIndex returns the index of the member named pod.
func memberIndex(c *policies.Cluster, pod string) int {
	for i, m := range c.Members {
		if m.Pod.Name == pod {
			return i
		}
	}
	panic("no member " + pod)
}

// clusterNamed returns the model's cluster with that name.
func clusterNamed(m *policies.Model, name string) *policies.Cluster {
	for _, c := range m.Clusters {
		if c.Name == name {
			return c
		}
	}
	panic("no cluster " + name)
}

// nodeNames maps node indexes to names.
func nodeNames(m *policies.Model, idx []int) []string {
	out := []string{}
	for _, i := range idx {
		out = append(out, m.Nodes[i].Name)
	}
	sort.Strings(out)
	return out
}
