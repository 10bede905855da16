package policies

import (
	"math/bits"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// State is one cluster's placement together with the counts that its hard rules and the filter
// read, kept up to date as members move: kube-scheduler's PreFilter state with its
// AddPod/RemovePod extensions (PreFilterExtensions), for the rules as well as for the filter.
// Moving one member (Set) costs O(constraints), and the planner then reads the rules' verdict
// (Summary, Excess) in O(constraints) and runs the filter for a member (CandidatesIn, Fits) in
// O(constraints) per node, where Evaluate and Candidates re-read every member.
//
// What it answers equals what Evaluate (compliance, and the sums lowerBound-style bounds are
// made of) and Candidates answer for the same Placement; state_test.go checks both on random
// sequences of moves. A State is not safe for concurrent use; the Cluster it reads is.
type State struct {
	c *Cluster
	x *stateIndex
	p Placement

	nodeCount []int32  // members per node
	occupied  []uint64 // bitset: nodes holding a member
	zoneCount []int32  // members per zone id (stateIndex.zoneNames)
	// use is NodeResourcesFit's view: the requests of the placed members, per node.
	use map[int]resources
	// inst is PodTopologySpread's state per constraint instance (Cluster.spread), and effect the
	// number of placed members whose spec carries the instance (the TopologySpread rule checks
	// the instances in effect).
	inst   []instState
	effect []int32
	// groups are ShardSeparation's domains per shard: a zone id, or -(node+1) for a node.
	groups [][]shardGroup
	// unplaced lists the members that are neither placed nor terminating, in no order.
	unplaced []int

	nodeExcess, nodesOver   int // MaxPodsPerNode: pods above the limit, and nodes above it
	zoneExcess, zonesOver   int // MaxPodsPerZone (Z ≥ 3)
	shardExcess, shardsOver int // ShardSeparation: pods sharing a domain with their shard, and domains
	outside, outsideZones   int // AllowedZones: pods outside the allowed zones, and such zones in use
	unsched                 int // Unschedulable: members unplaced that count as Unschedulable

	// MasterQuorum: the masters (by member), fixed limits q (M does not change: a failover moves
	// a master within its shard), masters per node and per zone id, the domains above the limits
	// and the masters above them, summed.
	masters                  Masters
	q                        Quorum
	mNode, mZone             []int32
	mNodeOver, mZoneOver     int
	mNodeExcess, mZoneExcess int

	key StateKey
	fit fitter        // reused by fitterFor
	fix quorumScratch // reused by QuorumFix
}

// StateKey identifies a placement: two independent 64-bit Zobrist hashes of (member, node)
// pairs, updated by every Set. Two placements with equal keys are taken to be equal (a false
// match needs a collision of both hashes at once).
type StateKey [2]uint64

type shardGroup struct {
	key, count int32
}

// instState is one constraint instance's counts under the placement: kube-scheduler's
// TpValueToMatchNum split into the non-members (spreadInstance.external, fixed) and the members
// (members, kept here), with a histogram of the domains' totals so that the largest total and the
// global minimum are known without visiting the domains.
type instState struct {
	members map[int32]int
	// hist[t] is the number of domains whose total (external + members) is t, for t ≥ 1.
	hist     []int32
	occupied int // domains with a total above 0
	top      int // largest total (0 when none)
}

// stateIndex is what States of one cluster share: zone ids, the constraint instances counting
// each member, and the (anti-)affinity terms with the members they match and the members that
// carry them. Built once per cluster, on first use.
type stateIndex struct {
	zoneID      []int32  // node → zone id (Cluster.zoneID)
	zoneNames   []string // zone id → name
	zoneAllowed []bool   // zone id → in the allowed zones
	z2          [2]int32
	nodeLimit   int
	zoneLimit   int
	byZone      bool // ShardSeparation per zone (Z ≥ 2)
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
	byValue := map[string]*[2]map[string][]int{} // label key → per labels kind, value → members
	for t, term := range x.terms {
		for k := range 2 {
			x.match[t][k] = make([]bool, len(c.Members))
		}
		// Only the members carrying a value the term's selector requires can match it.
		try := func(j, k int) {
			mem := c.Members[j]
			lbl := mem.cur.labels
			if k == 1 {
				lbl = mem.next.labels
			}
			if !x.match[t][k][j] && term.matches(m, mem.Pod.Namespace, lbl) {
				x.match[t][k][j] = true
			}
		}
		if key, values, ok := exactRequirement(term.selector); ok {
			idx := byValue[key]
			if idx == nil {
				idx = &[2]map[string][]int{{}, {}}
				for j, mem := range c.Members {
					if v, ok := mem.cur.labels[key]; ok {
						idx[0][v] = append(idx[0][v], j)
					}
					if v, ok := mem.next.labels[key]; ok {
						idx[1][v] = append(idx[1][v], j)
					}
				}
				byValue[key] = idx
			}
			for k := range 2 {
				for _, v := range values {
					for _, j := range idx[k][v] {
						try(j, k)
					}
				}
			}
		} else {
			for j := range c.Members {
				try(j, 0)
				try(j, 1)
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

// exactRequirement returns the key and values of sel's first `=`, `==` or `in` requirement: a
// label only pods carrying one of those values match.
func exactRequirement(sel labels.Selector) (string, []string, bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return "", nil, false
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			return r.Key(), r.Values().UnsortedList(), true
		}
	}
	return "", nil, false
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

// NewState returns the state of placement p (copied) with the current roles
// (Cluster.CurrentMasters); Failover changes them.
func (c *Cluster) NewState(p Placement) *State { return c.NewStateWith(p, c.CurrentMasters()) }

// NewStateWith returns the state of placement p with masters ms (both copied).
func (c *Cluster) NewStateWith(p Placement, ms Masters) *State {
	x := c.stateIndexOf()
	m := c.model
	ms = ms.Clone()
	st := &State{
		c: c, x: x, p: make(Placement, len(p)), masters: ms, q: c.quorumOf(ms.Count()),
		nodeCount: make([]int32, len(m.Nodes)),
		occupied:  make([]uint64, (len(m.Nodes)+63)/64),
		zoneCount: make([]int32, len(x.zoneNames)),
		use:       map[int]resources{},
		inst:      make([]instState, len(c.spread)),
		effect:    make([]int32, len(c.spread)),
		groups:    make([][]shardGroup, len(c.Shards)),
	}
	if st.q.Applies {
		st.mNode = make([]int32, len(m.Nodes))
		st.mZone = make([]int32, len(x.zoneNames))
	}
	for j, is := range ms {
		if is {
			st.key = st.key.withMaster(j)
		}
	}
	for idx, in := range c.spread {
		is := &st.inst[idx]
		is.members = map[int32]int{}
		is.hist = make([]int32, x.maxTotal[idx]+2)
		for _, n := range in.external {
			is.hist[n]++
			is.occupied++
			is.top = max(is.top, n)
		}
	}
	for j := range st.p {
		st.p[j] = -1
		st.key = st.key.with(j, -1)
		if !c.Members[j].Terminating {
			st.unplaced = append(st.unplaced, j)
			if st.unschedulable(j) {
				st.unsched++
			}
		}
	}
	for j, n := range p {
		if n >= 0 {
			st.Set(j, n)
		}
	}
	return st
}

// with returns k updated for member j on node n (a Zobrist hash: XOR in, XOR out).
func (k StateKey) with(j, n int) StateKey {
	v := uint64(j)<<32 | uint64(uint32(n+1))
	return StateKey{k[0] ^ mix(v^0x9e3779b97f4a7c15), k[1] ^ mix(v^0xd1b54a32d192ed03)}
}

// withMaster returns k with member j's master mark flipped.
func (k StateKey) withMaster(j int) StateKey {
	v := uint64(j)<<32 | 0xffffffff
	return StateKey{k[0] ^ mix(v^0x5851f42d4c957f2d), k[1] ^ mix(v^0x14057b7ef767814f)}
}

// mix is SplitMix64's finalizer.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Cluster returns the cluster whose placement the state holds.
func (st *State) Cluster() *Cluster { return st.c }

// Placement returns the placement. It is the state's own: read it, never change it (use Set).
func (st *State) Placement() Placement { return st.p }

// Node returns member i's node, -1 when it is not placed.
func (st *State) Node(i int) int { return st.p[i] }

// Key returns the placement's key.
func (st *State) Key() StateKey { return st.key }

// NodeCount returns the number of members on node n.
func (st *State) NodeCount(n int) int { return int(st.nodeCount[n]) }

// Unplaced returns the members that are neither placed nor terminating (the state's own slice,
// in no particular order; read it, never change it).
func (st *State) Unplaced() []int { return st.unplaced }

// Occupied appends the nodes that hold a member to dst, in node order.
func (st *State) Occupied(dst []int) []int {
	for w, bitsW := range st.occupied {
		for bitsW != 0 {
			b := bits.TrailingZeros64(bitsW)
			dst = append(dst, w*64+b)
			bitsW &= bitsW - 1
		}
	}
	return dst
}

// unschedulable reports whether member j counts for the Unschedulable rule when it is not placed.
func (st *State) unschedulable(j int) bool {
	mem := st.c.Members[j]
	return !mem.Terminating && (mem.Unschedulable || mem.Node >= 0)
}

// Set moves member i to node n (-1: not placed) and updates every count.
func (st *State) Set(i, n int) {
	old := st.p[i]
	if old == n {
		return
	}
	if old >= 0 {
		st.update(i, old, -1)
	} else if !st.c.Members[i].Terminating {
		for k, j := range st.unplaced {
			if j == i {
				last := len(st.unplaced) - 1
				st.unplaced[k] = st.unplaced[last]
				st.unplaced = st.unplaced[:last]
				break
			}
		}
		if st.unschedulable(i) {
			st.unsched--
		}
	}
	st.key = st.key.with(i, old).with(i, n)
	st.p[i] = n
	if n >= 0 {
		st.update(i, n, 1)
	} else if !st.c.Members[i].Terminating {
		st.unplaced = append(st.unplaced, i)
		if st.unschedulable(i) {
			st.unsched++
		}
	}
}

// update adds (d = 1) or removes (d = -1) member i on node n.
func (st *State) update(i, n, d int) {
	c, x := st.c, st.x
	d32 := int32(d)
	if st.masters[i] && st.q.Applies {
		st.masterAt(n, d)
	}
	// MaxPodsPerNode.
	before := int(st.nodeCount[n])
	st.nodeCount[n] += d32
	st.nodeExcess += max(before+d-x.nodeLimit, 0) - max(before-x.nodeLimit, 0)
	st.nodesOver += b2i(before+d > x.nodeLimit) - b2i(before > x.nodeLimit)
	if st.nodeCount[n] > 0 {
		st.occupied[n/64] |= 1 << (n % 64)
	} else {
		st.occupied[n/64] &^= 1 << (n % 64)
	}
	// Zones: MaxPodsPerZone (Z ≥ 3), AllowedZones; ZoneEvenSplit reads zoneCount.
	z := x.zoneID[n]
	zb := int(st.zoneCount[z])
	st.zoneCount[z] += d32
	if c.Z() >= 3 && x.zoneNames[z] != "" {
		st.zoneExcess += max(zb+d-x.zoneLimit, 0) - max(zb-x.zoneLimit, 0)
		st.zonesOver += b2i(zb+d > x.zoneLimit) - b2i(zb > x.zoneLimit)
	}
	if c.ZoneList && !x.zoneAllowed[z] {
		st.outside += d
		st.outsideZones += b2i(zb+d > 0) - b2i(zb > 0)
	}
	// ShardSeparation.
	key := -int32(n) - 1
	if x.byZone && x.zoneNames[z] != "" {
		key = z
	}
	sh := c.Members[i].ShardIndex
	gs := st.groups[sh]
	g := -1
	for k := range gs {
		if gs[k].key == key {
			g = k
			break
		}
	}
	if g < 0 {
		gs = append(gs, shardGroup{key: key})
		g = len(gs) - 1
	}
	gb := int(gs[g].count)
	gs[g].count += d32
	st.shardExcess += max(gb+d-1, 0) - max(gb-1, 0)
	st.shardsOver += b2i(gb+d > 1) - b2i(gb > 1)
	if gs[g].count == 0 {
		gs[g] = gs[len(gs)-1]
		gs = gs[:len(gs)-1]
	}
	st.groups[sh] = gs
	// NodeResourcesFit and PodTopologySpread, with the spec the member runs with on n.
	k := c.kind(i, n)
	s := c.specOfKind(i, k)
	if d > 0 {
		st.use[n] = st.use[n].add(s.requests)
	} else if u := st.use[n].sub(s.requests); u == (resources{}) {
		delete(st.use, n)
	} else {
		st.use[n] = u
	}
	for _, idx := range s.spread {
		st.effect[idx] += d32
	}
	for _, idx := range x.counts[k][i] {
		in := c.spread[idx]
		if !in.eligible[n] {
			continue
		}
		dom := in.dom.ofNode[n]
		is := &st.inst[idx]
		mb := is.members[dom]
		if mb+d == 0 {
			delete(is.members, dom)
		} else {
			is.members[dom] = mb + d
		}
		t := in.external[dom] + mb
		if t > 0 {
			is.hist[t]--
		} else {
			is.occupied++
		}
		t += d
		if t > 0 {
			is.hist[t]++
		} else {
			is.occupied--
		}
		if t > is.top {
			is.top = t
		}
		for is.top > 0 && is.hist[is.top] == 0 {
			is.top--
		}
	}
}

// masterAt adds (d = 1) or removes (d = -1) a master on node n (MasterQuorum's counts).
func (st *State) masterAt(n, d int) {
	before := int(st.mNode[n])
	st.mNode[n] += int32(d)
	lim := st.q.NodeLimit
	st.mNodeExcess += max(before+d-lim, 0) - max(before-lim, 0)
	st.mNodeOver += b2i(before+d > lim) - b2i(before > lim)
	z, ok := st.quorumZone(n)
	if !ok {
		return
	}
	zb := int(st.mZone[z])
	st.mZone[z] += int32(d)
	lim = st.q.ZoneLimit
	st.mZoneExcess += max(zb+d-lim, 0) - max(zb-lim, 0)
	st.mZoneOver += b2i(zb+d > lim) - b2i(zb > lim)
}

// quorumZone returns node n's zone id and whether MasterQuorum limits that zone: the rule has a
// zone limit (Z ≥ 3) and the node has a zone.
func (st *State) quorumZone(n int) (int32, bool) {
	z := st.x.zoneID[n]
	return z, st.q.ZoneLimit > 0 && st.x.zoneNames[z] != ""
}

// Masters returns the masters under the state's failovers. It is the state's own: read it,
// never change it (use Failover).
func (st *State) Masters() Masters { return st.masters }

// IsMaster reports whether member i is a master serving slots under the state's failovers.
func (st *State) IsMaster(i int) bool { return st.masters[i] }

// Quorum returns what MasterQuorum asks of the state's cluster (fixed when the state was made).
func (st *State) Quorum() Quorum { return st.q }

// Failover hands master from's slots to member to, of the same shard: from stops counting as a
// master, to starts (M does not change). Failover(to, from) undoes it.
func (st *State) Failover(from, to int) {
	st.setMaster(from, false)
	st.setMaster(to, true)
}

func (st *State) setMaster(i int, v bool) {
	if st.masters[i] == v {
		return
	}
	if n := st.p[i]; n >= 0 && st.q.Applies {
		st.masterAt(n, 2*b2i(v)-1)
	}
	st.masters[i] = v
	st.key = st.key.withMaster(i)
}

// QuorumExcess returns the larger of two sums: the masters above MasterQuorum's node limit,
// summed over nodes, and above its zone limit, summed over zones. A failover, or the eviction of
// a master (its shard's master moves to another member), lowers each by at most one: it bounds
// the role changes still needed.
func (st *State) QuorumExcess() int { return max(st.mNodeExcess, st.mZoneExcess) }

// Promotable reports whether member j may become its shard's master under the state: it is placed
// and its Redis node is known to be of the shard (its role is known, or the plan re-created it,
// so it rejoins as a replica), and it is not a master without slots where it runs.
func (st *State) Promotable(j int) bool {
	n := st.p[j]
	if n < 0 {
		return false
	}
	mem := st.c.Members[j]
	if n != mem.Node {
		return true
	}
	return mem.Role == RoleReplica || mem.Role == RoleMaster && !mem.EmptyMaster
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

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

// split returns ZoneEvenSplit's half excess (Z = 2), 0 when the rule holds.
func (st *State) split() int {
	if st.c.Z() != 2 {
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
	if c.ZoneList && !x.zoneAllowed[z] {
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
	if st.unsched > 0 {
		s.Violations++
	}
	for idx := range st.inst {
		if st.effect[idx] > 0 {
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

// Fits reports whether member i passes the filter on node n under the state's placement (as
// Cluster.Fits does; i's own node is ignored).
func (st *State) Fits(i, n int) bool {
	var one [1]int
	return len(st.CandidatesIn(i, []int{n}, one[:0])) == 1
}

// CandidatesIn appends to dst the nodes of among, in among's order, where member i passes the
// filter under the state's placement (as Cluster.CandidatesIn does; i's own node is ignored).
func (st *State) CandidatesIn(i int, among []int, dst []int) []int {
	if old := st.p[i]; old >= 0 {
		st.Set(i, -1)
		defer st.Set(i, old)
	}
	f := st.fitterFor(i)
	for _, n := range among {
		if r, _ := f.check(n); r == fitOK {
			dst = append(dst, n)
		}
	}
	return dst
}

// domainsOf appends to dst, for each term t of ts, the domains (of t's key) of the members of
// lists[t] (member << 1 | labels kind) that are placed, run with that kind, and are not i.
func (st *State) domainsOf(dst []domainRef, i int, ts []int32, lists [][]int32) []domainRef {
	c, x := st.c, st.x
	for _, t := range ts {
		term := x.terms[t]
		for _, jk := range lists[t] {
			j, k := int(jk>>1), int(jk&1)
			if nj := st.p[j]; nj >= 0 && j != i && c.kind(j, nj) == k {
				if d := term.dom.ofNode[nj]; d >= 0 {
					dst = append(dst, domainRef{term.dom, d})
				}
			}
		}
	}
	return dst
}

// fitterFor returns member i's filter state (newFitter's) read from the counts: i must not be
// placed. The fitter is the state's own, valid until the next call.
func (st *State) fitterFor(i int) *fitter {
	c, x := st.c, st.x
	mem := c.Members[i]
	s := mem.incoming()
	f := &st.fit
	*f = fitter{
		c: c, i: i, spec: s, use: st.use,
		release: c.model.Options.ReleaseReplicaClaims && mem.Role == RoleReplica,
		counts:  f.counts[:0], mins: f.mins[:0], self: f.self[:0],
		anti: f.anti[:0], existing: f.existing[:0],
	}
	// PodTopologySpread: the members' counts are the state's (i is not placed).
	for _, idx := range s.spread {
		in := c.spread[idx]
		f.counts = append(f.counts, st.inst[idx].members)
		f.mins = append(f.mins, st.minOf(int(idx)))
		f.self = append(f.self, b2i(in.selector.Matches(s.labels)))
	}
	// InterPodAffinity: the members that i's anti-affinity terms select, and the members whose
	// anti-affinity terms select i, through the precomputed matches.
	f.anti = st.domainsOf(f.anti, i, x.antiIn[i], x.matchers)
	f.existing = st.domainsOf(f.existing, i, x.selectedBy[i], x.carriers)
	// Host ports, scalar resources, inline disks, ReadWriteOncePod claims, CSI volumes: counted
	// from the placement, for the few pods that have any.
	f.addRareFrom(st.p)
	if ts := x.affIn[i]; len(ts) > 0 {
		f.preFilterInterPodAffinity()
		for j, nj := range st.p {
			if j == i || nj < 0 {
				continue
			}
			k := c.kind(j, nj)
			all := true
			for _, t := range ts {
				if !x.match[t][k][j] {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			for a, t := range ts {
				if d := x.terms[t].dom.ofNode[nj]; d >= 0 {
					f.affinity[a][d] = true
					f.affAny = true
				}
			}
		}
	}
	return f
}
