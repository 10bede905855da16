package plan

import (
	"math"
	"slices"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// The two searches a policy opts into: a best-effort plan where no plan reaches compliance
// (Options.BestEffort), and the soft fix once compliance is reached (Options.SoftEvictions).

// bestEffortPlan fills plan with a best-effort plan: the fewest evictions to the placement with
// the lowest policies.Penalty a breadth-first search reaches within Options.MaxMoves evictions
// (DefaultMaxMoves when 0) and Options.MaxStates placements. Plan.BestEffort says what it
// reaches; without a placement better than the current one it has no move.
func (pl *planner) bestEffortPlan(plan *Plan) {
	c, st := pl.c, pl.st
	pl.pending = pl.opts.AllowPendingSteps
	pl.setTarget(target{soft: -1})
	before := st.Penalty()
	o, after, minimal := pl.bestEffortSearch()
	plan.BestEffort = &BestEffort{Before: before, After: after, Minimal: minimal}
	plan.Searched = pl.states
	if len(o.path) == 0 && len(o.start.places) == 0 && len(o.fix) == 0 {
		plan.BestEffort.After = before
		return
	}
	pl.setTarget(target{best: &after, soft: -1})
	pl.limit, pl.budget = math.MaxInt, false // the on-track checks bound their own searches
	plan.Moves = pl.moves(o)
	plan.Evictions, plan.Failovers = len(o.path), len(o.fix)
	plan.PendingSteps = pl.exposure(o)
	final, masters := pl.replay(o)
	plan.After = c.EvaluateWith(final, masters)
	plan.CompliantAfter = len(policies.Hard(plan.After)) == 0
	plan.Minimal, plan.FailoversMinimal = minimal, minimal
	plan.Searched = pl.states
	pl.setTarget(target{soft: -1})
}

// bestEffortSearch searches breadth first from the starts (the placements the scheduler reaches
// before any eviction), each placement once, for the one with the lowest penalty: the first
// found at the fewest evictions. It returns the path there and the failovers (QuorumFix) it
// needs, that penalty, and whether the search was exhaustive (no budget spent). A path that
// lowers nothing is empty.
func (pl *planner) bestEffortSearch() (outcome, policies.Penalty, bool) {
	st := pl.st
	pl.limit, pl.budget = pl.states+pl.opts.MaxStates, false
	type entry struct {
		start step
		path  []step
	}
	var best outcome
	bestPen := st.Penalty() // the masters as they are: failovers are steps too
	seen := map[policies.StateKey]bool{st.Key(): true}
	var frontier []entry
	consider := func(e entry) {
		pen, fix := st.SafestPenalty()
		if pen.Less(bestPen) || best.found && pen == bestPen && len(e.path) == len(best.path) && len(fix) < len(best.fix) {
			bestPen = pen
			best = outcome{start: e.start, path: e.path, fix: fix, found: true}
		}
	}
	for _, s := range pl.starts() {
		pl.apply(s)
		seen[st.Key()] = true
		e := entry{start: s}
		consider(e)
		frontier = append(frontier, e)
		pl.undo(s)
	}
	maxMoves := pl.opts.MaxMoves
	if maxMoves == 0 {
		maxMoves = DefaultMaxMoves
	}
	for depth := 1; depth <= maxMoves && len(frontier) > 0 && !pl.budget && !bestPen.Zero(); depth++ {
		var next []entry
		for _, e := range frontier {
			pl.apply(e.start)
			for _, s := range e.path {
				pl.apply(s)
			}
			for _, j := range pl.evictable() {
				for _, ls := range pl.successors(j, math.MaxInt32) {
					pl.apply(ls.step)
					if k := st.Key(); !seen[k] {
						seen[k] = true
						ne := entry{start: e.start, path: append(slices.Clone(e.path), ls.step)}
						consider(ne)
						next = append(next, ne)
					}
					pl.undo(ls.step)
				}
				if pl.budget {
					break
				}
			}
			for k := len(e.path) - 1; k >= 0; k-- {
				pl.undo(e.path[k])
			}
			pl.undo(e.start)
			if pl.budget {
				break
			}
		}
		frontier = next
	}
	return best, bestPen, !pl.budget
}

// softPlan adds the soft fix to plan, whose outcome o reaches compliance: from the placement o
// ends in (its failovers made), at most Options.SoftEvictions evictions that keep every hard rule
// and lower the soft excess the most, the fewest of them (softSearch). The moves come after o's
// and are marked Move.Soft; Plan.Soft says what they do.
func (pl *planner) softPlan(plan *Plan, o outcome) {
	c, st := pl.c, pl.st
	pl.apply(o.start)
	for _, s := range o.path {
		pl.apply(s)
	}
	for _, f := range o.fix {
		st.Failover(f.From, f.To)
	}
	defer func() {
		for k := len(o.fix) - 1; k >= 0; k-- {
			st.Failover(o.fix[k].To, o.fix[k].From)
		}
		for k := len(o.path) - 1; k >= 0; k-- {
			pl.undo(o.path[k])
		}
		pl.undo(o.start)
		pl.setTarget(target{soft: -1})
	}()
	before := pl.softScore()
	plan.Soft = &SoftFix{Before: before, After: before, Minimal: true}
	if before == 0 {
		return
	}
	pl.setTarget(target{soft: -1})
	pl.limit, pl.budget = pl.states+pl.opts.MaxStates, false
	steps, after := pl.softSearch(pl.opts.SoftEvictions)
	plan.Soft.Minimal = !pl.budget
	plan.Searched = pl.states
	if len(steps) == 0 {
		return
	}
	plan.Soft.After = after
	pl.setTarget(target{soft: after})
	pl.limit, pl.budget = math.MaxInt, false
	moves := pl.moves(outcome{start: step{member: -1, to: -1}, path: steps})
	for k := range moves {
		moves[k].Soft = true
	}
	plan.Moves = append(plan.Moves, moves...)
	plan.SoftEvictions = len(steps)
	for _, s := range steps {
		pl.apply(s)
	}
	plan.After = c.EvaluateWith(st.Placement().Clone(), st.Masters().Clone())
	for k := len(steps) - 1; k >= 0; k-- {
		pl.undo(steps[k])
	}
	plan.Searched = pl.states
}

// softSearch searches depth first, at most maxSteps evictions deep, each placement once per depth
// left, for the evictions that keep every hard rule (each step's placement complies, MasterQuorum
// included with the failover the step makes) and lower the soft excess the most, the fewest of
// them. It returns them (none when nothing lowers it) and the soft excess they reach. The state
// is restored.
func (pl *planner) softSearch(maxSteps int) ([]step, int) {
	st := pl.st
	bestScore := pl.softScore()
	var best, path []step
	seen := map[policies.StateKey]int{}
	var rec func(remaining int)
	rec = func(remaining int) {
		if remaining == 0 || pl.budget {
			return
		}
		key := st.Key()
		if d, ok := seen[key]; ok && d >= remaining {
			return
		}
		seen[key] = remaining
		for _, j := range pl.evictable() {
			for _, ls := range pl.successors(j, 0) {
				if !ls.sum.Compliant {
					continue
				}
				pl.apply(ls.step)
				path = append(path, ls.step)
				if s := pl.softScore(); s < bestScore || s == bestScore && best != nil && len(path) < len(best) {
					bestScore, best = s, slices.Clone(path)
				}
				if bestScore > 0 {
					rec(remaining - 1)
				}
				path = path[:len(path)-1]
				pl.undo(ls.step)
				if pl.budget {
					return
				}
			}
		}
	}
	rec(maxSteps)
	return best, bestScore
}
