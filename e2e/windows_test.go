package e2e

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/internal/cli"
	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The maintenance-window rows of the fault matrix (issue 8): a run started outside its window,
// and a window that runs out during a run. Windows are cron expressions, minute-grained, read
// in UTC; these tests build them from the wall clock and never wait for a minute to turn.

// TestFaultOutsideWindow: the only window opens daily 11–12 hours from now. The run observes,
// plans and reports, changes nothing, and says when the window opens next: exit 4, stoppedBy
// window.
func TestFaultOutsideWindow(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	roles, pods := rolesOf(t, f.Env), podsOf(t, f.Env)
	now := time.Now().UTC()
	hour := (now.Hour() + 12) % 24
	next := time.Date(now.Year(), now.Month(), now.Day(), hour, 0, 0, 0, time.UTC)
	if !next.After(now) {
		next = next.AddDate(0, 0, 1)
	}

	run := startCLI(t, nil, runArgs(f.Env, "--window", fmt.Sprintf("0 %d * * *|1h", hour))...)
	code := run.wait(3 * time.Minute)
	rep := run.report()
	assertExit(t, code, cli.ExitOutsideWindow, run)
	cr := onlyCluster(t, rep)
	if cr.StoppedBy != report.StepWindow {
		t.Errorf("stopped by %q, want %q", cr.StoppedBy, report.StepWindow)
	}
	want := "maintenance window: closed; next window opens at " + next.Format(time.RFC3339) + " (in "
	if got := assertReason(t, "report's stopped", cr.Stopped, want); !strings.HasPrefix(got, want) {
		t.Errorf("reason %q does not start with %q", got, want)
	}
	if rep.Window.Open || rep.Window.NextOpen == nil || !rep.Window.NextOpen.Equal(next) {
		t.Errorf("report's window %+v, want closed, next opening at %s", rep.Window, next.Format(time.RFC3339))
	}
	if cr.Plan == nil || len(cr.Plan.Moves) == 0 {
		t.Errorf("report has no plan (%+v); outside the window run still plans and reports", cr.Plan)
	}
	if len(cr.Moves) != 0 {
		t.Errorf("moves %+v, want none outside the window", cr.Moves)
	}
	assertNothingDone(t, cr)
	if stops := f.rec.records(); len(stops) != 0 {
		t.Errorf("pods went away outside the window: %+v", stops)
	}
	if got := rolesOf(t, f.Env); !equalRoles(got, roles) {
		t.Errorf("roles changed: before %v, after %v", roles, got)
	}
	if got := podsOf(t, f.Env); !maps.Equal(got, pods) {
		t.Errorf("pods changed: before %v, after %v", pods, got)
	}
	f.finish(t)
}

// TestFaultWindowClosesMidRun: the window opened at the start of the current minute and leaves,
// when the run starts, one move's bound (its timeouts' sum) plus windowSlack. The scenario needs
// two moves and every re-created pod takes windowReadyDelay to start, so the first move outlasts
// the slack: it completes, every step from the failover to the pod's return included (nothing
// interrupts it), and the second is refused at its window step, before the window's end (the
// window step's bound is 0), with no failover and no eviction: exit 4, stoppedBy window.
func TestFaultWindowClosesMidRun(t *testing.T) {
	const (
		// windowSlack must exceed the run's start-up (observe and plan; about a second) and be
		// shorter than the first move, which lasts at least windowReadyDelay.
		windowSlack      = 10 * time.Second
		windowReadyDelay = 20 * time.Second
	)
	// The pods the scenario starts with are Ready at once; re-created pods take windowReadyDelay.
	f := newFaultEnv(t, scenario.TwoMoves(), harness.Options{
		PodAnnotations: map[string]string{localcluster.PodReadyDelayAnnotation: windowReadyDelay.String()},
		RunningPods: func(tmpl *corev1.PodTemplateSpec) {
			delete(tmpl.Annotations, localcluster.PodReadyDelayAnnotation)
		},
	}, false)
	timeouts := []string{"--health-timeout", "30s", "--recreate-timeout", "1m", "--rejoin-timeout", "1m"}
	e, err := execute.New(execute.Config{Client: f.Client(), Redis: f.Redis,
		HealthTimeout: 30 * time.Second, RecreateTimeout: time.Minute, RejoinTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	bound := e.MoveBound()

	now := time.Now().UTC()
	opened := now.Truncate(time.Minute)
	dur := (now.Sub(opened) + bound + windowSlack).Truncate(time.Second) + time.Second
	end := opened.Add(dur)
	schedule := fmt.Sprintf("%d %d * * *|%s", opened.Minute(), opened.Hour(), dur)
	t.Logf("window %q: open from %s to %s; a move's bound is %s", schedule, opened.Format(time.RFC3339), end.Format(time.RFC3339), bound)

	run := startCLI(t, nil, runArgs(f.Env, append(timeouts, "--window", schedule)...)...)
	run.waitStep(report.StepWindow, "", time.Minute)
	run.waitLineWith(3*time.Minute, "move skipped at "+report.StepWindow)
	stopped := time.Now()
	code := run.wait(3 * time.Minute)
	rep := run.report()
	assertExit(t, code, cli.ExitOutsideWindow, run)
	cr := onlyCluster(t, rep)
	if cr.StoppedBy != report.StepWindow {
		t.Errorf("stopped by %q, want %q", cr.StoppedBy, report.StepWindow)
	}
	want := fmt.Sprintf("maintenance window: closes at %s, in ", end.Format(time.RFC3339))
	got := assertReason(t, "report's stopped", cr.Stopped, want)
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, fmt.Sprintf("the move needs up to %s (bound estimate)", bound)) {
		t.Errorf("reason %q, want %q… the move needs up to %s (bound estimate)", got, want, bound)
	}
	if !rep.Window.Open || rep.Window.Closes == nil || !rep.Window.Closes.Equal(end) {
		t.Errorf("report's window %+v, want open until %s", rep.Window, end.Format(time.RFC3339))
	}
	if len(cr.Moves) != 2 {
		t.Fatalf("moves %+v, want 2: the first made, the second refused by the window", cr.Moves)
	}
	first, second := cr.Moves[0], cr.Moves[1]
	if first.Seconds < windowSlack.Seconds() {
		t.Errorf("the first move took %.1fs, less than the window's slack %s: the test cannot tell the second move's refusal from a window that had room", first.Seconds, windowSlack)
	}
	var steps []string
	for _, s := range first.Steps {
		if s.Outcome != report.OutcomeContinue {
			steps = append(steps, s.Name+" "+s.Outcome)
		}
	}
	if len(first.Steps) != 11 || len(steps) > 0 || !first.Evicted || first.To == "" {
		t.Errorf("first move: %d steps, not continued: %v, evicted %v, to %q; want all 11 steps continued, the pod evicted and back", len(first.Steps), steps, first.Evicted, first.To)
	}
	if len(second.Steps) != 1 || second.Steps[0].Name != report.StepWindow || second.Steps[0].Outcome != report.OutcomeSkip ||
		second.Evicted || second.Failover != nil {
		t.Errorf("second move %+v: want only its window step, skipped; no failover, no eviction", second)
	}
	// The step in flight when the run stopped is the window step, whose bound is 0.
	if !stopped.Before(end) {
		t.Errorf("the second move was refused at %s, after the window's end %s", stopped.UTC().Format(time.RFC3339Nano), end.Format(time.RFC3339))
	}
	t.Logf("first move %.1fs; second refused %s before the window's end", first.Seconds, end.Sub(stopped).Round(time.Millisecond))
	if stops := f.rec.records(); len(stops) != 1 {
		t.Errorf("pods that went away: %+v, want the first move's only", stops)
	}
	f.finish(t)
}

// podsOf returns each pod of env's namespace as "node uid", by name.
func podsOf(t *testing.T, env *harness.Env) map[string]string {
	t.Helper()
	l, err := env.Client().CoreV1().Pods(env.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range l.Items {
		out[p.Name] = p.Spec.NodeName + " " + string(p.UID)
	}
	return out
}
