package redisctl_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl/redistest"
)

// TestWaitClientsDrained runs the drain against a real redis-server, with a second client as the
// application. CLIENT LIST's idle counts whole seconds of Redis's clock, so idle 1 can follow a
// command by a millisecond; the drain must still never call a connection quiet early.
func TestWaitClientsDrained(t *testing.T) {
	const quiet = time.Second
	c := redistest.Start(t, redistest.Config{Shards: 1, PodsPerShard: 1})
	addr := c.Addrs()[0]
	app, err := redisctl.New(c.Options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	ctx := t.Context()

	t.Run("a client that stops → drained only after quiet has passed since its last command", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			mustDo(t, app, addr, "SET", "drain:stops", i)
		}
		// The last command 0.85–0.95 s into a second of the clock: a rule that trusts idle ≥ 1
		// would call the client quiet about 0.1 s later, when the second turns.
		err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
			ns := time.Now().Nanosecond()
			return ns >= 850e6 && ns < 950e6, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, app, addr, "SET", "drain:stops", "last")
		last := time.Now()
		busy, err := c.Client.WaitClientsDrained(ctx, addr, quiet, 10*time.Second)
		took := time.Since(last)
		if err != nil || len(busy) != 0 {
			t.Fatalf("WaitClientsDrained = %+v, %v; want drained", busy, err)
		}
		if took < quiet {
			t.Errorf("drained %s after the client's last command, want ≥ %s", took.Round(time.Millisecond), quiet)
		}
		t.Logf("drained %s after the last command (quiet %s)", took.Round(time.Millisecond), quiet)
	})

	t.Run("a client that keeps writing every 50ms → still busy at the timeout, named", func(t *testing.T) {
		mustDo(t, app, addr, "SET", "drain:busy", "first")
		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-wctx.Done():
					return
				case <-tick.C:
					_, _ = app.Do(wctx, addr, "SET", "drain:busy", i)
				}
			}
		}()
		defer func() { stop(); wg.Wait() }()
		busy, err := c.Client.WaitClientsDrained(ctx, addr, quiet, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(busy) != 1 || busy[0].Cmd != "set" {
			t.Errorf("busy = %+v, want the writing client, its last command set", busy)
		}
	})
}
