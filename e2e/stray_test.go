package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestStrayMasterRejoined: seed 2's 30-minute soak ended with a replica back from a restart as a
// stray master (Redis 7.0 had saved it as a master in its nodes.conf while it replicated: an
// UPDATE message about itself; at its restart Redis's start-up check marked every slot it held
// keys of importing from their owner), and every health gate refused from then on. Here a
// replica's nodes.conf is written so and its redis-server killed (the runtime restarts it at once,
// as the kubelet restarts a container), on the post-scale-down scenario with a writer running.
// One run must make it a replica of its owner again before its moves (reported in
// reintroduced), then complete the fix: exit 0, compliant, no acknowledged write lost.
func TestStrayMasterRejoined(t *testing.T) {
	sc := scenario.PostScaleDown()
	f := newFaultEnv(t, sc, harness.Options{}, false)
	victim := sc.PodName(2, 1) // shard 2's replica; the fix moves shard 0's master off n1
	var s redisrt.ServerInfo
	for _, x := range f.Runtime.Servers() {
		if x.Namespace == f.Namespace && x.Name == victim {
			s = x
		}
	}
	if s.Pid == 0 {
		t.Fatalf("no redis-server runs for %s", victim)
	}
	if err := redistest.FlagMyselfMaster(s.Dir); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		topo, err := f.Redis.Topology(ctx, f.Addrs())
		if err != nil {
			return false, nil
		}
		for _, st := range topo.StrayMasters() {
			if st.Addr == s.Addr {
				t.Logf("stray master: %s", st)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s (%s) did not come back as a stray master: %v", victim, s.Addr, err)
	}
	if _, err := f.Redis.CheckHealth(t.Context(), f.Addrs(), redisctl.HealthOptions{}); err == nil || !strings.Contains(err.Error(), string(redisctl.ReasonStrayMaster)) {
		t.Fatalf("health gate: %v, want %s", err, redisctl.ReasonStrayMaster)
	}

	run := startCLI(t, nil, runArgs(f.Env)...)
	code := run.wait(5 * time.Minute)
	assertExit(t, code, app.ExitOK, run)
	cr := onlyCluster(t, run.report())
	if len(cr.Reintroduced) != 1 || !strings.Contains(cr.Reintroduced[0], victim+": stray master") {
		t.Errorf("reintroduced %q, want one line for %s's stray master", cr.Reintroduced, victim)
	}
	if !cr.Compliant {
		t.Errorf("not compliant after the run: outcome %s, stopped %q, health %+v", cr.Outcome, cr.Stopped, cr.Health)
	}
	if _, err := f.WaitHealthy(t.Context(), time.Minute); err != nil {
		t.Errorf("cluster not healthy after the run: %v", err)
	}
	f.finish(t)
}
