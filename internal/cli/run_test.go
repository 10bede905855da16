package cli

import "testing"

// TestRunRefusesBeforeConnecting checks the flags run rejects before it reads a kubeconfig (none
// is given: a refusal that came later would name the kubeconfig instead).
func TestRunRefusesBeforeConnecting(t *testing.T) {
	const refusal = "--release-replica-claims is not supported by run yet"
	runExitCases(t, []exitCase{
		{name: "run --release-replica-claims → 1, refused", args: []string{"run", "--release-replica-claims", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{refusal, "use it with plan/check"}},
		{name: "run --dry-run --release-replica-claims → 1, refused too", args: []string{"run", "--dry-run", "--release-replica-claims", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{refusal}},
		{name: "run --allow-pending-steps → 1, refused", args: []string{"run", "--allow-pending-steps", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"--allow-pending-steps is not supported by run yet", "use it with plan"}},
		{name: "run --dry-run --allow-pending-steps → 1, refused too", args: []string{"run", "--dry-run", "--allow-pending-steps", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"--allow-pending-steps is not supported by run yet"}},
		{name: "bad failover mode → 1", args: []string{"run", "--failover-mode", "fast", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"--failover-mode must be default, force or takeover"}},
		{name: "bad output format → 1", args: []string{"run", "-o", "table", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"-o must be text or json"}},
		{name: "without those, it goes on to the kubeconfig → 1", args: []string{"run", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"kubeconfig"}},
	})
}
