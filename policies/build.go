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

// Build converts a snapshot into a Model. It returns an error when a pod or StatefulSet carries a
// spread constraint, affinity term or node selector that cannot be parsed (the API server
// validates them, so this means a hand-written snapshot is malformed).
func Build(snap *Snapshot, opts Options) (*Model, error) {
	opts = opts.withDefaults()
	rules, err := resolveRules(opts.Rules)
	if err != nil {
		return nil, err
	}
	m := &Model{
		rules:          rules,
		Options:        opts,
		nodeIndex:      make(map[string]int, len(snap.Nodes)),
		podsInNS:       map[string][]int32{},
		labelIdx:       map[labelIndexKey]map[string][]int32{},
		sharedAffinity: map[string]*affinityEntry{},
		sharedTaints:   map[string][]bool{},
		nsLabels:       map[string]labels.Set{},
		domains:        map[string]*domainIndex{},
		pvcs:           make(map[string]*corev1.PersistentVolumeClaim, len(snap.PersistentVolumeClaims)),
		pvs:            make(map[string]*corev1.PersistentVolume, len(snap.PersistentVolumes)),
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
		if leaving, why := NodeLeaving(n, opts.DrainTaints); leaving {
			m.Nodes[i].Leaving = why
		}
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
	for x := range m.zoneIDs {
		ids := map[string]int32{}
		m.zoneIDs[x] = make([]int32, len(nodes))
		for i, z := range m.zoneNames[x] {
			m.zoneIDs[x][i] = firstSeen(ids, &m.zoneIDNames[x], z)
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
	// Requests, by position in snap.Pods, computed in parallel; the scalar resources of the few
	// pods requesting any in Model.podScalars.
	reqs := make([]resources, len(snap.Pods))
	var scalarsMu sync.Mutex
	parallel(len(snap.Pods), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if p := snap.Pods[i]; !isFinished(p) {
				r := requestsOf(p)
				reqs[i] = r.resources
				if r.scalars != nil {
					scalarsMu.Lock()
					if m.podScalars == nil {
						m.podScalars = map[*corev1.Pod][]scalarRequest{}
					}
					m.podScalars[p] = r.scalars
					scalarsMu.Unlock()
				}
			}
		}
	})
	// The clusters' members and the PDBs' selectors read neither the pods' index nor the node usage
	// the pod pass below builds: they are gathered meanwhile.
	var (
		collected []*Cluster
		pdbs      map[string][]pdbSelector
		gather    sync.WaitGroup
	)
	gather.Add(2)
	go func() {
		defer gather.Done()
		collected = m.collectClusters(snap, reqs)
	}()
	go func() {
		defer gather.Done()
		pdbs = m.pdbSelectors(snap.PodDisruptionBudgets)
	}()
	m.pods = make([]*corev1.Pod, 0, len(snap.Pods))
	m.podNode = make([]int32, 0, len(snap.Pods))
	m.anti.reserve(snap.Pods)
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
		m.addRare(k, p, m.podScalars[p])
		m.anti.add(k, p)
	}
	m.buildCSI(snap.CSINodes)
	for ns, pods := range nsPods {
		m.podsInNS[ns] = *pods
	}
	gather.Wait()
	if err := m.finishClusters(collected, pdbs); err != nil {
		return nil, err
	}
	m.buildServiceAddrs(snap)
	return m, nil
}

// isWorkload reports whether a workload whose pods carry podLabels is a Redis workload for
// Options.WorkloadSelector (always when it is nil or empty).
func (m *Model) isWorkload(podLabels map[string]string) bool { return isWorkload(m.Options, podLabels) }

func isWorkload(opts Options, podLabels map[string]string) bool {
	sel := opts.WorkloadSelector
	return sel == nil || sel.Empty() || sel.Matches(labels.Set(podLabels))
}

// WhyNotMember says why pod p, which carries the cluster label, is not a member of its cluster, ""
// when it is, by opts' WorkloadSelector and RecreatingOwners; sts is the pod's StatefulSet when
// its controller is one the caller holds (nil otherwise). A member is a pod a Redis workload
// owns (its controller is a StatefulSet whose template the workload selector matches, or,
// matched by the pod's own labels, a StatefulSet the caller lacks or a controller of a kind in
// RecreatingOwners), or a pod without a controller (a Redis node run by hand, never evicted). A
// Job's pod (the chart's cluster-update Job) and another controller's (a Deployment's ReplicaSet
// of the same Helm release, the rebalancer's own pods) are never members. Build leaves such pods
// out of their cluster (Cluster.NotMembers); the eviction guard does not judge them.
func WhyNotMember(p *corev1.Pod, sts *appsv1.StatefulSet, opts Options) string {
	var kind, owner string
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		kind, owner = ref.Kind, ref.Name
	}
	return notMember(opts, p, kind, owner, sts)
}

func notMember(opts Options, p *corev1.Pod, kind, owner string, sts *appsv1.StatefulSet) string {
	switch {
	case kind == "Job" || kind == "CronJob":
		return fmt.Sprintf("owned by %s %s: a Job's pod is never a Redis cluster member", kind, owner)
	case kind == "StatefulSet" && sts != nil:
		if !isWorkload(opts, sts.Spec.Template.Labels) {
			return fmt.Sprintf("owned by StatefulSet %s, whose template the workload selector %s does not match", owner, opts.WorkloadSelector)
		}
	case kind == "StatefulSet", slices.Contains(opts.RecreatingOwners, kind):
		if !isWorkload(opts, p.Labels) {
			return fmt.Sprintf("owned by %s %s, and the workload selector %s does not match its labels", kind, owner, opts.WorkloadSelector)
		}
	case kind == "":
		// A pod without a controller: a Redis node run by hand. It is judged (and never
		// evicted: nothing would re-create it).
	default:
		return fmt.Sprintf("owned by %s %s: not a Redis workload (a StatefulSet, or one of recreatingOwners)", kind, owner)
	}
	return ""
}

// addRare records what scheduled pod k (pods[k], on podNode[k]) gives the plugins few pods need:
// its scalar requests (NodeResourcesFit), host ports (NodePorts) and inline disks
// (VolumeRestrictions).
func (m *Model) addRare(k int32, p *corev1.Pod, scalars []scalarRequest) {
	n := m.podNode[k]
	if scalars != nil {
		if m.usedScalar == nil {
			m.usedScalar = make([]map[corev1.ResourceName]int64, len(m.Nodes))
		}
		if m.usedScalar[n] == nil {
			m.usedScalar[n] = map[corev1.ResourceName]int64{}
		}
		for _, r := range scalars {
			m.usedScalar[n][r.name] += r.qty
		}
	}
	for _, hp := range hostPortsOf(p) {
		if m.hostPorts == nil {
			m.hostPorts = map[portKey][]portUse{}
		}
		key := portKey{hp.protocol, hp.port}
		m.hostPorts[key] = append(m.hostPorts[key], portUse{k, hp.ip})
	}
	for k2 := range p.Spec.Volumes {
		if needsDiskCheck(&p.Spec.Volumes[k2]) {
			m.diskPods = append(m.diskPods, k)
			break
		}
	}
}

func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

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

// collectClusters groups the snapshot's pods carrying the cluster label into clusters (in order
// of first sight), each with its members (pods of a Redis workload) and NotMembers, and the
// StatefulSets whose template carries the label; reqs are the pods' requests by position. It
// reads the snapshot, the options and the node index only.
func (m *Model) collectClusters(snap *Snapshot, reqs []resources) []*Cluster {
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
		if v, ok := s.Spec.Template.Labels[key]; ok && m.isWorkload(s.Spec.Template.Labels) {
			c := get(s.Namespace, v)
			c.StatefulSets = append(c.StatefulSets, s)
		}
	}
	var last *Cluster
	var lastKind, lastOwner, lastRef string
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
		var kind, owner string
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
			kind, owner = ref.Kind, ref.Name
		}
		var sts *appsv1.StatefulSet
		if kind == "StatefulSet" {
			sts = stsByName[nsName{p.Namespace, owner}]
		}
		if why := notMember(m.Options, p, kind, owner, sts); why != "" {
			c.NotMembers = append(c.NotMembers, NotMember{Pod: p, Why: why})
			if c.notMember == nil {
				c.notMember = map[*corev1.Pod]bool{}
			}
			c.notMember[p] = true
			if m.notMembers == nil {
				m.notMembers = map[*corev1.Pod]bool{}
			}
			m.notMembers[p] = true
			continue
		}
		mem := &Member{Pod: p, Node: -1, Ordinal: -1, Terminating: p.DeletionTimestamp != nil, req: reqs[pi], sts: sts}
		if p.Spec.NodeName != "" {
			mem.Node = m.NodeIndex(p.Spec.NodeName)
		}
		mem.Unschedulable = isUnschedulable(p)
		if kind != "" {
			// One string per owner: a StatefulSet's pods are listed together.
			if kind != lastKind || owner != lastOwner {
				lastKind, lastOwner, lastRef = kind, owner, kind+"/"+owner
			}
			mem.Owner = lastRef
		}
		if kind == "StatefulSet" {
			if i := strings.LastIndex(p.Name, "-"); i >= 0 && p.Name[:i] == owner {
				if o, err := strconv.Atoi(p.Name[i+1:]); err == nil {
					mem.Ordinal = o
				}
			}
		}
		m.ownerShard(mem, owner)
		m.ownerEvictable(mem, kind, owner)
		if m.Options.RoleLabel != "" {
			mem.Role = ParseRole(p.Labels[m.Options.RoleLabel])
		}
		c.Members = append(c.Members, mem)
	}
	return order
}

// finishClusters finishes the collected clusters that have members (Cluster.finish, in parallel,
// each worker with its own builder) and sets Model.Clusters, sorted by namespace and name.
func (m *Model) finishClusters(order []*Cluster, pdbs map[string][]pdbSelector) error {
	var todo []*Cluster
	for _, c := range order {
		// Else a StatefulSet scaled to zero, pods not yet created, or no Redis workload at all
		// (only pods of other owners share the label).
		if len(c.Members) > 0 {
			sort.Slice(c.NotMembers, func(i, j int) bool { return c.NotMembers[i].Pod.Name < c.NotMembers[j].Pod.Name })
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

// memberOf reports whether pod p (scheduled, unfinished) is a member of cluster c: the rules
// count it through the cluster's placement, and other pods (NotMembers among them) as the model
// has them.
func (c *Cluster) memberOf(p *corev1.Pod) bool {
	if p.Namespace != c.Namespace {
		return false
	}
	v, ok := p.Labels[c.model.Options.ClusterLabel]
	return ok && v == c.Name && !c.notMember[p]
}

// Admits reports whether pod p, listed afresh, is one of the cluster's pods by the rules Build
// picks members with: it carries the cluster label's value in the cluster's namespace, is not
// finished, and a workload of the cluster owns it (not a Job's pod, nor another app's of the same
// Helm release). The executor filters the pods it lists by the cluster label with it.
func (c *Cluster) Admits(p *corev1.Pod) bool {
	m := c.model
	if p.Namespace != c.Namespace || p.Labels[m.Options.ClusterLabel] != c.Name || isFinished(p) {
		return false
	}
	var kind, owner string
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		kind, owner = ref.Kind, ref.Name
	}
	var sts *appsv1.StatefulSet
	if kind == "StatefulSet" {
		for _, s := range c.StatefulSets {
			if s.Name == owner {
				sts = s
			}
		}
	}
	return notMember(m.Options, p, kind, owner, sts) == ""
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

type pdbSelector struct {
	pdb *policyv1.PodDisruptionBudget
	// sel is the parsed selector when it has matchExpressions; otherwise (nil) the selector is its
	// matchLabels, matched as labels.SelectorFromValidatedSet would match them (every pair present;
	// none: every pod) without parsing: pairs, but the cluster label's (which every member of the
	// one cluster the PDB is matched against carries: finish skips the others).
	sel   labels.Selector
	pairs []labelPair
	// cluster is the value the selector requires for the cluster label (matchLabels), if any: the
	// PDB can only select members of that cluster.
	cluster  string
	byLabels bool
}

// matches reports whether the selector selects a pod with labels l.
func (ps *pdbSelector) matches(l map[string]string) bool {
	if ps.sel != nil {
		return ps.sel.Matches(labels.Set(l))
	}
	for _, kv := range ps.pairs {
		if w, ok := l[kv.key]; !ok || w != kv.value {
			return false
		}
	}
	return true
}

// pdbSelectors parses the PDBs' selectors by namespace. In policy/v1 an empty selector selects
// every pod of the namespace and a nil one none. Only selectors with matchExpressions are parsed
// (pdbSelector.matches).
func (m *Model) pdbSelectors(pdbs []*policyv1.PodDisruptionBudget) map[string][]pdbSelector {
	// Each namespace's selectors are a window of one array, sized by a first count.
	count := map[string]int{}
	for _, pdb := range pdbs {
		if pdb.Spec.Selector != nil {
			count[pdb.Namespace]++
		}
	}
	all := make([]pdbSelector, 0, len(pdbs))
	out := make(map[string][]pdbSelector, len(count))
	for ns, n := range count {
		out[ns] = all[len(all) : len(all) : len(all)+n]
		all = all[:len(all)+n]
	}
	for _, pdb := range pdbs {
		ls := pdb.Spec.Selector
		if ls == nil {
			continue
		}
		ps := pdbSelector{pdb: pdb}
		ps.cluster, ps.byLabels = ls.MatchLabels[m.Options.ClusterLabel]
		if len(ls.MatchExpressions) > 0 {
			var err error
			if ps.sel, err = metav1.LabelSelectorAsSelector(ls); err != nil {
				continue
			}
		} else {
			for k, v := range ls.MatchLabels {
				if k != m.Options.ClusterLabel {
					ps.pairs = append(ps.pairs, labelPair{k, v})
				}
			}
			slices.SortFunc(ps.pairs, func(a, b labelPair) int { return strings.Compare(a.key, b.key) })
		}
		out[pdb.Namespace] = append(out[pdb.Namespace], ps)
	}
	return out
}

// finish derives N, shards, zones and the constraint instances of a cluster.
func (c *Cluster) finish(pdbs map[string][]pdbSelector) error {
	c.groupShards(nil)
	c.ShardSource = c.model.Options.ShardSource
	if c.ShardSource.Kind == ShardAuto {
		c.ShardSource.Kind = ShardOwner
	}
	c.Warnings = c.ownerWarnings()
	// The StatefulSets controlling members belong to the cluster even when their template lacks
	// the cluster label.
	for _, mem := range c.Members {
		if sts := mem.sts; sts != nil && !slices.Contains(c.StatefulSets, sts) {
			c.StatefulSets = append(c.StatefulSets, sts)
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
	// Whether a PDB selects some member; the search starts from the member the previous PDB
	// selected (a shard's PDB selects a run of members sorted by shard, like the PDBs' order).
	from := 0
	for _, ps := range pdbs[c.Namespace] {
		if ps.byLabels && ps.cluster != c.Name {
			continue
		}
		for k := range c.Members {
			j := (from + k) % len(c.Members)
			if ps.matches(c.Members[j].Pod.Labels) {
				c.PodDisruptionBudgets = append(c.PodDisruptionBudgets, ps.pdb)
				from = j
				break
			}
		}
	}
	c.memberUse = make(map[int]resources, len(c.Members))
	for _, mem := range c.Members {
		if mem.Node >= 0 && !mem.Terminating {
			c.memberUse[mem.Node] = c.memberUse[mem.Node].add(mem.req)
		}
	}
	c.notMemberPods = c.scheduledNotMembers()
	if err := c.buildSpecs(); err != nil {
		return err
	}
	c.findClaims()
	c.findZones()
	return nil
}
