package handoff

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// busyProbe is the fake executor, asking the controller whether it is busy as each hand-off runs.
type busyProbe struct {
	*fakeRoles
	c    *Controller
	seen []string // Busy's answer during each hand-off ("" when not busy)
}

func (b *busyProbe) HandOff(ctx context.Context, c *policies.Cluster, mv plan.Move, why string) (report.MoveResult, *policies.Cluster, error) {
	busy, ok := b.c.Busy(c.Key())
	if !ok {
		busy = ""
	}
	b.mu.Lock()
	b.seen = append(b.seen, busy)
	b.mu.Unlock()
	return b.fakeRoles.HandOff(ctx, c, mv, why)
}

// TestBusyWhileHandingOff: from the first of a drain's hand-offs to the scan that finds nothing
// more to hand off, Busy says the cluster is the hand-off's (serve's passes leave it alone, so
// that none undoes a failover of the sequence from the states between them); then it is not.
func TestBusyWhileHandingOff(t *testing.T) {
	c, f, _, _ := handOffBed(t, scenario.RoleOnly(), fixture.Cordoned())
	probe := &busyProbe{fakeRoles: f, c: c}
	c.cfg.Executor = probe
	if why, busy := c.Busy("redis/redis"); busy {
		t.Fatalf("busy before any hand-off: %s", why)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, busy := c.Busy("redis/redis")
		return len(f.handOffs()) == 5 && !busy, nil
	})
	if err != nil {
		t.Fatalf("after %d hand-offs, still busy or not done: %v", len(f.handOffs()), err)
	}
	probe.mu.Lock()
	defer probe.mu.Unlock()
	if len(probe.seen) != 5 {
		t.Fatalf("%d hand-offs probed, want 5", len(probe.seen))
	}
	for i, why := range probe.seen {
		if !strings.HasPrefix(why, "failing redis/redis-s") {
			t.Errorf("hand-off %d: Busy said %q, want the failover it makes", i+1, why)
		}
	}
}
