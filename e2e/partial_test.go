package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestPartialWhenZoneFull: Redis availability never waits for placement compliance. The Bitnami
// chart as installed (its default requests: ephemeral-storage 50Mi; its default persistence: a
// zonal PersistentVolume per pod), with a writer at 250 writes/s, after a scale-down left n1
// holding four masters (MaxPodsPerNode, the hostname spread constraint and MasterQuorum on n1
// and zone-a broken) while n2, zone-a's only other node, has no ephemeral-storage room left (a
// filler pod takes it): every pod of n1 is held there (its volume keeps it in zone-a, n2 has no
// room), so no plan exists. `run` still fails masters over until MasterQuorum holds, evicts
// nothing, and ends `partial` (exit 3) naming what holds the pods (Insufficient
// ephemeral-storage on n2, the zonal PersistentVolumes, and the fixes: room, and
// --release-replica-claims). Then a node is added to zone-a, and the next run completes the
// placement (an eviction to the new node, compliant, exit 0). The writer sees no failed and no
// lost write. It adds a node to the shared bed and fills another, so it does not call
// t.Parallel; the node goes when the test ends.
func TestPartialWhenZoneFull(t *testing.T) {
	sc := scenario.BitnamiZonalPostScaleDown()
	sc.Name = "bitnami-zonal-zone-full"
	// Shard i: master, replica. Zone-a holds only n1's four masters (4 of 10 pods: MaxPodsPerZone
	// holds), shard 4's master is in zone-b.
	sc = sc.Placed([][]string{{"n1", "n3"}, {"n1", "n4"}, {"n1", "n5"}, {"n1", "n6"}, {"n3", "n5"}})
	f := newFaultEnv(t, sc, harness.Options{Templates: chartRequests}, true)
	fillNode(t, f.Env, "n2")

	run := startCLI(t, nil, runArgs(f.Env, "--layout", "bitnami")...)
	code := run.wait(5 * time.Minute)
	assertExit(t, code, app.ExitViolations, run)
	rep := run.report()
	cr := onlyCluster(t, rep)
	if rep.Outcome != report.OutcomePartial || cr.Outcome != report.OutcomePartial || cr.StoppedBy != report.StoppedNoPlan {
		t.Fatalf("outcome %s (cluster %s, stopped by %s: %s), want partial, stopped by noPlan", rep.Outcome, cr.Outcome, cr.StoppedBy, cr.Stopped)
	}
	if cr.Partial == nil || !cr.Partial.QuorumHolds || cr.Partial.Failovers == 0 {
		t.Fatalf("partial %+v: want failovers made and MasterQuorum holding", cr.Partial)
	}
	for _, m := range cr.Moves {
		if m.Kind != plan.KindFailover || m.Evicted {
			t.Errorf("move %+v: want failover steps only, nothing evicted", m)
		}
	}
	if len(cr.Moves) != cr.Partial.Failovers {
		t.Errorf("%d moves, %d failovers counted", len(cr.Moves), cr.Partial.Failovers)
	}
	for _, v := range cr.After {
		if v.Rule == "MasterQuorum" {
			t.Errorf("after the run: %s", v.Message)
		}
	}
	var held []string
	for _, h := range cr.Partial.Held {
		held = append(held, h.Pod+": "+h.Why+" → "+strings.Join(h.Fix, "; "))
	}
	all := strings.Join(held, "\n")
	for _, want := range []string{"Insufficient ephemeral-storage [n2]", "didn't match PersistentVolume's node affinity", "--release-replica-claims", "room on n2 (ephemeral-storage)"} {
		if !strings.Contains(all, want) {
			t.Errorf("held pods lack %q:\n%s", want, all)
		}
	}
	if out := run.stdout.String() + run.stderr(); !strings.Contains(out, "partial: Redis made safer") {
		t.Errorf("the run's text says nothing of the partial outcome:\n%s", out)
	}
	t.Logf("first run: %d failovers, held:\n%s", cr.Partial.Failovers, all)

	// Room in zone-a: the next run completes the placement.
	ctx := t.Context()
	f.Bed.RestoreNodesOnCleanup(t) // n7 goes when the test ends
	if _, err := f.Env.Cluster.AddNode(ctx, localcluster.NodeSpec{Name: "n7", Zone: "zone-a"}); err != nil {
		t.Fatal(err)
	}
	run = startCLI(t, nil, runArgs(f.Env, "--layout", "bitnami")...)
	code = run.wait(5 * time.Minute)
	assertExit(t, code, app.ExitOK, run)
	cr = onlyCluster(t, run.report())
	moved := false
	for _, m := range cr.Moves {
		if m.Evicted {
			moved = true
			t.Logf("moved: %s %s → %s", m.Pod, m.From, m.To)
			if m.To != "n7" {
				t.Errorf("move of %s landed on %s, want n7 (zone-a's new node: its volume keeps it in zone-a)", m.Pod, m.To)
			}
		}
	}
	if !cr.Compliant || !moved || cr.Outcome != report.OutcomeCompliant {
		t.Errorf("second run: compliant %v, outcome %s, moved %v; want compliant after an eviction to n7", cr.Compliant, cr.Outcome, moved)
	}
	stats := f.finish(t)
	if stats.Failed > 0 {
		t.Errorf("%d writes failed: %v", stats.Failed, stats.Failures)
	}
}
