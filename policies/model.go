package policies

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Topology keys and labels the rules read.
const (
	// LabelHostname is the node domain's topology key.
	LabelHostname = corev1.LabelHostname
	// LabelZone is the zone domain's topology key.
	LabelZone = corev1.LabelTopologyZone
	// LabelZoneLegacy is the deprecated zone key that seed 000 uses; read when LabelZone is absent.
	LabelZoneLegacy = corev1.LabelFailureDomainBetaZone
	// DefaultClusterLabel is the pod label whose value names a pod's Redis cluster.
	DefaultClusterLabel = "app.kubernetes.io/instance"
	// StatefulSetPodNameLabel is set by the StatefulSet controller on each pod.
	StatefulSetPodNameLabel = appsv1.StatefulSetPodNameLabel
)

// Options tune how a snapshot is read and judged.
type Options struct {
	// ClusterLabel is the pod label key whose value names the Redis cluster (DefaultClusterLabel
	// when empty). Pods without it are not Redis pods.
	ClusterLabel string
	// ShardLabel, when set, is the pod label whose value names the shard; otherwise a pod's shard is
	// its controlling StatefulSet (or, without one, the pod itself).
	ShardLabel string
	// RoleLabel, when set, is the pod label that gives a pod's Redis role offline ("master", or
	// "replica"/"slave"); live runs take roles from Redis instead.
	RoleLabel string
	// RelaxedLimits applies seed 000 §四's relaxation of MaxPodsPerNode and MaxPodsPerZone from
	// "fewer than N/3 (N/2)" to "at most N/3 (N/2)". Off by default.
	RelaxedLimits bool
	// ReleaseReplicaClaims lets the filter ignore the volume topology of a replica's bound
	// PersistentVolumes, because the executor may release a replica's claim (its data resyncs from
	// its master). A master's claim is never released. Off by default.
	ReleaseReplicaClaims bool
}

func (o Options) withDefaults() Options {
	if o.ClusterLabel == "" {
		o.ClusterLabel = DefaultClusterLabel
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

// ParseRole maps "master", "replica" and "slave" (any case) to a Role, anything else to
// RoleUnknown.
func ParseRole(s string) Role {
	switch strings.ToLower(s) {
	case "master", "primary":
		return RoleMaster
	case "replica", "slave":
		return RoleReplica
	}
	return RoleUnknown
}

// Node is a Kubernetes node as the model indexes it.
type Node struct {
	// Index is the node's position in Model.Nodes.
	Index int
	// Name is the node's name; Zone its zone label ("" when it has none).
	Name, Zone string
	// Obj is the API object.
	Obj *corev1.Node
}

// Model is a Snapshot converted once into indexes: nodes by position, pods per node, topology
// domains per key, and the Redis clusters found by Options.ClusterLabel. Build creates it; after
// that it is only read (safe for concurrent readers).
type Model struct {
	// Nodes are sorted by name; Node.Index is the position.
	Nodes []*Node
	// Clusters are sorted by namespace, then name.
	Clusters []*Cluster
	// Options are the options the model was built with, defaults filled.
	Options Options

	nodeIndex       map[string]int
	podsByNode      [][]*corev1.Pod // scheduled, non-terminating pods, all namespaces
	podsByNamespace map[string][]*corev1.Pod
	antiAffinePods  []*corev1.Pod // scheduled pods with required pod anti-affinity
	domains         map[string]*domainIndex
	masks           map[string][]bool // cache: a scheduling signature → fits per node
	pvcs            map[string]*corev1.PersistentVolumeClaim
	pvs             map[string]*corev1.PersistentVolume
	allocatable     []resources
	usedByAll       []resources // requests of podsByNode
	zoneKey         string      // LabelZone, or LabelZoneLegacy when no node has LabelZone
}

// domainIndex maps nodes to the values of one topology key.
type domainIndex struct {
	ofNode []int    // node index → domain id; -1 when the node lacks the key
	names  []string // domain id → value
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

// domain returns (building once) the domain index of a topology key.
func (m *Model) domain(key string) *domainIndex {
	if d, ok := m.domains[key]; ok {
		return d
	}
	d := &domainIndex{ofNode: make([]int, len(m.Nodes))}
	ids := map[string]int{}
	for i, n := range m.Nodes {
		v, ok := n.Obj.Labels[key]
		if !ok {
			d.ofNode[i] = -1
			continue
		}
		id, seen := ids[v]
		if !seen {
			id = len(d.names)
			ids[v] = id
			d.names = append(d.names, v)
		}
		d.ofNode[i] = id
	}
	m.domains[key] = d
	return d
}

// zoneOf returns a node's zone: LabelZone, else LabelZoneLegacy, else "".
func zoneOf(n *corev1.Node) string {
	if z, ok := n.Labels[LabelZone]; ok {
		return z
	}
	return n.Labels[LabelZoneLegacy]
}

// Cluster is one Redis cluster: the pods sharing a value of the cluster label in one namespace.
type Cluster struct {
	// Namespace and Name identify the cluster (Name is the cluster label's value).
	Namespace, Name string
	// N is the cluster's size for the rules: the sum of its StatefulSets' spec.replicas, or the
	// number of its pods when it has no StatefulSets (SPEC "Terms").
	N int
	// Members are the cluster's pods, sorted by shard, then ordinal, then name.
	Members []*Member
	// Shards are sorted by name; Shard.Members index Members.
	Shards []*Shard
	// ZoneKey is the zone topology key the cluster's nodes use (LabelZone or LabelZoneLegacy).
	ZoneKey string
	// AllowedZones are the zones the members' required node affinity lists for ZoneKey (seed
	// "available-zones"), or, without such a list, the zones of the nodes that affinity matches.
	AllowedZones []string
	// ZoneList reports whether AllowedZones came from an explicit zone list (AllowedZones rule).
	ZoneList bool
	// StatefulSets and PodDisruptionBudgets are the cluster's objects (PDBs selecting a member).
	StatefulSets         []*appsv1.StatefulSet
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget

	model     *Model
	allowed   map[string]bool
	spread    []*spreadInstance // every distinct DoNotSchedule constraint instance
	soft      []*spreadInstance // ScheduleAnyway instances (reported, not enforced)
	usedOther []resources       // node index → requests of non-member pods
	classOnce sync.Once
	classes   []uint64 // node index → NodeClass, built on first use
}

// Z returns the number of allowed zones.
func (c *Cluster) Z() int { return len(c.AllowedZones) }

// Model returns the model the cluster belongs to.
func (c *Cluster) Model() *Model { return c.model }

// Key returns "namespace/name".
func (c *Cluster) Key() string { return c.Namespace + "/" + c.Name }

// Shard is one shard of a cluster: the pods of one StatefulSet (or of one ShardLabel value).
type Shard struct {
	// Name is the StatefulSet's name (or the ShardLabel's value).
	Name string
	// Members index Cluster.Members.
	Members []int
	// StatefulSet is the shard's StatefulSet, nil when unknown.
	StatefulSet *appsv1.StatefulSet
}

// Member is one pod of a Redis cluster.
type Member struct {
	// Index is the member's position in Cluster.Members.
	Index int
	// Pod is the pod as it is now.
	Pod *corev1.Pod
	// Template is the pod as its StatefulSet would re-create it now: the current template's
	// labels, scheduling constraints, tolerations and resources, with the pod's name, namespace and
	// volumes. Equal to Pod when there is no StatefulSet.
	Template *corev1.Pod
	// Shard is the shard's name, ShardIndex its position in Cluster.Shards.
	Shard      string
	ShardIndex int
	// Ordinal is the StatefulSet ordinal parsed from the pod name (-1 when there is none).
	Ordinal int
	// Role is the Redis role: from Options.RoleLabel when building, or set by the caller from Redis.
	Role Role
	// Node is the index of the node the pod is bound to, -1 when it is not scheduled.
	Node int
	// Terminating is true when the pod has a deletionTimestamp: it is not counted anywhere.
	Terminating bool
	// Unschedulable is true for a Pending pod whose PodScheduled condition is False with reason
	// Unschedulable.
	Unschedulable bool

	cur, next *podSpec
}

// Key returns "namespace/name".
func (m *Member) Key() string { return m.Pod.Namespace + "/" + m.Pod.Name }

// Name returns the pod name.
func (m *Member) Name() string { return m.Pod.Name }

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

// Build converts a snapshot into a Model. It returns an error when a pod or StatefulSet carries a
// spread constraint or affinity term that cannot be parsed (the same objects the API server
// validates, so this means a hand-written snapshot is malformed).
func Build(snap *Snapshot, opts Options) (*Model, error) {
	opts = opts.withDefaults()
	m := &Model{
		Options:         opts,
		nodeIndex:       map[string]int{},
		podsByNamespace: map[string][]*corev1.Pod{},
		domains:         map[string]*domainIndex{},
		masks:           map[string][]bool{},
		pvcs:            map[string]*corev1.PersistentVolumeClaim{},
		pvs:             map[string]*corev1.PersistentVolume{},
	}
	nodes := append([]*corev1.Node(nil), snap.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for i, n := range nodes {
		m.Nodes = append(m.Nodes, &Node{Index: i, Name: n.Name, Zone: zoneOf(n), Obj: n})
		m.nodeIndex[n.Name] = i
	}
	m.zoneKey = LabelZoneLegacy
	for _, n := range nodes {
		if _, ok := n.Labels[LabelZone]; ok {
			m.zoneKey = LabelZone
			break
		}
	}
	m.podsByNode = make([][]*corev1.Pod, len(nodes))
	m.allocatable = make([]resources, len(nodes))
	m.usedByAll = make([]resources, len(nodes))
	for i, n := range nodes {
		m.allocatable[i] = allocatableOf(n)
	}
	for _, pvc := range snap.PersistentVolumeClaims {
		m.pvcs[pvc.Namespace+"/"+pvc.Name] = pvc
	}
	for _, pv := range snap.PersistentVolumes {
		m.pvs[pv.Name] = pv
	}
	for _, p := range snap.Pods {
		m.podsByNamespace[p.Namespace] = append(m.podsByNamespace[p.Namespace], p)
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" || isFinished(p) {
			continue
		}
		ni, ok := m.nodeIndex[p.Spec.NodeName]
		if !ok {
			continue
		}
		m.podsByNode[ni] = append(m.podsByNode[ni], p)
		m.usedByAll[ni] = m.usedByAll[ni].add(requestsOf(p))
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			m.antiAffinePods = append(m.antiAffinePods, p)
		}
	}
	if err := m.buildClusters(snap); err != nil {
		return nil, err
	}
	return m, nil
}

func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func (m *Model) buildClusters(snap *Snapshot) error {
	key := m.Options.ClusterLabel
	type ck struct{ ns, name string }
	byCluster := map[ck]*Cluster{}
	get := func(ns, name string) *Cluster {
		k := ck{ns, name}
		c := byCluster[k]
		if c == nil {
			c = &Cluster{Namespace: ns, Name: name, model: m}
			byCluster[k] = c
		}
		return c
	}
	stsByName := map[string]*appsv1.StatefulSet{}
	for _, s := range snap.StatefulSets {
		stsByName[s.Namespace+"/"+s.Name] = s
		if v, ok := s.Spec.Template.Labels[key]; ok {
			c := get(s.Namespace, v)
			c.StatefulSets = append(c.StatefulSets, s)
		}
	}
	for _, p := range snap.Pods {
		v, ok := p.Labels[key]
		if !ok || isFinished(p) {
			continue
		}
		c := get(p.Namespace, v)
		mem := &Member{Pod: p, Node: -1, Ordinal: -1, Terminating: p.DeletionTimestamp != nil}
		if p.Spec.NodeName != "" {
			mem.Node = m.NodeIndex(p.Spec.NodeName)
		}
		mem.Unschedulable = isUnschedulable(p)
		var sts *appsv1.StatefulSet
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "StatefulSet" {
			sts = stsByName[p.Namespace+"/"+ref.Name]
			mem.Shard = ref.Name
			if i := strings.LastIndex(p.Name, "-"); i >= 0 && p.Name[:i] == ref.Name {
				if o, err := strconv.Atoi(p.Name[i+1:]); err == nil {
					mem.Ordinal = o
				}
			}
		}
		if m.Options.ShardLabel != "" {
			if s, ok := p.Labels[m.Options.ShardLabel]; ok {
				mem.Shard = s
			}
		}
		if mem.Shard == "" {
			mem.Shard = p.Name
		}
		if m.Options.RoleLabel != "" {
			mem.Role = ParseRole(p.Labels[m.Options.RoleLabel])
		}
		mem.Template = templatePod(p, sts)
		c.Members = append(c.Members, mem)
	}
	for _, c := range byCluster {
		if len(c.Members) == 0 {
			continue // a StatefulSet scaled to zero, or not yet created pods: nothing to judge
		}
		if err := c.finish(snap); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Key(), err)
		}
		m.Clusters = append(m.Clusters, c)
	}
	sort.Slice(m.Clusters, func(i, j int) bool {
		if m.Clusters[i].Namespace != m.Clusters[j].Namespace {
			return m.Clusters[i].Namespace < m.Clusters[j].Namespace
		}
		return m.Clusters[i].Name < m.Clusters[j].Name
	})
	return nil
}

// isUnschedulable reports a Pending pod the scheduler could not place.
func isUnschedulable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// templatePod returns the pod as sts would re-create it: the template's labels and spec, with the
// pod's identity, controller-set labels and volumes (the claims of volumeClaimTemplates are the
// pod's own).
func templatePod(p *corev1.Pod, sts *appsv1.StatefulSet) *corev1.Pod {
	if sts == nil {
		return p
	}
	t := &corev1.Pod{
		TypeMeta:   p.TypeMeta,
		ObjectMeta: *p.ObjectMeta.DeepCopy(),
		Spec:       *sts.Spec.Template.Spec.DeepCopy(),
	}
	t.Labels = map[string]string{}
	for k, v := range sts.Spec.Template.Labels {
		t.Labels[k] = v
	}
	for _, k := range []string{StatefulSetPodNameLabel, appsv1.PodIndexLabel, appsv1.ControllerRevisionHashLabelKey} {
		if v, ok := p.Labels[k]; ok {
			t.Labels[k] = v
		}
	}
	t.DeletionTimestamp = nil
	t.Spec.NodeName = ""
	t.Spec.Volumes = p.Spec.Volumes
	return t
}

// finish derives N, shards, zones and the constraint instances of a cluster.
func (c *Cluster) finish(snap *Snapshot) error {
	m := c.model
	sort.Slice(c.Members, func(i, j int) bool {
		a, b := c.Members[i], c.Members[j]
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		if a.Ordinal != b.Ordinal {
			return a.Ordinal < b.Ordinal
		}
		return a.Pod.Name < b.Pod.Name
	})
	shardIdx := map[string]int{}
	for i, mem := range c.Members {
		mem.Index = i
		si, ok := shardIdx[mem.Shard]
		if !ok {
			si = len(c.Shards)
			shardIdx[mem.Shard] = si
			c.Shards = append(c.Shards, &Shard{Name: mem.Shard})
		}
		mem.ShardIndex = si
		c.Shards[si].Members = append(c.Shards[si].Members, i)
	}
	for _, s := range c.StatefulSets {
		if si, ok := shardIdx[s.Name]; ok {
			c.Shards[si].StatefulSet = s
		}
	}
	// N: the StatefulSets' desired replicas, else the pod count.
	if len(c.StatefulSets) > 0 {
		for _, s := range c.StatefulSets {
			if s.Spec.Replicas != nil {
				c.N += int(*s.Spec.Replicas)
			} else {
				c.N++
			}
		}
	} else {
		c.N = len(c.Members)
	}
	for _, pdb := range snap.PodDisruptionBudgets {
		if pdb.Namespace != c.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		for _, mem := range c.Members {
			if sel.Matches(labels.Set(mem.Pod.Labels)) {
				c.PodDisruptionBudgets = append(c.PodDisruptionBudgets, pdb)
				break
			}
		}
	}
	c.ZoneKey = m.zoneKey
	c.allowed = map[string]bool{}
	ref := c.Members[0].Template
	if zs, ok := zoneList(ref); ok {
		c.ZoneList = true
		for _, z := range zs {
			c.allowed[z] = true
		}
	} else {
		mask := m.nodeAffinityMask(ref)
		for i, n := range m.Nodes {
			if mask[i] && n.Zone != "" {
				c.allowed[n.Zone] = true
			}
		}
	}
	for z := range c.allowed {
		c.AllowedZones = append(c.AllowedZones, z)
	}
	sort.Strings(c.AllowedZones)
	// Requests of the pods that are not members, per node.
	c.usedOther = append([]resources(nil), m.usedByAll...)
	for _, mem := range c.Members {
		if mem.Node >= 0 && !mem.Terminating {
			c.usedOther[mem.Node] = c.usedOther[mem.Node].sub(requestsOf(mem.Pod))
		}
	}
	return c.buildSpecs()
}

// zoneList returns the zone values a pod's required node affinity permits through an `In`
// requirement on a zone key, when every term has one (seed 000's available-zones).
func zoneList(p *corev1.Pod) ([]string, bool) {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		if z, ok := p.Spec.NodeSelector[LabelZone]; ok {
			return []string{z}, true
		}
		if z, ok := p.Spec.NodeSelector[LabelZoneLegacy]; ok {
			return []string{z}, true
		}
		return nil, false
	}
	set := map[string]bool{}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		found := false
		for _, r := range term.MatchExpressions {
			if (r.Key == LabelZone || r.Key == LabelZoneLegacy) && r.Operator == corev1.NodeSelectorOpIn {
				for _, v := range r.Values {
					set[v] = true
				}
				found = true
			}
		}
		if !found {
			return nil, false
		}
	}
	if len(set) == 0 {
		return nil, false
	}
	out := make([]string, 0, len(set))
	for z := range set {
		out = append(out, z)
	}
	sort.Strings(out)
	return out, true
}
