package policies

import (
	"fmt"
	"sort"
	"strings"
)

// usesCur reports whether member j, placed as p[j], runs with its current pod's spec: it stays on
// the node it is bound to, or it is a Pending pod the scheduler places. Otherwise (evicted and
// re-placed, terminating, lost with its node) it is re-created from its template.
func (c *Cluster) usesCur(j int, p Placement) bool {
	mem := c.Members[j]
	return mem.pending() || (p[j] >= 0 && p[j] == mem.Node && !mem.Terminating)
}

// specOf returns the spec in effect for member j under placement p (see usesCur).
func (c *Cluster) specOf(j int, p Placement) *podSpec {
	if c.usesCur(j, p) {
		return c.Members[j].cur
	}
	return c.Members[j].next
}

// counted reports whether member j, placed as p[j], is counted by spread instance in.
func (c *Cluster) counted(in *spreadInstance, j int, p Placement) bool {
	if p[j] < 0 || !in.eligible[p[j]] {
		return false
	}
	if c.usesCur(j, p) {
		return in.matchCur[j]
	}
	return in.matchNext[j]
}

// spreadCounts returns the matching members per domain of in under placement p, member skip left
// out (-1: none), and the global minimum: kube-scheduler's minMatchNum, the smallest count of
// matching pods (members and in.external) over the eligible domains, or 0 when there are fewer
// eligible domains than minDomains. A domain's count, kube-scheduler's TpValueToMatchNum, is
// in.external[d] + members[d]. The cost is O(members), whatever the number of domains.
func (c *Cluster) spreadCounts(in *spreadInstance, p Placement, skip int) (members map[int32]int, min int) {
	members = make(map[int32]int, len(p))
	for j := range p {
		if j != skip && c.counted(in, j, p) {
			members[in.dom.ofNode[p[j]]]++
		}
	}
	if in.numDomains < in.minDomains {
		return members, 0
	}
	// Domains holding a matching pod: every external one, and the members' others.
	occupied := len(in.external)
	for d := range members {
		if in.external[d] == 0 {
			occupied++
		}
	}
	if occupied < in.numDomains {
		return members, 0 // some eligible domain holds no matching pod
	}
	min = -1
	for d, n := range members {
		if t := in.external[d] + n; min < 0 || t < min {
			min = t
		}
	}
	// External domains in ascending order: the first one without members is the lowest of them.
	for _, e := range in.extAsc {
		if min >= 0 && e.count >= min {
			break
		}
		if members[e.dom] == 0 {
			min = e.count
			break
		}
	}
	return members, max(min, 0)
}

// fitter evaluates where one member may be placed under one placement. Everything that depends
// on the other members is computed once (spread counts, resource usage, the domains their
// (anti-)affinity blocks or offers), so that checking a node costs O(constraints), not O(members).
type fitter struct {
	c       *Cluster
	i       int
	spec    *podSpec
	release bool // the member's volume restrictions are lifted (ReleaseReplicaClaims)
	use     map[int]resources
	counts  []map[int32]int
	mins    []int
	self    []int
	// anti: domains where another member matches one of the incoming pod's anti-affinity terms;
	// existing: domains where another member's anti-affinity term matches the incoming pod.
	anti, existing []domainRef
	// affinity[t]: domains of term t's key where another member matches every affinity term.
	affinity []map[int32]bool
	affAny   bool
	selfAff  bool // the incoming pod matches all its own affinity terms
}

func (c *Cluster) newFitter(p Placement, i int) *fitter {
	m := c.model
	mem := c.Members[i]
	s := mem.incoming()
	f := &fitter{c: c, i: i, spec: s, use: map[int]resources{}}
	f.release = m.Options.ReleaseReplicaClaims && mem.Role == RoleReplica
	for _, idx := range s.spread {
		in := c.spread[idx]
		counts, min := c.spreadCounts(in, p, i)
		f.counts = append(f.counts, counts)
		f.mins = append(f.mins, min)
		self := 0
		if in.selector.Matches(s.labels) {
			self = 1
		}
		f.self = append(f.self, self)
	}
	if len(s.affinity) > 0 {
		f.affinity = make([]map[int32]bool, len(s.affinity))
		for k := range f.affinity {
			f.affinity[k] = map[int32]bool{}
		}
		f.selfAff = true
		for _, t := range s.affinity {
			if !t.matches(m, s.pod.Namespace, s.labels) {
				f.selfAff = false
			}
		}
	}
	for j, nj := range p {
		if j == i || nj < 0 {
			continue
		}
		sj := c.specOf(j, p)
		f.use[nj] = f.use[nj].add(sj.requests)
		ns := sj.pod.Namespace
		for _, t := range s.anti {
			if d := t.dom.ofNode[nj]; d >= 0 && t.matches(m, ns, sj.labels) {
				f.anti = append(f.anti, domainRef{t.dom, d})
			}
		}
		for _, t := range sj.anti {
			if d := t.dom.ofNode[nj]; d >= 0 && t.matches(m, s.pod.Namespace, s.labels) {
				f.existing = append(f.existing, domainRef{t.dom, d})
			}
		}
		if len(s.affinity) > 0 {
			all := true
			for _, t := range s.affinity {
				if !t.matches(m, ns, sj.labels) {
					all = false
					break
				}
			}
			if all {
				for k, t := range s.affinity {
					if d := t.dom.ofNode[nj]; d >= 0 {
						f.affinity[k][d] = true
						f.affAny = true
					}
				}
			}
		}
	}
	return f
}

func inDomains(refs []domainRef, n int) bool {
	for _, r := range refs {
		if r.dom.ofNode[n] == r.id {
			return true
		}
	}
	return false
}

// check returns fitOK when member f.i passes kube-scheduler's filters on node n, otherwise the
// first failing reason in the scheduler's plugin order (NodeUnschedulable, TaintToleration,
// NodeAffinity, NodeResourcesFit, VolumeBinding, VolumeZone, PodTopologySpread,
// InterPodAffinity) and a detail.
func (f *fitter) check(n int) (reasonCode, string) {
	c, s := f.c, f.spec
	m := c.model
	if r := s.static[n]; r != fitOK {
		return r, ""
	}
	// NodeResourcesFit: the node's pods without the members as the snapshot has them, plus the
	// members as placed.
	used := m.usedByAll[n].sub(c.memberUse[n]).add(f.use[n])
	if why := fits(m.allocatable[n], used, s.requests); why != "" {
		return reasonResources, why
	}
	if s.volume != nil && s.volume[n] != fitOK && !f.release {
		return s.volume[n], ""
	}
	// PodTopologySpread: 'existing matching num' + 'self match' - 'global minimum' <= 'maxSkew'.
	for k, idx := range s.spread {
		in := c.spread[idx]
		d := in.dom.ofNode[n]
		if d < 0 {
			return reasonSpreadMissingLabel, in.constraint.TopologyKey
		}
		if skew := in.external[d] + f.counts[k][d] + f.self[k] - f.mins[k]; skew > in.maxSkew {
			return reasonSpread, fmt.Sprintf("%s skew %d > maxSkew %d", in.constraint.TopologyKey, skew, in.maxSkew)
		}
	}
	// InterPodAffinity: the incoming pod's required affinity (satisfyPodAffinity), its required
	// anti-affinity, then the existing pods' anti-affinity.
	if len(s.affinity) > 0 {
		exist := true
		for k, t := range s.affinity {
			d := t.dom.ofNode[n]
			if d < 0 {
				return reasonAffinity, t.key + " (missing label)"
			}
			if !s.affinityExt[k][d] && !f.affinity[k][d] {
				exist = false
			}
		}
		// The first pod of a series with affinity to itself: no pod matches anywhere, and the
		// pod matches its own terms.
		if !exist && (s.affinityAny || f.affAny || !f.selfAff) {
			return reasonAffinity, ""
		}
	}
	for _, t := range s.anti {
		if d := t.dom.ofNode[n]; d >= 0 && t.external[d] {
			return reasonAntiAffinity, t.key
		}
	}
	for _, r := range f.anti {
		if r.dom.ofNode[n] == r.id {
			return reasonAntiAffinity, r.dom.names[r.id]
		}
	}
	if inDomains(s.extAnti, n) || inDomains(f.existing, n) {
		return reasonExistingAntiAffinity, ""
	}
	return fitOK, ""
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

// Summary renders the report like kube-scheduler's FailedScheduling message:
// "0/6 nodes are available: 1 node(s) didn't match pod anti-affinity rules [n5], 5 node(s) ...".
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
		parts = append(parts, fmt.Sprintf("%d %s [%s]", len(r.Rejected[k]), k, strings.Join(r.Rejected[k], " ")))
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
