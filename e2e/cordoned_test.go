package e2e

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestCordonedReplicaNotPromoted: nodes being emptied are never failover targets. Role-only: n1
// holds the masters of s0, s1 and s2 (MasterQuorum broken: 3 of 5), whose replicas run on n3, n5
// and n4; the planner's one failover would promote s2's replica on n4. With n4 cordoned (a drain
// has begun), `run` promotes another replica instead, and serve's hand-off, which fails over
// every master on a node being emptied, then finds none there: no second failover of the same
// shard (a double move). It cordons a node of the shared bed, so it runs alone.
func TestCordonedReplicaNotPromoted(t *testing.T) {
	sc := scenario.RoleOnly()
	f := newFaultEnv(t, sc, harness.Options{}, true)
	cordon(t, f.Env, "n4")
	before := rolesOf(t, f.Env)

	run := startCLI(t, nil, runArgs(f.Env)...)
	if exit := run.wait(3 * time.Minute); exit != app.ExitOK {
		t.Fatalf("run exited %d, want %d (compliant)", exit, app.ExitOK)
	}
	cr := onlyCluster(t, run.report())
	if !cr.Compliant || len(cr.Moves) != 1 || cr.Moves[0].Failover == nil {
		t.Fatalf("run: compliant %v, moves %+v; want one failover step and compliance", cr.Compliant, cr.Moves)
	}
	afterRun := rolesOf(t, f.Env)
	changed := changedRoles(before, afterRun)
	byNode, _ := masterPlaces(t, f)
	t.Logf("run: failover %s → %s; roles changed: %v; masters by node: %v", cr.Moves[0].Failover.OldMaster, cr.Moves[0].Failover.NewMaster, changed, byNode)
	if len(byNode["n4"]) != 0 {
		t.Errorf("cordoned n4 holds masters %v after run: a replica on a node being emptied was promoted", byNode["n4"])
	}
	if len(changed) != 2 {
		t.Errorf("roles changed by run: %v, want one failover (2 pods)", changed)
	}
	if n4 := sc.PodName(2, 1); afterRun[n4] != "slave" {
		t.Errorf("%s (on cordoned n4) is %q after run, want a replica", n4, afterRun[n4])
	}

	// serve's hand-off: its first look at the cluster (n4, cordoned, holds a pod of it) finds no
	// master to move.
	g := startGuard(t, f, 1, admissionregistrationv1.Ignore)
	lead := g.leader(time.Minute)
	lead.waitLine(`"msg":"Nothing to hand off: no master serving slots leaves"`, time.Minute)
	if strings.Contains(lead.stderr(), `"msg":"Handed off"`) {
		t.Errorf("serve's hand-off failed a master over after run's failover: a double move; its output:\n%s", lead.stderr())
	}
	if afterServe := rolesOf(t, f.Env); !equalRoles(afterRun, afterServe) {
		t.Errorf("roles changed after run: %v", changedRoles(afterRun, afterServe))
	}
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods stopped %+v: want none (one failover, no eviction)", stops)
	}
	f.finish(t)
}

// changedRoles returns the pods whose role differs between a and b: "pod: a → b".
func changedRoles(a, b map[string]string) []string {
	var out []string
	for pod, r := range a {
		if b[pod] != r {
			out = append(out, pod+": "+r+" → "+b[pod])
		}
	}
	return out
}
