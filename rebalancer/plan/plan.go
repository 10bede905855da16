// Package plan is the planner: for one Redis cluster of a policies.Model it finds the fewest
// evictions after which every hard rule holds, assuming kube-scheduler re-places each evicted pod
// with its StatefulSet's current template, and lists per move the nodes the scheduler may choose.
// It also explains Pending pods and which evictions unblock them. It reads the model only (state
// computed once by policies.Build, then read, like a scheduler plugin's PreFilter/Filter) and
// changes nothing.
//
// It owns Plan, Move, Candidate, PendingPod and Options. It imports policies only; report and
// execute import it, never the reverse.
package plan

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Candidate is a node the scheduler may choose for a re-created pod.
type Candidate struct {
	// Node is the node's name.
	Node string `json:"node"`
	// OnTrack reports whether the rest of the plan still reaches compliance in the planned number
	// of moves when the scheduler picks this node.
	OnTrack bool `json:"onTrack"`
}

// Move is one planned eviction.
type Move struct {
	// Member is the pod's index in the cluster's Members.
	Member int `json:"-"`
	// Pod is "namespace/name"; Node the node it runs on before the move.
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// Shard is the pod's shard; Role its Redis role when the plan was made.
	Shard string        `json:"shard"`
	Role  policies.Role `json:"role,omitempty"`
	// Failover is true when the pod is (or may be) a master: fail it over to an in-sync replica
	// before the eviction.
	Failover bool `json:"failover"`
	// Expected is the node the plan assumes the scheduler picks.
	Expected string `json:"expected"`
	// Candidates are the nodes where the re-created pod passes the filter, by name.
	Candidates []Candidate `json:"candidates"`
	// CandidateNodes lists the candidates' names (the JSON contract's short form).
	CandidateNodes []string `json:"candidateNodes"`
	// Reason says which violations the move addresses.
	Reason string `json:"reason"`
}

// Plan is the planner's answer for one cluster.
type Plan struct {
	// Moves are the evictions in order; they are carried out one at a time.
	Moves []Move `json:"moves"`
	// Before are the violations of the current placement; After those expected after the plan.
	Before []policies.Violation `json:"violations"`
	After  []policies.Violation `json:"violationsAfter,omitempty"`
	// CompliantAfter reports whether every hard rule holds after the moves.
	CompliantAfter bool `json:"compliantAfter"`
	// Minimal reports whether the move count is proven minimal (exhaustive within the budget).
	Minimal bool `json:"minimal"`
	// Infeasible says in words why no plan reaches compliance ("" when one does or none is needed).
	Infeasible string `json:"infeasible"`
	// Pending explains, for each pod the scheduler cannot place now, why per node.
	Pending []PendingPod `json:"pending,omitempty"`
	// Searched is the number of placements the planner evaluated (its searches and the on-track
	// checks of the candidates).
	Searched int `json:"searched"`
}

// PendingPod is a Pending pod's diagnosis.
type PendingPod struct {
	// Pod is "namespace/name".
	Pod string `json:"pod"`
	// Why is the filter's per-node verdict, like kube-scheduler's FailedScheduling message.
	Why string `json:"why"`
	// Unblock lists the smallest set of pods whose eviction lets this pod and every evicted pod
	// be placed (empty when none was found within the budget).
	Unblock []string `json:"unblock,omitempty"`
}

// Defaults of Options.
const (
	// DefaultMaxMoves is the longest plan considered when Options.MaxMoves is 0, unless twice the
	// lower bound on the moves needed is more.
	DefaultMaxMoves = 12
	// DefaultMaxStates is Options.MaxStates when 0: placements evaluated.
	DefaultMaxStates = 200000
)

// Options bound the search.
type Options struct {
	// MaxMoves is the longest plan considered. 0 picks DefaultMaxMoves (12), or twice the lower
	// bound on the number of moves when that is more (a large drift in a large cluster).
	MaxMoves int
	// MaxStates bounds the placements the planner evaluates (each one a policies.Cluster.Evaluate)
	// while it looks for a plan shorter than its greedy one; when it runs out, the greedy plan is
	// returned with Minimal false (DefaultMaxStates when 0).
	MaxStates int
}

func (o Options) withDefaults() Options {
	if o.MaxStates == 0 {
		o.MaxStates = DefaultMaxStates
	}
	return o
}

// planner searches one cluster's placements. A step evicts one movable member; the scheduler
// then places every unplaced member (the evicted one, and Pending ones it can now place) on nodes
// that pass the filter, in some order.
type planner struct {
	c       *policies.Cluster
	opts    Options
	movable []bool
	// order lists the members in the order evictions are tried: replicas before masters, then
	// the most recently created first (it has run the shortest time; in seed 000's deadlock it
	// is the pod whose placement closed the last free spot).
	order []int
	// byKey maps a member's "namespace/name" to its index.
	byKey map[string]int
	// classNodes lists, per class of interchangeable nodes (policies.Cluster.NodeClass), its
	// nodes in node order. A member is only ever tried on the nodes other members occupy and on
	// the first free node of each class: any other free node of the class is equivalent.
	classNodes [][]int
	visited    map[string]int // placement → largest remaining budget it was explored with
	evals      map[string]evaluation
	succ       map[string][]step // successors, computed once per placement (bounded: cached)
	cached     int               // node indices held by succ
	states     int               // placements evaluated
	limit      int               // states at which the current search gives up
	budget     bool              // the current search ran out of states
	wide       bool              // keys take four bytes per member (see key)
}

// Compute returns the shortest ordered list of evictions after which every hard rule of c
// holds, assuming each evicted pod is re-placed by the scheduler on a node that passes the filter
// (policies.Cluster.Candidates) with its StatefulSet's current template. Only pods controlled by a
// StatefulSet are moved. A greedy plan comes first and is proven minimal when its length meets a
// lower bound (lowerBound); otherwise an iterative-deepening search looks for a shorter one, and
// when that search evaluates more than opts.MaxStates placements the greedy plan is returned with
// Minimal false.
func Compute(c *policies.Cluster, opts Options) Plan {
	opts = opts.withDefaults()
	pl := &planner{c: c, opts: opts, visited: map[string]int{}, evals: map[string]evaluation{}, succ: map[string][]step{}, byKey: map[string]int{}}
	pl.wide = len(c.Model().Nodes) >= 0xffff
	pl.movable = make([]bool, len(c.Members))
	for i, m := range c.Members {
		pl.movable[i] = c.Shards[m.ShardIndex].StatefulSet != nil
		pl.order = append(pl.order, i)
		pl.byKey[m.Key()] = i
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
	cur := c.Current()
	plan := Plan{Before: c.Evaluate(cur)}
	plan.Pending = pl.diagnosePending(cur)
	if len(policies.Hard(plan.Before)) == 0 {
		plan.CompliantAfter, plan.Minimal = true, true
		return plan
	}
	if why := c.StaticInfeasibility(); why != "" {
		plan.Infeasible = why
		return plan
	}
	// The scheduler places whatever it can before we act.
	start := pl.settleAny(cur)
	lb := pl.lowerBound(start)
	if opts.MaxMoves == 0 {
		pl.opts.MaxMoves = max(DefaultMaxMoves, 2*lb)
	}
	if lb > pl.opts.MaxMoves {
		plan.Infeasible = fmt.Sprintf("at least %d evictions are needed (%s), more than the longest plan considered (%d moves)",
			lb, boundReason(policies.Hard(c.Evaluate(start))), pl.opts.MaxMoves)
		plan.After = plan.Before
		return plan
	}
	path, found, minimal := pl.search(start)
	plan.Minimal = minimal
	if !found {
		plan.Searched = pl.states
		plan.Infeasible = fmt.Sprintf("no sequence of at most %d evictions reaches compliance (searched %d placements)", pl.opts.MaxMoves, pl.states)
		plan.After = plan.Before
		return plan
	}
	state := start
	for k, st := range path {
		mem := c.Members[st.member]
		mv := Move{
			Member: st.member, Pod: mem.Key(), Node: c.Model().Nodes[state[st.member]].Name,
			Shard: mem.Shard, Role: mem.Role, Failover: mem.Role != policies.RoleReplica,
			Expected: c.Model().Nodes[st.after[st.member]].Name,
			Reason:   reasonFor(c, state, st.member),
		}
		evicted := state.Clone()
		evicted[st.member] = -1
		occupied := map[int]bool{}
		for _, n := range evicted {
			occupied[n] = true
		}
		// Free nodes of one class are interchangeable: decide once per class.
		byClass := map[uint64]bool{}
		if planned := st.after[st.member]; !occupied[planned] {
			byClass[c.NodeClass(planned)] = true
		}
		for _, n := range c.Candidates(evicted, st.member) {
			onTrack, known := n == st.after[st.member], false
			if !onTrack && !occupied[n] {
				onTrack, known = byClass[c.NodeClass(n)]
			}
			if !onTrack && !known {
				next := evicted.Clone()
				next[st.member] = n
				next = pl.settleAny(next)
				onTrack = pl.follows(next, path[k+1:]) || pl.reaches(next, len(path)-k-1)
				if !occupied[n] {
					byClass[c.NodeClass(n)] = onTrack
				}
			}
			mv.Candidates = append(mv.Candidates, Candidate{Node: c.Model().Nodes[n].Name, OnTrack: onTrack})
			mv.CandidateNodes = append(mv.CandidateNodes, c.Model().Nodes[n].Name)
		}
		plan.Moves = append(plan.Moves, mv)
		state = st.after
	}
	plan.Searched = pl.states
	plan.After = c.Evaluate(state)
	plan.CompliantAfter = len(policies.Hard(plan.After)) == 0
	return plan
}

// step is one eviction and the placement the scheduler reaches after it.
type step struct {
	member int
	after  policies.Placement
}

// key encodes a placement exactly: two bytes per member (-1 is 0xffff), or four when the model
// has 65,535 nodes or more.
func (pl *planner) key(p policies.Placement) string {
	if pl.wide {
		b := make([]byte, 4*len(p))
		for i, n := range p {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(n))
		}
		return string(b)
	}
	b := make([]byte, 2*len(p))
	for i, n := range p {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(n))
	}
	return string(b)
}

// evaluation is what the search keeps of a placement's evaluation: its lower bound and its number
// of hard violations.
type evaluation struct {
	lb, hard int32
}

// better reports whether e is closer to compliance than o: a lower bound first, then fewer hard
// violations.
func (e evaluation) better(o evaluation) bool {
	return e.lb < o.lb || e.lb == o.lb && e.hard < o.hard
}

// Bounds on the planner's caches, in bytes of keys and values (about 64 MiB each); a full cache
// is dropped and refilled, which costs time, never correctness.
const (
	maxEvalBytes    = 64 << 20
	maxVisitedBytes = 64 << 20
	maxCachedInts   = 8 << 20 // node indices the successor cache holds (8 bytes each)
)

func (pl *planner) eval(p policies.Placement) evaluation {
	k := pl.key(p)
	if e, ok := pl.evals[k]; ok {
		return e
	}
	pl.states++
	hard := pl.c.EvaluateHard(p)
	e := evaluation{lb: int32(lowerBound(hard)), hard: int32(len(hard))}
	if len(pl.evals)*(len(k)+32) > maxEvalBytes {
		clear(pl.evals)
	}
	pl.evals[k] = e
	return e
}

func (pl *planner) compliant(p policies.Placement) bool { return pl.eval(p).hard == 0 }

func (pl *planner) lowerBound(p policies.Placement) int { return int(pl.eval(p).lb) }

// search returns the shortest plan it finds from start, whether it found one, and whether its
// length is proven minimal. A greedy plan comes first; when its length equals the lower bound of
// start it is minimal. Otherwise an iterative-deepening search looks for a shorter one, from the
// lower bound up, within opts.MaxStates evaluated placements.
func (pl *planner) search(start policies.Placement) (path []step, found, minimal bool) {
	path, found = pl.greedy(start, pl.opts.MaxMoves)
	lb := pl.lowerBound(start)
	if found && len(path) <= lb {
		return path, true, true
	}
	longest := pl.opts.MaxMoves
	if found {
		longest = len(path) - 1
	}
	pl.limit, pl.budget = pl.states+pl.opts.MaxStates, false
	for depth := lb; depth <= longest && !pl.budget; depth++ {
		clear(pl.visited)
		if p, ok := pl.dfs(start, depth, nil); ok {
			return p, true, true
		}
	}
	return path, found, found && !pl.budget
}

// reaches reports whether some plan of at most depth moves leads from p to compliance: the
// greedy plan, then a bounded exact search (a tenth of opts.MaxStates). It answers false when
// the bounded search gives up.
func (pl *planner) reaches(p policies.Placement, depth int) bool {
	if pl.lowerBound(p) > depth {
		return false
	}
	if _, ok := pl.greedy(p, depth); ok {
		return true
	}
	pl.limit, pl.budget = pl.states+pl.opts.MaxStates/10, false
	clear(pl.visited)
	_, ok := pl.dfs(p, depth, nil)
	return ok
}

// follows reports whether the planned moves rest, carried out from p with the scheduler choosing
// the nodes the plan expects (each one must still pass the filter), end in compliance: the cheap
// proof that a candidate keeps the plan on track when its move does not disturb the others.
func (pl *planner) follows(p policies.Placement, rest []step) bool {
	for _, st := range rest {
		m, target := st.member, st.after[st.member]
		if p[m] < 0 {
			return false
		}
		evicted := p.Clone()
		evicted[m] = -1
		if len(pl.c.CandidatesIn(evicted, m, []int{target})) == 0 {
			return false
		}
		evicted[m] = target
		p = pl.settleAny(evicted)
	}
	return pl.compliant(p)
}

// dfs looks for a path of at most depth steps from p to a compliant placement.
func (pl *planner) dfs(p policies.Placement, depth int, path []step) ([]step, bool) {
	if pl.compliant(p) {
		return path, true
	}
	if depth == 0 || pl.lowerBound(p) > depth {
		return nil, false
	}
	k := pl.key(p)
	if d, ok := pl.visited[k]; ok && d >= depth {
		return nil, false
	}
	if len(pl.visited)*(len(k)+24) > maxVisitedBytes {
		clear(pl.visited)
	}
	pl.visited[k] = depth
	if pl.states > pl.limit {
		pl.budget = true
		return nil, false
	}
	for _, st := range pl.successors(p) {
		if res, ok := pl.dfs(st.after, depth-1, append(path, st)); ok {
			return res, true
		}
		if pl.budget {
			return nil, false
		}
	}
	return nil, false
}

// successors lists the placements one eviction leads to, most promising first: lowest lower
// bound, then pods named in violations, then pl.order.
func (pl *planner) successors(p policies.Placement) []step {
	k := pl.key(p)
	if s, ok := pl.succ[k]; ok {
		return s
	}
	s := pl.expand(p, pl.involved(p), func(int) bool { return true })
	// Keep the cache under about 64 MiB of placements.
	if (pl.cached+len(s))*len(p) < maxCachedInts {
		pl.succ[k] = s
		pl.cached += len(s)
	}
	return s
}

// involved returns the members named in p's hard violations.
func (pl *planner) involved(p policies.Placement) map[int]bool {
	in := map[int]bool{}
	for _, v := range policies.Hard(pl.c.Evaluate(p)) {
		for _, pod := range v.Pods {
			if i, ok := pl.byKey[pod]; ok {
				in[i] = true
			}
		}
	}
	return in
}

// expand evicts each movable member i for which try(i) holds, in turn, and returns the placements
// the scheduler may reach, ranked as successors says (involved: the members named in p's hard
// violations).
func (pl *planner) expand(p policies.Placement, involved map[int]bool, try func(i int) bool) []step {
	type scored struct {
		step
		rank [2]int
	}
	var out []scored
	for _, i := range pl.order {
		if p[i] < 0 || !pl.movable[i] || !try(i) {
			continue
		}
		evicted := p.Clone()
		evicted[i] = -1
		seen := map[string]bool{}
		for _, after := range pl.settleAll(evicted, i) {
			k := pl.key(after)
			if seen[k] {
				continue
			}
			seen[k] = true
			r := [2]int{pl.lowerBound(after), 1}
			if involved[i] {
				r[1] = 0
			}
			out = append(out, scored{step{i, after}, r})
		}
	}
	// Stable: equal ranks keep pl.order (replicas first, newest first).
	sort.SliceStable(out, func(a, b int) bool {
		ra, rb := out[a].rank, out[b].rank
		if ra[0] != rb[0] {
			return ra[0] < rb[0]
		}
		return ra[1] < rb[1]
	})
	steps := make([]step, len(out))
	for k := range out {
		steps[k] = out[k].step
	}
	return steps
}

// settleAll returns every placement the scheduler may reach after evicting member ev from p:
// ev and every unplaced member are placed in some order on nodes that pass the filter (one node
// per class of equivalent nodes); ev must be placed, other Pending members may stay Pending.
func (pl *planner) settleAll(p policies.Placement, ev int) []policies.Placement {
	var out []policies.Placement
	var rec func(p policies.Placement)
	rec = func(p policies.Placement) {
		progressed := false
		for i, n := range p {
			if n >= 0 || pl.c.Members[i].Terminating && i != ev {
				continue
			}
			for _, cand := range pl.distinctCandidates(p, i) {
				next := p.Clone()
				next[i] = cand
				progressed = true
				rec(next)
			}
		}
		if !progressed && p[ev] >= 0 {
			out = append(out, p)
		}
	}
	rec(p)
	return out
}

// settleAny places unplaced members greedily (the lowest-numbered node that passes the filter)
// until none can be placed: one placement the scheduler may reach without our action.
func (pl *planner) settleAny(p policies.Placement) policies.Placement {
	p = p.Clone()
	for changed := true; changed; {
		changed = false
		for i, n := range p {
			if n >= 0 || pl.c.Members[i].Terminating {
				continue
			}
			if cands := pl.distinctCandidates(p, i); len(cands) > 0 {
				p[i] = cands[0]
				changed = true
			}
		}
	}
	return p
}

// classNodes groups the model's nodes by c.NodeClass, each group in node order.
func classNodes(c *policies.Cluster) [][]int {
	index := map[uint64]int{}
	var out [][]int
	for n := range c.Model().Nodes {
		k := c.NodeClass(n)
		g, ok := index[k]
		if !ok {
			g = len(out)
			index[k] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], n)
	}
	return out
}

// distinctCandidates returns, in node order, the candidate nodes for member i under p, one per
// set of nodes the rules and the filter cannot tell apart: every node another member occupies (a
// member runs on one node, so no two occupied nodes are alike) and the first free node of each
// class. The lowest-numbered candidate is the lowest-numbered node of all that passes the filter.
func (pl *planner) distinctCandidates(p policies.Placement, i int) []int {
	occupied := make(map[int]bool, len(p))
	among := make([]int, 0, len(p)+len(pl.classNodes))
	for _, n := range p {
		if n >= 0 && !occupied[n] {
			occupied[n] = true
			among = append(among, n)
		}
	}
	if pl.classNodes == nil {
		pl.classNodes = classNodes(pl.c)
	}
	for _, nodes := range pl.classNodes {
		for _, n := range nodes {
			if !occupied[n] {
				among = append(among, n)
				break
			}
		}
	}
	sort.Ints(among)
	return pl.c.CandidatesIn(p, i, among)
}

// lowerBound returns, from a placement's hard violations, a number of evictions that any plan from p needs at least. Each eviction
// relocates one pod, so it lowers each of these sums by at most one: the pods above the node
// limit, the pods above the zone limit (Z≥3), the pods sharing a node or zone with their shard,
// the pods outside the allowed zones; half the excess of ZoneEvenSplit (a move changes the
// difference by two); and 1 when any hard rule is broken.
func lowerBound(vs []policies.Violation) int {
	lb, _ := bound(vs)
	return lb
}

// bound returns lowerBound(vs) and the rule that sets it ("" when it is 0 or 1).
func bound(vs []policies.Violation) (int, policies.Rule) {
	if len(vs) == 0 {
		return 0, ""
	}
	var sums [5]int
	rules := [5]policies.Rule{policies.MaxPodsPerNode, policies.MaxPodsPerZone, policies.ShardSeparation, policies.AllowedZones, policies.ZoneEvenSplit}
	for _, v := range vs {
		switch v.Rule {
		case policies.MaxPodsPerNode:
			sums[0] += v.Count - v.Limit
		case policies.MaxPodsPerZone:
			sums[1] += v.Count - v.Limit
		case policies.ShardSeparation:
			sums[2] += v.Count - v.Limit
		case policies.AllowedZones:
			sums[3] += v.Count
		case policies.ZoneEvenSplit:
			sums[4] += (v.Count - v.Limit + 1) / 2
		}
	}
	lb, rule := 1, policies.Rule("")
	for k, s := range sums {
		if s > lb {
			lb, rule = s, rules[k]
		}
	}
	return lb, rule
}

// boundReason says in words why lowerBound(vs) moves are needed.
func boundReason(vs []policies.Violation) string {
	lb, rule := bound(vs)
	switch rule {
	case policies.MaxPodsPerNode:
		return fmt.Sprintf("%d pods above the per-node limit, one eviction each", lb)
	case policies.MaxPodsPerZone:
		return fmt.Sprintf("%d pods above the per-zone limit, one eviction each", lb)
	case policies.ShardSeparation:
		return fmt.Sprintf("%d pods share a node or zone with a pod of their shard, one eviction each", lb)
	case policies.AllowedZones:
		return fmt.Sprintf("%d pods run outside the allowed zones, one eviction each", lb)
	case policies.ZoneEvenSplit:
		return "the two zones' pod counts differ too much, and one eviction narrows the difference by at most 2"
	}
	return "some hard rule is broken"
}

// greedy builds a plan of at most limit moves one best move at a time (lowest lower bound, then
// fewest hard violations; ties keep pl.order). It tries the members named in violations first and
// evicts another member only when none of theirs gets closer to compliance.
func (pl *planner) greedy(p policies.Placement, limit int) ([]step, bool) {
	var path []step
	seen := map[string]bool{pl.key(p): true}
	pick := func(steps []step) (best *step, score evaluation) {
		for _, st := range steps {
			if seen[pl.key(st.after)] {
				continue
			}
			if e := pl.eval(st.after); best == nil || e.better(score) {
				best, score = &st, e
			}
		}
		return best, score
	}
	for len(path) < limit {
		if pl.compliant(p) {
			return path, true
		}
		involved := pl.involved(p)
		best, score := pick(pl.expand(p, involved, func(i int) bool { return involved[i] }))
		if best == nil || !score.better(pl.eval(p)) {
			others, s := pick(pl.expand(p, involved, func(i int) bool { return !involved[i] }))
			if others != nil && (best == nil || s.better(score)) {
				best = others
			}
		}
		if best == nil {
			return nil, false
		}
		seen[pl.key(best.after)] = true
		path = append(path, *best)
		p = best.after
	}
	return path, pl.compliant(p)
}

// diagnosePending explains each unplaced member and looks for the smallest set of evictions that
// lets it (and every evicted pod) be placed.
func (pl *planner) diagnosePending(p policies.Placement) []PendingPod {
	c := pl.c
	var out []PendingPod
	for i, n := range p {
		mem := c.Members[i]
		if n >= 0 || mem.Terminating {
			continue
		}
		pp := PendingPod{Pod: mem.Key(), Why: c.Explain(p, i).Summary()}
		if len(c.Candidates(p, i)) == 0 {
			pp.Unblock = pl.unblock(p, i)
		}
		out = append(out, pp)
	}
	return out
}

// unblock finds the fewest evictions (up to 3) after which member target and every evicted
// member are placed.
func (pl *planner) unblock(p policies.Placement, target int) []string {
	for size := 1; size <= 3; size++ {
		var found []int
		var rec func(p policies.Placement, chosen []int, from int) bool
		rec = func(p policies.Placement, chosen []int, from int) bool {
			if len(chosen) == size {
				for _, after := range pl.settleAll(p, chosen[len(chosen)-1]) {
					if after[target] >= 0 && allPlaced(after, chosen) {
						found = append([]int(nil), chosen...)
						return true
					}
				}
				return false
			}
			for k := from; k < len(pl.order); k++ {
				j := pl.order[k]
				if p[j] < 0 || !pl.movable[j] {
					continue
				}
				next := p.Clone()
				next[j] = -1
				if rec(next, append(chosen, j), k+1) {
					return true
				}
			}
			return false
		}
		if rec(p, nil, 0) {
			var names []string
			for _, j := range found {
				names = append(names, pl.c.Members[j].Key())
			}
			return names
		}
	}
	return nil
}

func allPlaced(p policies.Placement, members []int) bool {
	for _, j := range members {
		if p[j] < 0 {
			return false
		}
	}
	return true
}

// reasonFor names the violations member i is part of under p.
func reasonFor(c *policies.Cluster, p policies.Placement, i int) string {
	var parts []string
	key := c.Members[i].Key()
	for _, v := range policies.Hard(c.Evaluate(p)) {
		for _, pod := range v.Pods {
			if pod == key {
				parts = append(parts, fmt.Sprintf("%s %s", v.Rule, v.Domain))
				break
			}
		}
	}
	if len(parts) == 0 {
		return "makes room for the other moves"
	}
	return strings.Join(parts, ", ")
}
