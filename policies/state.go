package policies

import (
	"math/bits"
	"sync"
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
	// checks counts the nodes the filter checked (CandidatesIn): Work.FilterChecks.
	checks int
	fit    fitter        // reused by fitterFor
	fix    quorumScratch // reused by QuorumFix
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

// NewState returns the state of placement p (copied) with the current roles
// (Cluster.CurrentMasters); Failover changes them.
func (c *Cluster) NewState(p Placement) *State { return c.NewStateWith(p, c.CurrentMasters()) }

// NewStateWith returns the state of placement p with masters ms (both copied).
func (c *Cluster) NewStateWith(p Placement, ms Masters) *State {
	x := c.stateIndexOf()
	m := c.model
	ms = ms.Clone()
	st := &State{
		c: c, x: x, p: make(Placement, len(p)), masters: ms, q: c.enforcedQuorum(ms.Count()),
		nodeCount: nodeCounts(len(m.Nodes)),
		occupied:  make([]uint64, (len(m.Nodes)+63)/64),
		zoneCount: make([]int32, len(x.zoneNames)),
		use:       map[int]resources{},
		inst:      make([]instState, len(c.spread)),
		effect:    make([]int32, len(c.spread)),
		groups:    make([][]shardGroup, len(c.Shards)),
	}
	if st.q.Applies {
		st.mNode = nodeCounts(len(m.Nodes))
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

// nodeCountsPool recycles the per-node counts of released states (State.Release).
var nodeCountsPool sync.Pool

// nodeCounts returns n zeroed counts, recycled when a released state left some.
func nodeCounts(n int) []int32 {
	if p, ok := nodeCountsPool.Get().(*[]int32); ok && cap(*p) >= n {
		s := (*p)[:n]
		clear(s)
		return s
	}
	return make([]int32, n)
}

// Release recycles the state's per-node counts for states made later: the state must not be
// used after. Optional (the planner releases its state once its plan is made).
func (st *State) Release() {
	for _, s := range [][]int32{st.nodeCount, st.mNode} {
		if s != nil {
			nodeCountsPool.Put(&s)
		}
	}
	st.nodeCount, st.mNode = nil, nil
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
	if x.outsideOn && c.ZoneList && !x.zoneAllowed[z] {
		st.outside += d
		st.outsideZones += b2i(zb+d > 0) - b2i(zb > 0)
	}
	// ShardSeparation.
	if x.shardOn {
		st.shard(i, n, z, d)
	}
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

// shard adds (d = 1) or removes (d = -1) member i, on node n of zone id z, in ShardSeparation's
// counts.
func (st *State) shard(i, n int, z int32, d int) {
	c, x := st.c, st.x
	d32 := int32(d)
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

// Promotable reports whether member j may be its shard's master under the state: it is placed
// and its Redis node is known to be of the shard (its role is known, or the plan re-created it,
// so it rejoins as a replica), and it is not a master without slots where it runs. A member that
// is not a master under the state and runs on a node being emptied (Node.Leaving) may not become
// one: the drain would evict it next, a second move (a master there may stay one: handing it
// off is the eviction guard's hand-off's job).
func (st *State) Promotable(j int) bool {
	n := st.p[j]
	if n < 0 {
		return false
	}
	if !st.masters[j] && st.c.model.Nodes[n].Leaving != "" {
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
