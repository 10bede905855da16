// Package scenario describes Redis Cluster placements on a set of zoned nodes, and builds the
// Kubernetes objects for them: nodes, one StatefulSet per shard carrying the recommended
// constraints (constraints.Generate), a PodDisruptionBudget per shard, and the pods bound as
// described; or, in the layouts of Bitnami's redis-cluster chart and OT's redis-operator (Layout),
// their StatefulSets, labels and PodDisruptionBudgets, with the shards only Redis knows. Unit tests
// use the objects as a policies.Snapshot; the e2e suite and the demo create them on a real API
// server. It owns the Redis side of the test objects (cluster and shard labels, roles, placements,
// the suite behind examples/); the objects themselves come from test/fixture's builders.
//
// It may import test/fixture, policies and the Kubernetes API types.
package scenario

import (
	"cmp"
	"fmt"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// Labels every scenario pod carries.
const (
	// AppLabel marks Redis pods (app.kubernetes.io/name=redis).
	AppLabel = "app.kubernetes.io/name"
	// AppValue is AppLabel's value.
	AppValue = "redis"
	// ShardLabel names the pod's shard (its StatefulSet).
	ShardLabel = "redis.rebalancer.io/shard"
	// RoleLabel gives the pod's Redis role offline, when Scenario.RoleLabels is set.
	RoleLabel = "redis.rebalancer.io/role"
)

// Zone is a zone and its nodes.
type Zone struct {
	Name  string
	Nodes []string
}

// Scenario is a Redis cluster of Shards × PodsPerShard pods placed on zoned nodes.
type Scenario struct {
	// Name identifies the scenario ("post-scale-down").
	Name string
	// Description says what it shows, in one or two sentences.
	Description string
	// Namespace of every namespaced object ("redis" when empty).
	Namespace string
	// Cluster is the Redis cluster's name: the value of ClusterLabel() ("redis" when empty): in
	// the seed layout shard i's StatefulSet is "<Cluster>-s<i>", its pods
	// "<Cluster>-s<i>-<ordinal>"; the other layouts name their pods as PodName says.
	Cluster string
	// Layout is how the pods are laid out in StatefulSets, labels and PodDisruptionBudgets
	// (LayoutSeed when empty).
	Layout Layout
	// Zones and their nodes. A zone named "" gives nodes without a zone label.
	Zones []Zone
	// Shards and PodsPerShard give N = Shards × PodsPerShard.
	Shards, PodsPerShard int
	// Placement maps a pod name to the node it is bound to; pods not listed are Pending.
	Placement map[string]string
	// Relaxed writes the relaxed ("at most") maxSkew into the templates.
	Relaxed bool
	// RunningMaxSkew, when set, overrides the hostname and zone maxSkew of the running pods (the
	// StatefulSet templates keep the generated values): a scale-down where the operator updated
	// the templates but the pods still carry the old constraints.
	RunningMaxSkew *[2]int32
	// Tolerations are added to every pod template (e2e: kwok's node taint).
	Tolerations []corev1.Toleration
	// SchedulerName, when set, goes into the pod templates (e2e: a scheduler nobody serves, so
	// the test can bind pods itself).
	SchedulerName string
	// RoleLabels labels pods with RoleLabel: each shard's first pod (PodName(i, 0)) master, the
	// others replica.
	RoleLabels bool
	// Image is the container image (informational; kwok runs no container).
	Image string
	// NoPersistence, in Bitnami's layout, installs the chart with persistence.enabled=false: the
	// pods keep their data in an emptyDir instead of a claim of the StatefulSet's
	// redis-data template.
	NoPersistence bool
	// Claims, when set, gives every StatefulSet a volumeClaimTemplate (in Bitnami's layout, sets
	// the class and size of the chart's redis-data template): each pod a claim on a zonal disk
	// (Snapshot binds a placed pod's claim to a PersistentVolume pinned to its node's zone).
	Claims *ClaimTemplate
	// ExternalAccess, in Bitnami's layout, installs the chart with cluster.externalAccess: a
	// LoadBalancer Service per pod (BitnamiExternalAccessServices, its status holding
	// BitnamiLoadBalancerIP), and every Redis node announcing its LoadBalancer's IP (RedisNodes).
	ExternalAccess bool
	// BitnamiValues, in Bitnami's layout, are the chart's values (YAML, what `helm install -f`
	// takes) the StatefulSet's pod template and the PodDisruptionBudget are rendered with, as the
	// chart's templates render them (RenderBitnamiValues): redis.topologySpreadConstraints,
	// redis.nodeAffinityPreset, redis.podAntiAffinityPreset, redis.affinity and pdb.*; every other
	// value is refused. Empty: the layout's own template, the recommended spread and node affinity
	// (constraints.Generate) with the chart's default soft anti-affinity.
	BitnamiValues string
	// BitnamiAlias, in Bitnami's layout, installs the chart as the subchart of an umbrella chart
	// under this alias: the chart's name becomes the alias (app.kubernetes.io/name, helm.sh/chart
	// "<alias>-13.0.5", the fullname "<release>-<alias>"). Empty: the chart alone.
	BitnamiAlias string
}

// ClaimTemplate is the volumeClaimTemplate of a scenario's StatefulSets: one ReadWriteOnce claim
// per pod, "<Name>-<pod>", in StorageClass StorageClass, of Size.
type ClaimTemplate struct {
	// Name is the template's (and the pod volume's) name ("data" when empty).
	Name string
	// StorageClass is the claims' class ("" leaves it to the cluster's default).
	StorageClass string
	// Size is the requested storage ("10Gi" when empty).
	Size string
}

func (t ClaimTemplate) name() string { return cmp.Or(t.Name, "data") }

func (t ClaimTemplate) size() string { return cmp.Or(t.Size, "10Gi") }

func (s Scenario) ns() string {
	if s.Namespace == "" {
		return "redis"
	}
	return s.Namespace
}

func (s Scenario) cluster() string {
	if s.Cluster == "" {
		return "redis"
	}
	return s.Cluster
}

// N returns the cluster size.
func (s Scenario) N() int { return s.Shards * s.PodsPerShard }

// ShardName returns shard i's name in the seed layout: its StatefulSet's name and ShardLabel's
// value.
func (s Scenario) ShardName(i int) string { return fmt.Sprintf("%s-s%d", s.cluster(), i) }

// PodName returns the name of shard i's o-th pod (o = 0: the master the cluster is formed
// with): "<Cluster>-s<i>-<o>" (seed); "<fullname>-<ordinal>" (Bitnami: the ordinals
// `redis-cli --cluster create` pairs, BitnamiOrdinal); "<Cluster>-leader-<i>" for o = 0 and
// "<Cluster>-follower-<M·(o-1)+i>" otherwise (OT: follower j replicates leader j mod M).
func (s Scenario) PodName(i, o int) string {
	switch s.Layout {
	case LayoutBitnami:
		return fmt.Sprintf("%s-%d", s.BitnamiFullname(), s.bitnamiOrdinal(i, o))
	case LayoutOT:
		if o == 0 {
			return fmt.Sprintf("%s-leader-%d", s.cluster(), i)
		}
		return fmt.Sprintf("%s-follower-%d", s.cluster(), s.Shards*(o-1)+i)
	}
	return fmt.Sprintf("%s-%d", s.ShardName(i), o)
}

// ClusterLabels returns the labels that select every pod of the cluster: AppLabel and
// policies.DefaultClusterLabel (seed), the chart's matchLabels (Bitnami), cluster=<name> (OT).
func (s Scenario) ClusterLabels() map[string]string {
	switch s.Layout {
	case LayoutBitnami:
		return s.bitnamiMatchLabels()
	case LayoutOT:
		return map[string]string{OTClusterLabel: s.cluster()}
	}
	return map[string]string{AppLabel: AppValue, policies.DefaultClusterLabel: s.cluster()}
}

// Selector returns the label selector of the cluster's pods, in kubectl's syntax.
func (s Scenario) Selector() string {
	return labels.SelectorFromSet(s.ClusterLabels()).String()
}

func (s Scenario) image() string {
	if s.Image == "" {
		return "redis:7.0"
	}
	return s.Image
}

// ZoneNames returns the zone names in order.
func (s Scenario) ZoneNames() []string {
	var out []string
	for _, z := range s.Zones {
		if z.Name != "" {
			out = append(out, z.Name)
		}
	}
	return out
}

// Nodes returns one node per listed node name (fixture.Node: hostname label, 32 CPUs, 256Gi
// of memory and 110 pods allocatable, and NodeEphemeralStorage of ephemeral storage, which a
// kubelet always reports), labelled with its zone.
func (s Scenario) Nodes() []*corev1.Node {
	var out []*corev1.Node
	for _, z := range s.Zones {
		for _, name := range z.Nodes {
			n := fixture.Node(name, fixture.WithAllocatable(string(corev1.ResourceEphemeralStorage)+"="+NodeEphemeralStorage))
			if z.Name != "" {
				fixture.InZone(z.Name)(n)
			}
			out = append(out, n)
		}
	}
	return out
}

// Template returns shard i's pod template: the recommended constraints for N pods
// (constraints.Generate).
func (s Scenario) Template(i int) (corev1.PodTemplateSpec, error) {
	shard := map[string]string{ShardLabel: s.ShardName(i)}
	spread, aff, err := constraints.Generate(constraints.Input{
		ClusterLabels: s.ClusterLabels(), ShardLabels: shard,
		Shards: s.Shards, PodsPerShard: s.PodsPerShard, Zones: s.ZoneNames(), Relaxed: s.Relaxed,
	})
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	tmpl := fixture.Pod("template", fixture.WithTolerations(s.Tolerations...), func(p *corev1.Pod) {
		p.Labels = s.ClusterLabels()
		p.Labels[ShardLabel] = s.ShardName(i)
		p.Spec.SchedulerName = s.SchedulerName
		p.Spec.Affinity = aff
		p.Spec.TopologySpreadConstraints = spread
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		c := &p.Spec.Containers[0]
		c.Image = s.image()
		c.Ports = []corev1.ContainerPort{{Name: "redis", ContainerPort: 6379}, {Name: "bus", ContainerPort: 16379}}
	})
	return fixture.TemplateOf(tmpl), nil
}

// StatefulSets returns the layout's StatefulSets: in the seed layout one per shard,
// updateStrategy OnDelete (as an operator leaves them after a resize), podManagementPolicy
// Parallel; in Bitnami's and OT's, layoutStatefulSets's.
func (s Scenario) StatefulSets() ([]*appsv1.StatefulSet, error) {
	stss, err := s.statefulSets()
	if err != nil || s.Claims == nil {
		return stss, err
	}
	for _, sts := range stss {
		fixture.WithClaimTemplate(s.Claims.name(), s.Claims.StorageClass, s.Claims.size())(sts)
	}
	return stss, nil
}

// statefulSets returns the layout's StatefulSets without the claim template.
func (s Scenario) statefulSets() ([]*appsv1.StatefulSet, error) {
	if s.Layout != LayoutSeed {
		return s.layoutStatefulSets()
	}
	var out []*appsv1.StatefulSet
	for i := 0; i < s.Shards; i++ {
		t, err := s.Template(i)
		if err != nil {
			return nil, err
		}
		out = append(out, fixture.StatefulSet(s.ShardName(i), int32(s.PodsPerShard), s.shardSelector(i), t, func(sts *appsv1.StatefulSet) {
			sts.Namespace = s.ns()
			sts.Labels = s.ClusterLabels()
			sts.Spec.ServiceName = s.cluster()
			sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		}))
	}
	return out, nil
}

// shardSelector returns the labels that select shard i's pods.
func (s Scenario) shardSelector(i int) map[string]string {
	return map[string]string{policies.DefaultClusterLabel: s.cluster(), ShardLabel: s.ShardName(i)}
}

// PodDisruptionBudgets returns the layout's PodDisruptionBudgets, each with maxUnavailable 1:
// one per shard (seed), one for the release (Bitnami), one per role (OT).
func (s Scenario) PodDisruptionBudgets() []*policyv1.PodDisruptionBudget {
	if s.Layout != LayoutSeed {
		return s.layoutPodDisruptionBudgets()
	}
	var out []*policyv1.PodDisruptionBudget
	for i := 0; i < s.Shards; i++ {
		out = append(out, fixture.PodDisruptionBudget(s.ShardName(i), &metav1.LabelSelector{MatchLabels: s.shardSelector(i)},
			func(b *policyv1.PodDisruptionBudget) { b.Namespace = s.ns() }))
	}
	return out
}

// creationBase is the creation time of a scenario's first pod.
var creationBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Pods returns every pod of the cluster as its StatefulSet would create it, bound per Placement
// (Running) or Pending with PodScheduled=False/Unschedulable. Pods are created one second apart,
// ordinal 0 of every shard first: creation order is (position in the shard, shard). OT's pods
// carry OTRedisRoleLabel as the operator sets it for the role they were formed with. Running pods
// of the Bitnami and OT layouts have the IP ClusterNodes lists them at.
func (s Scenario) Pods() ([]*corev1.Pod, error) {
	stss, err := s.StatefulSets()
	if err != nil {
		return nil, err
	}
	at := s.positions()
	var out []*corev1.Pod
	for _, sts := range stss {
		for ord := 0; ord < int(*sts.Spec.Replicas); ord++ {
			name := sts.Name + "-" + strconv.Itoa(ord)
			pos, ok := at[name]
			i, o := pos[0], pos[1]
			if !ok {
				return nil, fmt.Errorf("scenario %s: pod %s is in no shard", s.Name, name)
			}
			opts := []fixture.PodOption{fixture.CreatedAt(creationBase.Add(time.Duration(o*s.Shards+i) * time.Second))}
			if s.RoleLabels {
				role := "replica"
				if o == 0 {
					role = "master"
				}
				opts = append(opts, fixture.WithLabels(RoleLabel, role))
			}
			if s.Layout == LayoutOT {
				opts = append(opts, fixture.WithLabels(OTRedisRoleLabel, map[bool]string{true: "master", false: "slave"}[o == 0]))
			}
			if s.RunningMaxSkew != nil {
				opts = append(opts, s.runningMaxSkew)
			}
			if node := s.Placement[name]; node != "" {
				opts = append(opts, fixture.On(node), fixture.Ready())
				if s.Layout != LayoutSeed {
					ip := s.podIP(i, o)
					opts = append(opts, func(p *corev1.Pod) { p.Status.PodIP = ip })
				}
			} else {
				opts = append(opts, fixture.Unschedulable())
			}
			out = append(out, fixture.StatefulSetPod(sts, ord, opts...))
		}
	}
	return out, nil
}

// runningMaxSkew writes RunningMaxSkew into the pod's hard constraints.
func (s Scenario) runningMaxSkew(p *corev1.Pod) {
	for k := range p.Spec.TopologySpreadConstraints {
		c := &p.Spec.TopologySpreadConstraints[k]
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		if c.TopologyKey == corev1.LabelHostname {
			c.MaxSkew = s.RunningMaxSkew[0]
		} else {
			c.MaxSkew = s.RunningMaxSkew[1]
		}
	}
}

// Snapshot returns the scenario's objects as a policies.Snapshot.
func (s Scenario) Snapshot() (*policies.Snapshot, error) {
	stss, err := s.StatefulSets()
	if err != nil {
		return nil, err
	}
	pods, err := s.Pods()
	if err != nil {
		return nil, err
	}
	snap := &policies.Snapshot{Nodes: s.Nodes(), Pods: pods, StatefulSets: stss, PodDisruptionBudgets: s.PodDisruptionBudgets()}
	s.addClaims(snap)
	if s.ExternalAccess {
		for _, svc := range s.BitnamiExternalAccessServices(6379, s.BitnamiLoadBalancerIP) {
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: svc.Spec.LoadBalancerIP}}
			snap.Services = append(snap.Services, svc)
		}
	}
	return snap, nil
}

// addClaims adds the claims of Claims to snap: a placed pod's bound to PersistentVolume
// "pv-<namespace>-<pod>", whose node affinity requires its node's zone (a zonal disk, as a CSI
// driver's topology pins it), a Pending pod's unbound (WaitForFirstConsumer).
func (s Scenario) addClaims(snap *policies.Snapshot) {
	if s.Claims == nil {
		return
	}
	zoneOf := map[string]string{}
	for _, z := range s.Zones {
		for _, n := range z.Nodes {
			zoneOf[n] = z.Name
		}
	}
	byName := map[string]*appsv1.StatefulSet{}
	for _, sts := range snap.StatefulSets {
		byName[sts.Name] = sts
	}
	for _, p := range snap.Pods {
		sts := byName[p.OwnerReferences[0].Name]
		for _, t := range sts.Spec.VolumeClaimTemplates {
			pvc := fixture.ClaimFor(t, p)
			if zone := zoneOf[p.Spec.NodeName]; zone != "" {
				bound, pv := fixture.BoundClaim(pvc.Namespace, pvc.Name, "pv-"+p.Namespace+"-"+p.Name, corev1.LabelTopologyZone, zone)
				pvc.Spec.VolumeName, pvc.Status = pv.Name, bound.Status
				pv.Spec.Capacity = pvc.Spec.Resources.Requests.DeepCopy()
				pv.Spec.ClaimRef.UID = pvc.UID
				if pvc.Spec.StorageClassName != nil {
					pv.Spec.StorageClassName = *pvc.Spec.StorageClassName
				}
				snap.PersistentVolumes = append(snap.PersistentVolumes, pv)
			}
			snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, pvc)
		}
	}
}

// MustSnapshot is Snapshot for tests and package-level scenarios; it panics on error.
func (s Scenario) MustSnapshot() *policies.Snapshot {
	snap, err := s.Snapshot()
	if err != nil {
		panic(err)
	}
	return snap
}

// Placed returns s with Placement set from a table: byShard[i][o] is the node of shard i's pod
// with ordinal o; "" or a missing entry leaves that pod Pending.
func (s Scenario) Placed(byShard [][]string) Scenario {
	s.Placement = map[string]string{}
	for i, nodes := range byShard {
		for o, node := range nodes {
			if node != "" {
				s.Placement[s.PodName(i, o)] = node
			}
		}
	}
	return s
}

// NodeNames returns every node name, zone by zone.
func (s Scenario) NodeNames() []string {
	var out []string
	for _, z := range s.Zones {
		out = append(out, z.Nodes...)
	}
	return out
}

// PlacementOf returns node → pods (sorted), for printing.
func (s Scenario) PlacementOf() map[string][]string {
	out := map[string][]string{}
	for pod, node := range s.Placement {
		out[node] = append(out[node], pod)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// ThreeZones returns zones a (n1, n2), b (n3, n4), c (n5, n6): the smallest topology on which
// every rule applies, and the test bed's.
func ThreeZones() []Zone {
	return []Zone{{"zone-a", []string{"n1", "n2"}}, {"zone-b", []string{"n3", "n4"}}, {"zone-c", []string{"n5", "n6"}}}
}

// PostScaleDown is the post-scale-down drift: a cluster scaled down to 5 shards × 2 pods (N = 10)
// with four masters stacked on n1, breaking MaxPodsPerNode (n1: 4 ≥ 10/3), MaxPodsPerZone (zone-a:
// 5 ≥ 10/2) and TopologySpread on hostname (4 − 0 > 3).
func PostScaleDown() Scenario {
	return Scenario{
		Name:        "post-scale-down",
		Description: "5 shards x 2 pods (N=10) left after a scale-down: n1 holds 4 masters, zone-a 5 pods.",
		Zones:       ThreeZones(), Shards: 5, PodsPerShard: 2,
	}.Placed(postScaleDownPlacement)
}

// postScaleDownPlacement is PostScaleDown's placement: shard i's master, then its replica.
var postScaleDownPlacement = [][]string{
	{"n1", "n3"}, {"n1", "n3"}, {"n1", "n4"}, {"n1", "n4"}, {"n2", "n5"},
}

// TwoMoves: 3 shards × 2 pods (N = 6, at most 1 pod per node) on 3 zones × 2 nodes; n1 holds
// shard 0's and shard 1's masters, n3 shard 0's replica and shard 2's master, n2 and n4 are
// empty. The fix takes two moves (a replica off n3, a master off n1): for the tests where one
// move must complete and the next must not start (a maintenance window that runs out).
func TwoMoves() Scenario {
	return Scenario{
		Name:        "two-moves",
		Description: "3 shards x 2 pods (N=6): n1 holds 2 masters, n3 a master and a replica; the fix takes 2 moves.",
		Zones:       ThreeZones(), Shards: 3, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n1", "n5"}, {"n3", "n6"},
	})
}

// SeedDeadlock is the 3-shard deadlock: 3 shards × 2 pods on 3 zones × 2 nodes, node maxSkew 1,
// zone anti-affinity inside each shard; Pod0-0→n1, Pod1-0→n4, Pod2-0→n6, Pod0-1→n3, Pod1-1→n2, and
// Pod2-1 Pending forever: n5, the only node with no pod, is in zone C beside Pod2-0. Evicting
// Pod1-1 (n2) unblocks it: Pod2-1 fits n2, then Pod1-1 fits n5.
func SeedDeadlock() Scenario {
	return Scenario{
		Name:        "seed-deadlock",
		Description: "3 shards × 2 pods on 3 zones × 2 nodes, node maxSkew 1, zone anti-affinity inside each shard: shard 2's replica is Pending forever; evicting shard 1's replica on n2 unblocks it.",
		Zones:       ThreeZones(), Shards: 3, PodsPerShard: 2,
	}.Placed([][]string{
		{"n1", "n3"}, {"n4", "n2"}, {"n6"},
	})
}

// NodeEphemeralStorage is the ephemeral storage allocatable on a scenario's nodes, as the test
// bed's kwok nodes report it (localcluster.DefaultNodeEphemeralStorage).
const NodeEphemeralStorage = "100Gi"
