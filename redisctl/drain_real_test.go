package redisctl_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
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
		defer keepWriting(t, app, addr)()
		busy, err := c.Client.WaitClientsDrained(ctx, addr, quiet, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(busy) != 1 || busy[0].Cmd != "set" {
			t.Errorf("busy = %+v, want the writing client, its last command set", busy)
		}
	})

	t.Run("the node stops answering after a whole round → that round's busy clients, not the read the deadline cut short", func(t *testing.T) {
		// The drain's timeout (2 s) is shorter than the read timeout (3 s): a read that hangs
		// from the stop on ends at the deadline, which says nothing about the clients.
		stopWriting := keepWriting(t, app, addr)
		srv := c.Pod(addr).Server()
		calls := func() int { return clientListCalls(t, c.Client, addr) }
		before := calls()
		type drained struct {
			busy []redisctl.ClientConn
			err  error
		}
		done := make(chan drained, 1)
		go func() {
			busy, err := c.Client.WaitClientsDrained(ctx, addr, quiet, 2*time.Second)
			done <- drained{busy, err}
		}()
		// Stop the server once the drain has read CLIENT LIST once (INFO's count of it).
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return calls() > before, nil
		})
		if err != nil {
			t.Fatalf("the drain never read CLIENT LIST: %v", err)
		}
		if err := syscall.Kill(srv.Pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if err := syscall.Kill(srv.Pid(), syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		stopWriting()
		if got.err != nil {
			t.Fatalf("WaitClientsDrained error %v; want the last whole round's busy clients", got.err)
		}
		if len(got.busy) != 1 || got.busy[0].Cmd != "set" {
			t.Errorf("busy = %+v, want the writing client from the round before the stop", got.busy)
		}
	})

	t.Run("a node that never answers → an error naming it", func(t *testing.T) {
		h := redistest.StartHanging(t, []string{"127.0.0.1"})
		hung := net.JoinHostPort("127.0.0.1", strconv.Itoa(h.Port))
		busy, err := c.Client.WaitClientsDrained(ctx, hung, quiet, time.Second)
		if err == nil || !strings.Contains(err.Error(), "client list "+hung) {
			t.Errorf("WaitClientsDrained = %+v, %v; want an error naming %s", busy, err, hung)
		}
	})
}

// keepWriting makes app SET a key on addr every 50 ms until the function it returns is called
// (which waits for the writer to end).
func keepWriting(t *testing.T, app *redisctl.Client, addr string) (stop func()) {
	t.Helper()
	mustDo(t, app, addr, "SET", "drain:busy", "first")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = app.Do(ctx, addr, "SET", "drain:busy", i)
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// clientListCalls returns how many CLIENT LIST commands the node at addr has run (INFO
// commandstats, cmdstat_client|list).
func clientListCalls(t *testing.T, c *redisctl.Client, addr string) int {
	t.Helper()
	reply, err := c.Do(t.Context(), addr, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := reply.(string)
	for _, line := range strings.Split(s, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_client|list:calls="); ok {
			n, _, _ := strings.Cut(rest, ",")
			calls, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("INFO commandstats: %q: %v", line, err)
			}
			return calls
		}
	}
	return 0
}
