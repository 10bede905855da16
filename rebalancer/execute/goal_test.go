package execute

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestHandOffGoal covers prepare-drain's goal: the hand-off of a drain carried out as failover
// steps, re-planned after each, no pod evicted; a cluster with nothing on the nodes is done at
// once.
func TestHandOffGoal(t *testing.T) {
	t.Run("rebalanced, drain n1 → s1 off n3 first (room), then s0 off n1; no eviction; done", func(t *testing.T) {
		tb := newTestbed(t, scenario.Rebalanced())
		rep, err := runExecutor(t, tb, func(cfg *Config) { cfg.Goal = HandOff{Nodes: []string{"n1"}} })
		if err != nil {
			t.Fatal(err)
		}
		cr := rep.Clusters[0]
		var got []string
		for _, m := range cr.Moves {
			if diff := cmp.Diff(failoverStepNames, stepNames(m)); diff != "" || m.Kind != plan.KindFailover {
				t.Errorf("move %s: kind %s, steps (-want +got):\n%s", m.Pod, m.Kind, diff)
			}
			got = append(got, m.Failover.OldMaster+" → "+m.Failover.NewMaster)
		}
		if diff := cmp.Diff([]string{"redis-s1-0 → redis-s1-1", "redis-s0-0 → redis-s0-1"}, got); diff != "" {
			t.Errorf("failovers (-want +got):\n%s", diff)
		}
		if fo := tb.redis.called("failover"); !cmp.Equal(fo, []string{"failover 10.0.1.1:6379", "failover 10.0.0.1:6379"}) || len(tb.evicted()) != 0 {
			t.Errorf("failovers %v, evicted %v; want CLUSTER FAILOVER on redis-s1-1 then redis-s0-1, no eviction", fo, tb.evicted())
		}
		if cr.StoppedBy != "" || !cr.Compliant {
			t.Errorf("stopped %q by %q, compliant %v; want done and compliant", cr.Stopped, cr.StoppedBy, cr.Compliant)
		}
		if !strings.Contains(tb.out.String(), "move 2 (plan: 0 evictions, 1 failover, minimal): fail redis/redis-s0-0 (n1) over to redis/redis-s0-1 (n3): no pod moves — master on n1, which the drain empties") {
			t.Error("the progress does not say the second move hands n1's master off")
		}
	})
	t.Run("rebalanced, drain n6 (a replica only) → done at once, no move", func(t *testing.T) {
		tb := newTestbed(t, scenario.Rebalanced())
		rep, err := runExecutor(t, tb, func(cfg *Config) { cfg.Goal = HandOff{Nodes: []string{"n6"}} })
		if err != nil {
			t.Fatal(err)
		}
		if cr := rep.Clusters[0]; len(cr.Moves) != 0 || cr.StoppedBy != "" || len(tb.redis.called("failover")) != 0 {
			t.Errorf("moves %+v, stopped by %q, failovers %v; want none", cr.Moves, cr.StoppedBy, tb.redis.called("failover"))
		}
	})
}
