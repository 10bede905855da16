package policies

import "fmt"

// preFilterPodTopologySpread computes, for each DoNotSchedule constraint of the incoming pod, the
// other members' counts per domain and the global minimum under p (kube-scheduler's
// calPreFilterState), and whether the pod matches the constraint's selector itself. The
// constraint instances and the matching non-member pods are computed once by Build, the counts by
// spreadCounts (spread.go, shared with the TopologySpread rule).
func (f *fitter) preFilterPodTopologySpread(p Placement) {
	c, s := f.c, f.spec
	for _, idx := range s.spread {
		in := c.spread[idx]
		counts, min := c.spreadCounts(in, p, f.i, nil)
		f.counts = append(f.counts, counts)
		f.mins = append(f.mins, min)
		self := 0
		if in.selector.Matches(s.labels) {
			self = 1
		}
		f.self = append(f.self, self)
	}
}

// podTopologySpread is PodTopologySpread's Filter on node n: a node lacking a constraint's
// topology key fails; otherwise, per constraint, 'existing matching num' + 'self match' -
// 'global minimum' <= 'maxSkew'. It returns the first constraint instance the node fails and the
// skew there, or nil. check calls it for every node; it is kept small enough to be inlined there.
func (f *fitter) podTopologySpread(n int) (*spreadInstance, int) {
	for k, idx := range f.spec.spread {
		in := f.c.spread[idx]
		d := in.dom.ofNode[n]
		if d < 0 {
			return in, 0
		}
		if skew := in.external[d] + f.counts[k][d] + f.self[k] - f.mins[k]; skew > in.maxSkew {
			return in, skew
		}
	}
	return nil, 0
}

// failure returns the reason and detail of constraint instance in rejecting node n with skew:
// the missing topology key, or the key and the skew.
func (in *spreadInstance) failure(n, skew int) (reasonCode, string) {
	if in.dom.ofNode[n] < 0 {
		return reasonSpreadMissingLabel, in.constraint.TopologyKey
	}
	return reasonSpread, fmt.Sprintf("%s skew %d > maxSkew %d", in.constraint.TopologyKey, skew, in.maxSkew)
}
