package plan

import (
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// placed is one member placed on one node.
type placed struct {
	member, node int
}

// step is one eviction (member, from node from) and what the scheduler then places, in order:
// the evicted member (unless it waits Pending) and the Pending members the eviction unblocks. A
// master hands its slots to member to (of its shard) first; to is -1 for a replica (and for the
// starts, whose member is -1).
type step struct {
	member, from int
	to           int
	places       []placed
}

// goal is a plan the search found: its evictions, and the failovers after them that make
// MasterQuorum hold (the fewest for the placement the evictions reach).
type goal struct {
	start step
	path  []step
	fix   []policies.Failover
}

// search is one search's target: the best goal found, and when to stop looking for a better one.
// A search minimises evictions (the rounds), then failovers: within the round that finds a goal,
// it goes on looking for one with fewer failovers until it reaches fBound (no plan of this many
// evictions needs fewer), or spends fLimit placements (fCut: the failovers are not proven
// minimal): as many as the search had spent to find the first goal (at least minFailoverSearch),
// at most a tenth of Options.MaxStates. With first, it stops at the first goal (reaches).
type search struct {
	best   *goal
	fBound int
	fLimit int
	fCut   bool
	first  bool
	start  step
	began  int // pl.states when the search began
}

// minFailoverSearch is the fewest placements a search may spend looking for fewer failovers once
// it has found a plan.
const minFailoverSearch = 1000

// planner searches one cluster's placements on one policies.State, which it changes and always
// restores.
type planner struct {
	c    *policies.Cluster
	opts Options
	st   *policies.State
	// pending is the model of the current search: an evicted pod may wait Pending.
	pending bool
	movable []bool
	// order lists the members in the order evictions are tried: replicas before masters, then
	// the most recently created first (it has run the shortest time; in the 3-shard deadlock it
	// is the pod whose placement closed the last free spot).
	order []int
	// classes lists, per class of interchangeable nodes (policies.Cluster.NodeClass), its nodes
	// in node order; classOf maps a node to its class. A member is only tried on the nodes other
	// members occupy and on the first free node of each class.
	classes [][]int32
	classOf []int32 // the cluster's (policies.Cluster.NodeClasses): read only
	all     []int32 // the array of classes' nodes (release)
	// failed[pending] maps a placement to the most moves from it proven not to reach
	// compliance under that model.
	failed [2]map[policies.StateKey]int
	states int  // placements evaluated
	limit  int  // states at which the current search gives up
	budget bool // the current search ran out of states
	// among is distinct's scratch list of nodes, kept from one call to the next.
	among []int
	// journal is follows' undo list, kept from one call to the next.
	journal []undoOp
	// leaves are successors' lists that dfs gave back (freeLeaves), reused by the next calls.
	leaves [][]leafStep
	sr     *search
	// tgt is what the current search looks for: compliance (best nil, soft -1), a placement no
	// farther from compliance than best (a best-effort plan), or compliance with a soft excess
	// of at most soft (the soft fix).
	tgt target
}

// target is what a search looks for (planner.tgt).
type target struct {
	best *policies.Penalty
	soft int
}

// setTarget makes t what the searches look for, and forgets the placements proven not to reach
// the previous target.
func (pl *planner) setTarget(t target) {
	pl.tgt = t
	for k := range pl.failed {
		pl.failed[k] = map[policies.StateKey]int{}
	}
}

// softScore returns the soft excess of the state's placement (policies.SoftExcess).
func (pl *planner) softScore() int {
	return policies.SoftExcess(pl.c.EvaluateSoft(pl.st.Placement(), pl.st.Masters()))
}

func newPlanner(c *policies.Cluster, opts Options) *planner {
	pl := &planner{c: c, opts: opts, st: c.NewState(c.Current())}
	pl.movable = make([]bool, len(c.Members))
	for i, m := range c.Members {
		pl.movable[i] = m.NotEvictable() == ""
		pl.order = append(pl.order, i)
	}
	sort.SliceStable(pl.order, func(a, b int) bool {
		ma, mb := c.Members[pl.order[a]], c.Members[pl.order[b]]
		if ra, rb := ma.Role == policies.RoleReplica, mb.Role == policies.RoleReplica; ra != rb {
			return ra
		}
		if !ma.Pod.CreationTimestamp.Equal(&mb.Pod.CreationTimestamp) {
			return mb.Pod.CreationTimestamp.Before(&ma.Pod.CreationTimestamp)
		}
		return ma.Pod.Name < mb.Pod.Name
	})
	// The classes, numbered in order of their first node (the cluster's, shared), share one
	// backing array of every node.
	nodes := len(c.Model().Nodes)
	classOf, count := c.NodeClasses()
	pl.classOf = classOf
	size := make([]int, count)
	for _, g := range classOf {
		size[g]++
	}
	all := nodeInts(nodes)
	pl.all = all
	pl.classes = make([][]int32, len(size))
	at := 0
	for g, k := range size {
		pl.classes[g] = all[at : at : at+k]
		at += k
	}
	for n, g := range pl.classOf {
		pl.classes[g] = append(pl.classes[g], int32(n))
	}
	for k := range pl.failed {
		pl.failed[k] = map[policies.StateKey]int{}
	}
	pl.sr = &search{}
	pl.tgt = target{soft: -1}
	return pl
}

// nodeIntsPool recycles the planners' per-node arrays (planner.release).
var nodeIntsPool sync.Pool

// nodeInts returns an array of n int32s, recycled (its values are not reset).
func nodeInts(n int) []int32 {
	if p, ok := nodeIntsPool.Get().(*[]int32); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]int32, n)
}

// release recycles the planner's per-node arrays (the array of classes, its state's counts):
// the planner is not used after (Compute, once the plan is made; nothing the plan holds refers to
// them).
func (pl *planner) release() {
	pl.st.Release()
	for _, l := range pl.leaves {
		clear(l[:cap(l)]) // hold no step's places
		leafListPool.Put(&l)
	}
	pl.leaves = nil
	if all := pl.all; all != nil {
		nodeIntsPool.Put(&all)
	}
	pl.classOf, pl.all, pl.classes = nil, nil, nil
}

func (pl *planner) mode() int {
	if pl.pending {
		return 1
	}
	return 0
}

// apply carries step s out on the state; undo reverts it.
func (pl *planner) apply(s step) {
	if s.to >= 0 {
		pl.st.Failover(s.member, s.to)
	}
	if s.member >= 0 {
		pl.st.Set(s.member, -1)
	}
	for _, p := range s.places {
		pl.st.Set(p.member, p.node)
	}
}

func (pl *planner) undo(s step) {
	for k := len(s.places) - 1; k >= 0; k-- {
		pl.st.Set(s.places[k].member, -1)
	}
	if s.member >= 0 {
		pl.st.Set(s.member, s.from)
	}
	if s.to >= 0 {
		pl.st.Failover(s.to, s.member)
	}
}

// takeovers returns the members that may take over member j's slots before its eviction: none
// needed (-1) when j is not a master; otherwise the promotable members of its shard that are not
// masters (empty when none is: j cannot be evicted).
func (pl *planner) takeovers(j int) []int {
	st := pl.st
	if !st.IsMaster(j) {
		return []int{-1}
	}
	var out []int
	for _, t := range pl.c.Shards[pl.c.Members[j].ShardIndex].Members {
		if t != j && !st.IsMaster(t) && st.Promotable(t) {
			out = append(out, t)
		}
	}
	return out
}

// done reports whether the state with summary s is a goal of the current target (planner.tgt):
// every rule about pods holds and failovers alone can make MasterQuorum hold (and, for the soft
// fix, hold without failovers, the soft excess at most the target's); or, for a best-effort
// plan, the placement's penalty is no more than the target's. It returns the failovers the goal
// needs (the fewest).
func (pl *planner) done(s policies.Summary) ([]policies.Failover, bool) {
	if b := pl.tgt.best; b != nil {
		pen, fix := pl.st.SafestPenalty()
		return fix, !b.Less(pen)
	}
	if !s.PodsCompliant {
		return nil, false
	}
	fix, ok := pl.st.QuorumFix()
	if ok && pl.tgt.soft >= 0 {
		return nil, len(fix) == 0 && pl.softScore() <= pl.tgt.soft
	}
	return fix, ok
}

// offer records a goal at the state, reached by path from the search's start, when it needs
// fewer failovers than the best so far.
func (pl *planner) offer(path []step, fix []policies.Failover) {
	sr := pl.sr
	if sr.best == nil || len(fix) < len(sr.best.fix) {
		if sr.best == nil && !sr.first {
			sr.fLimit = pl.states + min(pl.opts.MaxStates/10, max(pl.states-sr.began, minFailoverSearch))
		}
		sr.best = &goal{start: sr.start, path: slices.Clone(path), fix: fix}
	}
}

// stop reports whether the current search should end: out of states, the first goal found when
// that is all it asks, or a goal whose failovers no plan of this length beats (or the placements
// the search may spend improving them are spent).
func (pl *planner) stop() bool {
	sr := pl.sr
	switch {
	case pl.budget:
		return true
	case sr.best == nil:
		return false
	case sr.first || len(sr.best.fix) <= sr.fBound:
		return true
	case pl.states > sr.fLimit:
		sr.fCut = true
		return true
	}
	return false
}

// free returns the first node of each class that holds no member, in node order.
func (pl *planner) free(dst []int) []int {
	from := len(dst)
	for _, nodes := range pl.classes {
		for _, n := range nodes {
			if pl.st.NodeCount(int(n)) == 0 {
				dst = append(dst, int(n))
				break
			}
		}
	}
	slices.Sort(dst[from:])
	return dst
}

// distinct returns, in node order, the nodes where unplaced member u passes the filter, one per
// set of nodes the rules and the filter cannot tell apart: every node another member occupies
// (a member runs on one node, so no two occupied nodes are alike) and the first free node of each
// class. The first is the lowest-numbered node of all that passes the filter.
func (pl *planner) distinct(u int) []int {
	among := pl.st.Occupied(pl.among[:0])
	occ := len(among)
	among = pl.free(among)
	pl.among = among
	merged := make([]int, 0, len(among))
	i, j := 0, occ
	for i < occ || j < len(among) {
		if j == len(among) || i < occ && among[i] < among[j] {
			merged = append(merged, among[i])
			i++
		} else {
			merged = append(merged, among[j])
			j++
		}
	}
	return pl.st.CandidatesIn(u, merged, merged[:0])
}

// settle calls leaf for every placement the scheduler may reach from the state by placing the
// members that are not placed, in any order, each on a node that passes the filter, until none
// can be placed (one node per class of interchangeable nodes: distinct). places lists what was
// placed, in order; leaf returns true to stop. prune, when not nil, cuts a branch (every
// placement below it is skipped) when it returns true. The state is restored.
func (pl *planner) settle(prune func() bool, leaf func(places []placed) bool) bool {
	st := pl.st
	var places []placed
	var seen map[policies.StateKey]bool
	if len(st.Unplaced()) > 1 {
		seen = map[policies.StateKey]bool{} // orders that reach one placement are searched once
	}
	var rec func() bool
	rec = func() bool {
		if prune != nil && prune() {
			return false
		}
		if seen != nil {
			if seen[st.Key()] {
				return false
			}
			seen[st.Key()] = true
		}
		un := slices.Clone(st.Unplaced())
		slices.Sort(un)
		progressed := false
		for _, u := range un {
			for _, n := range pl.distinct(u) {
				progressed = true
				st.Set(u, n)
				places = append(places, placed{u, n})
				stop := rec()
				places = places[:len(places)-1]
				st.Set(u, -1)
				if stop {
					return true
				}
			}
		}
		if !progressed {
			return leaf(places)
		}
		return false
	}
	return rec()
}

// accepts reports whether the state, reached after evicting ev and settling, is a step of the
// current model: ev is placed, or (Pending steps) it is the only member left unplaced.
func (pl *planner) accepts(ev int) bool {
	return pl.st.Node(ev) >= 0 || pl.pending && len(pl.st.Unplaced()) == 1
}

// starts returns the placements the scheduler may reach before any eviction: the Pending pods it
// can place, in any order.
func (pl *planner) starts() []step {
	var out []step
	pl.settle(nil, func(places []placed) bool {
		out = append(out, step{member: -1, to: -1, places: slices.Clone(places)})
		return false
	})
	return out
}

// leafStep is a step and the summary of the placement it reaches.
type leafStep struct {
	step
	sum policies.Summary
}

// successors returns the steps evicting member j (placed) leads to under the current model
// whose placement may still reach compliance within r more moves (lower bound at most r), in
// the order they are tried: lowest lower bound, then fewest violations. Counts each placement
// evaluated; stops (budget) when the search runs out of states.
func (pl *planner) successors(j, r int) []leafStep {
	st := pl.st
	if pl.tgt.best != nil {
		r = math.MaxInt32 // a best-effort goal is not bounded by the excess
	}
	from := st.Node(j)
	// Placing pods only adds to the excess sums: a branch above r is cut at once.
	prune := func() bool {
		e := st.Excess()
		return e.Node > r || e.Zone > r || e.Shard > r || e.Outside > r
	}
	// The scheduler's placements do not depend on who takes over j's slots (no pod rule nor filter
	// reads roles): settle once, and judge each takeover at each leaf (a failover is two counter
	// updates). The steps are listed by takeover, then by leaf.
	tos := pl.takeovers(j)
	if len(tos) == 0 {
		return nil // a master no member may take over from
	}
	// With one takeover (a replica's eviction, or a master's with one member to take over) the
	// steps go straight into out, a list from an earlier call when dfs gave one back (freeLeaves).
	out := pl.leafList()
	var byTo [][]leafStep
	if len(tos) > 1 {
		byTo = make([][]leafStep, len(tos))
	}
	st.Set(j, -1)
	pl.settle(prune, func(places []placed) bool {
		if !pl.accepts(j) {
			pl.states += len(tos)
			return false
		}
		var kept []placed // one copy for the takeovers of this leaf
		for k, to := range tos {
			pl.states++
			if to >= 0 {
				st.Failover(j, to)
			}
			s := st.Summary()
			if to >= 0 {
				st.Failover(to, j)
			}
			if s.LowerBound <= r {
				if kept == nil {
					kept = slices.Clone(places)
				}
				if byTo == nil {
					out = append(out, leafStep{step{j, from, to, kept}, s})
				} else {
					byTo[k] = append(byTo[k], leafStep{step{j, from, to, kept}, s})
				}
			}
			if pl.states > pl.limit {
				pl.budget = true
				return true
			}
		}
		return false
	})
	st.Set(j, from)
	for _, steps := range byTo {
		out = append(out, steps...)
	}
	slices.SortStableFunc(out, func(a, b leafStep) int {
		if a.sum.LowerBound != b.sum.LowerBound {
			return a.sum.LowerBound - b.sum.LowerBound
		}
		return a.sum.Violations - b.sum.Violations
	})
	return out
}

// leafList returns an empty list for successors, from freeLeaves when it holds one, else one an
// earlier planner left (release).
func (pl *planner) leafList() []leafStep {
	if k := len(pl.leaves) - 1; k >= 0 {
		l := pl.leaves[k]
		pl.leaves = pl.leaves[:k]
		return l[:0]
	}
	if p, ok := leafListPool.Get().(*[]leafStep); ok {
		return (*p)[:0]
	}
	return nil
}

// leafListPool recycles the successors' lists of released planners.
var leafListPool sync.Pool

// freeLeaves gives back a list successors returned, once nothing reads it (the steps' places are
// not in it: they stay valid).
func (pl *planner) freeLeaves(l []leafStep) {
	if cap(l) > 0 {
		pl.leaves = append(pl.leaves, l)
	}
}

// canLower reports whether evicting member j can lower every excess sum equal to lb: only a pod
// counted in a sum can lower it (placing pods only adds to the sums). ZoneEvenSplit's is the
// exception while other pods wait to be placed: placing one in the smaller zone narrows it.
func (pl *planner) canLower(j, lb int, e policies.Excess) bool {
	me := pl.st.MemberExcess(j)
	switch {
	case e.Node == lb && me.Node == 0, e.Zone == lb && me.Zone == 0, e.Shard == lb && me.Shard == 0, e.Outside == lb && me.Outside == 0:
		return false
	case e.Split == lb && me.Split == 0 && len(pl.st.Unplaced()) == 0:
		return false
	}
	return true
}

// evictable returns the movable placed members in the order evictions are tried: those taking
// part in a hard violation first, then the others, each in pl.order.
func (pl *planner) evictable() []int {
	var first, rest []int
	for _, j := range pl.order {
		if !pl.movable[j] || pl.st.Node(j) < 0 {
			continue
		}
		if pl.st.Involved(j) {
			first = append(first, j)
		} else {
			rest = append(rest, j)
		}
	}
	return append(first, rest...)
}

// dfs looks for plans of at most remaining evictions from the state (path leads to it), offers
// each goal it finds (offer), and reports whether it found one. When the lower bound equals
// remaining, every step must lower it: only members that can lower every sum setting it are
// evicted (canLower). Once a goal is known, a branch that cannot need fewer failovers is cut:
// each eviction lowers the masters' excess (QuorumExcess) by one at most, and the rest takes one
// failover each. A placement proven not to reach a goal within some number of evictions is
// remembered under the current model (only while no goal is known: later branches are cut by
// the failovers too). The state is restored.
func (pl *planner) dfs(remaining int, path *[]step) bool {
	st := pl.st
	if b := pl.sr.best; b != nil && st.QuorumExcess()-remaining >= len(b.fix) {
		// No goal from here needs fewer failovers than the best: each eviction left lowers the
		// masters' excess by one at most, and each failover by one.
		return false
	}
	s := st.Summary()
	if fix, ok := pl.done(s); ok {
		pl.offer(*path, fix)
		return true
	}
	if remaining <= 0 || s.LowerBound > remaining && pl.tgt.best == nil {
		return false
	}
	failed := pl.failed[pl.mode()]
	key := st.Key()
	if d, ok := failed[key]; ok && d >= remaining {
		return false
	}
	if pl.states > pl.limit {
		pl.budget = true
		return false
	}
	tight := s.LowerBound == remaining && pl.tgt.best == nil
	e := st.Excess()
	found := false
	for _, j := range pl.evictable() {
		if tight && !pl.canLower(j, s.LowerBound, e) {
			continue
		}
		next := pl.successors(j, remaining-1)
		for _, ls := range next {
			pl.apply(ls.step)
			*path = append(*path, ls.step)
			ok := pl.dfs(remaining-1, path)
			pl.undo(ls.step)
			*path = (*path)[:len(*path)-1]
			found = found || ok
			if pl.stop() {
				break
			}
		}
		pl.freeLeaves(next)
		if pl.stop() {
			return found
		}
	}
	if !found && pl.sr.best == nil {
		failed[key] = max(failed[key], remaining)
	}
	return found
}

// greedy builds a plan of at most limit moves one best step at a time (lowest lower bound, then
// fewest violations; ties keep the order of evictable), never returning to a placement it has
// left, and the fewest failovers after it. It restores the state.
func (pl *planner) greedy(limit int) ([]step, []policies.Failover, bool) {
	st := pl.st
	seen := map[policies.StateKey]bool{st.Key(): true}
	var path []step
	defer func() {
		for k := len(path) - 1; k >= 0; k-- {
			pl.undo(path[k])
		}
	}()
	saved := pl.limit
	pl.limit = int(^uint(0) >> 1)
	defer func() { pl.limit = saved }()
	for len(path) < limit {
		if fix, ok := pl.done(st.Summary()); ok {
			return slices.Clone(path), fix, true
		}
		var best *leafStep
		for _, j := range pl.evictable() {
			for _, ls := range pl.successors(j, len(pl.c.Members)) {
				pl.apply(ls.step)
				fresh := !seen[st.Key()]
				pl.undo(ls.step)
				if !fresh {
					continue
				}
				if best == nil || ls.sum.LowerBound < best.sum.LowerBound ||
					ls.sum.LowerBound == best.sum.LowerBound && ls.sum.Violations < best.sum.Violations {
					best = &ls
				}
			}
		}
		if best == nil {
			return nil, nil, false
		}
		pl.apply(best.step)
		seen[st.Key()] = true
		path = append(path, best.step)
	}
	if fix, ok := pl.done(st.Summary()); ok {
		return slices.Clone(path), fix, true
	}
	return nil, nil, false
}

// reaches reports whether some plan of at most r evictions (and any failovers) leads from the
// state to compliance under the current model, searching at most a tenth of Options.MaxStates
// placements, and whether it decided that (false when it gave up).
func (pl *planner) reaches(r int) (ok, decided bool) {
	limit, budget, sr := pl.limit, pl.budget, pl.sr
	defer func() { pl.limit, pl.budget, pl.sr = limit, budget, sr }()
	pl.limit, pl.budget, pl.sr = pl.states+pl.opts.MaxStates/10, false, &search{first: true}
	var path []step
	ok = pl.dfs(r, &path)
	return ok, ok || !pl.budget
}

// undoOp is an entry of follows' journal: a member's node before a move (to < 0), or a failover
// of member to to.
type undoOp struct{ member, node, to int }

// follows reports whether the planned evictions rest, carried out from the state, still reach a
// goal: each step evicts the member the plan evicts (a master handing its slots to the member the
// plan names when it still may take them, else to the first that may), and the scheduler places
// the pods where the plan expects them when each still passes the filter there (any other pod it
// can, on the lowest-numbered node that fits), otherwise where the step gets closest to
// compliance (successors' first). The cheap proof that a candidate keeps the plan on track: one
// replay, no search. The state is restored.
func (pl *planner) follows(rest []step) bool {
	st := pl.st
	// journal records what to undo: a member's node before a move (to < 0), or a failover. Its
	// memory is the planner's, kept for the next call (follows does not nest).
	journal := pl.journal[:0]
	defer func() { pl.journal = journal[:0] }()
	set := func(m, n int) {
		journal = append(journal, undoOp{m, st.Node(m), -1})
		st.Set(m, n)
	}
	failover := func(m, to int) {
		journal = append(journal, undoOp{m, -1, to})
		st.Failover(m, to)
	}
	back := func(mark int) {
		for len(journal) > mark {
			last := journal[len(journal)-1]
			journal = journal[:len(journal)-1]
			if last.to >= 0 {
				st.Failover(last.to, last.member)
			} else {
				st.Set(last.member, last.node)
			}
		}
	}
	defer back(0)
	for k, s := range rest {
		if st.Node(s.member) < 0 {
			return false
		}
		mark := len(journal)
		planned := true
		if st.IsMaster(s.member) {
			tos := pl.takeovers(s.member)
			switch {
			case len(tos) == 0:
				return false
			case slices.Contains(tos, s.to):
				failover(s.member, s.to)
			default:
				failover(s.member, tos[0])
			}
		}
		set(s.member, -1)
		for _, p := range s.places {
			if st.Node(p.member) >= 0 || !st.Fits(p.member, p.node) {
				planned = false
				break
			}
			set(p.member, p.node)
		}
		if planned {
			for changed := len(st.Unplaced()) > 0; changed; {
				changed = false
				un := slices.Clone(st.Unplaced())
				slices.Sort(un)
				for _, u := range un {
					if cands := pl.distinct(u); len(cands) > 0 {
						set(u, cands[0])
						changed = true
					}
				}
			}
			planned = pl.accepts(s.member)
		}
		pl.states++
		if !planned {
			// Back to before the step, then the step's best successor.
			back(mark)
			next := pl.successors(s.member, len(rest)-k-1)
			if len(next) == 0 {
				return false
			}
			if next[0].to >= 0 {
				failover(s.member, next[0].to)
			}
			set(s.member, -1)
			for _, p := range next[0].places {
				set(p.member, p.node)
			}
		}
		if st.Summary().LowerBound > len(rest)-k-1 && pl.tgt.best == nil {
			return false
		}
	}
	_, ok := pl.done(st.Summary())
	return ok
}
