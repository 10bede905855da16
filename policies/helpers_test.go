package policies_test

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
)

// Builders for the table tests, in the descheduler's style: a constructor with defaults and
// mutator funcs.

const (
	testNS     = "redis"
	appLabel   = "app.kubernetes.io/name"
	shardLabel = "redis.rebalancer.io/shard"
	roleLabel  = "redis.rebalancer.io/role"
)

type nodeOpt func(*corev1.Node)

// node returns a Ready node labelled kubernetes.io/hostname=name with 32 CPUs, 256Gi and 110 pods
// allocatable.
func node(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func inZone(z string) nodeOpt { return func(n *corev1.Node) { n.Labels[corev1.LabelTopologyZone] = z } }

func inLegacyZone(z string) nodeOpt {
	return func(n *corev1.Node) { n.Labels[corev1.LabelFailureDomainBetaZone] = z }
}

func nodeLabel(k, v string) nodeOpt { return func(n *corev1.Node) { n.Labels[k] = v } }

func withoutLabel(k string) nodeOpt { return func(n *corev1.Node) { delete(n.Labels, k) } }

func tainted(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: "x", Effect: effect})
	}
}

// cordoned marks the node unschedulable, with the taint the node controller adds.
func cordoned() nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
}

func allocatable(cpu, mem string, pods int64) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Allocatable = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI),
		}
	}
}

// zonedNodes returns nodes named n1, n2, … spread over zones as given: zonedNodes(2, "a", "b")
// is n1, n2 in zone-a and n3, n4 in zone-b.
func zonedNodes(perZone int, zones ...string) []*corev1.Node {
	var out []*corev1.Node
	i := 1
	for _, z := range zones {
		for k := 0; k < perZone; k++ {
			out = append(out, node(fmt.Sprintf("n%d", i), inZone("zone-"+z)))
			i++
		}
	}
	return out
}

type podOpt func(*corev1.Pod)

// pod returns a Running pod in testNS requesting 100m CPU and 128Mi.
func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
		}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func on(nodeName string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeName = nodeName; p.Status.Phase = corev1.PodRunning }
}

func inNamespace(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }

func withLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// unschedulable makes the pod Pending with PodScheduled=False/Unschedulable.
func unschedulable() podOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
}

// justCreated makes the pod Pending without a PodScheduled condition yet.
func justCreated() podOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = nil
	}
}

func terminating() podOpt {
	return func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	}
}

func succeeded() podOpt { return func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded } }

type tscOpt func(*corev1.TopologySpreadConstraint)

// spreadOn adds a DoNotSchedule constraint on key selecting matchLabels.
func spreadOn(key string, maxSkew int32, matchLabels map[string]string, opts ...tscOpt) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: matchLabels},
		}
		for _, o := range opts {
			o(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func scheduleAnyway() tscOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.WhenUnsatisfiable = corev1.ScheduleAnyway }
}

func minDomains(n int32) tscOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptr.To(n) }
}

func nodeAffinityPolicy(p corev1.NodeInclusionPolicy) tscOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = ptr.To(p) }
}

func nodeTaintsPolicy(p corev1.NodeInclusionPolicy) tscOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = ptr.To(p) }
}

func matchLabelKeys(keys ...string) tscOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = keys }
}

func emptySelector() tscOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.LabelSelector = &metav1.LabelSelector{} }
}

func nilSelector() tscOpt {
	return func(c *corev1.TopologySpreadConstraint) { c.LabelSelector = nil }
}

func affinity(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

type termOpt func(*corev1.PodAffinityTerm)

func termNamespaces(ns ...string) termOpt {
	return func(t *corev1.PodAffinityTerm) { t.Namespaces = ns }
}

func termNamespaceSelector(matchLabels map[string]string) termOpt {
	return func(t *corev1.PodAffinityTerm) {
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
}

func term(key string, matchLabels map[string]string, opts ...termOpt) corev1.PodAffinityTerm {
	t := corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: matchLabels}}
	for _, o := range opts {
		o(&t)
	}
	return t
}

// antiAffinity adds a required pod anti-affinity term.
func antiAffinity(key string, matchLabels map[string]string, opts ...termOpt) podOpt {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(key, matchLabels, opts...))
	}
}

// podAffinity adds a required pod affinity term.
func podAffinity(key string, matchLabels map[string]string, opts ...termOpt) podOpt {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(key, matchLabels, opts...))
	}
}

func nodeSelector(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

// requiredIn adds a required node affinity term key In values.
func requiredIn(key string, values ...string) podOpt {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}
		}
		ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: key, Operator: corev1.NodeSelectorOpIn, Values: values,
		}}})
	}
}

func tolerates(key string, effect corev1.TaintEffect) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
}

func requests(cpu, mem string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}
	}
}

func withClaim(claim string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
	}
}

// boundClaim returns a PVC bound to a PV whose node affinity requires key In values (a zonal
// disk when key is the zone key).
func boundClaim(claim, key string, values ...string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: testNS, Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}},
			}}}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: testNS},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv.Name},
	}
	return pvc, pv
}

// redisCluster describes a Redis cluster as the operator builds it: one StatefulSet per shard
// whose template carries constraints.Generate for N = shards × perShard, and the pods placed as
// place says.
type redisCluster struct {
	name             string // the cluster label's value ("redis" when empty)
	shards, perShard int
	zones            []string // allowed zones written into node affinity (zone-<z>)
	legacyZoneKey    bool     // write failure-domain.beta.kubernetes.io/zone instead
	relaxed          bool     // seed 000 §四's relaxed maxSkew
	// place[shard][ordinal] is the node the pod runs on; "" leaves it Pending (Unschedulable),
	// "-" does not create it.
	place [][]string
	// replicas overrides the StatefulSets' spec.replicas (all of them).
	replicas *int32
	// bare creates the pods without StatefulSets (no controller).
	bare bool
	// roles labels ordinal 0 master and the others replica (roleLabel).
	roles bool
	// podOpts apply to the running pods; templateOpts to the StatefulSet templates only.
	podOpts, templateOpts []podOpt
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
	return map[string]string{appLabel: "redis", policies.DefaultClusterLabel: rc.clusterName()}
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
		shard := map[string]string{shardLabel: rc.shardName(s)}
		spread, aff, err := constraints.Generate(constraints.Input{
			ClusterLabels: rc.clusterLabels(), ShardLabels: shard, Shards: rc.shards, PodsPerShard: rc.perShard,
			Zones: zones, ZoneKey: zoneKey, Relaxed: rc.relaxed,
		})
		if err != nil {
			panic(err)
		}
		lbl := rc.clusterLabels()
		lbl[shardLabel] = rc.shardName(s)
		tmpl := pod("template", func(p *corev1.Pod) {
			p.Labels = lbl
			p.Spec.TopologySpreadConstraints = spread
			p.Spec.Affinity = aff
		})
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: rc.shardName(s), Namespace: testNS, UID: types.UID("sts-" + rc.shardName(s))},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To(int32(rc.perShard)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{policies.DefaultClusterLabel: rc.clusterName(), shardLabel: rc.shardName(s)}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: *tmpl.Spec.DeepCopy()},
			},
		}
		if rc.replicas != nil {
			sts.Spec.Replicas = ptr.To(*rc.replicas)
		}
		for o := 0; o < rc.perShard; o++ {
			where := ""
			if s < len(rc.place) && o < len(rc.place[s]) {
				where = rc.place[s][o]
			}
			if where == "-" {
				continue
			}
			p := pod(rc.podName(s, o), func(p *corev1.Pod) {
				p.Labels = map[string]string{}
				for k, v := range lbl {
					p.Labels[k] = v
				}
				p.Labels[appsv1.StatefulSetPodNameLabel] = rc.podName(s, o)
				p.Spec = *tmpl.Spec.DeepCopy()
				if !rc.bare {
					p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true)}}
				}
				if rc.roles {
					p.Labels[roleLabel] = "replica"
					if o == 0 {
						p.Labels[roleLabel] = "master"
					}
				}
			})
			if where == "" {
				unschedulable()(p)
			} else {
				on(where)(p)
			}
			for _, opt := range rc.podOpts {
				opt(p)
			}
			pods = append(pods, p)
		}
		if len(rc.templateOpts) > 0 {
			t := &corev1.Pod{ObjectMeta: *sts.Spec.Template.ObjectMeta.DeepCopy(), Spec: sts.Spec.Template.Spec}
			for _, opt := range rc.templateOpts {
				opt(t)
			}
			sts.Spec.Template.ObjectMeta, sts.Spec.Template.Spec = t.ObjectMeta, t.Spec
		}
		if !rc.bare {
			stss = append(stss, sts)
		}
	}
	return stss, pods
}

// snapshotOf assembles a snapshot from nodes, clusters and loose objects (pods, PDBs, PVCs, PVs,
// namespaces).
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
