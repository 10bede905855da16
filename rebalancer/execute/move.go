package execute

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The driver of one move: it runs the move's steps (steps.go) in order until one does not
// continue, and reports the move as it happened.

// move carries out the first move of plan p: its steps in order until one does not continue.
// Its caller holds the cluster's lock (one disruption in flight per Redis cluster, between a
// run's moves and Executor.HandOff). It returns the move as it happened, the cluster observed at
// its end (nil unless every step continued), and the last step's result.
func (cr *clusterRun) move(ctx context.Context, c *policies.Cluster, p plan.Plan) (report.MoveResult, *policies.Cluster, result) {
	start := cr.cfg.Clock.Now()
	m := cr.newMoveRun(c, p)
	m.rep.Started = start.UTC()
	var res result
	for i, s := range m.steps {
		m.index = i
		if cr.stopping() {
			// A safe point: between two steps. After a failover nothing is evicted (the next
			// run checks the roles again); after an eviction the StatefulSet re-creates the pod.
			res = gracefulStop("stopped before %s: %s", s.name, m.state())
			cr.recordStep(m, s.name, res, 0)
			break
		}
		var d time.Duration
		res, d = cr.runStep(ctx, m, s)
		cr.recordStep(m, s.name, res, d)
		if res.outcome != report.OutcomeContinue {
			if res.stoppedBy == "" {
				res.stoppedBy = s.name
			}
			break
		}
		cr.printf("  ✓ %s (%s): %s\n", s.name, d.Round(time.Millisecond), res.reason)
		if s.name != report.StepRejoin || m.resynced {
			cr.estimates.record(cr.key, s.name, d, m.synced)
		}
	}
	cr.finish(m, res, cr.cfg.Clock.Since(start))
	return *m.rep, m.after, res
}

// newMoveRun returns the state of the first move of plan p on cluster c, with its steps and its
// report begun.
func (cr *clusterRun) newMoveRun(c *policies.Cluster, p plan.Plan) *moveRun {
	mv := p.Moves[0]
	mem := c.Members[mv.Member]
	kind := mv.Kind
	if kind == "" {
		kind = plan.KindEvict
	}
	m := &moveRun{
		c: c, mv: mv, plan: p, pod: mem.Pod, addr: cr.cfg.Redis.AddrOf(mem.Pod.Status.PodIP),
		rep: &report.MoveResult{
			Kind: kind, Pod: mv.Pod, From: mv.Node, Expected: mv.Expected, WaitsPending: mv.WaitsPending,
			Soft: mv.Soft, BestEffort: p.BestEffort != nil, Steps: []report.Step{},
		},
		steps: cr.steps(mv),
	}
	if mv.WaitsPending {
		m.rep.Exposure = exposureText(m.plan, mv)
	}
	return m
}

// runStep runs step s of m with the context its kind asks for (a deadline of s.bound for a
// request without a timeout of its own; the graceful stop for a wait) and returns its result and
// duration. A wait that ends without continuing while the run stops gracefully was abandoned:
// its result says so.
func (cr *clusterRun) runStep(ctx context.Context, m *moveRun, s step) (result, time.Duration) {
	t0 := cr.cfg.Clock.Now()
	sctx, cancel := ctx, context.CancelFunc(func() {})
	switch {
	case s.deadline:
		sctx, cancel = context.WithTimeout(ctx, s.bound)
	case s.wait:
		sctx, cancel = withStop(ctx, cr.cfg.Stop)
	}
	res := s.run(sctx, m)
	cancel()
	if s.wait && res.outcome != report.OutcomeContinue && cr.stopping() && ctx.Err() == nil {
		res = gracefulStop("%s abandoned (a wait: abandoning it disrupts nothing): %s", s.name, m.state())
	}
	return res, cr.cfg.Clock.Since(t0)
}

// recordStep adds step name's result to m's report and tells the observer and the log.
func (cr *clusterRun) recordStep(m *moveRun, name string, res result, d time.Duration) {
	m.rep.Steps = append(m.rep.Steps, report.Step{Name: name, Outcome: res.outcome, Reason: res.text(), Seconds: report.Seconds(d)})
	cr.cfg.Observer.Step(cr.key, m.rep.Steps[len(m.rep.Steps)-1])
	cr.logStep(m, name, res, d)
}

// finish ends m's report with the last step's result res and the move's duration, gives back an
// eviction reserved but not made, records a skipped or aborted move's event on the pod and tells
// the observer.
func (cr *clusterRun) finish(m *moveRun, res result, d time.Duration) {
	if m.release != nil && !m.rep.Evicted {
		m.release()
	}
	m.rep.Outcome = res.outcome
	switch res.outcome {
	case report.OutcomeSkip:
		m.rep.Skipped = res.reason
	case report.OutcomeAbort:
		m.rep.Error = res.err.Error()
	}
	m.rep.Seconds = report.Seconds(d)
	last := m.rep.Steps[len(m.rep.Steps)-1].Name
	switch res.outcome {
	case report.OutcomeSkip:
		cr.events.pod(m.pod, corev1.EventTypeWarning, ReasonMoveSkipped, ActionRebalance, "move of %s skipped at step %s: %s", m.mv.Pod, last, res.reason)
	case report.OutcomeAbort:
		cr.events.pod(m.pod, corev1.EventTypeWarning, ReasonMoveAborted, ActionRebalance, "move of %s aborted at step %s: %v", m.mv.Pod, last, res.err)
	}
	cr.cfg.Observer.Move(cr.key, *m.rep)
}

// gracefulStop is the result of a move stopped by a graceful stop (Config.Stop): a skip.
func gracefulStop(format string, args ...any) result {
	r := skip("graceful stop: "+format, args...)
	r.stoppedBy = report.StoppedGracefulStop
	return r
}

// state says what the move has disrupted so far, for a graceful stop's reason.
func (m *moveRun) state() string {
	switch {
	case m.rep.Evicted:
		return "the pod was evicted; its StatefulSet re-creates it and the next run waits until the cluster is healthy"
	case m.rep.Failover != nil:
		return "the master was failed over and is a replica now; nothing was evicted, and the next run checks the roles again"
	}
	return "nothing was disrupted"
}
