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
	reasonTaint
	reasonNodeAffinity
	reasonResources
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
	reasonTaint:                "node(s) had untolerated taint(s)",
	reasonNodeAffinity:         "node(s) didn't match Pod's node affinity/selector",
	reasonResources:            "node(s) had insufficient resources",
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
// re-created from its StatefulSet's current template. The filter mirrors kube-scheduler v1.36's
// filter plugins in their default order: NodeUnschedulable, TaintToleration, NodeAffinity,
// NodeResourcesFit (CPU in millicores, memory in bytes, pod count), VolumeBinding (bound claims'
// PersistentVolume node affinity, unless Options.ReleaseReplicaClaims releases a replica's
// claims), VolumeZone, PodTopologySpread and InterPodAffinity. Deliberate differences: terminating
// pods are ignored everywhere (the scheduler keeps their requests and anti-affinity until they
// are gone), extended resources, host ports and unbound claims are not checked.
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
// not, in kube-scheduler's words.
func (c *Cluster) Fits(p Placement, i, n int) (bool, string) {
	r, detail := c.newFitter(p, i).check(n)
	if r == fitOK {
		return true, ""
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
	// "Insufficient memory", "Too many pods") to the nodes it rejects, in node order.
	Rejected map[string][]string
}

// maxRejectedNames is the number of node names Summary lists per reason; beyond it, it counts.
const maxRejectedNames = 10

// Summary renders the report like kube-scheduler's FailedScheduling message, with the nodes of
// each reason (the first 10, then how many more): "0/6 nodes are available: 1 node(s) didn't
// match pod anti-affinity rules [n5], 5 node(s) ...".
func (r FitReport) Summary() string {
	total := len(r.Fits)
	keys := make([]string, 0, len(r.Rejected))
	for k, v := range r.Rejected {
		total += len(v)
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if len(r.Rejected[keys[a]]) != len(r.Rejected[keys[b]]) {
			return len(r.Rejected[keys[a]]) < len(r.Rejected[keys[b]])
		}
		return keys[a] < keys[b]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		names := r.Rejected[k]
		list := strings.Join(names[:min(len(names), maxRejectedNames)], " ")
		if len(names) > maxRejectedNames {
			list += fmt.Sprintf(" … +%d more", len(names)-maxRejectedNames)
		}
		parts = append(parts, fmt.Sprintf("%d %s [%s]", len(names), k, list))
	}
	s := fmt.Sprintf("%d/%d nodes are available", len(r.Fits), total)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// Explain runs the filter for member i on every node under placement p.
func (c *Cluster) Explain(p Placement, i int) FitReport {
	f := c.newFitter(p, i)
	rep := FitReport{Rejected: map[string][]string{}}
	for n, node := range c.model.Nodes {
		r, detail := f.check(n)
		if r == fitOK {
			rep.Fits = append(rep.Fits, node.Name)
			continue
		}
		why := reasonText[r]
		if r == reasonResources {
			why = detail // "Insufficient cpu", "Too many pods", as NodeResourcesFit says
		}
		rep.Rejected[why] = append(rep.Rejected[why], node.Name)
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
	// NodeResourcesFit: requests of the other members, per node.
	use map[int]resources
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
	for j, nj := range p {
		if j == i || nj < 0 {
			continue
		}
		sj := c.specOf(j, p)
		f.use[nj] = f.use[nj].add(sj.requests) // NodeResourcesFit
		f.addInterPodAffinity(nj, sj)
	}
	return f
}

// check returns fitOK when member f.i passes kube-scheduler's filters on node n, otherwise the
// first failing reason in the scheduler's plugin order (NodeUnschedulable, TaintToleration,
// NodeAffinity, NodeResourcesFit, VolumeBinding, VolumeZone, PodTopologySpread,
// InterPodAffinity) and a detail. Each plugin's Filter is in its filter_<plugin>.go file; the
// three node-level ones are precomputed per node (staticMask). The per-node parts are small
// enough for the compiler to inline them here (go build -gcflags=-m lists them): check runs for
// every node of every Candidates call, and a call per plugin and node costs about 7% more
// instructions on BenchmarkCandidates.
func (f *fitter) check(n int) (reasonCode, string) {
	s := f.spec
	if r := s.static[n]; r != fitOK {
		return r, "" // NodeUnschedulable, TaintToleration, NodeAffinity
	}
	if why := fits(f.c.model.allocatable[n], f.used(n), s.requests); why != "" {
		return reasonResources, why // NodeResourcesFit
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

// staticMask returns the node-level checks of a pod with node affinity aff and tolerations tol:
// per node, fitOK or the first failing reason in kube-scheduler's filter order, NodeUnschedulable
// (toleratesUnschedulable), TaintToleration (taintMask), NodeAffinity (nodeAffinityMask). They
// depend on the pod and the node only, so Build computes them once per (aff, tol) and check
// reads one entry.
func (b *builder) staticMask(p *corev1.Pod, aff, tol int32) []reasonCode {
	m := b.m
	x := &b.ids
	k := [2]int32{aff, tol}
	if mask, ok := x.statics[k]; ok {
		return mask
	}
	affinity := x.affinity[aff].mask
	taints := x.taints[tol]
	cordonOK := toleratesUnschedulable(p)
	mask := make([]reasonCode, len(m.Nodes))
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
	return mask
}
