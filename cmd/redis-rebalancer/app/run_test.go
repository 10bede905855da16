package app

import (
	"errors"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// TestRunRefusesBeforeConnecting checks the flags run rejects before it reads a kubeconfig (none
// is given: a refusal that came later would name the kubeconfig instead).
func TestRunRefusesBeforeConnecting(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "run --release-replica-claims → accepted: 1 for the missing kubeconfig only", args: []string{"run", "--release-replica-claims", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"does-not-exist"}},
		{name: "a negative --full-sync-timeout → 1, naming the field and the flag", args: []string{"run", "--release-replica-claims", "--full-sync-timeout", "-1m", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`timeouts.fullSync (--full-sync-timeout): Invalid value: "-1m0s"`}},
		{name: "run --allow-pending-steps → accepted: 1 for the missing kubeconfig only", args: []string{"run", "--allow-pending-steps", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"does-not-exist"}},
		{name: "bad failover mode → 1, naming the field and the flag", args: []string{"run", "--failover-mode", "fast", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`failover.mode (--failover-mode): Unsupported value: "fast": supported values: "default", "force", "takeover"`}},
		{name: "bad output format → 1", args: []string{"run", "-o", "yaml", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`output (--output): Unsupported value: "yaml"`}},
		{name: "a window that does not parse → 1, naming it", args: []string{"run", "--window", "at night", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`windows.windows[0].schedule (--window): Invalid value: "at night"`}},
		{name: "a window with a bad duration → 1", args: []string{"run", "--window", "@daily|all night", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"--window: window \"@daily|all night\": duration"}},
		{name: "@every → 1, it opens no window at a fixed time", args: []string{"run", "--window", "@every 1h", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"@every repeats relative"}},
		{name: "an unknown step estimate → 1", args: []string{"run", "--window-step-estimate", "p50", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`windows.stepEstimate (--window-step-estimate): Unsupported value: "p50"`}},
		{name: "negative numbers and durations → 1, every one named", args: []string{"run", "--max-parallel-clusters", "-1", "--max-moves", "-2", "--health-timeout", "-1s", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{
			"invalid policy (3 problems)", "limits.maxMovesPerCluster (--max-moves): Invalid value: -2", "limits.maxParallelClusters (--max-parallel-clusters): Invalid value: -1", `timeouts.healthGate (--health-timeout): Invalid value: "-1s"`,
		}},
		{name: "valid windows and limits → it goes on to the kubeconfig → 1", args: []string{"run", "--window", "CRON_TZ=Europe/Paris 0 2 * * MON-FRI|2h", "--window", "@weekly", "--max-pods-to-evict-per-node", "1", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"kubeconfig"}},
		{name: "-o table, as check writes it → accepted, on to the kubeconfig → 1", args: []string{"run", "-o", "table", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"kubeconfig"}},
		{name: "--max-plan-states, as plan has it → accepted, on to the kubeconfig → 1", args: []string{"run", "--max-plan-states", "5000", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"kubeconfig"}},
		{name: "without those, it goes on to the kubeconfig → 1", args: []string{"run", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"kubeconfig"}},
	})
}

// TestRunExitCode checks run's outcome and exit status for each kind of report: the expected
// outcomes exit 0, so that a Job that ran them completes.
func TestRunExitCode(t *testing.T) {
	healthy := observe.Health{State: observe.HealthHealthy}
	resyncing := observe.Health{State: observe.HealthResyncing, Reasons: []string{"replica_link_down a: master_link_status:down"}}
	ok := report.ClusterRun{Name: "ok", PlacementCompliant: true, Health: healthy, Compliant: true}
	for _, tc := range []struct {
		name     string
		clusters []report.ClusterRun
		err      error
		want     report.Outcome
		wantCode int
	}{
		{name: "every cluster complies and is healthy → compliant, 0", clusters: []report.ClusterRun{ok}, want: report.OutcomeCompliant, wantCode: ExitOK},
		{name: "no cluster at all (--allow-empty) → compliant, 0", want: report.OutcomeCompliant, wantCode: ExitOK},
		{name: "placement complies, Redis resyncing → needsAttention, 3", clusters: []report.ClusterRun{ok, {Name: "r", PlacementCompliant: true, Health: resyncing}}, want: report.OutcomeNeedsAttention, wantCode: ExitViolations},
		{name: "a move skipped by a PodDisruptionBudget → needsAttention, 3", clusters: []report.ClusterRun{{Name: "p", Health: healthy, StoppedBy: report.StepPDBDryRun}}, want: report.OutcomeNeedsAttention, wantCode: ExitViolations},
		{name: "no plan reaches compliance → needsAttention, 3", clusters: []report.ClusterRun{{Name: "n", Health: healthy, StoppedBy: report.StoppedNoPlan}}, want: report.OutcomeNeedsAttention, wantCode: ExitViolations},
		{name: "the scheduler keeps undoing the moves → needsAttention, 3", clusters: []report.ClusterRun{{Name: "o", Health: healthy, StoppedBy: report.StoppedOffTrack}}, want: report.OutcomeNeedsAttention, wantCode: ExitViolations},
		{name: "outside every window → outsideWindow, 0", clusters: []report.ClusterRun{ok, {Name: "w", Health: healthy, StoppedBy: report.StepWindow}}, want: report.OutcomeOutsideWindow, wantCode: ExitOK},
		{name: "move budget spent → progressing, 0", clusters: []report.ClusterRun{{Name: "m", Health: healthy, StoppedBy: report.StoppedMaxMoves}}, want: report.OutcomeProgressing, wantCode: ExitOK},
		{name: "an eviction limit reached → progressing, 0", clusters: []report.ClusterRun{{Name: "l", Health: healthy, StoppedBy: report.StoppedEvictionLimit}}, want: report.OutcomeProgressing, wantCode: ExitOK},
		{name: "a graceful stop → progressing, 0", clusters: []report.ClusterRun{{Name: "g", Health: healthy, StoppedBy: report.StoppedGracefulStop}}, want: report.OutcomeProgressing, wantCode: ExitOK},
		{name: "one progressing, one outside the window → progressing, 0", clusters: []report.ClusterRun{{Name: "w", StoppedBy: report.StepWindow}, {Name: "m", StoppedBy: report.StoppedMaxMoves}}, want: report.OutcomeProgressing, wantCode: ExitOK},
		{name: "one waits for the window, another was refused → needsAttention, 3", clusters: []report.ClusterRun{{Name: "w", StoppedBy: report.StepWindow}, {Name: "p", StoppedBy: report.StepPDBDryRun}}, want: report.OutcomeNeedsAttention, wantCode: ExitViolations},
		{name: "a cluster's step aborted → error, 1", clusters: []report.ClusterRun{ok, {Name: "a", StoppedBy: report.StepEvict, Error: "evict x: connection refused"}}, err: errors.New("cluster redis/a: evict x: connection refused"), want: report.OutcomeError, wantCode: ExitError},
		{name: "an error → error, 1, whatever the clusters", clusters: []report.ClusterRun{{Name: "w", StoppedBy: report.StepWindow}}, err: errors.New("execute: context canceled"), want: report.OutcomeError, wantCode: ExitError},
		{name: "a dry run → dryRun, 0", clusters: []report.ClusterRun{{Name: "d", StoppedBy: report.StoppedDryRun}}, want: report.OutcomeDryRun, wantCode: ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &report.Run{Clusters: tc.clusters}
			rep.Classify(tc.err)
			if rep.Outcome != tc.want {
				t.Errorf("outcome %s, want %s", rep.Outcome, tc.want)
			}
			if got := ExitStatus(rep.Outcome); got != tc.wantCode {
				t.Errorf("exit %d, want %d", got, tc.wantCode)
			}
			if (tc.err != nil) != (rep.Error != "") {
				t.Errorf("report error %q for run error %v", rep.Error, tc.err)
			}
		})
	}
	if got := ExitStatus(report.OutcomeLeaseHeld); got != ExitOK {
		t.Errorf("leaseHeld: exit %d, want 0", got)
	}
}
