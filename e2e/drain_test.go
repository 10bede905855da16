package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/drain"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// drainReport runs `redis-rebalancer prepare-drain` with args on env, waits for it and returns its
// JSON report and exit status.
func drainReport(t *testing.T, env *harness.Env, args ...string) (report.Drain, int) {
	t.Helper()
	run := startCLI(t, nil, cliArgs("prepare-drain", env, args...)...)
	code := run.wait(5 * time.Minute)
	<-run.done
	var d report.Drain
	if err := json.Unmarshal(run.stdout.Bytes(), &d); err != nil {
		t.Fatalf("prepare-drain report: %v\n%s", err, run.stdout.String())
	}
	return d, code
}

// failoverPairs returns a cluster's hand-off as "from → to" pairs.
func failoverPairs(cd report.ClusterDrain) []string {
	var out []string
	for _, mv := range cd.Moves {
		out = append(out, mv.From+" → "+mv.To)
	}
	return out
}

// kubectlDrain drains node as `kubectl drain` does (kubectlDrainNodes).
func kubectlDrain(t *testing.T, env *harness.Env, node, namespace string, retry time.Duration) {
	t.Helper()
	kubectlDrainNodes(t, env, []string{node}, namespace, retry)
}

// kubectlDrainNodes drains nodes as `kubectl drain NODE...` does (k8s.io/kubectl/pkg/drain: cordon
// every node, then, node after node, evict every pod through the Eviction API, retrying a 429
// every retry), limited to the pods of namespace (the shared test bed runs other tests' pods),
// and waits until every evicted pod is gone. The nodes are uncordoned when the test ends
// (harness.Bed.RestoreNodesOnCleanup).
func kubectlDrainNodes(t *testing.T, env *harness.Env, nodes []string, namespace string, retry time.Duration) {
	t.Helper()
	kubectlDrainNodesAgain(t, env, nodes, namespace, retry, nil)
}

// kubectlDrainNodesAgain is kubectlDrainNodes whose drain of a node, when it ends with an error
// again reports true for, is run again (within the 3-minute bound), as the caller of a drain (a
// node-pool upgrade, an SRE) runs it again after an error kubectl drain does not retry itself.
func kubectlDrainNodesAgain(t *testing.T, env *harness.Env, nodes []string, namespace string, retry time.Duration, again func(error) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	h := &drain.Helper{
		Ctx: ctx, Client: env.Client(), GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true,
		Timeout: 2 * time.Minute, EvictErrorRetryDelay: retry, Out: tlog{t}, ErrOut: tlog{t},
		AdditionalFilters: []drain.PodFilter{func(p corev1.Pod) drain.PodDeleteStatus {
			if p.Namespace != namespace {
				return drain.MakePodDeleteStatusSkip()
			}
			return drain.MakePodDeleteStatusOkay()
		}},
		OnPodDeletionOrEvictionFinished: func(p *corev1.Pod, _ bool, err error) {
			t.Logf("drain: %s/%s evicted (err %v)", p.Namespace, p.Name, err)
		},
	}
	// The bed's nodes are shared: uncordoned when the test ends, whatever happened, and the
	// next test finds them so.
	env.Bed.RestoreNodesOnCleanup(t)
	for _, node := range nodes {
		n, err := env.Client().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := drain.RunCordonOrUncordon(h, n, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes {
		start := time.Now()
		for {
			err := drain.RunNodeDrain(h, node)
			if err == nil {
				break
			}
			if again == nil || !again(err) || ctx.Err() != nil {
				t.Fatalf("drain %s: %v", node, err)
			}
			t.Logf("drain %s: %v: draining it again", node, err)
		}
		t.Logf("drain of %s done in %v", node, time.Since(start).Round(10*time.Millisecond))
	}
}

// tlog writes the drain helper's output to the test log.
type tlog struct{ t *testing.T }

func (w tlog) Write(p []byte) (int, error) {
	w.t.Logf("drain: %s", p)
	return len(p), nil
}

// TestPrepareDrainThenDrain lays out a compliant cluster (one master per node but n6) with the
// writer at 250 writes/s: `prepare-drain n1 --dry-run` plans the fewest failovers (room in zone-b
// first, then n1's master) and changes nothing; the live form makes them, leaves no master on n1
// and says the drain is safe; then `kubectl drain n1` (its library, EvictErrorRetryDelay 1 s)
// evicts n1's pods, every one a replica as it stops, with 0 failed and 0 lost writes, and
// MasterQuorum holding afterwards. It cordons a node of the shared bed, so it runs alone.
func TestPrepareDrainThenDrain(t *testing.T) {
	f := newFaultEnv(t, scenario.Rebalanced(), harness.Options{}, true)
	ns := f.Namespace + "/"
	wantHandOff := []string{ns + "redis-s1-0 → " + ns + "redis-s1-1", ns + "redis-s0-0 → " + ns + "redis-s0-1"}

	dry, code := drainReport(t, f.Env, "n1", "--dry-run")
	if code != app.ExitOK || !dry.Safe || !dry.DryRun || len(dry.Clusters) != 1 {
		t.Fatalf("prepare-drain n1 --dry-run: exit %d, safe %v, dry run %v, %d clusters; want 0, safe, one cluster", code, dry.Safe, dry.DryRun, len(dry.Clusters))
	}
	if got := failoverPairs(dry.Clusters[0]); !equalStrings(got, wantHandOff) {
		t.Errorf("dry run's hand-off %v, want %v", got, wantHandOff)
	}
	if byNode, _ := masterPlaces(t, f); len(byNode["n1"]) != 1 {
		t.Fatalf("after the dry run n1 holds masters %v, want its one master still there", byNode["n1"])
	}

	phase := startPhase(f.writer)
	live, code := drainReport(t, f.Env, "n1")
	if code != app.ExitOK || !live.Safe || live.DryRun || live.Run == nil {
		t.Fatalf("prepare-drain n1: exit %d, safe %v, dry run %v; want 0 and safe: %+v", code, live.Safe, live.DryRun, live.Clusters)
	}
	cr := onlyCluster(t, *live.Run)
	var made []string
	for _, m := range cr.Moves {
		if m.Failover == nil || m.Evicted {
			t.Errorf("move %+v: want a failover step, nothing evicted", m)
			continue
		}
		made = append(made, ns+m.Failover.OldMaster+" → "+ns+m.Failover.NewMaster)
	}
	if !equalStrings(made, wantHandOff) {
		t.Errorf("failovers made %v, want %v", made, wantHandOff)
	}
	byNode, byZone := masterPlaces(t, f)
	t.Logf("after prepare-drain (writer %.0f writes/s): masters by node %v, by zone %v", phase.rate(f.writer), byNode, byZone)
	if len(byNode["n1"]) != 0 {
		t.Fatalf("n1 still holds masters %v after prepare-drain", byNode["n1"])
	}
	for _, p := range live.Clusters[0].Pods {
		if p.Role != "replica" {
			t.Errorf("prepare-drain reports %s on n1 as %q, want replica", p.Pod, p.Role)
		}
	}

	phase = startPhase(f.writer)
	kubectlDrain(t, f.Env, "n1", f.Namespace, time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if _, err := f.WaitHealthy(ctx, 2*time.Minute); err != nil {
		t.Fatalf("cluster not healthy after the drain: %v", err)
	}
	t.Logf("drain phase: writer %.0f writes/s", phase.rate(f.writer))
	byNode, byZone = masterPlaces(t, f)
	t.Logf("after the drain: masters by node %v, by zone %v", byNode, byZone)
	if node, n := most(byNode); n > 2 {
		t.Errorf("node %s holds %d of the 5 masters after the drain: MasterQuorum broken", node, n)
	}
	if zone, n := most(byZone); n > 2 {
		t.Errorf("zone %s holds %d of the 5 masters after the drain: MasterQuorum broken", zone, n)
	}
	stops := f.Stops()
	if len(stops) != 2 {
		t.Errorf("%d pods stopped (%+v), want n1's 2", len(stops), stops)
	}
	stats := f.finish(t) // every pod stopped a replica, no acknowledged write lost
	if stats.Failed != 0 {
		t.Errorf("%d writes failed during prepare-drain and the drain, want 0: %v", stats.Failed, stats.Failures)
	}
}

// equalStrings reports whether a and b hold the same strings in the same order.
func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
