package app

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestServeRefusesBeforeConnecting checks the flags serve rejects before it reads a kubeconfig.
func TestServeRefusesBeforeConnecting(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "a schedule that does not parse → 1, naming the field and the flag", args: []string{"serve", "--schedule", "every night", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`schedule (--schedule): Invalid value: "every night"`}},
		{name: "a policy file's bad schedule → 1, naming the field", args: []string{"serve", "--policy", writeFile(t, "policy.yaml", "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\nschedule: \"61 * * * *\"\n"), "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`schedule: Invalid value: "61 * * * *"`}},
		{name: "run's flags are checked too → 1", args: []string{"serve", "--failover-mode", "fast", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{`failover.mode (--failover-mode): Unsupported value: "fast"`}},
		{name: "an empty schedule → 1, the flag named (it never fires; left out, the policy's schedule applies)", args: []string{"serve", "--schedule", "", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"--schedule is empty"}},
		{name: "valid flags → it goes on to the kubeconfig → 1", args: []string{"serve", "--schedule", "CRON_TZ=Europe/Paris 0 2 * * *", "--leader-elect=false", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantErr: []string{"kubeconfig"}},
	})
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

// TestDeployPolicyIsValid: the policy deploy/base ships validates (the e2e test validates the
// Helm chart's rendered one).
func TestDeployPolicyIsValid(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "deploy/base/policy.yaml → 0", args: []string{"policy", "validate", "../../../deploy/base/policy.yaml"}, wantCode: ExitOK},
	})
}
