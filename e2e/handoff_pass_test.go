package e2e

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestPassLeavesTheHandOffAlone: serve's passes and its hand-off act in one process, and a
// drain's hand-off takes several failovers whose intermediate states may break a rule. The soak
// found a pass (started off the schedule by the broken MasterQuorum) planning from such a state
// and undoing the hand-off's first failover, then the hand-off's next failover breaking
// MasterQuorum again and another pass failing that one back: four failovers for two, two of a
// shard. Here n1 holds 2 of the 5 masters (TwoMastersOnN1): handing them off for `kubectl drain
// n1` takes 3 failovers, the first making room in zone-b by putting s3's master on n2, which
// leaves zone-a 3 of the 5 masters (n1's two still count) until the next; serve passes every
// second. The hand-off waits failover.drainQuiet (5 s here, 1 s by default) for the old master's
// clients after each failover, so that the state between its first and second failover lasts
// several passes even on a loaded machine (with 1 s, a make test run under two soaks' load saw no
// pass there). Every failover during the drain is the hand-off's (RedisHandOff), none a pass's
// (RedisFailover); the passes that found the cluster mid-hand-off said they left it to the
// hand-off (at least one did: the race was run); the drain evicts replicas only, no write fails
// or is lost, MasterQuorum holds after. It drains a node of the shared bed, so it runs alone.
func TestPassLeavesTheHandOffAlone(t *testing.T) {
	f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{}, true)
	g := startGuardWith(t, f, 1, admissionregistrationv1.Ignore, "failover: {drainQuiet: 5s}\n", "--schedule", "@every 1s")
	lead := g.leader(time.Minute)
	start := time.Now()
	kubectlDrain(t, f.Env, "n1", f.Namespace, time.Second)
	end := time.Now()
	assertLogged(t, lead, `"msg":"Handed off"`, 3)

	evs, err := f.Client().EventsV1().Events(f.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var handOffs, passFailovers []string
	for _, e := range evs.Items {
		at := e.EventTime.Time
		if e.ReportingController != execute.EventSource || at.Before(start.Add(-time.Second)) || at.After(end) {
			continue
		}
		switch e.Reason {
		case execute.ReasonHandOff:
			handOffs = append(handOffs, e.Regarding.Name)
		case execute.ReasonFailover:
			passFailovers = append(passFailovers, e.Regarding.Name+": "+e.Note)
		}
	}
	t.Logf("during the drain: hand-offs %v, a pass's failovers %v", handOffs, passFailovers)
	if len(passFailovers) != 0 {
		t.Errorf("a pass failed masters over during the drain's hand-off: %v", passFailovers)
	}
	if len(handOffs) != 3 {
		t.Errorf("%d hand-offs during the drain (%v), want 3", len(handOffs), handOffs)
	}
	if n := strings.Count(lead.stderr(), "left to the hand-off: failing "); n == 0 {
		t.Errorf("no pass found the cluster mid-hand-off (a pass every second): the race this test is about was not run")
	} else {
		t.Logf("%d progress lines of passes that left the cluster to the hand-off", n)
	}
	assertDrained(t, f, []string{"n1"}, 2)
}
