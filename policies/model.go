package policies

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// parallelClusters is the number of clusters per Build worker below which fewer workers start.
const parallelClusters = 16

// parallel runs fn over [0, n) in chunks on up to GOMAXPROCS goroutines (one when n is small).
func parallel(n int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), 8, n/4096+1)
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	wg.Wait()
}

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
	// its master). A master's claim is never released, nor the claim of a member whose role is
	// unknown. Off by default.
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

// ParseRole maps "master" or "primary", and "replica" or "slave" (any case) to a Role, anything
// else to RoleUnknown.
func ParseRole(s string) Role {
	switch {
	case strings.EqualFold(s, "master"), strings.EqualFold(s, "primary"):
		return RoleMaster
	case strings.EqualFold(s, "replica"), strings.EqualFold(s, "slave"):
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
	// mu guards the indexes Build's workers create on demand (domains, labelIdx); sharedMu the
	// node masks they share (sharedAffinity, sharedTaints).
	mu, sharedMu   sync.Mutex
	sharedAffinity map[string]*affinityEntry
	sharedTaints   map[string][]bool
	// pods are the scheduled pods kube-scheduler's snapshot would count: bound to a node of the
	// snapshot, not finished, not terminating.
	pods      []*corev1.Pod
	podNode   []int32            // pods[k]'s node index
	podsInNS  map[string][]int32 // namespace → indices into pods
	labelIdx  map[labelIndexKey]map[string][]int32
	anti      antiIndex
	nsLabels  map[string]labels.Set // from Snapshot.Namespaces
	domains   map[string]*domainIndex
	ids       interner
	eligibles map[[3]int32]*eligibility // keys, node affinity and tolerations ids → eligible nodes
	volumes   map[string][]reasonCode   // bound PersistentVolume checks by signature
	zoneSets  map[zoneSetKey][]string   // node affinity mask → zones of the nodes it admits
	pvcs      map[string]*corev1.PersistentVolumeClaim
	pvs       map[string]*corev1.PersistentVolume

	reqByContainers map[*corev1.Container]resources
	allocatable     []resources
	usedByAll       []resources // requests of pods, per node
	zoneKey         string      // LabelZone, or LabelZoneLegacy when no node has LabelZone
	// zoneNames[0] reads a node's zone from LabelZone first, zoneNames[1] from LabelZoneLegacy
	// first (each falling back to the other key).
	zoneNames [2][]string
	selectors map[string]labels.Selector
	usableIn  map[string]map[string]int // usable-mask signature → usable nodes per zone
	sig       sigBuf
	selSig    sigBuf
}

// domainIndex maps nodes to the values of one topology key.
type domainIndex struct {
	ofNode []int32  // node index → domain id; -1 when the node lacks the key
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

// domain returns (building once, during Build) the domain index of a topology key. Safe for
// Build's workers; after Build only the keys built then are read.
func (m *Model) domain(key string) *domainIndex {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.domains[key]; ok {
		return d
	}
	d := &domainIndex{ofNode: make([]int32, len(m.Nodes))}
	ids := map[string]int32{}
	for i, n := range m.Nodes {
		v, ok := n.Obj.Labels[key]
		if !ok {
			d.ofNode[i] = -1
			continue
		}
		id, seen := ids[v]
		if !seen {
			id = int32(len(d.names))
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

// isZoneKey reports whether key is LabelZone or LabelZoneLegacy.
func isZoneKey(key string) bool { return key == LabelZone || key == LabelZoneLegacy }

// Cluster is one Redis cluster: the pods sharing a value of the cluster label in one namespace.
type Cluster struct {
	// Namespace and Name identify the cluster (Name is the cluster label's value).
	Namespace, Name string
	// N is the cluster's size for the rules: the sum of its StatefulSets' spec.replicas (Pending
	// and not yet created pods included), or the number of its pods when it has no StatefulSets
	// (SPEC "Terms").
	N int
	// Members are the cluster's pods, sorted by shard, then ordinal, then name.
	Members []*Member
	// Shards are sorted by name; Shard.Members index Members.
	Shards []*Shard
	// ZoneKey is the zone topology key of the cluster: the zone key its pods' node affinity, spread
	// constraints or anti-affinity name (seed 000 uses LabelZoneLegacy), else LabelZone when some
	// node has it, else LabelZoneLegacy. A node's zone for the rules is its ZoneKey label, or the
	// other zone key's label when it lacks that one.
	ZoneKey string
	// AllowedZones are the zones the members' required node affinity (or nodeSelector) lists for a
	// zone key (seed "available-zones"), or, without such a list, the zones of the nodes that
	// affinity matches. Sorted.
	AllowedZones []string
	// ZoneList reports whether AllowedZones came from an explicit zone list (AllowedZones rule).
	ZoneList bool
	// StatefulSets and PodDisruptionBudgets are the cluster's objects (StatefulSets whose template
	// carries the cluster label or that control a member, PDBs selecting a member).
	StatefulSets         []*appsv1.StatefulSet
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget

	model   *Model
	b       *builder // during Build only
	allowed map[string]bool
	zones   []string          // node index → zone name for the rules (model.zoneNames[x])
	spread  []*spreadInstance // every distinct DoNotSchedule constraint instance
	terms   map[string]*affinityTerm
	// usable are the distinct node-level masks of the members' incoming specs: a node is usable
	// when one of them passes it (cordon, taints, node affinity); usableIn counts them per zone.
	usable    [][]reasonCode
	usableIn  map[string]int
	memberUse map[int]resources // node index → requests of the members bound to it
	classOnce sync.Once
	classes   []uint64 // node index → NodeClass, built on first use
}

// Z returns the number of allowed zones.
func (c *Cluster) Z() int { return len(c.AllowedZones) }

// Model returns the model the cluster belongs to.
func (c *Cluster) Model() *Model { return c.model }

// Key returns "namespace/name".
func (c *Cluster) Key() string { return c.Namespace + "/" + c.Name }

// zoneOfNode returns node n's zone as the cluster's rules read it ("" without a zone label).
func (c *Cluster) zoneOfNode(n int) string { return c.zones[n] }

// Shard is one shard of a cluster: the pods of one StatefulSet (or of one ShardLabel value).
type Shard struct {
	// Name is the StatefulSet's name (or the ShardLabel's value).
	Name string
	// Members index Cluster.Members.
	Members []int
	// StatefulSet is the StatefulSet controlling the shard's pods, nil when unknown.
	StatefulSet *appsv1.StatefulSet
}

// Member is one pod of a Redis cluster.
type Member struct {
	// Index is the member's position in Cluster.Members.
	Index int
	// Pod is the pod as it is now.
	Pod *corev1.Pod
	// Template is the pod as its StatefulSet would re-create it now: the current template's
	// labels (plus the controller's pod-name, pod-index and controller-revision-hash labels),
	// scheduling constraints, tolerations and resources, with the pod's name, namespace and
	// volumes. Equal to Pod when there is no StatefulSet.
	Template *corev1.Pod
	// Shard is the shard's name, ShardIndex its position in Cluster.Shards.
	Shard      string
	ShardIndex int
	// Ordinal is the StatefulSet ordinal parsed from the pod name (-1 when there is none).
	Ordinal int
	// Role is the Redis role: from Options.RoleLabel when building, or set by the caller from Redis.
	Role Role
	// Node is the index of the node the pod is bound to, -1 when it is not scheduled (or bound to a
	// node the snapshot lacks).
	Node int
	// Terminating is true when the pod has a deletionTimestamp: it is not counted anywhere.
	Terminating bool
	// Unschedulable is true for a Pending pod whose PodScheduled condition is False with reason
	// Unschedulable.
	Unschedulable bool

	sts       *appsv1.StatefulSet
	req       resources // the pod's requests
	cur, next *podSpec
}

// Key returns "namespace/name".
func (m *Member) Key() string { return m.Pod.Namespace + "/" + m.Pod.Name }

// Name returns the pod name.
func (m *Member) Name() string { return m.Pod.Name }

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

// Build converts a snapshot into a Model. It returns an error when a pod or StatefulSet carries a
// spread constraint, affinity term or node selector that cannot be parsed (the API server
// validates them, so this means a hand-written snapshot is malformed).
func Build(snap *Snapshot, opts Options) (*Model, error) {
	opts = opts.withDefaults()
	m := &Model{
		Options:         opts,
		nodeIndex:       make(map[string]int, len(snap.Nodes)),
		podsInNS:        map[string][]int32{},
		labelIdx:        map[labelIndexKey]map[string][]int32{},
		sharedAffinity:  map[string]*affinityEntry{},
		sharedTaints:    map[string][]bool{},
		nsLabels:        map[string]labels.Set{},
		domains:         map[string]*domainIndex{},
		ids:             newInterner(),
		eligibles:       map[[3]int32]*eligibility{},
		volumes:         map[string][]reasonCode{},
		zoneSets:        map[zoneSetKey][]string{},
		selectors:       map[string]labels.Selector{},
		reqByContainers: map[*corev1.Container]resources{},
		usableIn:        map[string]map[string]int{},
		pvcs:            make(map[string]*corev1.PersistentVolumeClaim, len(snap.PersistentVolumeClaims)),
		pvs:             make(map[string]*corev1.PersistentVolume, len(snap.PersistentVolumes)),
	}
	nodes := append([]*corev1.Node(nil), snap.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	m.Nodes = make([]*Node, len(nodes))
	m.zoneNames = [2][]string{make([]string, len(nodes)), make([]string, len(nodes))}
	m.allocatable = make([]resources, len(nodes))
	m.usedByAll = make([]resources, len(nodes))
	m.zoneKey = LabelZoneLegacy
	for i, n := range nodes {
		m.Nodes[i] = &Node{Index: i, Name: n.Name, Zone: zoneOf(n), Obj: n}
		m.nodeIndex[n.Name] = i
		m.allocatable[i] = allocatableOf(n)
		ga, hasGA := n.Labels[LabelZone]
		legacy, hasLegacy := n.Labels[LabelZoneLegacy]
		if hasGA {
			m.zoneKey = LabelZone
		}
		m.zoneNames[0][i], m.zoneNames[1][i] = legacy, ga
		if hasGA {
			m.zoneNames[0][i] = ga
		}
		if hasLegacy {
			m.zoneNames[1][i] = legacy
		}
	}
	for _, ns := range snap.Namespaces {
		m.nsLabels[ns.Name] = labels.Set(ns.Labels)
	}
	for _, pvc := range snap.PersistentVolumeClaims {
		m.pvcs[pvc.Namespace+"/"+pvc.Name] = pvc
	}
	for _, pv := range snap.PersistentVolumes {
		m.pvs[pv.Name] = pv
	}
	// Requests, by position in snap.Pods, computed in parallel.
	reqs := make([]resources, len(snap.Pods))
	parallel(len(snap.Pods), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if p := snap.Pods[i]; !isFinished(p) {
				reqs[i] = requestsOf(p)
			}
		}
	})
	m.pods = make([]*corev1.Pod, 0, len(snap.Pods))
	m.podNode = make([]int32, 0, len(snap.Pods))
	var lastNS string
	var lastNSPods *[]int32
	nsPods := map[string]*[]int32{}
	for i, p := range snap.Pods {
		if p.Namespace != lastNS || lastNSPods == nil {
			lastNS = p.Namespace
			if lastNSPods = nsPods[lastNS]; lastNSPods == nil {
				lastNSPods = new([]int32)
				nsPods[lastNS] = lastNSPods
				if _, ok := m.nsLabels[lastNS]; !ok {
					m.nsLabels[lastNS] = labels.Set{corev1.LabelMetadataName: lastNS}
				}
			}
		}
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" || isFinished(p) {
			continue
		}
		ni, ok := m.nodeIndex[p.Spec.NodeName]
		if !ok {
			continue
		}
		k := int32(len(m.pods))
		m.pods = append(m.pods, p)
		m.podNode = append(m.podNode, int32(ni))
		*lastNSPods = append(*lastNSPods, k)
		m.usedByAll[ni] = m.usedByAll[ni].add(reqs[i])
		m.anti.add(k, p)
	}
	for ns, pods := range nsPods {
		m.podsInNS[ns] = *pods
	}
	if err := m.buildClusters(snap, reqs); err != nil {
		return nil, err
	}
	return m, nil
}

func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// namespaceLabels returns a namespace's labels: from Snapshot.Namespaces, else the
// kubernetes.io/metadata.name label the API server sets on every namespace. Build fills the
// entries of every pod's namespace; later calls only read.
func (m *Model) namespaceLabels(ns string) labels.Set {
	if l, ok := m.nsLabels[ns]; ok {
		return l
	}
	return labels.Set{corev1.LabelMetadataName: ns}
}

// memberOf reports whether pod p (scheduled, unfinished) is a member of cluster c.
func (c *Cluster) memberOf(p *corev1.Pod) bool {
	if p.Namespace != c.Namespace {
		return false
	}
	v, ok := p.Labels[c.model.Options.ClusterLabel]
	return ok && v == c.Name
}

func (m *Model) buildClusters(snap *Snapshot, reqs []resources) error {
	key := m.Options.ClusterLabel
	type ck struct{ ns, name string }
	byCluster := map[ck]*Cluster{}
	var order []*Cluster
	get := func(ns, name string) *Cluster {
		k := ck{ns, name}
		c := byCluster[k]
		if c == nil {
			c = &Cluster{Namespace: ns, Name: name, model: m}
			byCluster[k] = c
			order = append(order, c)
		}
		return c
	}
	type nsName struct{ ns, name string }
	stsByName := make(map[nsName]*appsv1.StatefulSet, len(snap.StatefulSets))
	for _, s := range snap.StatefulSets {
		stsByName[nsName{s.Namespace, s.Name}] = s
		if v, ok := s.Spec.Template.Labels[key]; ok {
			c := get(s.Namespace, v)
			c.StatefulSets = append(c.StatefulSets, s)
		}
	}
	var last *Cluster
	for pi, p := range snap.Pods {
		v, ok := p.Labels[key]
		if !ok || isFinished(p) {
			continue
		}
		c := last
		if c == nil || c.Name != v || c.Namespace != p.Namespace {
			c = get(p.Namespace, v)
			last = c
		}
		mem := &Member{Pod: p, Node: -1, Ordinal: -1, Terminating: p.DeletionTimestamp != nil, req: reqs[pi]}
		if p.Spec.NodeName != "" {
			mem.Node = m.NodeIndex(p.Spec.NodeName)
		}
		mem.Unschedulable = isUnschedulable(p)
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == "StatefulSet" {
			mem.sts = stsByName[nsName{p.Namespace, ref.Name}]
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
		c.Members = append(c.Members, mem)
	}
	pdbs := m.pdbSelectors(newBuilder(m), snap.PodDisruptionBudgets)
	var todo []*Cluster
	for _, c := range order {
		if len(c.Members) > 0 { // else a StatefulSet scaled to zero, or pods not yet created
			todo = append(todo, c)
		}
	}
	// Clusters are converted independently: in parallel, each worker with its own builder.
	workers := min(runtime.GOMAXPROCS(0), 8, len(todo)/parallelClusters+1)
	errs := make([]error, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := newBuilder(m)
			for {
				k := int(next.Add(1)) - 1
				if k >= len(todo) {
					return
				}
				c := todo[k]
				c.b = b
				errs[k] = c.finish(pdbs)
				c.b = nil
			}
		}()
	}
	wg.Wait()
	for k, c := range todo {
		if errs[k] != nil {
			return fmt.Errorf("cluster %s: %w", c.Key(), errs[k])
		}
	}
	m.Clusters = todo
	sort.Slice(m.Clusters, func(i, j int) bool {
		if m.Clusters[i].Namespace != m.Clusters[j].Namespace {
			return m.Clusters[i].Namespace < m.Clusters[j].Namespace
		}
		return m.Clusters[i].Name < m.Clusters[j].Name
	})
	return nil
}

type pdbSelector struct {
	pdb *policyv1.PodDisruptionBudget
	sel labels.Selector
	// cluster is the value the selector requires for the cluster label (matchLabels), if any: the
	// PDB can only select members of that cluster.
	cluster  string
	byLabels bool
}

// pdbSelectors parses the PDBs' selectors by namespace. In policy/v1 an empty selector selects
// every pod of the namespace and a nil one none.
func (m *Model) pdbSelectors(b *builder, pdbs []*policyv1.PodDisruptionBudget) map[string][]pdbSelector {
	out := map[string][]pdbSelector{}
	for _, pdb := range pdbs {
		if pdb.Spec.Selector == nil {
			continue
		}
		sel, err := b.selector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		ps := pdbSelector{pdb: pdb, sel: sel}
		ps.cluster, ps.byLabels = pdb.Spec.Selector.MatchLabels[m.Options.ClusterLabel]
		out[pdb.Namespace] = append(out[pdb.Namespace], ps)
	}
	return out
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

// templatePod fills t with the pod sts would create in place of p (as the StatefulSet
// controller's newVersionedStatefulSetPod does): the template's labels, annotations and spec; the
// controller's pod-name and pod-index labels and the update revision as controller-revision-hash;
// p's identity. Volumes are p's (its claims from volumeClaimTemplates keep their names) plus
// template volumes p lacks. The template's spec is shared, not copied: a Template is read, never
// modified.
func templatePod(t, p *corev1.Pod, sts *appsv1.StatefulSet) {
	tmpl := &sts.Spec.Template
	t.TypeMeta = p.TypeMeta
	t.ObjectMeta = metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID,
		Annotations:     tmpl.Annotations,
		OwnerReferences: p.OwnerReferences,
	}
	t.Spec = tmpl.Spec
	t.Labels = templateLabels(p, sts)
	t.Spec.NodeName = ""
	t.Spec.Volumes = p.Spec.Volumes
	if len(tmpl.Spec.Volumes) > 0 {
		have := make(map[string]bool, len(p.Spec.Volumes))
		for _, v := range p.Spec.Volumes {
			have[v.Name] = true
		}
		var extra []corev1.Volume
		for _, v := range tmpl.Spec.Volumes {
			if !have[v.Name] {
				extra = append(extra, v)
			}
		}
		if len(extra) > 0 {
			t.Spec.Volumes = append(append([]corev1.Volume(nil), p.Spec.Volumes...), extra...)
		}
	}
}

// controllerLabels are the labels the StatefulSet controller sets on a pod besides the
// template's.
var controllerLabels = [...]string{StatefulSetPodNameLabel, appsv1.PodIndexLabel, appsv1.ControllerRevisionHashLabelKey}

// templateLabels returns the labels of the pod sts would create in place of p: the template's,
// the pod's pod-name and pod-index, and the update revision (else the pod's revision). When they
// equal p's labels, p's map is returned (read-only, shared).
func templateLabels(p *corev1.Pod, sts *appsv1.StatefulSet) map[string]string {
	tmpl := sts.Spec.Template.Labels
	rev, hasRev := sts.Status.UpdateRevision, sts.Status.UpdateRevision != ""
	same := true
	extra := 0
	for _, k := range controllerLabels {
		v, ok := p.Labels[k]
		if k == appsv1.ControllerRevisionHashLabelKey && hasRev {
			if !ok || v != rev {
				same = false
			}
			ok = true
		}
		if _, inTmpl := tmpl[k]; ok && !inTmpl {
			extra++
		}
	}
	if same && len(p.Labels) == len(tmpl)+extra {
		for k, v := range tmpl {
			if isControllerLabel(k) {
				continue
			}
			if w, ok := p.Labels[k]; !ok || w != v {
				same = false
				break
			}
		}
		if same {
			return p.Labels
		}
	}
	out := make(map[string]string, len(tmpl)+len(controllerLabels))
	for k, v := range tmpl {
		out[k] = v
	}
	for _, k := range controllerLabels {
		if v, ok := p.Labels[k]; ok {
			out[k] = v
		}
	}
	if hasRev {
		out[appsv1.ControllerRevisionHashLabelKey] = rev
	}
	return out
}

func isControllerLabel(k string) bool {
	for _, c := range controllerLabels {
		if k == c {
			return true
		}
	}
	return false
}

// finish derives N, shards, zones and the constraint instances of a cluster.
func (c *Cluster) finish(pdbs map[string][]pdbSelector) error {
	// Re-creation templates, allocated together.
	n := 0
	for _, mem := range c.Members {
		if mem.sts != nil {
			n++
		}
	}
	arena := make([]corev1.Pod, n)
	for _, mem := range c.Members {
		if mem.sts == nil {
			mem.Template = mem.Pod
			continue
		}
		mem.Template = &arena[0]
		arena = arena[1:]
		templatePod(mem.Template, mem.Pod, mem.sts)
	}
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
		s := c.Shards[si]
		s.Members = append(s.Members, i)
		if s.StatefulSet == nil && mem.sts != nil {
			s.StatefulSet = mem.sts
		}
	}
	// The StatefulSets controlling members belong to the cluster even when their template lacks
	// the cluster label.
	for _, sh := range c.Shards {
		for _, i := range sh.Members {
			if sts := c.Members[i].sts; sts != nil && !slices.Contains(c.StatefulSets, sts) {
				c.StatefulSets = append(c.StatefulSets, sts)
			}
		}
	}
	// N: the StatefulSets' desired replicas (nil means 1), else the pod count.
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
	for _, ps := range pdbs[c.Namespace] {
		if ps.byLabels && ps.cluster != c.Name {
			continue
		}
		for _, mem := range c.Members {
			if ps.sel.Matches(labels.Set(mem.Pod.Labels)) {
				c.PodDisruptionBudgets = append(c.PodDisruptionBudgets, ps.pdb)
				break
			}
		}
	}
	c.memberUse = map[int]resources{}
	for _, mem := range c.Members {
		if mem.Node >= 0 && !mem.Terminating {
			c.memberUse[mem.Node] = c.memberUse[mem.Node].add(mem.req)
		}
	}
	if err := c.buildSpecs(); err != nil {
		return err
	}
	c.findZones()
	return nil
}

// findZones sets ZoneKey, the allowed zones, and the usable nodes per zone.
func (c *Cluster) findZones() {
	m := c.model
	// The reference specs: each distinct re-creation template (the operator's current intent).
	var refs []*podSpec
	seen := map[*podSpec]bool{}
	for _, mem := range c.Members {
		if s := mem.next; !seen[s] {
			seen[s] = true
			refs = append(refs, s)
		}
	}
	c.ZoneKey = ""
	for _, s := range refs {
		if k := s.zoneKey; k != "" {
			c.ZoneKey = k
			break
		}
	}
	if c.ZoneKey == "" {
		c.ZoneKey = m.zoneKey
	}
	c.zones = m.zoneNames[0]
	if c.ZoneKey == LabelZoneLegacy {
		c.zones = m.zoneNames[1]
	}
	c.allowed = map[string]bool{}
	for _, s := range refs {
		if s.zoneList != nil {
			c.ZoneList = true
			for _, z := range s.zoneList {
				c.allowed[z] = true
			}
		}
	}
	if !c.ZoneList {
		for _, s := range refs {
			for _, z := range c.b.zonesAdmitted(s.affinityMask, c.ZoneKey == LabelZoneLegacy) {
				c.allowed[z] = true
			}
		}
	}
	for z := range c.allowed {
		c.AllowedZones = append(c.AllowedZones, z)
	}
	sort.Strings(c.AllowedZones)

	// Usable nodes: those passing the node-level checks of some member's incoming spec.
	var keys [][2]int32
	for _, mem := range c.Members {
		s := mem.incoming()
		if k := [2]int32{s.aff, s.tol}; !slices.Contains(keys, k) {
			keys = append(keys, k)
			c.usable = append(c.usable, s.static)
		}
	}
	c.usableIn = c.b.usableCounts(c, keys)
}

// isUsable reports whether node n passes the node-level checks (cordon, taints, node affinity)
// of some member's incoming spec.
func (c *Cluster) isUsable(n int) bool {
	for _, s := range c.usable {
		if s[n] == fitOK {
			return true
		}
	}
	return false
}

func collectZones(mask []bool, zones []string) []string {
	set := map[string]bool{}
	var out []string
	for i, ok := range mask {
		if ok && zones[i] != "" && !set[zones[i]] {
			set[zones[i]] = true
			out = append(out, zones[i])
		}
	}
	sort.Strings(out)
	return out
}

// zoneList returns the zones a pod's nodeSelector and required node affinity permit through
// `In` requirements on a zone key (seed 000's available-zones): per node selector term, the
// intersection of its zone requirements; over the terms, the union; intersected with a zone
// nodeSelector. It returns ok=false when some term (or the pod as a whole) admits any zone, and
// the key the list was written with.
func zoneList(p *corev1.Pod) (zones []string, key string, ok bool) {
	var fromSelector map[string]bool
	for _, k := range []string{LabelZone, LabelZoneLegacy} {
		if z, has := p.Spec.NodeSelector[k]; has {
			if fromSelector == nil {
				fromSelector = map[string]bool{z: true}
				key = k
			} else if !fromSelector[z] {
				fromSelector = map[string]bool{} // two different zones required: none
			}
		}
	}
	var fromAffinity map[string]bool
	if na := requiredNodeAffinity(p); na != nil && len(na.NodeSelectorTerms) > 0 {
		fromAffinity = map[string]bool{}
		for _, term := range na.NodeSelectorTerms {
			var termSet map[string]bool
			for _, r := range term.MatchExpressions {
				if !isZoneKey(r.Key) || r.Operator != corev1.NodeSelectorOpIn {
					continue
				}
				if key == "" {
					key = r.Key
				}
				vals := map[string]bool{}
				for _, v := range r.Values {
					if termSet == nil || termSet[v] {
						vals[v] = true
					}
				}
				termSet = vals
			}
			if termSet == nil {
				fromAffinity = nil // this term admits any zone
				break
			}
			for z := range termSet {
				fromAffinity[z] = true
			}
		}
	}
	var set map[string]bool
	switch {
	case fromSelector != nil && fromAffinity != nil:
		set = map[string]bool{}
		for z := range fromSelector {
			if fromAffinity[z] {
				set[z] = true
			}
		}
	case fromSelector != nil:
		set = fromSelector
	case fromAffinity != nil:
		set = fromAffinity
	default:
		return nil, "", false
	}
	zones = make([]string, 0, len(set))
	for z := range set {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	return zones, key, true
}
