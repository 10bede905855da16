package policies

import (
	"fmt"
	"sort"
	"strings"
)

// specOf returns the spec in effect for member j under placement p: the running pod's while j is
// still on its original node, the re-creation template's once it has been moved or is unplaced.
func (c *Cluster) specOf(j int, p Placement) *podSpec {
	mem := c.Members[j]
	if p[j] >= 0 && p[j] == mem.Node && !mem.Terminating {
		return mem.cur
	}
	return mem.next
}

// spreadCounts returns the matching pods per domain of in under placement p, member skip left out
// (-1: none), and the global minimum: kube-scheduler's TpValueToMatchNum and minMatchNum (0 when
// there are fewer eligible domains than minDomains).
func (c *Cluster) spreadCounts(in *spreadInstance, p Placement, skip int) (counts map[int]int, min int) {
	counts = make(map[int]int, len(in.external)+len(p))
	for d, n := range in.external {
		counts[d] = n
	}
	for j, n := range p {
		if j == skip || n < 0 || !in.eligible[n] || !in.matches[j] {
			continue
		}
		counts[in.dom.ofNode[n]]++
	}
	if in.numDomains < in.minDomains {
		return counts, 0
	}
	nonzero := 0
	min = -1
	for _, v := range counts {
		if v > 0 {
			nonzero++
		}
		if min < 0 || v < min {
			min = v
		}
	}
	if nonzero < in.numDomains || min < 0 {
		min = 0
	}
	return counts, min
}

// sameDomain reports whether nodes a and b share a value of topology key.
func (c *Cluster) sameDomain(key string, a, b int) bool {
	d := c.model.domain(key)
	return d.ofNode[a] >= 0 && d.ofNode[a] == d.ofNode[b]
}

// fitter evaluates where one member may be re-placed under one placement; spread counts are
// computed once and shared by every node checked.
type fitter struct {
	c      *Cluster
	p      Placement
	i      int
	spec   *podSpec
	counts []map[int]int
	mins   []int
}

func (c *Cluster) newFitter(p Placement, i int) *fitter {
	f := &fitter{c: c, p: p, i: i, spec: c.Members[i].next}
	for _, idx := range f.spec.spread {
		counts, min := c.spreadCounts(c.spread[idx], p, i)
		f.counts = append(f.counts, counts)
		f.mins = append(f.mins, min)
	}
	return f
}

// check returns fitOK when member f.i, re-created from its template, passes kube-scheduler's
// filters on node n, otherwise the first failing reason.
func (f *fitter) check(n int) (reasonCode, string) {
	c, p, i, s := f.c, f.p, f.i, f.spec
	mem := c.Members[i]
	if r := s.static[n]; r != fitOK {
		return r, ""
	}
	if s.volume != nil && !s.volume[n] && !(c.model.Options.ReleaseReplicaClaims && mem.Role == RoleReplica) {
		return reasonVolume, ""
	}
	// NodeResourcesFit.
	used := c.usedOther[n]
	for j, nj := range p {
		if j != i && nj == n {
			used = used.add(c.specOf(j, p).requests)
		}
	}
	if why := fits(c.model.allocatable[n], used, s.requests); why != "" {
		return reasonResources, why
	}
	// PodTopologySpread: 'existing matching num' + 'self match' - 'global minimum' <= 'maxSkew'.
	for k, idx := range s.spread {
		in := c.spread[idx]
		d := in.dom.ofNode[n]
		if d < 0 {
			return reasonSpreadMissingLabel, in.constraint.TopologyKey
		}
		self := 0
		if in.selector.Matches(s.labels) {
			self = 1
		}
		if skew := f.counts[k][d] + self - f.mins[k]; skew > in.maxSkew {
			return reasonSpread, fmt.Sprintf("%s skew %d > maxSkew %d", in.constraint.TopologyKey, skew, in.maxSkew)
		}
	}
	// InterPodAffinity: the incoming pod's required anti-affinity, and the placed pods' against it.
	for _, t := range s.anti {
		if t.external[c.model.domain(t.key).ofNode[n]] {
			return reasonAntiAffinity, t.key
		}
		for j, nj := range p {
			if j != i && nj >= 0 && t.matches(c.Members[j].Pod) && c.sameDomain(t.key, nj, n) {
				return reasonAntiAffinity, fmt.Sprintf("%s (%s)", t.key, c.Members[j].Pod.Name)
			}
		}
	}
	for j, nj := range p {
		if j == i || nj < 0 {
			continue
		}
		for _, t := range c.specOf(j, p).anti {
			if t.matches(s.pod) && c.sameDomain(t.key, nj, n) {
				return reasonAntiAffinity, fmt.Sprintf("%s (%s)", t.key, c.Members[j].Pod.Name)
			}
		}
	}
	for _, t := range s.affinity {
		if !f.affinitySatisfied(t, n) {
			return reasonAffinity, t.key
		}
	}
	return fitOK, ""
}

// affinitySatisfied mirrors InterPodAffinity for one required affinity term: some pod matching it
// runs in n's domain, or no pod matches it anywhere and the incoming pod matches it itself.
func (f *fitter) affinitySatisfied(t affinityTerm, n int) bool {
	c := f.c
	if t.external[c.model.domain(t.key).ofNode[n]] {
		return true
	}
	any := len(t.external) > 0
	for j, nj := range f.p {
		if j == f.i || nj < 0 || !t.matches(c.Members[j].Pod) {
			continue
		}
		any = true
		if c.sameDomain(t.key, nj, n) {
			return true
		}
	}
	return !any && t.matches(f.spec.pod)
}

// Candidates returns, in node order, the nodes where member i, re-created from its StatefulSet's
// current template, passes the filter when the other members are placed as p (p[i] is ignored).
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

// Fits reports whether member i fits node n under placement p, and why not.
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

// FitReport says, for one member re-placed under one placement, where it fits and why every other
// node does not.
type FitReport struct {
	// Fits are the names of the nodes that pass the filter.
	Fits []string
	// Rejected maps each reason (kube-scheduler's wording) to the nodes it rejects, sorted.
	Rejected map[string][]string
}

// Summary renders the report like kube-scheduler's FailedScheduling message:
// "0/6 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 5 node(s) ...".
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
