package rebalancer

import (
	"fmt"
	"sort"
	"strconv"
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
	// Searched is the number of placements the search visited.
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

// PlanOptions bound the search.
type PlanOptions struct {
	// MaxMoves is the longest plan considered (12 when 0).
	MaxMoves int
	// MaxStates bounds the placements the exact search visits before it falls back to a greedy
	// plan (200000 when 0).
	MaxStates int
}

func (o PlanOptions) withDefaults() PlanOptions {
	if o.MaxMoves == 0 {
		o.MaxMoves = 12
	}
	if o.MaxStates == 0 {
		o.MaxStates = 200000
	}
	return o
}

// planner searches one cluster's placements. A step evicts one movable member; the scheduler
// then places every unplaced member (the evicted one, and Pending ones it can now place) on nodes
// that pass the filter, in some order.
type planner struct {
	c       *policies.Cluster
	opts    PlanOptions
	movable []bool
	// order lists the members in the order evictions are tried: replicas before masters, then
	// the most recently created first (it has run the shortest time; in seed 000's deadlock it
	// is the pod whose placement closed the last free spot).
	order   []int
	visited map[string]int // placement → largest remaining budget it was explored with
	evals   map[string]evaluation
	succ    map[string][]step // successors, computed once per placement (bounded: cached)
	cached  int               // placement entries held by succ
	states  int
	budget  bool // the state budget ran out
}

// PlanCluster returns the shortest ordered list of evictions after which every hard rule of c
// holds, assuming each evicted pod is re-placed by the scheduler on a node that passes the filter
// (policies.Cluster.Candidates) with its StatefulSet's current template. Only pods controlled by a
// StatefulSet are moved. When the exact search exceeds opts.MaxStates, a greedy plan is returned
// with Minimal false.
func PlanCluster(c *policies.Cluster, opts PlanOptions) Plan {
	opts = opts.withDefaults()
	pl := &planner{c: c, opts: opts, visited: map[string]int{}, evals: map[string]evaluation{}, succ: map[string][]step{}}
	pl.movable = make([]bool, len(c.Members))
	for i, m := range c.Members {
		pl.movable[i] = c.Shards[m.ShardIndex].StatefulSet != nil
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
	var path []step
	found := false
	for depth := pl.lowerBound(start); depth <= opts.MaxMoves && !pl.budget; depth++ {
		pl.visited = map[string]int{}
		if p, ok := pl.dfs(start, depth, nil); ok {
			path, found = p, true
			break
		}
	}
	plan.Minimal = found && !pl.budget
	if !found {
		path, found = pl.greedy(start)
	}
	plan.Searched = pl.states
	if !found {
		plan.Infeasible = fmt.Sprintf("no sequence of at most %d evictions reaches compliance (searched %d placements)", opts.MaxMoves, pl.states)
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
		for _, n := range c.Candidates(evicted, st.member) {
			onTrack := n == st.after[st.member]
			if !onTrack {
				next := evicted.Clone()
				next[st.member] = n
				next = pl.settleAny(next)
				pl.visited = map[string]int{}
				_, onTrack = pl.dfs(next, len(path)-k-1, nil)
			}
			mv.Candidates = append(mv.Candidates, Candidate{Node: c.Model().Nodes[n].Name, OnTrack: onTrack})
			mv.CandidateNodes = append(mv.CandidateNodes, c.Model().Nodes[n].Name)
		}
		plan.Moves = append(plan.Moves, mv)
		state = st.after
	}
	plan.After = c.Evaluate(state)
	plan.CompliantAfter = len(policies.Hard(plan.After)) == 0
	return plan
}

// step is one eviction and the placement the scheduler reaches after it.
type step struct {
	member int
	after  policies.Placement
}

func key(p policies.Placement) string {
	b := make([]byte, 0, 4*len(p))
	for _, n := range p {
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ',')
	}
	return string(b)
}

// evaluation is a placement's hard violations and lower bound, computed once per placement.
type evaluation struct {
	hard []policies.Violation
	lb   int
}

func (pl *planner) eval(p policies.Placement) evaluation {
	k := key(p)
	if e, ok := pl.evals[k]; ok {
		return e
	}
	e := evaluation{hard: policies.Hard(pl.c.Evaluate(p))}
	e.lb = lowerBound(e.hard)
	pl.evals[k] = e
	return e
}

func (pl *planner) compliant(p policies.Placement) bool { return len(pl.eval(p).hard) == 0 }

func (pl *planner) lowerBound(p policies.Placement) int { return pl.eval(p).lb }

// dfs looks for a path of at most depth steps from p to a compliant placement.
func (pl *planner) dfs(p policies.Placement, depth int, path []step) ([]step, bool) {
	if pl.compliant(p) {
		return path, true
	}
	if depth == 0 || pl.lowerBound(p) > depth {
		return nil, false
	}
	k := key(p)
	if d, ok := pl.visited[k]; ok && d >= depth {
		return nil, false
	}
	pl.visited[k] = depth
	pl.states++
	if pl.states > pl.opts.MaxStates {
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
	k := key(p)
	if s, ok := pl.succ[k]; ok {
		return s
	}
	s := pl.expand(p)
	// Keep the cache under about 64 MiB of placements.
	if (pl.cached+len(s))*len(p) < maxCachedInts {
		pl.succ[k] = s
		pl.cached += len(s)
	}
	return s
}

// maxCachedInts bounds the node indices the successor cache holds (8 bytes each).
const maxCachedInts = 8 << 20

func (pl *planner) expand(p policies.Placement) []step {
	c := pl.c
	involved := map[string]bool{}
	for _, v := range pl.eval(p).hard {
		for _, pod := range v.Pods {
			involved[pod] = true
		}
	}
	type scored struct {
		step
		rank [2]int
	}
	var out []scored
	for _, i := range pl.order {
		if p[i] < 0 || !pl.movable[i] {
			continue
		}
		evicted := p.Clone()
		evicted[i] = -1
		seen := map[string]bool{}
		for _, after := range pl.settleAll(evicted, i) {
			k := key(after)
			if seen[k] {
				continue
			}
			seen[k] = true
			r := [2]int{pl.lowerBound(after), 1}
			if involved[c.Members[i].Key()] {
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

// settleAny places unplaced members greedily (first candidate) until none can be placed: one
// placement the scheduler may reach without our action.
func (pl *planner) settleAny(p policies.Placement) policies.Placement {
	p = p.Clone()
	for changed := true; changed; {
		changed = false
		for i, n := range p {
			if n >= 0 || pl.c.Members[i].Terminating {
				continue
			}
			if cands := pl.c.Candidates(p, i); len(cands) > 0 {
				p[i] = cands[0]
				changed = true
			}
		}
	}
	return p
}

// distinctCandidates returns the candidate nodes for member i, one per class of nodes the rules
// cannot tell apart (same zone, same members on it, same static fitness for i).
func (pl *planner) distinctCandidates(p policies.Placement, i int) []int {
	c := pl.c
	cands := c.Candidates(p, i)
	if len(cands) <= 1 {
		return cands
	}
	onNode := map[int][]int{}
	for j, n := range p {
		if n >= 0 {
			onNode[n] = append(onNode[n], j)
		}
	}
	seen := map[string]bool{}
	var out []int
	for _, n := range cands {
		k := fmt.Sprint(c.Model().Nodes[n].Zone, onNode[n], c.NodeClass(n))
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, n)
	}
	return out
}

// lowerBound returns, from a placement's hard violations, a number of evictions that any plan from p needs at least. Each eviction
// relocates one pod, so it lowers each of these sums by at most one: the pods above the node
// limit, the pods above the zone limit (Z≥3), the pods sharing a node or zone with their shard,
// the pods outside the allowed zones; half the excess of ZoneEvenSplit (a move changes the
// difference by two); and 1 when any hard rule is broken.
func lowerBound(vs []policies.Violation) int {
	if len(vs) == 0 {
		return 0
	}
	sums := map[policies.Rule]int{}
	for _, v := range vs {
		switch v.Rule {
		case policies.MaxPodsPerNode, policies.MaxPodsPerZone, policies.ShardSeparation:
			sums[v.Rule] += v.Count - v.Limit
		case policies.AllowedZones:
			sums[v.Rule] += v.Count
		case policies.ZoneEvenSplit:
			sums[v.Rule] += (v.Count - v.Limit + 1) / 2
		}
	}
	lb := 1
	for _, s := range sums {
		lb = max(lb, s)
	}
	return lb
}

// greedy builds a plan one best move at a time (lowest lower bound, then fewest violations), for
// clusters too large for the exact search.
func (pl *planner) greedy(p policies.Placement) ([]step, bool) {
	var path []step
	seen := map[string]bool{key(p): true}
	for len(path) < pl.opts.MaxMoves {
		if pl.compliant(p) {
			return path, true
		}
		var best *step
		bestScore := [2]int{1 << 30, 1 << 30}
		for _, st := range pl.successors(p) {
			if seen[key(st.after)] {
				continue
			}
			pl.states++
			e := pl.eval(st.after)
			s := [2]int{e.lb, len(e.hard)}
			if s[0] < bestScore[0] || s[0] == bestScore[0] && s[1] < bestScore[1] {
				st := st
				best, bestScore = &st, s
			}
		}
		if best == nil {
			return nil, false
		}
		seen[key(best.after)] = true
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
