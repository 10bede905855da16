package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// outcome is what one search (one model) found.
type outcome struct {
	start step                // the placements the scheduler makes before the first eviction
	path  []step              // the plan's evictions
	fix   []policies.Failover // the failovers after them
	// found: a plan; minimal: its evictions proven fewest; fixMinimal: its failovers proven
	// fewest for that many evictions.
	found, minimal, fixMinimal bool
	// lb is the lower bound at the start (the lowest over the starts), rule the rule setting it;
	// maxMoves the longest plan considered; ruledOut the length below which every plan was
	// searched and none found.
	lb       int
	rule     policies.Rule
	maxMoves int
	ruledOut int
	budget   bool // the search ran out of states
	stuck    bool // no eviction from the start is a step of the model
	// frozen lists why the cluster's placed pods may not be evicted, when none may
	// (policies.Cluster.Warnings).
	frozen []string
	// mastersOnly: every pod that may be evicted is a master with no member of its shard to
	// take its slots over (no replica), so no eviction is a step at all.
	mastersOnly int
}

// Compute returns the shortest ordered list of evictions after which every hard rule of c
// holds, in the package's model (each evicted pod re-placed by the scheduler with its
// StatefulSet's current template, or its own spec for another owner that re-creates it, on a
// node that passes the filter; with opts.AllowPendingSteps, possibly after waiting Pending).
// Only pods the cluster may evict are moved (policies.Member.NotEvictable: a re-creating
// controller, a known shard). When no plan exists, Plan.Infeasible says why (the static reason, or the bound that
// stopped the search) and, in the default model, whether a plan exists when a pod may wait
// Pending (Plan.WithPendingSteps).
func Compute(c *policies.Cluster, opts Options) (plan Plan) {
	opts = opts.withDefaults()
	var pl *planner // built when needed: a compliant cluster without Pending pods needs none
	defer func() {
		plan.Work.Searched = plan.Searched
		if pl != nil {
			plan.Work.FilterChecks = pl.st.FilterChecks()
			pl.release()
		}
	}()
	planner := func() *planner {
		if pl == nil {
			pl = newPlanner(c, opts)
		}
		return pl
	}
	cur := c.Current()
	plan = Plan{Before: c.Evaluate(cur), AllowPendingSteps: opts.AllowPendingSteps}
	for i, n := range cur {
		if n < 0 && !c.Members[i].Terminating {
			plan.Pending = planner().diagnosePending(cur)
			break
		}
	}
	if len(policies.Hard(plan.Before)) == 0 {
		plan.CompliantAfter, plan.Minimal, plan.FailoversMinimal = true, true, true
		if opts.SoftEvictions > 0 && policies.SoftExcess(plan.Before) > 0 {
			pl = planner()
			pl.pending = opts.AllowPendingSteps
			pl.softPlan(&plan, outcome{start: pl.starts()[0]})
		}
		return plan
	}
	if why := c.StaticInfeasibility(&plan.Work); why != "" {
		plan.Infeasible, plan.LimitedBy = why, LimitStatic
		plan.After = plan.Before
		plan.Held = planner().held()
		if opts.BestEffort {
			planner().bestEffortPlan(&plan)
		} else {
			planner().saferPlan(&plan)
		}
		return plan
	}
	pl = planner()
	out := pl.solve(opts.AllowPendingSteps)
	if !out.found {
		plan.Infeasible, plan.LimitedBy = out.why(opts.AllowPendingSteps, pl.states)
		if !opts.AllowPendingSteps && !out.budget {
			if alt := pl.solve(true); alt.found {
				plan.WithPendingSteps = pl.alternative(alt)
				plan.Infeasible += "; " + alternativeText(plan.WithPendingSteps)
				plan.LimitedBy = LimitPendingSteps
			}
		}
		plan.Searched = pl.states
		plan.After = plan.Before
		plan.Held = pl.held()
		if opts.BestEffort {
			pl.bestEffortPlan(&plan)
		} else {
			pl.saferPlan(&plan)
		}
		return plan
	}
	plan.Minimal, plan.FailoversMinimal = out.minimal, out.minimal && out.fixMinimal
	pl.pending = opts.AllowPendingSteps
	pl.limit, pl.budget = int(^uint(0)>>1), false // the on-track checks bound their own searches
	plan.Moves = pl.moves(out)
	plan.Evictions, plan.Failovers = len(out.path), len(out.fix)
	plan.PendingSteps = pl.exposure(out)
	final, masters := pl.replay(out)
	plan.After = c.EvaluateWith(final, masters)
	plan.CompliantAfter = len(policies.Hard(plan.After)) == 0
	plan.Searched = pl.states
	if opts.SoftEvictions > 0 && plan.CompliantAfter && policies.SoftExcess(plan.After) > 0 {
		pl.softPlan(&plan, out)
	}
	return plan
}

// solve searches under the default model or the Pending-step one: the starts (what the scheduler
// places before any eviction), then rounds of dfs from the lower bound up to the longest plan
// considered, within Options.MaxStates; when the states run out, a greedy plan.
func (pl *planner) solve(pending bool) outcome {
	pl.pending = pending
	st := pl.st
	starts := pl.starts()
	out := outcome{lb: -1}
	for _, s := range starts {
		pl.apply(s)
		sum := st.Summary()
		if out.lb < 0 || sum.LowerBound < out.lb {
			out.lb, out.rule = sum.LowerBound, sum.Rule
		}
		pl.undo(s)
	}
	out.maxMoves = pl.opts.MaxMoves
	if out.maxMoves == 0 {
		out.maxMoves = max(DefaultMaxMoves, 2*out.lb)
	}
	if out.lb > out.maxMoves {
		return out
	}
	pl.limit, pl.budget = pl.states+pl.opts.MaxStates, false
	pl.sr = &search{began: pl.states}
	for depth := out.lb; depth <= out.maxMoves; depth++ {
		for _, s := range starts {
			pl.apply(s)
			// No plan of depth evictions needs fewer failovers than the masters' excess the
			// evictions cannot take away.
			pl.sr.start, pl.sr.fBound = s, max(pl.st.QuorumExcess()-depth, 0)
			var path []step
			pl.dfs(depth, &path)
			pl.undo(s)
			if pl.stop() {
				break
			}
		}
		if b := pl.sr.best; b != nil {
			out.start, out.path, out.fix, out.found = b.start, b.path, b.fix, true
			out.minimal, out.fixMinimal = !pl.budget, !pl.budget && !pl.sr.fCut
			return out
		}
		if pl.budget {
			break
		}
		out.ruledOut = depth + 1
	}
	if !pl.budget {
		out.stuck = pl.stuck(starts)
		if out.stuck && len(pl.evictable()) == 0 {
			out.frozen = pl.c.Warnings
		}
		out.mastersOnly = pl.mastersOnly()
		return out
	}
	out.budget = true
	for _, s := range starts {
		pl.apply(s)
		path, fix, ok := pl.greedy(out.maxMoves)
		pl.undo(s)
		if ok && (!out.found || len(path) < len(out.path) || len(path) == len(out.path) && len(fix) < len(out.fix)) {
			out.start, out.path, out.fix, out.found = s, path, fix, true
		}
	}
	return out
}

// mastersOnly returns the number of masters when every member that may be evicted is placed, a
// master, and without a member of its shard to take its slots over (takeovers); 0 otherwise.
func (pl *planner) mastersOnly() int {
	k := 0
	for j, ok := range pl.movable {
		if !ok || pl.st.Node(j) < 0 {
			continue
		}
		if !pl.st.IsMaster(j) || len(pl.takeovers(j)) > 0 {
			return 0
		}
		k++
	}
	return k
}

// stuck reports whether no eviction from any start is a step of the current model: each evicted
// pod would be left unplaceable.
func (pl *planner) stuck(starts []step) bool {
	st := pl.st
	for _, s := range starts {
		pl.apply(s)
		for _, j := range pl.evictable() {
			from := st.Node(j)
			st.Set(j, -1)
			any := pl.settle(nil, func([]placed) bool { return pl.accepts(j) })
			st.Set(j, from)
			if any {
				pl.undo(s)
				return false
			}
		}
		pl.undo(s)
	}
	return true
}

// why says in words why the search found no plan, and which bound stopped it.
func (o outcome) why(pending bool, searched int) (string, string) {
	model := "each evicted pod must be placed at once"
	if pending {
		model = "an evicted pod may wait Pending, one at a time"
	}
	switch {
	case o.lb > o.maxMoves:
		return fmt.Sprintf("at least %s %s needed (%s), more than the longest plan considered (%s, --max-plan-moves)",
			policies.Plural(o.lb, "eviction"), policies.Agree(o.lb, "is", "are"), boundReason(o.lb, o.rule), policies.Plural(o.maxMoves, "move")), LimitMaxMoves
	case o.budget:
		ruled := "no length was ruled out"
		if o.ruledOut > 0 {
			ruled = fmt.Sprintf("plans of up to %s were ruled out", policies.Plural(o.ruledOut-1, "eviction"))
		}
		return fmt.Sprintf("no plan found within the %d placements searched (--max-plan-states; %s): %s, longer ones up to %d were not searched",
			searched, model, ruled, o.maxMoves), LimitMaxStates
	case o.mastersOnly > 0:
		return fmt.Sprintf("every pod that may be evicted is a master serving slots with no replica to fail over to (%s, none with a replica): evicting one would fail its slots' writes until it is back, so none is; give each shard a replica (the Bitnami chart's cluster.replicas, redis-cli --cluster-replicas)", policies.Plural(o.mastersOnly, "master")), LimitStatic
	case o.frozen != nil:
		more := ""
		if len(o.frozen) > 1 {
			more = fmt.Sprintf("; %d more such warnings", len(o.frozen)-1)
		}
		return fmt.Sprintf("no pod of the cluster may be evicted (%s%s)", o.frozen[0], more), LimitStatic
	case o.stuck && !pending:
		return fmt.Sprintf("every single eviction leaves its pod unplaceable (%s; searched %d placements)", model, searched), LimitMaxMoves
	}
	return fmt.Sprintf("no sequence of at most %s reaches compliance (%s; searched %s)", policies.Plural(o.maxMoves, "eviction"), model, policies.Plural(searched, "placement")), LimitMaxMoves
}

// boundReason says in words why lb moves are needed, rule being the rule whose excess sets it
// (the registry's words for it, policies.RuleInfo.LowerBoundReason).
func boundReason(lb int, rule policies.Rule) string {
	if info, ok := policies.LookupRule(rule); ok {
		if why := info.LowerBoundReason(lb); why != "" {
			return why
		}
	}
	return "some hard rule is broken"
}

// alternative summarises a plan found with Pending steps.
func (pl *planner) alternative(o outcome) *Alternative {
	alt := &Alternative{Moves: len(o.path), Minimal: o.minimal, PendingSteps: pl.exposure(o)}
	for _, s := range o.path {
		alt.Evictions = append(alt.Evictions, pl.c.Members[s.member].Key())
	}
	return alt
}

// alternativeText says what --allow-pending-steps would give.
func alternativeText(alt *Alternative) string {
	var who []string
	for _, e := range alt.PendingSteps {
		steps := e.UntilMove - e.FromMove
		who = append(who, fmt.Sprintf("pod %s may wait Pending for %s (shard %s runs without it after move %d until move %d)", e.Pod, policies.Plural(steps, "step"), e.Shard, e.FromMove, e.UntilMove))
	}
	return fmt.Sprintf("%s (%s) %s it if %s: --allow-pending-steps", policies.Plural(alt.Moves, "eviction"), policies.Agree(alt.Moves, "fixes", "fix"), strings.Join(alt.Evictions, ", "), strings.Join(who, " and "))
}

// exposure lists the pods the plan lets wait Pending, and from which move until which.
func (pl *planner) exposure(o outcome) []Exposure {
	c := pl.c
	var out []Exposure
	for k, s := range o.path {
		if placedIn(s, s.member) >= 0 {
			continue
		}
		mem := c.Members[s.member]
		e := Exposure{Pod: mem.Key(), Shard: mem.Shard, Role: mem.Role, FromMove: k + 1}
		for k2 := k + 1; k2 < len(o.path); k2++ {
			if n := placedIn(o.path[k2], s.member); n >= 0 {
				e.UntilMove, e.Node = k2+1, c.Model().Nodes[n].Name
				break
			}
		}
		out = append(out, e)
	}
	return out
}

// placedIn returns the node step s places member m on, -1 when it does not.
func placedIn(s step, m int) int {
	for _, p := range s.places {
		if p.member == m {
			return p.node
		}
	}
	return -1
}

// replay returns the placement and the masters the plan ends in.
func (pl *planner) replay(o outcome) (policies.Placement, policies.Masters) {
	st := pl.st
	pl.apply(o.start)
	for _, s := range o.path {
		pl.apply(s)
	}
	for _, f := range o.fix {
		st.Failover(f.From, f.To)
	}
	final, masters := st.Placement().Clone(), st.Masters().Clone()
	for k := len(o.fix) - 1; k >= 0; k-- {
		st.Failover(o.fix[k].To, o.fix[k].From)
	}
	for k := len(o.path) - 1; k >= 0; k-- {
		pl.undo(o.path[k])
	}
	pl.undo(o.start)
	return final, masters
}

// roleOf returns member j's role under the plan so far: master while it is one, replica once the
// plan has failed it over or re-created it, else what Redis (or the role label) said.
func (pl *planner) roleOf(j int) policies.Role {
	mem := pl.c.Members[j]
	switch {
	case pl.st.IsMaster(j):
		return policies.RoleMaster
	case pl.st.Node(j) != mem.Node, mem.Role == policies.RoleMaster && !mem.EmptyMaster:
		return policies.RoleReplica
	}
	return mem.Role
}

// moves turns the plan's steps into Moves: for each eviction, the nodes the scheduler may choose
// (every node, each free node judged by its class) and whether each keeps the plan on track; then
// the failovers.
func (pl *planner) moves(o outcome) []Move {
	c, st := pl.c, pl.st
	nodes := c.Model().Nodes
	pl.apply(o.start)
	var out []Move
	for k, s := range o.path {
		mem := c.Members[s.member]
		role := pl.roleOf(s.member)
		mv := Move{
			Kind:   KindEvict,
			Member: s.member, Pod: mem.Key(), Node: nodes[s.from].Name,
			Shard: mem.Shard, Role: role, Failover: role != policies.RoleReplica,
			Reason: reasonFor(c, st.Placement(), st.Masters(), s.member, pl.tgt.soft >= 0, "makes room for the other moves"), FailoverTo: -1,
		}
		if s.to >= 0 {
			mv.From, mv.To, mv.FailoverTo, mv.ToNode = mem.Key(), c.Members[s.to].Key(), s.to, nodes[st.Node(s.to)].Name
		}
		expected := placedIn(s, s.member)
		if expected >= 0 {
			mv.Expected = nodes[expected].Name
		} else {
			mv.WaitsPending = true
		}
		for _, p := range s.places {
			if p.member != s.member {
				mv.Places = append(mv.Places, Placed{Pod: c.Members[p.member].Key(), Node: nodes[p.node].Name})
			}
		}
		// Its claims are released when the node the plan places it on (now, or after waiting
		// Pending) is one its volumes do not allow; otherwise it keeps them, and its candidates
		// are the nodes they allow.
		keep := false
		if c.ClaimsReleasable(s.member) {
			if at := finalNode(o.path[k:], s.member); at >= 0 && !c.VolumesAllow(s.member, at) {
				mv.ReleaseClaims = c.ReleasableClaims(s.member)
			} else {
				keep = true
			}
		}
		if s.to >= 0 {
			st.Failover(s.member, s.to)
		}
		st.Set(s.member, -1)
		v := pl.onTrack(o.path, k, expected, keep)
		mv.Candidates = make([]Candidate, 0, v.count)
		mv.CandidateNodes = make([]string, 0, v.count)
		for n := range nodes {
			verdict := v.class[pl.classOf[n]]
			if st.NodeCount(n) > 0 {
				verdict = v.occupied[n]
			}
			if verdict == notCandidate {
				continue
			}
			mv.Candidates = append(mv.Candidates, Candidate{Node: nodes[n].Name, OnTrack: verdict == onTrack, Undecided: verdict == undecided})
			mv.CandidateNodes = append(mv.CandidateNodes, nodes[n].Name)
		}
		st.Set(s.member, s.from)
		if s.to >= 0 {
			st.Failover(s.to, s.member)
		}
		out = append(out, mv)
		pl.apply(s)
	}
	for _, f := range o.fix {
		mem := c.Members[f.From]
		out = append(out, Move{
			Kind: KindFailover, Member: f.From, Pod: mem.Key(), Node: nodes[st.Node(f.From)].Name,
			Shard: mem.Shard, Role: policies.RoleMaster, Failover: true,
			From: mem.Key(), To: c.Members[f.To].Key(), FailoverTo: f.To, ToNode: nodes[st.Node(f.To)].Name,
			Candidates: []Candidate{}, CandidateNodes: []string{},
			Reason: reasonFor(c, st.Placement(), st.Masters(), f.From, false, "makes room for the other failovers", policies.MasterQuorum),
		})
		st.Failover(f.From, f.To)
	}
	for k := len(o.fix) - 1; k >= 0; k-- {
		st.Failover(o.fix[k].To, o.fix[k].From)
	}
	for k := len(o.path) - 1; k >= 0; k-- {
		pl.undo(o.path[k])
	}
	pl.undo(o.start)
	return out
}

// verdict is what onTrack says of a node.
type verdict uint8

const (
	notCandidate verdict = iota // the re-created pod does not pass the filter there
	offTrack                    // a candidate that leaves the plan's track
	onTrack                     // a candidate that keeps it
	undecided                   // a candidate the bounded search could not decide
)

// verdicts are onTrack's answer: per occupied node, and per class for the free nodes; count is
// the number of candidate nodes.
type verdicts struct {
	occupied map[int]verdict
	class    []verdict
	count    int
}

// finalNode returns the node the plan's steps path place member m on first (-1 when none does).
func finalNode(path []step, m int) int {
	for _, s := range path {
		if n := placedIn(s, m); n >= 0 {
			return n
		}
	}
	return -1
}

// onTrack judges, for move k of path (its member evicted, not placed), every node: whether the
// member passes the filter there (with keep, also whether its volumes allow it: it keeps its
// claims) and whether the rest of the plan then still reaches compliance in the planned number of
// moves (the planned steps replayed, follows, else a bounded search, reaches). Occupied nodes are
// judged one by one, free nodes once per class: a free node of the expected node's class is on
// track as the expected node is.
func (pl *planner) onTrack(path []step, k, expected int, keep bool) verdicts {
	st := pl.st
	m := path[k].member
	among := pl.free(st.Occupied(nil))
	v := verdicts{occupied: map[int]verdict{}, class: make([]verdict, len(pl.classes))}
	rest := len(path) - k - 1
	judge := func(n int) verdict {
		if n == expected || expected >= 0 && st.NodeCount(expected) == 0 && st.NodeCount(n) == 0 && pl.classOf[n] == pl.classOf[expected] {
			return onTrack
		}
		st.Set(m, n)
		open := false // a placement the bounded search could not decide
		ok := pl.settle(nil, func([]placed) bool {
			s := st.Summary()
			_, done := pl.done(s)
			switch {
			case done:
				return true
			case s.LowerBound > rest && pl.tgt.best == nil:
				return false
			case pl.follows(path[k+1:]):
				return true
			}
			ok, decided := pl.reaches(rest)
			open = open || !decided
			return ok
		})
		st.Set(m, -1)
		switch {
		case ok:
			return onTrack
		case open:
			return undecided
		}
		return offTrack
	}
	for _, n := range st.CandidatesIn(m, among, nil) {
		if keep && !pl.c.VolumesAllow(m, n) {
			continue
		}
		if st.NodeCount(n) > 0 {
			v.occupied[n] = judge(n)
			v.count++
		} else {
			g := pl.classOf[n]
			v.class[g] = judge(n)
			for _, f := range pl.classes[g] {
				if st.NodeCount(int(f)) == 0 {
					v.count++
				}
			}
		}
	}
	return v
}

// reasonFor names the hard violations (the soft ones when soft) member i is part of under p with
// masters ms, of the rules only names when it names any (a failover step: MasterQuorum), or says
// otherwise when it is part of none.
func reasonFor(c *policies.Cluster, p policies.Placement, ms policies.Masters, i int, soft bool, otherwise string, only ...policies.Rule) string {
	var parts []string
	key := c.Members[i].Key()
	vs := policies.Hard(c.EvaluateWith(p, ms))
	if soft {
		vs = vs[:0]
		for _, v := range c.EvaluateWith(p, ms) {
			if v.Soft {
				vs = append(vs, v)
			}
		}
	}
	for _, v := range vs {
		if len(only) > 0 && !slices.Contains(only, v.Rule) {
			continue
		}
		for _, pod := range v.Pods {
			if pod == key {
				parts = append(parts, fmt.Sprintf("%s %s", v.Rule, v.Domain))
				break
			}
		}
	}
	if len(parts) == 0 {
		return otherwise
	}
	return strings.Join(parts, ", ")
}
