package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// serveReports decodes the JSON reports serve printed on stdout, one per pass (serve must have
// exited).
func serveReports(t *testing.T, r *cliRun) []report.Run {
	t.Helper()
	<-r.done
	var out []report.Run
	dec := json.NewDecoder(bytes.NewReader(r.stdout.Bytes()))
	for {
		var rep report.Run
		err := dec.Decode(&rep)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("serve's reports: %v\n%s", err, r.stdout.String())
		}
		out = append(out, rep)
	}
}

// quorumHolds reports whether no node and no zone holds more than 2 of the 5 masters.
func quorumHolds(byNode, byZone map[string][]string) bool {
	_, n := most(byNode)
	_, z := most(byZone)
	return n <= 2 && z <= 2
}

// TestServeRestoresMasterQuorum runs serve (no leader election, a schedule that does not fire
// during the test) on a compliant cluster with the writer at 250 writes/s. Its pass at start
// finds nothing to do and lists nothing (its watched cache answers). Then n1 is lost (its
// redis-servers stopped): Redis promotes n1's master's replica on n3, leaving zone-b 3 of the 5
// masters, and heals; n1 comes back. serve's watch of the roles sees MasterQuorum broken and
// starts a pass off the schedule, which waits at its health gate for Redis to settle, then fails
// a master over: MasterQuorum holds again within a minute, with no scheduled pass, no LIST in
// any pass, and no acknowledged write lost but those Redis Cluster may lose with n1 (faultEnv.drain).
func TestServeRestoresMasterQuorum(t *testing.T) {
	f := newFaultEnv(t, scenario.Rebalanced(), harness.Options{}, false)
	serveRun := startCLI(t, nil, cliArgs("serve", f.Env, "--schedule", "0 0 1 1 *", "--leader-elect=false",
		"--listen-address", "127.0.0.1:0", "--roles-interval", "1s", "--quorum-pass-interval", "10s")...)
	serveRun.waitLine(`"outcome":"compliant"`, 2*time.Minute) // the pass at start: nothing to do

	byNode, byZone := masterPlaces(t, f)
	if !quorumHolds(byNode, byZone) || len(byNode["n1"]) != 1 {
		t.Fatalf("masters by node %v, by zone %v: want MasterQuorum holding and one master on n1", byNode, byZone)
	}
	lost := loseNodes(t, f, []string{"n1"}, 1, healWindow) // returns once n1 is back and Redis healthy
	settled := time.Now()
	byNode, byZone = masterPlaces(t, f)
	t.Logf("n1 lost: healed %v in %v; back, Redis healthy: masters by node %v, by zone %v", lost.healed, lost.took.Round(10*time.Millisecond), byNode, byZone)
	if !lost.healed {
		t.Fatalf("Redis did not heal within %v of losing n1: %s", healWindow, lost.last)
	}
	if quorumHolds(byNode, byZone) {
		t.Logf("Redis's promotions left MasterQuorum holding: nothing for serve to restore")
	}
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, time.Minute, true, func(context.Context) (bool, error) {
		byNode, byZone = masterPlaces(t, f)
		return quorumHolds(byNode, byZone), nil
	})
	restored := time.Since(settled)
	t.Logf("MasterQuorum holds %v after Redis settled: masters by node %v, by zone %v", restored.Round(100*time.Millisecond), byNode, byZone)
	if err != nil {
		t.Fatalf("MasterQuorum still broken a minute after Redis settled: masters by node %v, by zone %v", byNode, byZone)
	}

	if err := syscall.Kill(serveRun.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := serveRun.wait(time.Minute); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}
	if !strings.Contains(serveRun.stderr(), `"msg":"Pass triggered off the schedule"`) {
		t.Errorf("serve never started a pass off the schedule")
	}
	reps := serveReports(t, serveRun)
	failovers := 0
	for k, rep := range reps {
		for _, r := range rep.APIRequests {
			t.Logf("pass %d: %s %s ×%d", k+1, r.Verb, r.Resource, r.Count)
			if r.Verb == "list" {
				t.Errorf("pass %d listed %s %d times: a pass after start-up reads the watched cache", k+1, r.Resource, r.Count)
			}
		}
		for _, cr := range rep.Clusters {
			for _, m := range cr.Moves {
				if m.Evicted {
					t.Errorf("pass %d evicted %s: restoring MasterQuorum takes failovers only", k+1, m.Pod)
				}
				if m.Failover != nil {
					failovers++
					t.Logf("pass %d: failed %s over to %s", k+1, m.Failover.OldMaster, m.Failover.NewMaster)
				}
			}
		}
	}
	if len(reps) < 2 || failovers == 0 {
		t.Errorf("%d passes, %d failovers: want the pass at start and a pass off the schedule that failed a master over", len(reps), failovers)
	}
	f.drain(t) // the cluster was down for a moment: failed writes are expected, lost ones are not
}
