//go:build faultpending

package e2e

import (
	"strings"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The fault matrix's tests that the executor still fails: they assert the right behaviour and
// are built only with the faultpending tag, so that `make test` stays green until it is fixed:
//
//	go test -tags faultpending -count=1 ./e2e/ -run 'TestFault'
//
// Each says what it needs. The API-server test does not call t.Parallel: it runs before every
// parallel test, alone on the test bed (see main_test.go).

// TestFaultAPIServerDownAfterEviction: kube-apiserver goes down right after the eviction was
// accepted. The run cannot see the pod come back: it aborts with that (exit 1), naming the pod
// and the API server's error; the evicted pod was a replica, so the cluster is safe, and once the
// API server is back a fresh run completes the fix.
//
// Needs: the re-creation wait keeps the first real cause (the API server's "connection
// refused"). It fails in some runs today: when a poll starts just before the step's deadline,
// client-go's rate limiter refuses it before the context is done ("client rate limiter Wait
// returned an error: rate: Wait(n=1) would exceed context deadline"), execute's poll (steps.go)
// takes that for a status since ctx.Err() is still nil, and the step reports it: "re-creation:
// pod redis-s0-0 not back after 10s: get: client rate limiter Wait returned an error: …".
func TestFaultAPIServerDownAfterEviction(t *testing.T) {
	// The evicted pod takes 5 s to go (kwok's pod-delete delay), so the re-creation is still
	// waiting when the API server goes down, and stays so for --recreate-timeout.
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{
		PodAnnotations: map[string]string{localcluster.PodDeleteDelayAnnotation: "5s"},
	}, true)
	run, pod := runWithAPIServerDown(t, f, report.StepEvict, "", "--recreate-timeout", "10s")
	got := assertReason(t, "error", run.errorLine(), "connection refused")
	if !strings.Contains(got, pod) {
		t.Errorf("reason %q does not name the evicted pod %s", got, pod)
	}
	freshRunCompletes(t, f)
}
