package policies

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// reasonCode names why a node does not fit; the text is kube-scheduler's (v1.36) message.
type reasonCode uint8

const (
	fitOK reasonCode = iota
	reasonUnschedulable
	reasonNodeName
	reasonTaint
	reasonNodeAffinity
	reasonNodePorts
	reasonResources
	reasonDiskConflict
	reasonReadWriteOncePod
	reasonVolumeLimits
	reasonVolume
	reasonVolumeZone
	reasonSpreadMissingLabel
	reasonSpread
	reasonAffinity
	reasonAntiAffinity
	reasonExistingAntiAffinity
)

var reasonText = [...]string{
	fitOK:                      "",
	reasonUnschedulable:        "node(s) were unschedulable",
	reasonNodeName:             "node(s) didn't match the requested node name",
	reasonTaint:                "node(s) had untolerated taint(s)",
	reasonNodeAffinity:         "node(s) didn't match Pod's node affinity/selector",
	reasonNodePorts:            "node(s) didn't have free ports for the requested pod ports",
	reasonResources:            "node(s) had insufficient resources",
	reasonDiskConflict:         "node(s) had no available disk",
	reasonReadWriteOncePod:     "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod",
	reasonVolumeLimits:         "node(s) exceed max volume count",
	reasonVolume:               "node(s) didn't match PersistentVolume's node affinity",
	reasonVolumeZone:           "node(s) had no available volume zone",
	reasonSpreadMissingLabel:   "node(s) didn't match pod topology spread constraints (missing required label)",
	reasonSpread:               "node(s) didn't match pod topology spread constraints",
	reasonAffinity:             "node(s) didn't match pod affinity rules",
	reasonAntiAffinity:         "node(s) didn't match pod anti-affinity rules",
	reasonExistingAntiAffinity: "node(s) didn't satisfy existing pods anti-affinity rules",
}

// Candidates returns, in node order, the nodes where member i passes the filter when the other
// members are placed as p (p[i] is ignored): a Pending member with its own spec, any other member
// re-created from its StatefulSet's current template. The filter is kube-scheduler v1.36's
// default filter set, its plugins in the default profile's order, each in a file of its own:
// NodeUnschedulable, NodeName (a template's spec.nodeName), TaintToleration, NodeAffinity,
// NodePorts (host ports), NodeResourcesFit (every requested resource: CPU, memory, ephemeral
// storage, the pod count, hugepages and extended resources, with init containers, sidecars,
// overhead and pod-level resources as the scheduler sums them), VolumeRestrictions (inline disks
// two pods may not share, ReadWriteOncePod claims in use), NodeVolumeLimits (CSI attach limits
// from CSINodes), VolumeBinding (bound claims' PersistentVolume node affinity, unless
// Options.ReleaseReplicaClaims releases a replica's claims), VolumeZone, PodTopologySpread and
// InterPodAffinity. Deliberate differences: terminating pods are ignored everywhere (the
// scheduler keeps their requests, ports, volumes and anti-affinity until they are gone); unbound
// claims are not checked (VolumeBinding's provisioning, and NodeVolumeLimits' count of a claim
// through its StorageClass); VolumeAttachments without a pod on the node are not counted;
// NodeResourcesFit does not hand extended resources to DRA (DeviceClasses are not read); and
// nothing outside the scheduler's filters is checked: ResourceQuota, DRA claims, scoring. A
// re-created pod has the resources of the pod it replaces when that pod is of the StatefulSet's
// update revision (admission's LimitRange defaults and injected sidecars included), else the
// template's (Member.Template).
func (c *Cluster) Candidates(p Placement, i int) []int {
	f := c.newFitter(p, i)
	var out []int
	for n := range c.model.Nodes {
		if r, _ := f.check(n); r == fitOK {
			out = append(out, n)
		}
	}
	return out
}

// CandidatesIn is Candidates restricted to the nodes in among (node indices): the nodes of among,
// in among's order, where member i passes the filter under p. The planner calls it with one
// representative per class of interchangeable nodes (NodeClass), so that a step costs
// O(classes), not O(nodes).
func (c *Cluster) CandidatesIn(p Placement, i int, among []int) []int {
	f := c.newFitter(p, i)
	var out []int
	for _, n := range among {
		if r, _ := f.check(n); r == fitOK {
			out = append(out, n)
		}
	}
	return out
}

// Fits reports whether member i fits node n under placement p (as Candidates decides), and why
// not, in kube-scheduler's words (NodeResourcesFit's with every insufficient resource).
func (c *Cluster) Fits(p Placement, i, n int) (bool, string) {
	f := c.newFitter(p, i)
	r, detail := f.check(n)
	if r == fitOK {
		return true, ""
	}
	if r == reasonResources {
		detail = strings.Join(f.insufficientResources(n), ", ")
	}
	if detail != "" {
		return false, reasonText[r] + ": " + detail
	}
	return false, reasonText[r]
}

// FitReport says, for one member placed under one placement, where it fits and why every other
// node does not.
type FitReport struct {
	// Fits are the names of the nodes that pass the filter.
	Fits []string
	// Rejected maps each reason (kube-scheduler's wording; NodeResourcesFit's "Insufficient cpu",
	// "Insufficient ephemeral-storage", "Insufficient example.com/gpu", "Too many pods") to the
	// nodes it rejects, in node order. As in the scheduler's message, a node NodeResourcesFit
	// rejects is listed under every resource it lacks.
	Rejected map[string][]string
	// Nodes is the number of nodes judged (Fits plus the distinct nodes of Rejected).
	Nodes int
}

// maxRejectedNames is the number of node names Summary lists per reason; beyond it, it counts.
const maxRejectedNames = 10

// Summary renders the report like kube-scheduler's FailedScheduling message, with the nodes of
// each reason (the first 10, then how many more): "0/6 nodes are available: 1 node(s) didn't
// match pod anti-affinity rules [n5], 5 node(s) ...".
func (r FitReport) Summary() string {
	counts := make(map[string]int, len(r.Rejected))
	for k, names := range r.Rejected {
		counts[k] = len(names)
	}
	return fitSummary(r.Nodes, len(r.Fits), counts, r.Rejected)
}

// fitSummary renders FitReport.Summary from the number of nodes judged and of those that fit,
// and per reason the number of nodes it rejects and (at least the first maxRejectedNames of) their
// names.
func fitSummary(nodes, fits int, counts map[string]int, names map[string][]string) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if counts[keys[a]] != counts[keys[b]] {
			return counts[keys[a]] < counts[keys[b]]
		}
		return keys[a] < keys[b]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		n, some := counts[k], names[k]
		list := strings.Join(some[:min(len(some), maxRejectedNames)], " ")
		if n > maxRejectedNames {
			list += fmt.Sprintf(" … +%d more", n-maxRejectedNames)
		}
		parts = append(parts, fmt.Sprintf("%d %s [%s]", n, k, list))
	}
	s := fmt.Sprintf("%d/%d nodes are available", fits, nodes)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// ExplainSummary returns Explain(p, i).Summary() and the number of nodes where member i fits,
// without listing every node's name (only the names the summary shows are kept).
func (c *Cluster) ExplainSummary(p Placement, i int) (summary string, fits int) {
	f := c.newFitter(p, i)
	counts := map[string]int{}
	names := map[string][]string{}
	reject := func(why, node string) {
		counts[why]++
		if len(names[why]) < maxRejectedNames {
			names[why] = append(names[why], node)
		}
	}
	for n, node := range c.model.Nodes {
		r, _ := f.check(n)
		switch r {
		case fitOK:
			fits++
		case reasonResources:
			for _, why := range f.insufficientResources(n) {
				reject(why, node.Name)
			}
		default:
			reject(reasonText[r], node.Name)
		}
	}
	return fitSummary(len(c.model.Nodes), fits, counts, names), fits
}

// Explain runs the filter for member i on every node under placement p.
func (c *Cluster) Explain(p Placement, i int) FitReport {
	f := c.newFitter(p, i)
	rep := FitReport{Rejected: map[string][]string{}, Nodes: len(c.model.Nodes)}
	for n, node := range c.model.Nodes {
		r, _ := f.check(n)
		if r == fitOK {
			rep.Fits = append(rep.Fits, node.Name)
			continue
		}
		if r == reasonResources {
			// "Insufficient cpu", "Too many pods", …: every one NodeResourcesFit gives.
			for _, why := range f.insufficientResources(n) {
				rep.Rejected[why] = append(rep.Rejected[why], node.Name)
			}
			continue
		}
		rep.Rejected[reasonText[r]] = append(rep.Rejected[reasonText[r]], node.Name)
	}
	return rep
}

// fitter evaluates where one member may be placed under one placement: kube-scheduler's
// CycleState for one incoming pod. Everything that depends on the other members is computed once
// by newFitter, each plugin's part as its PreFilter would (spread counts, resource usage, the
// domains the members' (anti-)affinity blocks or offers); check then only reads it, so that
// checking a node costs O(constraints), not O(members).
type fitter struct {
	c    *Cluster
	i    int
	spec *podSpec
	// VolumeBinding, VolumeZone: the member's volume restrictions are lifted (its claims may be
	// released: Cluster.ClaimsReleasable).
	release bool
	// NodeResourcesFit: requests of the other members, per node; for the scalar resources the
	// pod requests, by slot of Cluster.scalars (set only when it requests any).
	use       map[int]resources
	scalarUse map[int][]int64
	// NodePorts: nodes where another member binds a host port the pod's conflict with.
	portNodes []int
	// VolumeRestrictions: nodes where another member uses a disk of the pod; whether another
	// member mounts one of its ReadWriteOncePod claims.
	diskNodes []int
	rwopInUse bool
	// NodeVolumeLimits: per node, the volumes other members placed there attach, of the drivers
	// of the pod's volumes.
	csiAt map[int][]csiVolume
	// PodTopologySpread, per constraint of the incoming pod: the other members' counts per domain,
	// the global minimum, and whether the pod matches its own selector (1 or 0).
	counts []map[int32]int
	mins   []int
	self   []int
	// InterPodAffinity. anti: domains where another member matches one of the incoming pod's
	// anti-affinity terms; existing: domains where another member's anti-affinity term matches
	// the incoming pod.
	anti, existing []domainRef
	// affinity[t]: domains of term t's key where another member matches every affinity term.
	affinity []map[int32]bool
	affAny   bool
	selfAff  bool // the incoming pod matches all its own affinity terms
}

// newFitter computes the state of member i's filter under placement p (p[i] is ignored). The
// other members are visited once, for every plugin that counts them.
func (c *Cluster) newFitter(p Placement, i int) *fitter {
	s := c.Members[i].incoming()
	f := &fitter{c: c, i: i, spec: s, use: map[int]resources{}}
	f.release = c.ClaimsReleasable(i)
	f.preFilterPodTopologySpread(p)
	f.preFilterInterPodAffinity()
	f.prepare()
	for j, nj := range p {
		if j == i || nj < 0 {
			continue
		}
		sj := c.specOf(j, p)
		f.use[nj] = f.use[nj].add(sj.requests) // NodeResourcesFit
		f.addInterPodAffinity(nj, sj)
		if s.rare {
			f.addRare(nj, sj)
		}
	}
	return f
}

// prepare builds, once per cluster, the indexes of the plugins the incoming pod needs beyond the
// common ones: NodeResourcesFit's scalar resources, NodeVolumeLimits.
func (f *fitter) prepare() {
	c, s := f.c, f.spec
	if s.scalars != nil {
		c.scalarOnce.Do(c.buildScalarIndex)
	}
	if s.csi != nil {
		c.csiOnce.Do(c.buildCSIIndex)
	}
}

// addRare counts another member, placed on node nj with spec sj, for the plugins few pods need
// (podSpec.rare): NodeResourcesFit's scalar resources, NodePorts, VolumeRestrictions and
// NodeVolumeLimits, each as its PreFilter or NodeInfo counts an existing pod.
func (f *fitter) addRare(nj int, sj *podSpec) {
	s := f.spec
	if s.scalars != nil && sj.scalars != nil {
		f.addScalars(nj, sj)
	}
	if s.ports != nil && sj.ports != nil && portsConflict(s.ports, sj.ports) {
		f.portNodes = append(f.portNodes, nj)
	}
	if s.disks != nil || s.rwop != nil {
		f.addVolumeRestrictions(nj, sj)
	}
	if s.csi != nil && sj.csi != nil {
		f.addCSIVolumes(nj, sj)
	}
}

// addRareFrom counts every other member placed under p with addRare (State.fitterFor, whose
// counts cover the common plugins only).
func (f *fitter) addRareFrom(p Placement) {
	if !f.spec.rare {
		return
	}
	f.prepare()
	c := f.c
	for j, nj := range p {
		if j != f.i && nj >= 0 {
			f.addRare(nj, c.specOfKind(j, c.kind(j, nj)))
		}
	}
}

// check returns fitOK when member f.i passes kube-scheduler's filters on node n, otherwise the
// first failing reason in the scheduler's plugin order (NodeUnschedulable, NodeName,
// TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, VolumeRestrictions,
// NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread, InterPodAffinity) and a detail
// (none for NodeResourcesFit: insufficientResources lists its reasons). Each plugin's Filter is
// in its filter_<plugin>.go file; the four node-level ones are precomputed per node (staticMask),
// and the plugins few pods need (host ports, scalar resources, inline disks, ReadWriteOncePod
// claims, CSI volumes) are skipped by a nil test for the others. The per-node parts of the
// common plugins are small enough for the compiler to inline them here (go build -gcflags=-m
// lists them): check runs for every node of every Candidates call, and a call per plugin and
// node costs about 7% more instructions on BenchmarkCandidates.
func (f *fitter) check(n int) (reasonCode, string) {
	s := f.spec
	if r := s.static[n]; r != fitOK {
		return r, "" // NodeUnschedulable, NodeName, TaintToleration, NodeAffinity
	}
	if s.ports != nil && !f.nodePortsFit(n) {
		return reasonNodePorts, ""
	}
	if !fits(f.c.model.allocatable[n], f.used(n), s.requests) || s.scalars != nil && !f.scalarFits(n) {
		return reasonResources, "" // NodeResourcesFit
	}
	if s.disks != nil || s.rwop != nil {
		if r := f.volumeRestrictionsFit(n); r != fitOK {
			return r, ""
		}
	}
	if s.csi != nil && !f.volumeLimitsFit(n) {
		return reasonVolumeLimits, ""
	}
	if s.volume != nil && s.volume[n] != fitOK && !f.release {
		return s.volume[n], "" // VolumeBinding, VolumeZone (volumeMask)
	}
	if in, skew := f.podTopologySpread(n); in != nil {
		return in.failure(n, skew)
	}
	// InterPodAffinity: the incoming pod's required affinity, its required anti-affinity, then
	// the existing pods' anti-affinity.
	if len(s.affinity) > 0 {
		if r, t := f.satisfyPodAffinity(n); r != fitOK {
			return r, t.failure()
		}
	}
	if r, detail := f.satisfyPodAntiAffinity(n); r != fitOK {
		return r, detail
	}
	return f.satisfyExistingPodsAntiAffinity(n), ""
}

// staticMask returns the node-level checks of a pod with node affinity aff and tolerations tol,
// naming node nodeName ("" for none): per node, fitOK or the first failing reason in
// kube-scheduler's filter order, NodeUnschedulable (toleratesUnschedulable), NodeName
// (nodeNameFits), TaintToleration (taintMask), NodeAffinity (nodeAffinityMask). They depend on
// the pod and the node only, so Build computes them once per (aff, tol) and check reads one
// entry; a pod naming a node (a template with spec.nodeName, rare) gets a mask of its own.
func (b *builder) staticMask(p *corev1.Pod, aff, tol int32, nodeName string) []reasonCode {
	m := b.m
	x := &b.ids
	k := [2]int32{aff, tol}
	mask, ok := x.statics[k]
	if !ok {
		affinity := x.affinity[aff].mask
		taints := x.taints[tol]
		cordonOK := toleratesUnschedulable(p)
		mask = make([]reasonCode, len(m.Nodes))
		for i, n := range m.Nodes {
			switch {
			case n.Obj.Spec.Unschedulable && !cordonOK:
				mask[i] = reasonUnschedulable
			case !taints[i]:
				mask[i] = reasonTaint
			case !affinity[i]:
				mask[i] = reasonNodeAffinity
			}
		}
		x.statics[k] = mask
	}
	if nodeName == "" {
		return mask
	}
	named := make([]reasonCode, len(mask))
	for i, n := range m.Nodes {
		named[i] = mask[i]
		if mask[i] != reasonUnschedulable && !nodeNameFits(nodeName, n.Name) {
			named[i] = reasonNodeName
		}
	}
	return named
}
