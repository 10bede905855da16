package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestTwoRunsOneActor starts two `redis-rebalancer run` at the same moment on the post-scale-down
// scenario, with a writer, as two CronJob pods (or a CronJob's and a manual Job's) would: they
// share the Lease of env's namespace. One takes it and fixes the cluster; the other waits (its
// progress names the holder), then takes it once the first has released it, finds the cluster
// compliant and moves nothing. The executors' runs never overlap (the second's report starts
// after the first's ends), so there is one disruption in flight at most, ever; no write is lost
// and no master is evicted without its failover (faultEnv.finish).
func TestTwoRunsOneActor(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	a := startCLI(t, nil, runArgs(f.Env, "--lease-wait", "3m")...)
	b := startCLI(t, nil, runArgs(f.Env, "--lease-wait", "3m")...)
	runs := []*cliRun{a, b}
	var reps []report.Run
	for _, r := range runs {
		assertExit(t, r.wait(5*time.Minute), app.ExitOK, r)
		reps = append(reps, r.report())
	}
	first, second := 0, 1
	if reps[1].Started.Before(reps[0].Started) {
		first, second = 1, 0
	}
	p, q := reps[first], reps[second]
	for i, rep := range []report.Run{p, q} {
		if rep.Lease == nil || rep.Outcome != report.OutcomeCompliant {
			t.Fatalf("run %d: outcome %s, Lease %+v; want compliant, with the Lease", i+1, rep.Outcome, rep.Lease)
		}
	}
	firstEnd := p.Started.Add(time.Duration(p.Seconds * float64(time.Second)))
	t.Logf("first run %s…%s (holder %s, waited %.3fs), second from %s (holder %s, waited %.1fs)",
		p.Started.Format(time.RFC3339Nano), firstEnd.Format(time.RFC3339Nano), p.Lease.Holder, p.Lease.WaitedSeconds,
		q.Started.Format(time.RFC3339Nano), q.Lease.Holder, q.Lease.WaitedSeconds)
	if q.Started.Before(firstEnd) {
		t.Errorf("the second run started acting at %s, before the first ended (%s)", q.Started.Format(time.RFC3339Nano), firstEnd.Format(time.RFC3339Nano))
	}
	if p.Lease.Holder == q.Lease.Holder {
		t.Errorf("both runs held the Lease as %s", p.Lease.Holder)
	}
	if n := len(onlyCluster(t, p).Moves); n == 0 {
		t.Errorf("the first run made no move: the scenario needs some")
	}
	if mv := onlyCluster(t, q).Moves; len(mv) != 0 {
		t.Errorf("the second run moved %+v after the first had fixed the cluster", mv)
	}
	runs[second].waitLine("Lease held by another process: waiting", time.Second)

	// Every move's interval, over both runs: none overlaps another.
	type interval struct {
		pod        string
		start, end time.Time
	}
	var moves []interval
	for _, rep := range reps {
		for _, m := range onlyCluster(t, rep).Moves {
			moves = append(moves, interval{m.Pod, m.Started, m.Started.Add(time.Duration(m.Seconds * float64(time.Second)))})
		}
	}
	slices.SortFunc(moves, func(x, y interval) int { return x.start.Compare(y.start) })
	for i := 1; i < len(moves); i++ {
		if moves[i].start.Before(moves[i-1].end) {
			t.Errorf("move of %s (from %s) overlaps the move of %s (until %s)", moves[i].pod, moves[i].start.Format(time.RFC3339Nano), moves[i-1].pod, moves[i-1].end.Format(time.RFC3339Nano))
		}
	}
	f.finish(t)
}
