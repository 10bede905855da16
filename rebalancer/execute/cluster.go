package execute

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// run is what one Executor.Run shares between its clusters: the PodEvictor and the eviction
// budget (limits counted over every cluster), the steps' measured durations, and whether a
// window was open when the run started.
type run struct {
	*Executor
	evictor    *evictor
	evictorErr error
	// events records the run's Kubernetes Events (nil in a dry run).
	events    *recording
	budget    *budget
	estimates *estimates
	// history keeps the step durations between runs (nil: none, or no longer: it failed once).
	history   *historyStore
	historyMu sync.Mutex
	// act is false when the run started outside every window (and windows are not ignored):
	// the run then only observes and reports.
	act bool
	// handOff, when set, says which disruption made by another tool this run's failover is
	// for (Executor.HandOff): windows do not apply, and the failover's Event is ReasonHandOff.
	handOff string
}

func (e *Executor) newRun(ctx context.Context) *run {
	rn := &run{Executor: e, budget: newBudget(e.cfg), estimates: newEstimates(e.windows.StepEstimate())}
	_, open := e.windows.Open(e.cfg.Clock.Now())
	rn.act = open || e.cfg.IgnoreWindows
	if e.cfg.History.Name != "" {
		rn.history = &historyStore{client: e.cfg.Client, ref: e.cfg.History}
		if e.windows.StepEstimate() == v1alpha1.StepEstimateP95 && !e.windows.Always() && !e.cfg.IgnoreWindows {
			hctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
			h, err := rn.history.load(hctx)
			cancel()
			if err != nil {
				rn.historyFailed(err)
			} else {
				rn.estimates.load(h)
			}
		}
	}
	if !e.cfg.DryRun {
		rn.events = newRecording(e.cfg.Client, e.cfg.Recorder)
		if rn.act {
			rn.evictor, rn.evictorErr = newEvictor(ctx, e.cfg.Client, rn.events.recorder, e.cfg)
		}
	}
	return rn
}

// saveHistory adds what the run measured in cluster to the step history, unless the run is a
// dry run, keeps no history, or measured nothing there.
func (rn *run) saveHistory(ctx context.Context, cluster string) {
	rn.historyMu.Lock()
	store := rn.history
	rn.historyMu.Unlock()
	if store == nil || rn.cfg.DryRun {
		return
	}
	h := rn.estimates.measuredIn(cluster)
	if h == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, rn.cfg.RequestTimeout)
	defer cancel()
	if err := store.save(sctx, cluster, h, rn.cfg.Clock.Now()); err != nil {
		rn.historyFailed(err)
		return
	}
	klog.V(2).InfoS("Step history saved", append(clusterKeys(cluster), "configMap", klog.KRef(store.ref.Namespace, store.ref.Name))...)
}

// historyFailed logs why the step history cannot be used and turns it off for the rest of the
// run (the estimates keep what this run measures).
func (rn *run) historyFailed(err error) {
	rn.historyMu.Lock()
	defer rn.historyMu.Unlock()
	if rn.history == nil {
		return
	}
	rn.history = nil
	klog.InfoS("Step history unavailable: the window estimates use this run's measures only", "err", err.Error())
}

// close waits for the run's events to be written.
func (rn *run) close() {
	if rn.events != nil {
		rn.events.close()
	}
}

// stopping reports whether a graceful stop was asked for (Config.Stop).
func (rn *run) stopping() bool {
	select {
	case <-rn.cfg.Stop:
		return true
	default:
		return false
	}
}

// windowState is the window verdict at now, for the report.
func (rn *run) windowState(now time.Time) report.WindowState {
	w := report.WindowState{Windows: []string{}, Ignored: rn.cfg.IgnoreWindows && !rn.windows.Always(), StepEstimate: string(rn.windows.StepEstimate())}
	if rn.windows.Always() {
		w.Open = true
		return w
	}
	for _, win := range rn.windows.Windows() {
		w.Windows = append(w.Windows, win.String())
	}
	if closes, open := rn.windows.Open(now); open {
		w.Open, w.Closes = true, &closes
	} else if next := rn.windows.NextOpen(now); !next.IsZero() {
		w.NextOpen = &next
	}
	return w
}

// closedReason says that no window is open at now, and when the next one opens.
func (rn *run) closedReason(now time.Time) string {
	var np *time.Time
	if next := rn.windows.NextOpen(now); !next.IsZero() {
		np = &next
	}
	return "maintenance window: closed; " + nextOpenText(np, now)
}

// clusterRun is one Redis cluster's part of a run; its progress goes to out.
type clusterRun struct {
	*run
	key string
	out io.Writer
	// pending, with Pending steps (Config.Plan.AllowPendingSteps), names the pods the health
	// gate accepts Pending: those Pending when the run first observed the cluster and those a
	// planned move left Pending, until they are placed (observe.JudgeHealthExpecting). nil
	// otherwise: every Unschedulable pod is accepted (observe.JudgeHealth).
	pending map[string]bool
}

// notePending updates pending from c: its members that are placed are not expected Pending any
// more. With first, the members Pending now are (the run found them so).
func (cr *clusterRun) notePending(c *policies.Cluster, first bool) {
	if !cr.cfg.Plan.AllowPendingSteps {
		return
	}
	if cr.pending == nil {
		cr.pending = map[string]bool{}
	}
	for _, m := range c.Members {
		switch {
		case m.Node >= 0:
			delete(cr.pending, m.Pod.Name)
		case first && !m.Terminating:
			cr.pending[m.Pod.Name] = true
		}
	}
}

func (cr *clusterRun) printf(format string, args ...any) {
	fmt.Fprintf(cr.out, format, args...)
}

// observe reads the cluster now: the API server's snapshot of the namespace and the members'
// roles from Redis. An error from the API server returns a nil cluster; an error from Redis
// returns the cluster (roles unknown) with the error.
func (cr *clusterRun) observe(ctx context.Context) (*policies.Cluster, error) {
	if o, ok := cr.cfg.Source.(observe.ClusterObserver); ok {
		c, err := o.ObserveCluster(ctx, cr.cfg.Policy, cr.key)
		if c != nil && err != nil {
			err = fmt.Errorf("roles: %w", err)
		}
		return c, err
	}
	ns, _, _ := strings.Cut(cr.key, "/")
	model, err := observe.LiveFrom(ctx, cr.cfg.Source, cr.cfg.Policy, observe.Selection{Namespace: ns})
	if err != nil {
		return nil, err
	}
	for _, c := range model.Clusters {
		if c.Key() == cr.key {
			if _, err := observe.ApplyRedis(ctx, cr.cfg.Redis, c); err != nil {
				return c, fmt.Errorf("roles: %w", err)
			}
			return c, nil
		}
	}
	return nil, fmt.Errorf("cluster %s has no pods any more", cr.key)
}

// runCluster runs the observe–plan–move loop on one cluster, then observes it once more and
// judges its placement and health. The error is the first real one (a step that aborted, or an
// observation that failed); a final observation that fails after it is reported beside it
// (ObserveAfterError), never instead.
func (cr *clusterRun) runCluster(ctx context.Context) (rep report.ClusterRun, _ error) {
	clk := cr.cfg.Clock
	start := clk.Now()
	ns, name, _ := strings.Cut(cr.key, "/")
	rep = report.ClusterRun{Namespace: ns, Name: name, Moves: []report.MoveResult{}}
	defer func() { rep.Seconds = report.Seconds(clk.Since(start)) }()
	var firstErr error
	stop := func(by, reason string, err error) {
		if rep.StoppedBy != "" {
			return
		}
		rep.StoppedBy, rep.Stopped = by, reason
		if err != nil {
			firstErr, rep.Error = err, err.Error()
		}
		cr.logStop(by, reason, err)
	}

	c, err := cr.observe(ctx)
	if c == nil {
		err = fmt.Errorf("observe: %w", err)
		stop(report.StoppedObserve, err.Error(), err)
		rep.Health = observe.UnknownHealth("not observed: " + err.Error())
		return rep, firstErr
	}
	cr.notePending(c, true)
	rep.Before = nonNil(c.Evaluate(c.Current()))
	rep.ShardSource = c.ShardSource.String()
	if len(c.Warnings) > 0 {
		rep.Warnings = c.Warnings
	}
	cr.printf("\n== Redis cluster %s: %s (N=%d), %s, zones [%s]\n", cr.key, policies.Plural(len(c.Members), "pod"), c.N, policies.Plural(len(c.Shards), "shard"), strings.Join(c.AllowedZones, " "))
	report.RenderShards(cr.out, c)
	cr.printf("before:\n")
	report.RenderMap(cr.out, c, c.Current())
	report.RenderViolations(cr.out, rep.Before)
	if err != nil {
		err = fmt.Errorf("observe: %w", err)
		stop(report.StoppedObserve, err.Error(), err)
	} else if c, err = cr.reintroduced(ctx, c, &rep); err != nil {
		stop(report.StepRejoin, err.Error(), err)
	} else {
		c = cr.moves(ctx, c, &rep, stop)
	}

	// The final observation: placement and health.
	after, err := cr.observe(ctx)
	switch {
	case after == nil:
		err = fmt.Errorf("observe after the run: %w", err)
		if firstErr != nil {
			rep.ObserveAfterError = err.Error()
		} else {
			stop(report.StoppedObserve, err.Error(), err)
		}
		rep.Health = observe.UnknownHealth("not observed: " + err.Error())
		after = c // the last cluster observed, for the placement
	default:
		if err != nil {
			cr.printf("  ! %s: %v\n", cr.key, err)
		}
		rep.Health = observe.JudgeHealth(ctx, cr.cfg.Redis, after, observe.MemberPods(after))
	}
	rep.After = nonNil(after.Evaluate(after.Current()))
	rep.PlacementCompliant = len(policies.Hard(rep.After)) == 0
	rep.Compliant = rep.PlacementCompliant && rep.Health.Healthy()
	if rep.Partial != nil {
		rep.Partial.QuorumHolds = quorumHolds(after, rep.After)
	}
	rep.Outcome = report.ClusterOutcome(&rep)
	if !rep.Outcome.Expected() {
		cr.events.clusterNotFixed(after, rep)
	}
	cr.printf("\nafter:\n")
	report.RenderMap(cr.out, after, after.Current())
	report.RenderViolations(cr.out, rep.After)
	report.RenderHealth(cr.out, &rep.Health)
	if rep.Outcome == report.OutcomePartial {
		cr.printf("partial: %s\n", report.PartialRunText(rep.Partial))
	}
	return rep, firstErr
}

// quorumHolds reports whether MasterQuorum is judged for c (enabled, roles known, the rule
// applies) and none of violations is MasterQuorum's.
func quorumHolds(c *policies.Cluster, violations []policies.Violation) bool {
	if !c.Model().Setting(policies.MasterQuorum).Enabled || !c.RolesKnown() || !c.MasterQuorum().Applies {
		return false
	}
	for _, v := range violations {
		if v.Rule == policies.MasterQuorum {
			return false
		}
	}
	return true
}

// reintroduced re-introduces the nodes a stopped move left empty (reintroduceEmpty), records them
// in rep and returns the cluster observed again after them (c when there were none).
func (cr *clusterRun) reintroduced(ctx context.Context, c *policies.Cluster, rep *report.ClusterRun) (*policies.Cluster, error) {
	lines, err := cr.rejoinStrays(ctx, c)
	if err == nil {
		var more []string
		more, err = cr.reintroduceEmpty(ctx, c)
		lines = append(lines, more...)
	}
	rep.Reintroduced = lines
	if err != nil || len(lines) == 0 {
		return c, err
	}
	after, err := cr.observe(ctx)
	if after == nil {
		return c, fmt.Errorf("observe after the re-introduction: %w", err)
	}
	return after, nil
}

// offTrackLimit is how many times the scheduler may undo a move's progress (OffTrack) before a
// cluster's run stops (report.StoppedOffTrack).
const offTrackLimit = 2

// moves plans and moves until the cluster complies or something stops it (stop records the first
// reason), and returns the cluster as last observed. It re-plans from a fresh observation after
// every move, so a pod the scheduler placed elsewhere than the plan expected is planned from where
// it is. When, after an eviction, the new plan needs as many evictions as the one before it, both
// proven minimal (the scheduler chose a node off the plan's track: with soft anti-affinity only,
// it may put a replica back beside its master), the move is marked OffTrack; the second time,
// the cluster's run stops (report.StoppedOffTrack) instead of going round in circles. It makes at most MaxMoves
// evictions, and at most as many failover steps as the cluster has shards plus MaxMoves (a
// plan's failover steps give each shard its master once; an eviction may call for one more).
func (cr *clusterRun) moves(ctx context.Context, c *policies.Cluster, rep *report.ClusterRun, stop func(by, reason string, err error)) *policies.Cluster {
	// before is the number of evictions the plan had before the last completed eviction (-1 when
	// the last move was no completed eviction); offTrack counts the evictions undone.
	before, offTrack := -1, 0
	saidBestEffort, saidPartial := false, false
	// saferFailovers counts the failover steps made while no plan reached compliance (a partial
	// or best-effort plan's): Redis made safer while the placement waits.
	saferFailovers := 0
	// Each move is planned and carried out holding the cluster's lock (a hand-off waits for it),
	// after asking whether the hand-off is at work there (Config.Yield).
	var unlock func()
	defer func() {
		if unlock != nil {
			unlock()
		}
	}()
	for moves, evictions, failovers, softEvictions := 0, 0, 0, 0; ; {
		if unlock != nil {
			unlock()
		}
		unlock = cr.locks.lock(cr.key)
		cr.notePending(c, false)
		opts := cr.cfg.Plan
		opts.SoftEvictions = max(opts.SoftEvictions-softEvictions, 0)
		p, done := cr.cfg.Goal.Next(c, opts)
		if done {
			return c
		}
		if cr.cfg.Yield != nil {
			if why, yield := cr.cfg.Yield(cr.key); yield {
				reason := "left to the hand-off: " + why
				stop(report.StoppedHandOff, reason, nil)
				cr.printf("stopping: %s; the next run continues\n", reason)
				return c
			}
		}
		if cr.stopping() {
			stop(report.StoppedGracefulStop, "graceful stop: no further move started", nil)
			cr.printf("stopping: %s\n", rep.Stopped)
			return c
		}
		if before >= 0 && p.Infeasible == "" && p.Minimal && p.Evictions >= before {
			last := &rep.Moves[len(rep.Moves)-1]
			last.OffTrack = true
			offTrack++
			cr.printf("  ! off the plan's track: the scheduler put %s on %s (the plan expected %s); the re-plan still needs %s, as many as before the move\n", last.Pod, last.To, last.Expected, report.StepsText(p.Evictions, 0))
			if offTrack >= offTrackLimit {
				reason := fmt.Sprintf("off track: the scheduler undid the progress of %s (each re-plan needed as many evictions as before it); the templates' constraints do not hold pods where the plan puts them (soft anti-affinity only?): see redis-rebalancer lint", policies.Plural(offTrack, "eviction"))
				stop(report.StoppedOffTrack, reason, nil)
				cr.printf("stopping: %s\n", reason)
				return c
			}
		}
		before = -1
		switch {
		case p.Infeasible != "" && p.BestEffort != nil && len(p.Moves) == 0:
			reason := "no plan: " + p.Infeasible + "; best effort: no eviction lowers the violations (" + report.PenaltyText(p.BestEffort.Before) + ")"
			stop(report.StoppedNoPlan, reason, nil)
			rep.Partial = &report.PartialRun{Failovers: saferFailovers, Because: p.Infeasible, Held: p.Held}
			cr.printf("no plan reaches compliance: %s\n  best effort: no eviction lowers the violations (%s)\n", p.Infeasible, report.PenaltyText(p.BestEffort.Before))
			report.RenderHeld(cr.out, p.Held)
			return c
		case p.Infeasible != "" && len(p.Moves) == 0:
			stop(report.StoppedNoPlan, "no plan: "+p.Infeasible, nil)
			rep.Partial = &report.PartialRun{Failovers: saferFailovers, Because: p.Infeasible, Held: p.Held}
			if saferFailovers == 0 {
				cr.printf("no plan reaches compliance: %s\n", p.Infeasible)
			}
			report.RenderHeld(cr.out, p.Held)
			return c
		case cr.cfg.DryRun:
			rep.Plan = &p
			report.RenderPlan(cr.out, "dry run", p)
			stop(report.StoppedDryRun, "dry run", nil)
			return c
		case !cr.act:
			rep.Plan = &p
			report.RenderPlan(cr.out, "outside every maintenance window: not carried out", p)
			stop(report.StepWindow, cr.closedReason(cr.cfg.Clock.Now()), nil)
			cr.printf("stopping: %s\n", rep.Stopped)
			return c
		case cr.evictorErr != nil:
			stop(report.StepEvict, cr.evictorErr.Error(), cr.evictorErr)
			return c
		case p.Moves[0].Kind != plan.KindFailover && evictions >= cr.cfg.MaxMoves:
			stop(report.StoppedMaxMoves, fmt.Sprintf("move budget spent (%s)", policies.Plural(cr.cfg.MaxMoves, "eviction")), nil)
			cr.printf("stopping: %s; the next run continues\n", rep.Stopped)
			return c
		case p.Moves[0].Kind == plan.KindFailover && failovers >= len(c.Shards)+cr.cfg.MaxMoves:
			stop(report.StoppedMaxMoves, fmt.Sprintf("failover budget spent (%s: the shards plus --max-moves)", policies.Plural(failovers, "failover step")), nil)
			cr.printf("stopping: %s; the next run continues\n", rep.Stopped)
			return c
		}
		moves++
		mv := p.Moves[0]
		switch {
		case mv.Kind == plan.KindFailover:
			failovers++
		case mv.Soft:
			softEvictions++
			evictions++
		default:
			evictions++
		}
		if p.Infeasible != "" && mv.Kind == plan.KindFailover {
			saferFailovers++
		}
		switch {
		case p.BestEffort != nil && !saidBestEffort:
			saidBestEffort = true
			cr.printf("no plan reaches compliance: %s\n  best effort (--best-effort): toward the placement with the fewest violations\n", p.Infeasible)
		case p.Partial != nil && !saidPartial:
			saidPartial = true
			cr.printf("no plan reaches compliance: %s\n  partial: failovers alone first, no pod moves (%s)\n", p.Infeasible, report.PartialText(*p.Partial))
		}
		cr.printf("\nmove %d (%s: %s%s%s): %s — %s%s\n", moves, planLabel(p), report.StepsText(p.Evictions, p.Failovers), report.MinimalNote(p), report.PlanNote(p), report.MoveText(mv), mv.Reason, softText(mv))
		if mv.Kind != plan.KindFailover {
			cr.printf("  scheduler may choose: %s\n", report.CandidatesText(mv))
		}
		if mv.WaitsPending {
			cr.printf("  ! %s\n", exposureText(p, mv))
		}
		mr, after, res := cr.move(ctx, c, p)
		rep.Moves = append(rep.Moves, mr)
		switch res.outcome {
		case report.OutcomeSkip:
			stop(res.stoppedBy, res.reason, nil)
			cr.printf("  – move skipped at %s: %s\n", mr.Steps[len(mr.Steps)-1].Name, res.reason)
			return c
		case report.OutcomeAbort:
			stop(res.stoppedBy, res.err.Error(), res.err)
			cr.printf("  ✗ move aborted at %s: %v\n", mr.Steps[len(mr.Steps)-1].Name, res.err)
			return c
		}
		cr.printf("  ✓ move done in %s\n", time.Duration(mr.Seconds*float64(time.Second)).Round(time.Millisecond))
		if mv.Kind != plan.KindFailover && !mv.Soft && p.BestEffort == nil && mr.Evicted && !mr.WaitsPending && p.Minimal {
			before = p.Evictions // only proven counts compare: a bounded search may overcount
		}
		c = after
	}
}

// planLabel names the kind of plan a move comes from: "plan", or "best-effort plan".
func planLabel(p plan.Plan) string {
	if p.BestEffort != nil {
		return "best-effort plan"
	}
	return "plan"
}

// softText marks a move of the soft fix: " (soft: every hard rule holds)".
func softText(mv plan.Move) string {
	if mv.Soft {
		return " (soft: every hard rule holds before and after)"
	}
	return ""
}

// exposureText says what a move that leaves its pod Pending costs: which shard runs without it,
// until which move of plan p (plan.Exposure).
func exposureText(p plan.Plan, mv plan.Move) string {
	for _, e := range p.PendingSteps {
		if e.Pod == mv.Pod {
			return fmt.Sprintf("exposure: %s (%s) waits Pending after this move; shard %s runs without it until the plan's move %d places it on %s", e.Pod, roleText(e.Role), e.Shard, e.UntilMove, e.Node)
		}
	}
	return fmt.Sprintf("exposure: %s waits Pending after this move; shard %s runs without it until a later move frees room", mv.Pod, mv.Shard)
}

func roleText(r policies.Role) string {
	if r == policies.RoleUnknown {
		return "role unknown"
	}
	return string(r)
}

// nonNil returns vs, or an empty list for nil (the JSON contract's lists are never null).
func nonNil(vs []policies.Violation) []policies.Violation {
	if vs == nil {
		return []policies.Violation{}
	}
	return vs
}
