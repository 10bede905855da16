package e2e

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// MasterQuorum end to end: Redis promotes a replica only when a majority of the masters
// serving slots vote, so a node or zone holding half of the masters or more takes the whole
// cluster down when it is lost. The tests stop every redis-server of a node or zone (SIGSTOP: a
// lost node that keeps its data) with a writer running, and watch whether the survivors heal by
// themselves.

// nodeTimeout is the test bed's cluster-node-timeout (test/redisserver's default).
const nodeTimeout = 2 * time.Second

// healWindow is how long a lost node or zone may take to heal: 10 × cluster-node-timeout. Redis
// heals in 2–3 × cluster-node-timeout on a quiet machine (failure detection, then the replica's
// election); a make test run beside two soaks once took longer than 4 ×, the window before: the
// window bounds the test's wait, the heal time is logged, not asserted.
const healWindow = 10 * nodeTimeout

// downWindow is how long a test watches a cluster that is not expected to heal: longer than
// healWindow, so that "down" means what "healed" would not have allowed.
const downWindow = 15 * nodeTimeout

// probeTimeout bounds each survivor's answer in loseNodes' watch: its own, so that one slow
// answer on a loaded machine does not fail the others' in the same round.
const probeTimeout = 2 * time.Second

// lossOutcome is what the survivors of a lost node or zone did.
type lossOutcome struct {
	// healed: every survivor reported cluster_state:ok and saw every slot served by a master
	// that is not lost, within the window; took is when that was first seen, from the loss.
	healed bool
	took   time.Duration
	// failSeen: some survivor reported cluster_state:fail at some point; last is the survivors'
	// states when the watch ended.
	failSeen bool
	last     string
	// masters is the number of masters lost with the servers.
	masters int
}

// masterPlaces returns, for the environment's Redis Cluster now, the masters serving slots by
// node and by zone (pod names), read from Redis and the pods.
func masterPlaces(t *testing.T, f *faultEnv) (byNode, byZone map[string][]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	topo, err := f.Redis.Topology(ctx, f.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	pods, err := f.Client().CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: f.Scenario.Selector()})
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string]string{}
	for _, z := range f.Scenario.Zones {
		for _, n := range z.Nodes {
			zoneOf[n] = z.Name
		}
	}
	byNode, byZone = map[string][]string{}, map[string][]string{}
	for _, p := range pods.Items {
		n, ok := topo.NodeByIP(p.Status.PodIP)
		if p.Status.PodIP == "" || !ok || !n.IsMaster() || len(n.Slots) == 0 {
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p.Name)
		byZone[zoneOf[p.Spec.NodeName]] = append(byZone[zoneOf[p.Spec.NodeName]], p.Name)
	}
	return byNode, byZone
}

// most returns the key holding the most values (the first by name on a tie) and their number.
func most(m map[string][]string) (string, int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	best := ""
	for _, k := range keys {
		if best == "" || len(m[k]) > len(m[best]) {
			best = k
		}
	}
	return best, len(m[best])
}

// loseNodes stops (SIGSTOP) every redis-server of the environment's pods on nodes and watches the
// survivors for window: every 100 ms each reports its cluster_state and its view of who serves
// the slots. Then it resumes the servers and waits until the cluster is healthy again.
func loseNodes(t *testing.T, f *faultEnv, nodes []string, masters int, window time.Duration) lossOutcome {
	t.Helper()
	ctx := t.Context()
	slots, err := f.ServedSlots(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	loss := harness.Loss{Nodes: nodes, Slots: slots, Paused: time.Now()}
	var servers []redisrt.ServerInfo
	// Registered before the first pause, so that a failed PauseNode (t.Fatal) resumes too.
	defer func() {
		loss.Resumed = time.Now()
		if err := f.ResumeNode(servers); err != nil {
			t.Error(err)
		}
		if _, err := f.WaitHealthy(ctx, 2*time.Minute); err != nil {
			t.Errorf("cluster not healthy after the servers of %v came back: %v", nodes, err)
		}
		loss.Settled = time.Now()
		f.losses = append(f.losses, loss)
	}()
	for _, n := range nodes {
		ss, err := f.PauseNode(ctx, n)
		servers = append(servers, ss...)
		if err != nil {
			t.Fatal(err)
		}
	}
	loss.PauseDone = time.Now()
	start := loss.PauseDone
	var paused []string // addresses
	for _, s := range servers {
		paused = append(paused, s.Addr)
	}
	var survivors []string
	for _, a := range f.Addrs() {
		if !slices.Contains(paused, a) {
			survivors = append(survivors, a)
		}
	}
	out := lossOutcome{masters: masters}
	t.Logf("lost %v: %d redis-servers stopped (%d masters), %d survive", nodes, len(paused), masters, len(survivors))
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, window, true, func(ctx context.Context) (bool, error) {
		ok, states := true, make([]string, 0, len(survivors))
		for _, a := range survivors {
			rctx, cancel := context.WithTimeout(ctx, probeTimeout)
			info, err := f.Redis.ClusterInfo(rctx, a)
			state := "?"
			if err == nil {
				state, _ = info.Get("cluster_state")
			}
			states = append(states, a+"="+state)
			if state == "fail" {
				out.failSeen = true
			}
			if state != "ok" || !servedBySurvivors(rctx, f.Redis, a, paused) {
				ok = false
			}
			cancel()
		}
		if ctx.Err() == nil { // a round the window's end cut short would say "?" for every survivor
			out.last = strings.Join(states, " ")
		}
		if ok && !out.healed {
			out.healed, out.took = true, time.Since(start)
		}
		return out.healed, nil
	})
	return out
}

// servedBySurvivors reports whether, in the view of the node at addr, every slot is served by a
// master that is reachable (not flagged failing) and not one of the lost addresses.
func servedBySurvivors(ctx context.Context, rc *redisctl.Client, addr string, lost []string) bool {
	nodes, err := rc.ClusterNodes(ctx, addr)
	if err != nil {
		return false
	}
	served := 0
	for _, n := range nodes {
		if !n.IsMaster() || n.IsFailing() || slices.Contains(lost, n.Addr()) {
			continue
		}
		for _, r := range n.Slots {
			served += r.Len()
		}
	}
	return served == redisctl.NumSlots
}

// runFix runs `redis-rebalancer run` on the environment and returns its report; it must exit 0.
func runFix(t *testing.T, f *faultEnv, extra ...string) report.ClusterRun {
	t.Helper()
	run := startCLI(t, nil, runArgs(f.Env, extra...)...)
	if code := run.wait(5 * time.Minute); code != app.ExitOK {
		t.Fatalf("redis-rebalancer run exited %d (%s), want %d", code, run.errorLine(), app.ExitOK)
	}
	return onlyCluster(t, run.report())
}

// countSteps returns a run's evictions and failover steps (plan.KindFailover, verified).
func countSteps(cr report.ClusterRun) (evictions, failoverSteps int) {
	for _, m := range cr.Moves {
		if m.Evicted {
			evictions++
		}
		if m.Kind == plan.KindFailover && m.Failover != nil {
			failoverSteps++
		}
	}
	return evictions, failoverSteps
}

// writerPhase measures the writer over one phase of a test.
type writerPhase struct {
	start time.Time
	acked int
}

func startPhase(w *harness.Writer) writerPhase {
	return writerPhase{time.Now(), w.Stats().Acked}
}

// rate returns the writes acknowledged per second since the phase started.
func (p writerPhase) rate(w *harness.Writer) float64 {
	return float64(w.Stats().Acked-p.acked) / time.Since(p.start).Seconds()
}

// TestMasterQuorumSurvivesLosses runs post-scale-down end to end (n1 holds 4 of the 5 masters,
// zone-a all 5): the run ends with every hard rule holding, MasterQuorum included, with 1
// eviction and at most 2 failover steps. Then the node holding the most masters is lost (every
// redis-server on it stopped): the survivors heal by themselves (within healWindow; the time is logged),
// no acknowledged write lost but those Redis Cluster may lose by design (faultEnv.drain). After it comes back (its masters now replicas elsewhere), a run
// moves the masters back with failovers only, and losing the zone holding the most masters heals
// the same way.
func TestMasterQuorumSurvivesLosses(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	phase := startPhase(f.writer)
	cr := runFix(t, f)
	runRate := phase.rate(f.writer)
	evictions, failovers := countSteps(cr)
	t.Logf("run: %d evictions, %d failover steps; writer %.0f writes/s during the run", evictions, failovers, runRate)
	if evictions != 1 || failovers > 2 {
		t.Errorf("the run made %d evictions and %d failover steps, want 1 eviction and at most 2 failover steps", evictions, failovers)
	}
	if runRate < 200 {
		t.Errorf("writer %.0f writes/s during the run, want ≥ 200", runRate)
	}
	assertCompliantAndHealthy(t, &result{env: f.Env, rc: f.Redis})

	byNode, byZone := masterPlaces(t, f)
	node, n := most(byNode)
	phase = startPhase(f.writer)
	lost := loseNodes(t, f, []string{node}, n, healWindow)
	t.Logf("node %s lost (%d of 5 masters %v): healed %v in %v (cluster_state fail seen %v; last %s); writer %.0f writes/s over the loss",
		node, n, byNode[node], lost.healed, lost.took.Round(10*time.Millisecond), lost.failSeen, lost.last, phase.rate(f.writer))
	if !lost.healed {
		t.Errorf("the cluster did not heal within %v of losing node %s (%d of 5 masters): %s", healWindow, node, n, lost.last)
	}

	// The lost node's masters are replicas now, their slots served elsewhere: a run moves the
	// masters back where MasterQuorum wants them, with failovers only.
	cr = runFix(t, f)
	evictions, failovers = countSteps(cr)
	t.Logf("run after the node loss: %d evictions, %d failover steps", evictions, failovers)
	if evictions != 0 {
		t.Errorf("the run after the node loss made %d evictions, want none (failovers only)", evictions)
	}
	assertCompliantAndHealthy(t, &result{env: f.Env, rc: f.Redis})

	byNode, byZone = masterPlaces(t, f)
	zone, nz := most(byZone)
	var nodes []string
	for _, z := range f.Scenario.Zones {
		if z.Name == zone {
			nodes = z.Nodes
		}
	}
	phase = startPhase(f.writer)
	lost = loseNodes(t, f, nodes, nz, healWindow)
	t.Logf("zone %s lost (%v: %d of 5 masters %v): healed %v in %v (cluster_state fail seen %v; last %s); writer %.0f writes/s over the loss",
		zone, nodes, nz, byZone[zone], lost.healed, lost.took.Round(10*time.Millisecond), lost.failSeen, lost.last, phase.rate(f.writer))
	if !lost.healed {
		t.Errorf("the cluster did not heal within %v of losing zone %s (%d of 5 masters): %s", healWindow, zone, nz, lost.last)
	}
	f.drain(t) // the cluster was down: failed writes are expected, lost ones are not
}

// TestMasterQuorumPreviousPlacementStaysDown is the control: the placement the run left before
// MasterQuorum (post-scale-down after its one eviction: every rule about pods holds, but n1 holds
// 3 of the 5 masters and zone-a 4) does not survive the same losses: the survivors report
// cluster_state:fail and no replica is promoted while the test watches (downWindow: 15 × cluster-node-timeout).
// Acknowledged writes are not lost either way.
func TestMasterQuorumPreviousPlacementStaysDown(t *testing.T) {
	// Shard 0's master was failed over to redis-s0-1 (n3), then redis-s0-0 evicted to n6.
	sc := scenario.PostScaleDown().Placed([][]string{
		{"n6", "n3"}, {"n1", "n3"}, {"n1", "n4"}, {"n1", "n4"}, {"n2", "n5"},
	})
	sc.Name = "previous-placement"
	f := newFaultEnv(t, sc, harness.Options{}, false)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	replica, ok := f.Runtime.Addr(f.Namespace, sc.PodName(0, 1))
	if !ok {
		t.Fatalf("no server for %s", sc.PodName(0, 1))
	}
	if _, err := f.Redis.Failover(ctx, replica, redisctl.FailoverOptions{AllAddrs: f.Addrs()}); err != nil {
		t.Fatal(err)
	}
	byNode, byZone := masterPlaces(t, f)
	if len(byNode["n1"]) != 3 || len(byZone["zone-a"]) != 4 {
		t.Fatalf("masters by node %v, by zone %v; want 3 on n1 and 4 in zone-a", byNode, byZone)
	}
	for _, loss := range []struct {
		what    string
		nodes   []string
		masters int
	}{{"node n1", []string{"n1"}, 3}, {"zone zone-a", []string{"n1", "n2"}, 4}} {
		phase := startPhase(f.writer)
		lost := loseNodes(t, f, loss.nodes, loss.masters, downWindow)
		t.Logf("%s lost (%d of 5 masters): healed %v (cluster_state fail seen %v; last %s); writer %.0f writes/s over the loss",
			loss.what, loss.masters, lost.healed, lost.failSeen, lost.last, phase.rate(f.writer))
		if lost.healed || !lost.failSeen {
			t.Errorf("%s lost with %d of 5 masters: healed %v after %v, cluster_state fail seen %v; want the cluster down for %v", loss.what, loss.masters, lost.healed, lost.took, lost.failSeen, downWindow)
		}
	}
	f.drain(t) // the cluster was down: failed writes are expected, lost ones are not
}

// TestRoleOnly runs the role-only case: the pods comply with every rule, but n1 and zone-a hold 3
// of the 5 masters. The run fixes it with failovers only: no eviction.
func TestRoleOnly(t *testing.T) {
	res := runRebalancer(t, scenario.RoleOnly(), nil)
	evictions, failovers := assertSafeAndCompliant(t, res)
	_, steps := countSteps(onlyCluster(t, res.report))
	if evictions != 0 || steps != 1 || failovers != 1 {
		t.Errorf("the run made %d evictions, %d failovers (%d failover steps); want no eviction and one failover step", evictions, failovers, steps)
	}
}

// TestPendingStepRun runs the Pending-step case (scenario.PendingStep) with --allow-pending-steps:
// N = 4 in two zones of three nodes (zone maxSkew 1), each shard's two pods in one zone. The first
// eviction's pod waits Pending (no node fits it: the run does not wait for it, and the health gate
// accepts exactly it, and its node gone from Redis); the second eviction frees its room and the
// scheduler places both. The run reports the exposure. The scenario's nodes differ from the shared
// test bed's: it gets a bed of its own.
func TestPendingStepRun(t *testing.T) {
	t.Parallel()
	f := watch(t, harness.SetupForTest(t, scenario.PendingStep(), harness.Options{RecordStops: true}))
	cr := runFix(t, f, "--allow-pending-steps")
	res := &result{env: f.Env, rc: f.Redis, report: report.Run{Clusters: []report.ClusterRun{cr}}}
	res.writer = f.finish(t)
	res.stops = f.Stops()
	evictions, failovers := assertSafeAndCompliant(t, res)
	if evictions != 2 || failovers != 0 || len(cr.Moves) != 2 {
		t.Fatalf("the run made %d evictions and %d failovers in %d moves; want 2 evictions of replicas", evictions, failovers, len(cr.Moves))
	}
	first := cr.Moves[0]
	if !first.WaitsPending || first.To != "" || !strings.Contains(first.Exposure, "waits Pending after this move") {
		t.Errorf("first move %+v: want its pod left Pending, with the exposure", first)
	}
	for _, s := range first.Steps {
		t.Logf("move 1 %s (%.2fs): %s", s.Name, s.Seconds, s.Reason)
	}
	if second := cr.Moves[1]; second.WaitsPending || second.To == "" {
		t.Errorf("second move %+v: want its pod placed", second)
	}
}
