package e2e

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The maintenance-window rows of the fault matrix (faults_test.go): a run started outside its
// window, and a window that runs out during a run. Windows are cron expressions, minute-grained,
// read in UTC; these tests build them from the wall clock and never wait for a minute to turn.

// TestFaultOutsideWindow: the only window opens daily 11–12 hours from now. The run observes,
// plans and reports, changes nothing, and says when the window opens next: outcome
// outsideWindow, exit 0, stoppedBy window.
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
	rep, cr, _ := waitStopped(t, run, app.ExitOK, report.StepWindow, "maintenance window: closed; next window opens at "+next.Format(time.RFC3339)+" (in ")
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
	if stops := f.Stops(); len(stops) != 0 {
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

// windowRunTimeouts are TestFaultWindowRunsOut's run's timeouts, given as flags (they override
// e2ePolicy); the drain keeps the policy's default, which is execute's. A move's bound, the time
// a window must have left for the move to start, is their sum over its steps (MoveBound).
var windowRunTimeouts = []struct {
	flag string
	d    time.Duration
	set  func(*execute.Config, time.Duration)
}{
	{"--health-timeout", 30 * time.Second, func(c *execute.Config, d time.Duration) { c.HealthTimeout = d }},
	{"--request-timeout", 10 * time.Second, func(c *execute.Config, d time.Duration) { c.RequestTimeout = d }},
	{"--failover-timeout", 10 * time.Second, func(c *execute.Config, d time.Duration) { c.FailoverTimeout = d }},
	{"--recreate-timeout", time.Minute, func(c *execute.Config, d time.Duration) { c.RecreateTimeout = d }},
	{"--rejoin-timeout", time.Minute, func(c *execute.Config, d time.Duration) { c.RejoinTimeout = d }},
}

// TestFaultWindowRunsOut: the window runs out during a run. It opened at the start of the
// current minute and, when the run starts, leaves one move's bound (its timeouts' sum) plus
// windowSlack. The scenario needs two evictions (a replica off n3, then a master off n1) and
// every re-created pod takes windowReadyDelay to start, so the first move outlasts the slack.
// The first move is made, each of its steps through the pod's return and the re-observation
// (nothing interrupts it); the second is refused at its window step, before the window's end,
// before any failover or eviction: the window would close before it could end. Outcome
// outsideWindow, exit 0, stoppedBy window; the master stays where it is, a master. With the bound estimate a window
// cannot close inside a move (no move starts without its bound left); the close inside a step,
// between a verified failover and the pod's return, is execute's TestWindows (its clock).
func TestFaultWindowRunsOut(t *testing.T) {
	const (
		// windowSlack must exceed the run's start-up (observe and plan; a second or two) and be
		// shorter than the first move, which lasts at least windowReadyDelay.
		windowSlack      = 15 * time.Second
		windowReadyDelay = 20 * time.Second
	)
	sc := scenario.TwoMoves()
	// The pods the scenario starts with are Ready at once; re-created pods take windowReadyDelay.
	f := newFaultEnv(t, sc, harness.Options{
		PodAnnotations: map[string]string{localcluster.PodReadyDelayAnnotation: windowReadyDelay.String()},
		RunningPods: func(tmpl *corev1.PodTemplateSpec) {
			delete(tmpl.Annotations, localcluster.PodReadyDelayAnnotation)
		},
	}, false)
	roles := rolesOf(t, f.Env)
	cfg := execute.Config{Client: f.Client(), Redis: f.Redis}
	var flags []string
	for _, to := range windowRunTimeouts {
		to.set(&cfg, to.d)
		flags = append(flags, to.flag, to.d.String())
	}
	e, err := execute.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bound := e.MoveBound()

	// Cron schedules are minute-grained and read in UTC: the window opens daily at the start of
	// this minute and lasts until bound + windowSlack from now, rounded up to a second.
	now := time.Now().UTC()
	opened := now.Truncate(time.Minute)
	dur := (now.Sub(opened) + bound + windowSlack).Truncate(time.Second) + time.Second
	end := opened.Add(dur)
	schedule := fmt.Sprintf("%d %d * * *|%s", opened.Minute(), opened.Hour(), dur)
	t.Logf("window %q: open from %s to %s; a move's bound is %s", schedule, opened.Format(time.RFC3339), end.Format(time.RFC3339), bound)

	run := startCLI(t, nil, runArgs(f.Env, append(flags, "--window", schedule)...)...)
	run.waitLineWith(3*time.Minute, "move skipped at "+report.StepWindow)
	refused := time.Now()
	rep, cr, got := waitStopped(t, run, app.ExitOK, report.StepWindow, fmt.Sprintf("maintenance window: closes at %s, in ", end.Format(time.RFC3339)))
	if want := fmt.Sprintf("; the move needs up to %s (bound estimate)", bound); !strings.HasSuffix(got, want) {
		t.Errorf("reason %q does not end with %q", got, want)
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
		steps = append(steps, s.Name+" "+s.Outcome)
	}
	if len(first.Steps) != 11 || first.Outcome != report.OutcomeContinue || !first.Evicted || first.To == "" {
		t.Errorf("first move: steps %v, outcome %q, evicted %v, to %q; want its 11 steps continued, the pod evicted and back", steps, first.Outcome, first.Evicted, first.To)
	}
	if len(second.Steps) != 1 || second.Steps[0].Name != report.StepWindow || second.Steps[0].Outcome != report.OutcomeSkip ||
		second.Evicted || second.Failover != nil {
		t.Errorf("second move %+v: want only its window step, skipped; no failover, no eviction", second)
	}
	if !refused.Before(end) {
		t.Errorf("the second move was refused at %s (or later), after the window's end %s", refused.UTC().Format(time.RFC3339Nano), end.Format(time.RFC3339))
	}
	t.Logf("first move %.1fs; the second refused %s before the window's end", first.Seconds, end.Sub(refused).Round(time.Second))
	if stops := f.Stops(); len(stops) != 1 || stops[0].Pod != podName(first.Pod) {
		t.Errorf("pods that went away: %+v, want the first move's %s only", stops, first.Pod)
	}
	if got, pod := rolesOf(t, f.Env), podName(second.Pod); got[pod] != roles[pod] {
		t.Errorf("%s: role %q, was %q; the refused move must not fail it over", pod, got[pod], roles[pod])
	}
	f.finish(t)
}

// podName returns the name of a "namespace/name" pod key.
func podName(key string) string {
	_, name, _ := strings.Cut(key, "/")
	return name
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
