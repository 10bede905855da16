package policies

// The hard rules' verdict read from a State's counts: the excess sums that bound the evictions
// still needed (Excess, MemberExcess, QuorumExcess), the members a violation involves, and the
// Summary the planner reads.

// QuorumExcess returns the larger of two sums: the masters above MasterQuorum's node limit,
// summed over nodes, and above its zone limit, summed over zones. A failover, or the eviction of
// a master (its shard's master moves to another member), lowers each by at most one: it bounds
// the role changes still needed.
func (st *State) QuorumExcess() int { return max(st.mNodeExcess, st.mZoneExcess) }

// minOf returns constraint instance idx's global minimum under the placement, as spreadCounts
// computes it: 0 below minDomains eligible domains or while an eligible domain holds no matching
// pod, otherwise the smallest total.
func (st *State) minOf(idx int) int {
	in, is := st.c.spread[idx], &st.inst[idx]
	if in.numDomains < in.minDomains || is.occupied < in.numDomains {
		return 0
	}
	for t := 1; t < len(is.hist); t++ {
		if is.hist[t] > 0 {
			return t
		}
	}
	return 0
}

// spreadOver returns the number of domains of constraint instance idx whose total exceeds the
// global minimum by more than maxSkew.
func (st *State) spreadOver(idx int) int {
	in, is := st.c.spread[idx], &st.inst[idx]
	limit := st.minOf(idx) + in.maxSkew
	over := 0
	for t := limit + 1; t <= is.top; t++ {
		over += int(is.hist[t])
	}
	return over
}

// Excess holds a placement's sums that bound the evictions still needed: each eviction
// relocates one pod and so lowers each sum by at most one.
type Excess struct {
	// Node: pods above the MaxPodsPerNode limit, summed over nodes. Zone: pods above the
	// MaxPodsPerZone limit (Z ≥ 3). Shard: pods sharing a node or zone with a pod of their shard
	// (ShardSeparation). Outside: pods outside the allowed zones (AllowedZones). Split: half the
	// ZoneEvenSplit excess, rounded up (one move narrows the difference by 2).
	Node, Zone, Shard, Outside, Split int
}

// Excess returns the placement's excess sums.
func (st *State) Excess() Excess {
	return Excess{Node: st.nodeExcess, Zone: st.zoneExcess, Shard: st.shardExcess, Outside: st.outside, Split: st.split()}
}

// split returns ZoneEvenSplit's half excess (Z = 2), 0 when the rule holds or is not enforced.
func (st *State) split() int {
	if st.c.Z() != 2 || !st.x.splitOn {
		return 0
	}
	a, b := st.zoneCountOf(st.x.z2[0]), st.zoneCountOf(st.x.z2[1])
	diff, limit := a-b, st.c.N%2
	if diff < 0 {
		diff = -diff
	}
	if diff <= limit {
		return 0
	}
	return (diff - limit + 1) / 2
}

func (st *State) zoneCountOf(z int32) int {
	if z < 0 {
		return 0
	}
	return int(st.zoneCount[z])
}

// MemberExcess reports, per sum of Excess, whether placed member j is one of the pods it counts
// (1) or not (0): only evicting such a pod can lower that sum. For Split, j is in the zone that
// holds more pods. A member that is not placed counts in none.
func (st *State) MemberExcess(j int) Excess {
	n := st.p[j]
	if n < 0 {
		return Excess{}
	}
	c, x := st.c, st.x
	var e Excess
	e.Node = b2i(int(st.nodeCount[n]) > x.nodeLimit)
	z := x.zoneID[n]
	if c.Z() >= 3 && x.zoneNames[z] != "" {
		e.Zone = b2i(int(st.zoneCount[z]) > x.zoneLimit)
	}
	key := -int32(n) - 1
	if x.byZone && x.zoneNames[z] != "" {
		key = z
	}
	for _, g := range st.groups[c.Members[j].ShardIndex] {
		if g.key == key {
			e.Shard = b2i(g.count > 1)
		}
	}
	if x.outsideOn && c.ZoneList && !x.zoneAllowed[z] {
		e.Outside = 1
	}
	if st.split() > 0 {
		a, b := st.zoneCountOf(x.z2[0]), st.zoneCountOf(x.z2[1])
		big := x.z2[0]
		if b > a {
			big = x.z2[1]
		}
		e.Split = b2i(z == big)
	}
	return e
}

// Involved reports whether placed member j takes part in a hard violation: on a node or in a zone
// above its limit, sharing a domain with its shard, outside the allowed zones, in the larger zone
// of a broken ZoneEvenSplit, or counted in a domain that breaks a TopologySpread constraint in
// effect. Every pod a hard violation of Evaluate names is involved (Evaluate names the pods of a
// broken spread domain once, under the first constraint that breaks there).
func (st *State) Involved(j int) bool {
	n := st.p[j]
	if n < 0 {
		return false
	}
	if e := st.MemberExcess(j); e != (Excess{}) {
		return true
	}
	if st.masters[j] && st.q.Applies {
		if int(st.mNode[n]) > st.q.NodeLimit {
			return true
		}
		if z, ok := st.quorumZone(n); ok && int(st.mZone[z]) > st.q.ZoneLimit {
			return true
		}
	}
	c := st.c
	if !st.x.spreadOn {
		return false
	}
	for idx, in := range c.spread {
		if st.effect[idx] == 0 || !in.eligible[n] || !c.counted(in, j, st.p) {
			continue
		}
		d := in.dom.ofNode[n]
		if in.external[d]+st.inst[idx].members[d]-st.minOf(idx) > in.maxSkew {
			return true
		}
	}
	return false
}

// Summary is what the planner reads of a placement's hard rules.
type Summary struct {
	// Compliant reports whether every hard rule holds (MasterQuorum with the state's masters).
	Compliant bool
	// PodsCompliant reports whether every hard rule but MasterQuorum holds: the rules about pods,
	// which only evictions fix (failovers may fix MasterQuorum).
	PodsCompliant bool
	// Quorum counts the nodes and zones above MasterQuorum's limits.
	Quorum int
	// LowerBound is the number of evictions any plan from here needs at least: the largest sum of
	// Excess, and 1 when a rule about pods is broken (MasterQuorum alone may need none).
	LowerBound int
	// Rule names the rule whose sum sets LowerBound when it is more than 1 ("" otherwise).
	Rule Rule
	// Violations counts the hard violations: per node, zone, shard domain and spread domain
	// above its limit, plus one for ZoneEvenSplit and one for Unschedulable (a spread domain
	// broken under two constraint instances counts twice, unlike in Evaluate), plus Quorum.
	Violations int
}

// Summary returns the hard rules' verdict on the placement.
func (st *State) Summary() Summary {
	var s Summary
	s.Violations = st.nodesOver + st.zonesOver + st.outsideZones + st.shardsOver
	e := st.Excess()
	if e.Split > 0 {
		s.Violations++
	}
	if st.unsched > 0 && st.x.unschedOn {
		s.Violations++
	}
	for idx := range st.inst {
		if st.effect[idx] > 0 && st.x.spreadOn {
			s.Violations += st.spreadOver(idx)
		}
	}
	s.PodsCompliant = s.Violations == 0
	if !s.PodsCompliant {
		s.LowerBound = 1
	}
	s.Quorum = st.mNodeOver + st.mZoneOver
	s.Violations += s.Quorum
	s.Compliant = s.Violations == 0
	for _, t := range []struct {
		n int
		r Rule
	}{{e.Node, MaxPodsPerNode}, {e.Zone, MaxPodsPerZone}, {e.Shard, ShardSeparation}, {e.Outside, AllowedZones}, {e.Split, ZoneEvenSplit}} {
		if t.n > s.LowerBound {
			s.LowerBound, s.Rule = t.n, t.r
		}
	}
	return s
}

// Penalty says how far a placement is from compliance, as a best-effort plan weighs it: first
// the pods left without a node (Unschedulable), then the hard rules' excess. Its JSON form is
// part of the `plan` output contract.
type Penalty struct {
	// Unplaceable counts the members that are not placed and count for Unschedulable (Pending
	// pods the scheduler marked Unschedulable, pods evicted and not placed again).
	Unplaceable int `json:"unplaceable"`
	// Excess sums, over the enforced hard rules, how far the placement is above their limits:
	// the pods above MaxPodsPerNode's and MaxPodsPerZone's limits, the pods sharing a domain
	// with their shard, the pods outside the allowed zones, ZoneEvenSplit's difference above
	// N mod 2, every spread domain's skew above maxSkew, and MasterQuorum's masters above its
	// node and zone limits, summed (with the masters as they are, State.Penalty, or after the
	// failovers that lower them the most, State.SafestPenalty).
	Excess int `json:"excess"`
}

// Less reports whether p is closer to compliance than q: fewer pods unplaceable, then less
// excess.
func (p Penalty) Less(q Penalty) bool {
	if p.Unplaceable != q.Unplaceable {
		return p.Unplaceable < q.Unplaceable
	}
	return p.Excess < q.Excess
}

// Zero reports whether p is no penalty at all.
func (p Penalty) Zero() bool { return p == Penalty{} }

// Penalty returns the placement's penalty with the masters as they are: MasterQuorum's excess
// is the masters above its node and zone limits now, summed.
func (st *State) Penalty() Penalty {
	p := st.podPenalty()
	p.Excess += st.mNodeExcess + st.mZoneExcess
	return p
}

// SafestPenalty returns the placement's penalty once the failovers SafestFailovers finds are
// made, and those failovers: the penalty a best-effort plan weighs, in which failovers that lower
// MasterQuorum's excess are steps like evictions.
func (st *State) SafestPenalty() (Penalty, []Failover) {
	p := st.podPenalty()
	fix, excess := st.SafestFailovers()
	p.Excess += excess
	return p, fix
}

// SafestFailovers returns the fewest failovers after which MasterQuorum's excess (the masters
// above its node and zone limits, summed) is the least that failovers alone reach under the
// state's placement, and that excess: QuorumFix's failovers when they make the rule hold (excess
// 0); otherwise the least excess first, then the fewest failovers (fewestFailovers' soft mode),
// each promoting a promotable member of the master's shard. nil, 0 when the rule holds or does
// not apply. Sorted by From.
func (st *State) SafestFailovers() ([]Failover, int) {
	if !st.q.Applies || st.mNodeOver+st.mZoneOver == 0 {
		return nil, 0
	}
	if fix, ok := st.QuorumFix(); ok {
		return fix, 0
	}
	r := st.fewestFailovers(st.q, nil, true)
	return r.failovers, r.excess
}

// QuorumExcessSum returns the masters above MasterQuorum's node and zone limits under the
// state's placement and masters, summed (0 when the rule holds or does not apply).
func (st *State) QuorumExcessSum() int { return st.mNodeExcess + st.mZoneExcess }

// podPenalty is the penalty of the rules about pods.
func (st *State) podPenalty() Penalty {
	var p Penalty
	if st.x.unschedOn {
		p.Unplaceable = st.unsched
	}
	p.Excess = st.nodeExcess + st.zoneExcess + st.shardExcess + st.outside
	if st.c.Z() == 2 && st.x.splitOn {
		a, b := st.zoneCountOf(st.x.z2[0]), st.zoneCountOf(st.x.z2[1])
		if d := max(a-b, b-a) - st.c.N%2; d > 0 {
			p.Excess += d
		}
	}
	if st.x.spreadOn {
		for idx := range st.inst {
			if st.effect[idx] > 0 {
				p.Excess += st.spreadExcess(idx)
			}
		}
	}
	return p
}

// spreadExcess returns, for constraint instance idx, the skew above maxSkew summed over its
// domains.
func (st *State) spreadExcess(idx int) int {
	in, is := st.c.spread[idx], &st.inst[idx]
	limit := st.minOf(idx) + in.maxSkew
	sum := 0
	for t := limit + 1; t <= is.top; t++ {
		sum += int(is.hist[t]) * (t - limit)
	}
	return sum
}
