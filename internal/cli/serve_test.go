package cli

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/metrics"
)

// TestServeRefusesBeforeConnecting checks the flags serve rejects before it reads a kubeconfig.
func TestServeRefusesBeforeConnecting(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "a schedule that does not parse → 1, naming it", args: []string{"serve", "--schedule", "every night", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`--schedule: schedule "every night"`}},
		{name: "an empty schedule → 1", args: []string{"serve", "--schedule", "", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"--schedule: a schedule is required"}},
		{name: "run's flags are checked too → 1", args: []string{"serve", "--failover-mode", "fast", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"--failover-mode must be default, force or takeover"}},
		{name: "valid flags → it goes on to the kubeconfig → 1", args: []string{"serve", "--schedule", "CRON_TZ=Europe/Paris 0 2 * * *", "--leader-elect=false", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"kubeconfig"}},
	})
}

// TestOutcomeOf maps every exit status of run to the metrics' outcome.
func TestOutcomeOf(t *testing.T) {
	for code, want := range map[int]metrics.Outcome{
		ExitOK: metrics.OutcomeCompliant, ExitError: metrics.OutcomeError, ExitViolations: metrics.OutcomeViolations, ExitOutsideWindow: metrics.OutcomeOutsideWindow,
	} {
		if got := outcomeOf(code); got != want {
			t.Errorf("outcomeOf(%d) = %s, want %s", code, got, want)
		}
	}
}

// TestGracefulSignals sends this process SIGTERM twice: the first closes the graceful stop, the
// second cancels the context (the hard stop).
func TestGracefulSignals(t *testing.T) {
	stop, ctx, release := gracefulSignals(context.Background())
	defer release()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stop:
	case <-time.After(10 * time.Second):
		t.Fatal("the first SIGTERM did not close the graceful stop")
	}
	if ctx.Err() != nil {
		t.Fatal("the first SIGTERM cancelled the context")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the second SIGTERM did not cancel the context")
	}
}
