package execute

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// observedCluster returns the test bed's only Redis cluster, its roles read from the fake Redis.
func observedCluster(t *testing.T, tb *testbed) *policies.Cluster {
	t.Helper()
	m, err := observe.Live(context.Background(), tb.client, policies.Options{}, observe.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	if _, err := observe.ApplyRedis(context.Background(), tb.redis, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// memberIndex returns the index of pod name in c.Members.
func memberIndex(t *testing.T, c *policies.Cluster, name string) int {
	t.Helper()
	for i, m := range c.Members {
		if m.Pod.Name == name {
			return i
		}
	}
	t.Fatalf("no member %s", name)
	return -1
}

func TestHandOff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
	}{
		{name: "no window configured → the failover step's steps, the named replica promoted, a RedisHandOff Event, nothing evicted"},
		{
			name: "every window closed → the same: a hand-off answers a disruption another tool makes now",
			change: func(c *Config) {
				c.Window = window.Config{Windows: []window.Window{{Schedule: "0 3 * * *", Duration: time.Hour}}}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestbed(t, scenario.RoleOnly())
			rec := events.NewFakeRecorder(10)
			cfg := tb.config()
			cfg.Recorder = rec
			if tc.change != nil {
				tc.change(&cfg)
			}
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := observedCluster(t, tb)
			from, to := memberIndex(t, c, "redis-s2-0"), memberIndex(t, c, "redis-s2-1")
			mv := plan.Move{Kind: plan.KindFailover, Member: from, Pod: "redis/redis-s2-0", Node: "n1", Failover: true, From: "redis/redis-s2-0", To: "redis/redis-s2-1", FailoverTo: to}
			mr, after, err := e.HandOff(context.Background(), c, mv, "node n1 is being emptied (cordoned)")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(failoverStepNames, stepNames(mr)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if !strings.Contains(mr.Steps[0].Reason, "maintenance windows do not apply") {
				t.Errorf("window step %q, want it to say windows do not apply", mr.Steps[0].Reason)
			}
			if got := tb.redis.called("failover"); !cmp.Equal(got, []string{"failover 10.0.2.1:6379"}) || len(tb.evicted()) != 0 || after == nil {
				t.Errorf("failovers %v, evicted %v, after %v; want one failover on redis-s2-1, nothing evicted, the cluster re-observed", got, tb.evicted(), after)
			}
			var handOffs int
			for len(rec.Events) > 0 {
				ev := <-rec.Events
				if strings.HasPrefix(ev, "Normal "+ReasonHandOff+" master redis-s2-0 failed over to its in-sync replica redis-s2-1") && strings.Contains(ev, "node n1 is being emptied") {
					handOffs++
				}
			}
			if handOffs != 1 {
				t.Errorf("%d RedisHandOff Events naming the master, the replica and why, want 1", handOffs)
			}
		})
	}
	t.Run("an eviction move → refused: a hand-off never evicts", func(t *testing.T) {
		tb := newTestbed(t, scenario.RoleOnly())
		e, err := New(tb.config())
		if err != nil {
			t.Fatal(err)
		}
		c := observedCluster(t, tb)
		if _, _, err := e.HandOff(context.Background(), c, plan.Move{Kind: plan.KindEvict}, "x"); err == nil || len(tb.evicted()) != 0 {
			t.Errorf("error %v, evicted %v; want an error and nothing evicted", err, tb.evicted())
		}
	})
}

// TestMoveThroughTheGuard runs post-scale-down's move of a master with the eviction guard
// answering: its dry run of the master's eviction is the guard's 429, which the move takes as
// "the failover comes next"; the eviction after the failover passes.
func TestMoveThroughTheGuard(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	masters := map[string]bool{"redis-s3-0": true}
	tb.onEviction = func(ev *policyv1.Eviction, dryRun bool) (bool, error) {
		if dryRun && masters[ev.Name] {
			return true, apierrors.NewTooManyRequests(`admission webhook "guard.rebalancer.redis.io" denied the request: `+guard.MessagePrefix+string(guard.ReasonMaster)+": pod redis/"+ev.Name+" is the Redis master of shard s3", 0)
		}
		return false, nil
	}
	rep, err := runExecutor(t, tb, func(c *Config) { c.MaxMoves = 1 })
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Clusters[0].Moves[0]
	if diff := cmp.Diff(stepsUpTo(report.StepReobserve, report.OutcomeContinue), stepNames(m)); diff != "" {
		t.Fatalf("steps (-want +got):\n%s", diff)
	}
	if !strings.Contains(m.Steps[3].Reason, "the eviction guard holds redis-s3-0's eviction while it is a master") || !m.Evicted || m.RoleAtEviction != policies.RoleReplica {
		t.Errorf("move %+v; want the dry run to name the guard, then the replica evicted", m)
	}
}
