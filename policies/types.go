package policies

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// Snapshot is the state of a Kubernetes cluster that the rules are evaluated on: what
// `kubectl get nodes,pods,statefulsets,poddisruptionbudgets,pvc,pv,csinodes,services -A`
// returns. Slices may be in any order; objects are read, never modified.
type Snapshot struct {
	// Nodes are every node of the cluster (the topology domains come from their labels).
	Nodes []*corev1.Node
	// Pods are every pod the rules may count: a spread constraint counts matching pods of any
	// workload in its namespace, and pod anti-affinity may come from any namespace.
	Pods []*corev1.Pod
	// StatefulSets give N (their spec.replicas) and the templates evicted pods are re-created from.
	StatefulSets []*appsv1.StatefulSet
	// PodDisruptionBudgets are reported per cluster (the executor's dry-run eviction enforces them).
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// PersistentVolumeClaims and PersistentVolumes give the volume topology of the pods' claims.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	// CSINodes give each node's CSI attach limits (spec.drivers[].allocatable.count), which
	// NodeVolumeLimits checks; a node without one has no limit.
	CSINodes []*storagev1.CSINode
	// Services expose pods; those that expose one pod alone outside the cluster (a LoadBalancer
	// per Redis pod: the Bitnami chart's externalAccess) give the addresses its Redis node may
	// announce (Member.ServiceAddrs).
	Services []*corev1.Service
	// Namespaces, when given, supply the labels a pod affinity term's namespaceSelector is matched
	// against; without them a namespace is assumed to carry only the kubernetes.io/metadata.name
	// label the API server sets.
	Namespaces []*corev1.Namespace
}

// Topology keys and labels the rules read.
const (
	// LabelHostname is the node domain's topology key.
	LabelHostname = corev1.LabelHostname
	// LabelZone is the zone domain's topology key.
	LabelZone = corev1.LabelTopologyZone
	// LabelZoneLegacy is the deprecated zone key that older operators still write; read when
	// LabelZone is absent.
	LabelZoneLegacy = corev1.LabelFailureDomainBetaZone
	// DefaultClusterLabel is the pod label whose value names a pod's Redis cluster (the policy's,
	// v1alpha1.DefaultClusterLabel).
	DefaultClusterLabel = v1alpha1.DefaultClusterLabel
	// StatefulSetPodNameLabel is set by the StatefulSet controller on each pod.
	StatefulSetPodNameLabel = appsv1.StatefulSetPodNameLabel
)

// Options tune how a snapshot is read and judged.
type Options struct {
	// ClusterLabel is the pod label key whose value names the Redis cluster (DefaultClusterLabel
	// when empty). Pods without it are not Redis pods.
	ClusterLabel string
	// ShardSource says where a pod's shard comes from: its controller (ShardOwner), a label
	// (ShardLabel), Redis's CLUSTER NODES (ShardRedis, Cluster.ApplyRedis), or ShardAuto (the
	// zero value): the controller, unless Redis, once read, groups the pods otherwise.
	ShardSource ShardSource
	// RecreatingOwners are the kinds of controller other than StatefulSet (KubeBlocks'
	// "InstanceSet", an operator's custom resource) that re-create a pod when it is evicted: such a
	// pod may be evicted, and is taken to come back with its own spec. A pod owned by another kind,
	// or by no controller, is never evicted (Member.NotEvictable).
	RecreatingOwners []string
	// WorkloadSelector, when set and not empty, keeps as the Redis clusters' workloads only the
	// StatefulSets whose pod template labels it matches (and, for a pod whose controller is one
	// of RecreatingOwners or a StatefulSet the snapshot lacks, the pod's labels): the layouts name
	// their Redis workloads with it (Bitnami's app.kubernetes.io/name=redis-cluster), so that
	// another workload of the same Helm release is never taken for Redis. nil: every StatefulSet
	// whose template carries ClusterLabel.
	WorkloadSelector labels.Selector
	// RoleLabel, when set, is the pod label that gives a pod's Redis role when Redis is not read
	// ("master"/"primary", or "replica"/"slave"/"secondary"); Cluster.ApplyRedis replaces it with
	// Redis's.
	RoleLabel string
	// RelaxedLimits relaxes MaxPodsPerNode and MaxPodsPerZone from "fewer than N/3 (N/2)" to
	// "at most N/3 (N/2)", where the strict form deadlocks (several zones, 3 shards). Off by
	// default.
	RelaxedLimits bool
	// ReleaseReplicaClaims lets a move take a pod away from the zonal PersistentVolumes its
	// claims are bound to: after its eviction the claims are deleted, its StatefulSet re-creates
	// them empty, and the pod, a replica, resyncs in full from its shard's master. A master is
	// failed over first, so that its pod is a replica when its claims go; a master's claim is
	// never released. The filter then ignores the volume topology of the members whose claims may
	// be released (Cluster.ClaimsReleasable). Off by default.
	ReleaseReplicaClaims bool
	// DrainTaints are the taint keys that mark a node as being emptied, beside a cordon
	// (spec.unschedulable): the policy's guard.drainTaints (v1alpha1.DefaultGuardDrainTaints when
	// nil). A member on such a node never becomes a master (Node.Leaving).
	DrainTaints []string
	// Rules says, per rule, whether it is judged and whether as a soft rule, like a descheduler
	// profile's enabled and disabled plugins. A rule it does not name keeps its default
	// (RuleInfo.DefaultSetting: judged unless Optional, hard or soft as the registry says). Build
	// fails on a rule the registry does not hold and on a soft rule made hard.
	Rules map[Rule]RuleSetting
}

func (o Options) withDefaults() Options {
	if o.ClusterLabel == "" {
		o.ClusterLabel = DefaultClusterLabel
	}
	if o.ShardSource.Kind == "" {
		o.ShardSource.Kind = ShardAuto
	}
	if o.DrainTaints == nil {
		o.DrainTaints = v1alpha1.DefaultGuardDrainTaints
	}
	return o
}

// Role is a Redis node's role as Redis reports it (or as a role label says, offline).
type Role string

// Redis roles.
const (
	RoleUnknown Role = ""
	RoleMaster  Role = "master"
	RoleReplica Role = "replica"
)

// ParseRole maps "master" or "primary", and "replica", "slave" or "secondary" (KubeBlocks'
// kubeblocks.io/role), in any case, to a Role, anything else to RoleUnknown.
func ParseRole(s string) Role {
	switch {
	case strings.EqualFold(s, "master"), strings.EqualFold(s, "primary"):
		return RoleMaster
	case strings.EqualFold(s, "replica"), strings.EqualFold(s, "slave"), strings.EqualFold(s, "secondary"):
		return RoleReplica
	}
	return RoleUnknown
}

// Node is a Kubernetes node as the model indexes it.
type Node struct {
	// Index is the node's position in Model.Nodes.
	Index int
	// Name is the node's name; Zone its zone: the LabelZone label, else the LabelZoneLegacy label,
	// else "".
	Name, Zone string
	// Obj is the API object.
	Obj *corev1.Node
	// Leaving says why the node is being emptied ("cordoned", "taint KEY": NodeLeaving with
	// Options.DrainTaints), "" when it is not. A member on it never becomes a master (its master
	// there may stay one: handing it off is the eviction guard's hand-off's job), so that no
	// failover promotes a replica that the drain evicts next.
	Leaving string
}

// NodeLeaving reports whether node is being emptied: cordoned (spec.unschedulable), or carrying a
// taint whose key is one of drainTaints (guard.drainTaints). It says how ("cordoned", "taint
// KEY"); a nil node is not.
func NodeLeaving(node *corev1.Node, drainTaints []string) (bool, string) {
	if node == nil {
		return false, ""
	}
	if node.Spec.Unschedulable {
		return true, "cordoned"
	}
	for _, t := range node.Spec.Taints {
		if slices.Contains(drainTaints, t.Key) {
			return true, "taint " + t.Key
		}
	}
	return false, ""
}

// Model is a Snapshot converted once into indexes: nodes by position, scheduled pods by label,
// topology domains per key, and the Redis clusters found by Options.ClusterLabel. Build creates
// it; after that it is only read (safe for concurrent readers).
type Model struct {
	// Nodes are sorted by name; Node.Index is the position.
	Nodes []*Node
	// Clusters are sorted by namespace, then name.
	Clusters []*Cluster
	// Options are the options the model was built with, defaults filled.
	Options Options

	nodeIndex map[string]int
	// rules is Options.Rules resolved: the setting of each registry entry, by position.
	rules []RuleSetting
	// mu guards the indexes Build's workers create on demand (domains, labelIdx); sharedMu the
	// node masks they share (sharedAffinity, sharedTaints).
	mu, sharedMu   sync.Mutex
	sharedAffinity map[string]*affinityEntry
	sharedTaints   map[string][]bool
	// pods are the scheduled pods kube-scheduler's snapshot would count: bound to a node of the
	// snapshot, not finished, not terminating.
	pods     []*corev1.Pod
	podNode  []int32            // pods[k]'s node index
	podsInNS map[string][]int32 // namespace → indices into pods
	labelIdx map[labelIndexKey]map[string][]int32
	anti     antiIndex
	nsLabels map[string]labels.Set // from Snapshot.Namespaces
	domains  map[string]*domainIndex
	pvcs     map[string]*corev1.PersistentVolumeClaim
	pvs      map[string]*corev1.PersistentVolume

	allocatable []resources
	usedByAll   []resources // requests of pods, per node
	// podScalars are the scalar resources of the pods requesting any (requestsOf).
	podScalars map[*corev1.Pod][]scalarRequest
	// notMembers are the pods of every cluster's NotMembers (nil when none).
	notMembers map[*corev1.Pod]bool
	// usedScalar[n] sums the scalar resources the pods of node n request (nil when none do).
	usedScalar []map[corev1.ResourceName]int64
	// hostPorts lists the host ports the scheduled pods bind, by protocol and port (NodePorts).
	hostPorts map[portKey][]portUse
	// diskPods are the scheduled pods with an inline disk VolumeRestrictions checks.
	diskPods []int32
	// csi is NodeVolumeLimits' view, nil when no CSINode reports a limit.
	csi     *csiModel
	zoneKey string // LabelZone, or LabelZoneLegacy when no node has LabelZone
	// zoneNames[0] reads a node's zone from LabelZone first, zoneNames[1] from LabelZoneLegacy
	// first (each falling back to the other key).
	zoneNames [2][]string
	// zoneIDs[x][n] numbers zoneNames[x][n]; zoneIDNames[x] maps the numbers back to the names.
	zoneIDs     [2][]int32
	zoneIDNames [2][]string
}

// NodeByName returns the node with that name, or nil.
func (m *Model) NodeByName(name string) *Node {
	if i, ok := m.nodeIndex[name]; ok {
		return m.Nodes[i]
	}
	return nil
}

// NodeIndex returns the index of the named node, or -1.
func (m *Model) NodeIndex(name string) int {
	if i, ok := m.nodeIndex[name]; ok {
		return i
	}
	return -1
}

// Cluster is one Redis cluster: the pods its workloads own among those sharing a value of the
// cluster label in one namespace. Its workloads are the StatefulSets whose template carries the
// label (and Options.WorkloadSelector matches), and the controllers of kinds
// Options.RecreatingOwners (and pods without a controller, run by hand); a pod of another owner
// or of a Job is never a member (NotMembers), whatever labels it shares.
type Cluster struct {
	// Namespace and Name identify the cluster (Name is the cluster label's value).
	Namespace, Name string
	// N is the cluster's size for the rules: the sum of its StatefulSets' spec.replicas (Pending
	// and not yet created pods included), or the number of its pods when it has no StatefulSets.
	N int
	// Members are the cluster's pods, sorted by shard, then ordinal, then name.
	Members []*Member
	// NotMembers are the pods that carry the cluster label but no workload of the cluster owns
	// (another app of the same Helm release, a Job's pod), with why; finished pods are not
	// listed. Sorted by name.
	NotMembers []NotMember
	// Shards are sorted by name; Shard.Members index Members.
	Shards []*Shard
	// ZoneKey is the zone topology key of the cluster: the zone key its pods' node affinity, spread
	// constraints or anti-affinity name (older operators use LabelZoneLegacy), else LabelZone when
	// some node has it, else LabelZoneLegacy. A node's zone for the rules is its ZoneKey label, or
	// the other zone key's label when it lacks that one.
	ZoneKey string
	// AllowedZones are the zones the members' required node affinity (or nodeSelector) lists for a
	// zone key, or, without such a list, the zones of the nodes that affinity matches. Sorted.
	AllowedZones []string
	// ZoneList reports whether AllowedZones came from an explicit zone list (AllowedZones rule).
	ZoneList bool
	// StatefulSets and PodDisruptionBudgets are the cluster's objects (StatefulSets whose template
	// carries the cluster label or that control a member, PDBs selecting a member).
	StatefulSets         []*appsv1.StatefulSet
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// ShardSource is where the shards came from: ShardOwner, ShardLabel or ShardRedis (Options'
	// ShardAuto resolved: ShardRedis once ApplyRedis found Redis grouping the pods otherwise
	// than their controllers).
	ShardSource ShardSource
	// Warnings say, one line each, which pods are never evicted and why (their owner does not
	// re-create them, Redis does not know them, their shard is unknown), and which Redis nodes
	// could not be matched to one pod. Sorted.
	Warnings []string

	model     *Model
	notMember map[*corev1.Pod]bool // the pods of NotMembers
	// notMemberPods are the positions in Model.pods of the scheduled NotMembers
	// (forNonMembers).
	notMemberPods []int32
	b             *builder // during Build only
	allowed       map[string]bool
	zones         []string // node index → zone name for the rules (model.zoneNames[x])
	// zoneID numbers zones (model.zoneIDs[x]), zoneName maps the numbers back to the names, and
	// allowedID tells the allowed zones by number.
	zoneID    []int32
	zoneName  []string
	allowedID []bool
	spread    []*spreadInstance // every distinct DoNotSchedule constraint instance
	terms     map[string]*affinityTerm
	// usable are the distinct node-level masks of the members' incoming specs: a node is usable
	// when one of them passes it (cordon, taints, node affinity); usableIn counts them per zone.
	usable    [][]reasonCode
	usableIn  map[string]int
	memberUse map[int]resources // node index → requests of the members bound to it
	// scalars and csiIdx are NodeResourcesFit's scalar resources and NodeVolumeLimits' counts for
	// the members, built on first use by a pod that needs them.
	scalarOnce, csiOnce sync.Once
	scalars             *scalarIndex
	csiIdx              *csiIndex
	classOnce           sync.Once
	// classOf numbers the nodes' classes (NodeClass) in order of their first node, classPrints
	// holds each class's fingerprint; built on first use.
	classOf     []int32
	classPrints []uint64
	stateOnce   sync.Once
	stateIdx    *stateIndex // what States share, built on first use
	// soft holds what the optional soft rules read (the ScheduleAnyway constraint instances, the
	// preferred anti-affinity terms), built on first use.
	softOnce sync.Once
	soft     *softIndex
	// quorumNodeCount is the number of nodes masters may be on (quorumNodes), counted once.
	quorumOnce      sync.Once
	quorumNodeCount int
	// read is set once an index that depends on the members' order or shards is built (state,
	// node classes): ApplyRedis may no longer regroup them.
	read atomic.Bool
}

// NotMember is a pod carrying a cluster's label that is not one of its members.
type NotMember struct {
	// Pod is the pod.
	Pod *corev1.Pod
	// Why says why it is not a member ("owned by ReplicaSet web-5d9c: not a Redis workload").
	Why string
}

// Z returns the number of allowed zones.
func (c *Cluster) Z() int { return len(c.AllowedZones) }

// Model returns the model the cluster belongs to.
func (c *Cluster) Model() *Model { return c.model }

// Key returns "namespace/name".
func (c *Cluster) Key() string { return c.Namespace + "/" + c.Name }

// zoneOfNode returns node n's zone as the cluster's rules read it ("" without a zone label).
func (c *Cluster) zoneOfNode(n int) string { return c.zones[n] }

// Shard is one shard of a cluster: a master serving slots and its replicas. By
// Cluster.ShardSource, the pods of one controller, of one value of a label, or of one master in
// Redis's CLUSTER NODES. A pod whose shard is unknown is a shard of its own.
type Shard struct {
	// Name is the controller's name, the label's value, or for a shard read from Redis
	// "slots-<first range>" (one more "+" per further range; "node-<master ID prefix>" for a
	// master serving no slot); a pod whose shard is unknown gives its own name.
	Name string
	// Members index Cluster.Members.
	Members []int
	// StatefulSet is the StatefulSet whose pods are exactly this shard's (one shard per
	// StatefulSet, as in the seed layout), nil otherwise (Bitnami's one StatefulSet for every
	// shard, OT's leader and follower StatefulSets, other owners).
	StatefulSet *appsv1.StatefulSet
}

// Member is one pod of a Redis cluster.
type Member struct {
	// Index is the member's position in Cluster.Members.
	Index int
	// Pod is the pod as it is now.
	Pod *corev1.Pod
	// Shard is the shard's name, ShardIndex its position in Cluster.Shards.
	Shard      string
	ShardIndex int
	// Ordinal is the StatefulSet ordinal parsed from the pod name (-1 when there is none).
	Ordinal int
	// Role is the Redis role: from Options.RoleLabel when building, or set by the caller from Redis.
	Role Role
	// EmptyMaster is true for a master that Redis reports serving no slot (set by the caller from
	// CLUSTER NODES): it does not vote when Redis promotes a replica, so MasterQuorum does not count
	// it. A master read from Options.RoleLabel is taken to serve slots.
	EmptyMaster bool
	// Node is the index of the node the pod is bound to, -1 when it is not scheduled (or bound to a
	// node the snapshot lacks).
	Node int
	// Terminating is true when the pod has a deletionTimestamp: it is not counted anywhere.
	Terminating bool
	// Owner is the pod's controller, "Kind/name" ("" when it has none).
	Owner string
	// RedisID is the ID of the Redis node matched to the pod by ApplyRedis (by its pod IP, by
	// the hostname the node announces, or by one of ServiceAddrs), "" when none is.
	RedisID string
	// ServiceAddrs are the external addresses (LoadBalancer ingress IPs and hostnames,
	// spec.loadBalancerIP, spec.externalIPs) of the Services that select this pod and no other:
	// what its Redis node announces when the pod is exposed by a LoadBalancer of its own (the
	// Bitnami chart's cluster.externalAccess). Empty without such a Service.
	ServiceAddrs []string
	// Unschedulable is true for a Pending pod whose PodScheduled condition is False with reason
	// Unschedulable.
	Unschedulable bool

	sts *appsv1.StatefulSet
	req resources // the pod's requests (its scalar resources: Model.podScalars)
	// claims are the pod's claims whose bound PersistentVolume restricts the nodes it may run on
	// (VolumeBinding, VolumeZone), when its StatefulSet re-creates every one of them from its
	// volumeClaimTemplates; claimWhy says why they may not be released otherwise ("" when no
	// claim restricts the pod, or every one may be).
	claims    []string
	claimWhy  string
	cur, next *podSpec
	// template is the member's Template once built (nil until then; always nil without a
	// StatefulSet).
	template atomic.Pointer[corev1.Pod]
	// ownerWhy says why the pod's owner never re-creates it ("" when it does); shardWhy why its
	// shard is unknown ("" when it is known).
	ownerWhy, shardWhy string
}

// Key returns "namespace/name".
func (m *Member) Key() string { return m.Pod.Namespace + "/" + m.Pod.Name }

// NotEvictable says why the pod is never evicted, "" when it may be: it has no controller, its
// controller is neither a StatefulSet (found in the snapshot) nor one of
// Options.RecreatingOwners, or its shard is unknown (Redis does not know it, or was not read
// while Options.ShardSource says ShardRedis). The planner moves only the pods it may evict.
func (m *Member) NotEvictable() string {
	if m.ownerWhy != "" {
		return m.ownerWhy
	}
	return m.shardWhy
}

// ShardKnown reports whether the member's shard is known (from its controller, its label, or
// Redis); a member whose shard is unknown is a shard of its own.
func (m *Member) ShardKnown() bool { return m.shardWhy == "" }

// Name returns the pod name.
func (m *Member) Name() string { return m.Pod.Name }

// Template returns the pod as the member's StatefulSet would re-create it now: the current
// template's labels (plus the controller's pod-name, pod-index and controller-revision-hash
// labels), scheduling constraints (spec.nodeName included), tolerations and resources, with the
// pod's name, namespace and volumes. Its containers, overhead and pod-level resources are the
// pod's own when the pod is of the update revision (as admitted: LimitRange defaults, injected
// sidecars), else the template's with the API server's pod defaults (requests default to limits;
// with hostNetwork, container ports are host ports). It is Pod itself when there is no
// StatefulSet (another owner, one of Options.RecreatingOwners, is taken to re-create the pod as
// it is).
//
// Build converts every template into what the rules read (its labels map is the one Template's
// pod carries) without keeping the pod: the pod is built again from Pod and the StatefulSet on the
// first call, then kept. Safe for concurrent use; the pod is shared: read it, never modify it.
func (m *Member) Template() *corev1.Pod {
	if m.sts == nil {
		return m.Pod
	}
	if t := m.template.Load(); t != nil {
		return t
	}
	var lbl map[string]string
	if m.next != nil {
		lbl = m.next.labels
	}
	t := new(corev1.Pod)
	templatePod(t, m.Pod, m.sts, lbl)
	if m.template.CompareAndSwap(nil, t) {
		return t
	}
	return m.template.Load()
}

// pending reports a member that is not bound and not terminating: when the scheduler places it,
// it places this very pod (its own spec), not a re-created one.
func (m *Member) pending() bool { return m.Pod.Spec.NodeName == "" && !m.Terminating }

// incoming returns the spec the member is placed with when the scheduler places it: a Pending
// pod's own, otherwise (evicted, terminating, lost with its node) its re-creation template's.
func (m *Member) incoming() *podSpec {
	if m.pending() {
		return m.cur
	}
	return m.next
}

// Placement maps each member of one cluster (by Member.Index) to a node index, or -1 when the
// member is not placed (Pending, terminating, or evicted and not yet re-placed).
type Placement []int

// Clone returns a copy.
func (p Placement) Clone() Placement { return append(Placement(nil), p...) }

// Current returns the cluster's placement as the snapshot has it: terminating and unscheduled
// members are unplaced.
func (c *Cluster) Current() Placement {
	p := make(Placement, len(c.Members))
	for i, m := range c.Members {
		p[i] = m.Node
		if m.Terminating {
			p[i] = -1
		}
	}
	return p
}
