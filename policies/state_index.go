package policies

// What every State of one cluster shares (stateIndex): zone ids and limits, the constraint
// instances that count each member, and the required (anti-)affinity terms with the members they
// select and the members that carry them, built once per cluster.

import (
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// stateIndex is what States of one cluster share: zone ids, the constraint instances counting
// each member, and the (anti-)affinity terms with the members they match and the members that
// carry them. Built once per cluster, on first use.
type stateIndex struct {
	zoneID      []int32  // node → zone id (Cluster.zoneID)
	zoneNames   []string // zone id → name
	zoneAllowed []bool   // zone id → in the allowed zones
	z2          [2]int32
	// nodeLimit and zoneLimit are MaxPodsPerNode's and MaxPodsPerZone's limits (math.MaxInt32
	// when the rule is not enforced: nothing is ever above it).
	nodeLimit int
	zoneLimit int
	byZone    bool // ShardSeparation per zone (Z ≥ 2)
	// shardOn, outsideOn, splitOn, unschedOn and spreadOn say whether ShardSeparation,
	// AllowedZones, ZoneEvenSplit, Unschedulable and TopologySpread are enforced (judged as hard
	// rules); a rule that is not adds nothing to the excess sums and the Summary.
	shardOn, outsideOn, splitOn, unschedOn, spreadOn bool
	// counts[k][j]: the instances counting member j with its current pod's labels (k = 0) or its
	// template's (k = 1).
	counts [2][][]int32
	// terms are the required pod (anti-)affinity terms of every member spec; match[t][k][j]
	// reports whether term t selects member j with labels k.
	terms []*affinityTerm
	match [][2][]bool
	// For the incoming spec of member i: its anti-affinity terms (antiIn[i]), its affinity terms
	// (affIn[i]), and the anti-affinity terms of any member spec that select it (selectedBy[i]).
	antiIn, affIn, selectedBy [][]int32
	// matchers[t] and carriers[t] list (member << 1 | k): the members term t selects with labels
	// k, and the members whose spec k carries t as an anti-affinity term.
	matchers, carriers [][]int32
	maxTotal           []int // per instance: the largest total a domain may reach
}

// stateIndexOf returns the cluster's stateIndex, building it on first use.
func (c *Cluster) stateIndexOf() *stateIndex {
	c.stateOnce.Do(func() {
		c.read.Store(true)
		c.stateIdx = c.buildStateIndex()
	})
	return c.stateIdx
}

func (c *Cluster) buildStateIndex() *stateIndex {
	m := c.model
	x := &stateIndex{
		zoneID: c.zoneID, zoneNames: c.zoneName, zoneAllowed: c.allowedID,
		nodeLimit: NodeLimit(c.N, m.Options.RelaxedLimits),
		zoneLimit: ZoneLimit(c.N, m.Options.RelaxedLimits),
		byZone:    c.Z() >= 2,
		z2:        [2]int32{-1, -1},
		shardOn:   m.enforced(ShardSeparation),
		outsideOn: m.enforced(AllowedZones),
		splitOn:   m.enforced(ZoneEvenSplit),
		unschedOn: m.enforced(Unschedulable),
		spreadOn:  m.enforced(TopologySpread),
	}
	if !m.enforced(MaxPodsPerNode) {
		x.nodeLimit = math.MaxInt32
	}
	if !m.enforced(MaxPodsPerZone) {
		x.zoneLimit = math.MaxInt32
	}
	if c.Z() == 2 {
		for k, z := range c.AllowedZones {
			if id := slices.Index(x.zoneNames, z); id >= 0 {
				x.z2[k] = int32(id)
			}
		}
	}
	for k := range x.counts {
		x.counts[k] = make([][]int32, len(c.Members))
	}
	for idx, in := range c.spread {
		for j := range c.Members {
			if in.matchCur[j] {
				x.counts[0][j] = append(x.counts[0][j], int32(idx))
			}
			if in.matchNext[j] {
				x.counts[1][j] = append(x.counts[1][j], int32(idx))
			}
		}
		top := len(c.Members)
		for _, n := range in.external {
			top = max(top, n+len(c.Members))
		}
		x.maxTotal = append(x.maxTotal, top)
	}
	// Terms, by first appearance.
	termIdx := map[*affinityTerm]int32{}
	index := func(ts []*affinityTerm) []int32 {
		var out []int32
		for _, t := range ts {
			id, ok := termIdx[t]
			if !ok {
				id = int32(len(x.terms))
				termIdx[t] = id
				x.terms = append(x.terms, t)
			}
			out = append(out, id)
		}
		return out
	}
	var antiOf [2][][]int32
	for k := range antiOf {
		antiOf[k] = make([][]int32, len(c.Members))
	}
	x.antiIn = make([][]int32, len(c.Members))
	x.affIn = make([][]int32, len(c.Members))
	for j, mem := range c.Members {
		antiOf[0][j] = index(mem.cur.anti)
		antiOf[1][j] = index(mem.next.anti)
		index(mem.cur.affinity)
		index(mem.next.affinity)
		s := mem.incoming()
		x.antiIn[j] = index(s.anti)
		x.affIn[j] = index(s.affinity)
	}
	x.match = make([][2][]bool, len(x.terms))
	x.matchers = make([][]int32, len(x.terms))
	x.carriers = make([][]int32, len(x.terms))
	x.selectedBy = make([][]int32, len(c.Members))
	// Per labels kind (current pod, template): the members carrying each value of a key.
	byValue := [2]valueIndex{
		{labelsOf: func(j int) map[string]string { return c.Members[j].cur.labels }},
		{labelsOf: func(j int) map[string]string { return c.Members[j].next.labels }},
	}
	for t, term := range x.terms {
		for k := range 2 {
			x.match[t][k] = make([]bool, len(c.Members))
		}
		// Only the members carrying a value the term's selector requires can match it: those of
		// its most selective requirement.
		for k := range 2 {
			lbl := byValue[k].labelsOf
			try := func(j int) {
				if !x.match[t][k][j] && term.matches(m, c.Members[j].Pod.Namespace, lbl(j)) {
					x.match[t][k][j] = true
				}
			}
			if cands, ok := byValue[k].candidates(term.selector, len(c.Members)); ok {
				for _, js := range cands {
					for _, j := range js {
						try(j)
					}
				}
			} else {
				for j := range c.Members {
					try(j)
				}
			}
		}
		for j, mem := range c.Members {
			for k := range 2 {
				if x.match[t][k][j] {
					x.matchers[t] = append(x.matchers[t], int32(j<<1|k))
				}
			}
			if x.match[t][incomingKind(mem)][j] {
				x.selectedBy[j] = append(x.selectedBy[j], int32(t))
			}
		}
	}
	for k := range antiOf {
		for j, ts := range antiOf[k] {
			for _, t := range ts {
				x.carriers[t] = append(x.carriers[t], int32(j<<1|k))
			}
		}
	}
	return x
}

// valueIndex lists, per value of a label key, the members carrying it (in member order), the
// labels of member j being labelsOf(j); a key is indexed on first use.
type valueIndex struct {
	labelsOf func(j int) map[string]string
	byKey    map[string]map[string][]int
}

// candidates returns the members that may match sel, as lists: those carrying one of the values
// of sel's most selective `=`, `==` or `in` requirement (the fewest members), of n members. ok is
// false when sel has no such requirement (every member may match).
func (x *valueIndex) candidates(sel labels.Selector, n int) (cands [][]int, ok bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, false
	}
	best := -1
	for k := range reqs {
		r := &reqs[k]
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		idx, values := x.index(r.Key(), n), r.ValuesUnsorted()
		size := 0
		for _, v := range values {
			size += len(idx[v])
		}
		if best < 0 || size < best {
			best, cands = size, cands[:0]
			for _, v := range values {
				if js := idx[v]; len(js) > 0 {
					cands = append(cands, js)
				}
			}
		}
	}
	return cands, best >= 0
}

// index returns the members by value of label key, building it on first use.
func (x *valueIndex) index(key string, n int) map[string][]int {
	idx, ok := x.byKey[key]
	if !ok {
		idx = map[string][]int{}
		for j := range n {
			if v, has := x.labelsOf(j)[key]; has {
				idx[v] = append(idx[v], j)
			}
		}
		if x.byKey == nil {
			x.byKey = map[string]map[string][]int{}
		}
		x.byKey[key] = idx
	}
	return idx
}

// incomingKind is 0 when a member is placed with its current pod's spec (a Pending pod), 1 with
// its template's.
func incomingKind(mem *Member) int {
	if mem.pending() {
		return 0
	}
	return 1
}

// kind returns 0 when member j on node n runs with its current pod's spec, 1 with its template's
// (Cluster.usesCur).
func (c *Cluster) kind(j, n int) int {
	mem := c.Members[j]
	if mem.pending() || n == mem.Node && !mem.Terminating {
		return 0
	}
	return 1
}

func (c *Cluster) specOfKind(j, k int) *podSpec {
	if k == 0 {
		return c.Members[j].cur
	}
	return c.Members[j].next
}
