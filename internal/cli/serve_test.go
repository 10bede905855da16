package cli

import (
	"testing"

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
