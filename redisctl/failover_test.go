package redisctl_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/go-redis/redis/v8"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// failoverShard runs what the rebalancer does before evicting shard's master: the health gate
// (waiting for it), the choice of an in-sync replica, the verified failover. It checks the
// result against the roles Redis reports (ROLE) and returns it.
func failoverShard(ctx context.Context, t testing.TB, c *redistest.Cluster, shard int) *redisctl.FailoverResult {
	t.Helper()
	h, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second)
	if err != nil {
		t.Fatalf("health gate before failover: %v", err)
	}
	m := h.Topology.Masters()[shard]
	r, err := c.Client.ChooseReplica(ctx, h.Topology, m.ID, nil)
	if err != nil {
		t.Fatalf("ChooseReplica: %v", err)
	}
	res, err := c.Client.Failover(ctx, r.Addr(), redisctl.FailoverOptions{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Failover: %v", err)
	}
	type roles struct{ NewMaster, OldMaster, Slots string }
	want := roles{NewMaster: r.ID, OldMaster: m.ID, Slots: fmt.Sprint(m.Slots)}
	got := roles{NewMaster: res.NewMasterID, OldMaster: res.OldMasterID, Slots: fmt.Sprint(res.Slots)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("FailoverResult (-want +got):\n%s", diff)
	}
	for addr, role := range map[string]string{r.Addr(): "master", m.Addr(): "slave"} {
		v, err := c.Client.Do(ctx, addr, "role")
		if err != nil {
			t.Fatal(err)
		}
		if got := v.([]interface{})[0]; got != role {
			t.Fatalf("ROLE of %s = %v right after the verified failover, want %s", addr, got, role)
		}
	}
	return res
}

func waitAcked(ctx context.Context, t testing.TB, w *redistest.Writer, atLeast int64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return w.Stats().Acked >= atLeast, nil
	})
	if err != nil {
		t.Fatalf("writer stuck at %+v: %v", w.Stats(), err)
	}
}

func durationStats(ds []time.Duration) (median, max time.Duration) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	if len(s) == 0 {
		return 0, 0
	}
	if len(s)%2 == 1 {
		median = s[len(s)/2]
	} else {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return median, s[len(s)-1]
}

// failovers is how many failovers TestFailoverUnderWriteLoad makes: a few by default; more to
// measure, on a loaded machine (hack/cpuhog, as make test-stress does):
//
//	go build -o bin/cpuhog ./hack/cpuhog
//	bin/cpuhog -- go test ./redisctl -run TestFailoverUnderWriteLoad -count=1 -v -failovers 120
var failovers = flag.Int("failovers", 5, "failovers TestFailoverUnderWriteLoad makes")

// remind, false, turns off Failover's MEET of a node left serving none of the shard's slots in
// TestFailoverUnderWriteLoad, to measure what it spares the writers (-remind=false).
var remind = flag.Bool("remind", true, "let Failover make the new master MEET a node that serves none of the shard's slots")

// loadRun is what runFailoversUnderLoad saw.
type loadRun struct {
	// Durations are the failovers' (CLUSTER FAILOVER sent → every node shows the new master).
	Durations []time.Duration
	// Defaults and Retrying are the writers' figures: a client with go-redis's default retries
	// (MaxRedirects 3) and one with redisctl.FailoverRetryRedirects.
	Defaults, Retrying redistest.WriterStats
	// Unbound counts the failovers in which a node served none of the shard's slots for a
	// while (FailoverResult.Unbound).
	Unbound int
}

// runFailoversUnderLoad fails over n masters in turn (shard i mod K) while two writers write
// through cluster clients, one with go-redis's default retries and one with
// redisctl.FailoverRetryRedirects, then checks that neither lost an acknowledged write.
func runFailoversUnderLoad(t testing.TB, c *redistest.Cluster, n int) loadRun {
	ctx := context.Background()
	retrying, err := redisctl.NewClusterClient(c.Options, c.Addrs(), func(o *redis.ClusterOptions) {
		o.MaxRedirects = redisctl.FailoverRetryRedirects
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = retrying.Close() })
	wd := redistest.StartWriter(c.ClusterClient(), "defaults", 1)
	defer wd.Stop()
	wr := redistest.StartWriter(retrying, "retrying", 1)
	defer wr.Stop()
	waitAcked(ctx, t, wd, 500)
	waitAcked(ctx, t, wr, 500)
	var run loadRun
	for i := 0; i < n; i++ {
		before := []int64{wd.Stats().Acked, wr.Stats().Acked}
		res := failoverShard(ctx, t, c, i%len(c.Shards))
		run.Durations = append(run.Durations, res.Duration)
		if len(res.Unbound) > 0 {
			run.Unbound++
			t.Logf("failover %d (%s → %s, %s): %v served none of the shard's slots for a while", i, res.OldMasterAddr, res.NewMasterAddr, res.Duration.Round(time.Millisecond), res.Unbound)
		}
		// Writes go on after the failover (the client follows MOVED to the new master).
		waitAcked(ctx, t, wd, before[0]+200)
		waitAcked(ctx, t, wr, before[1]+200)
	}
	run.Defaults, run.Retrying = wd.Stop(), wr.Stop()
	for _, w := range []*redistest.Writer{wd, wr} {
		if err := w.Verify(ctx); err != nil {
			t.Fatalf("after %d failovers: %v", n, err)
		}
	}
	return run
}

// TestFailoverUnderWriteLoad fails masters over (-failovers) while two writers write, and checks
// that no acknowledged write is lost and that the writer whose client retries as
// redisctl.FailoverRetryRedirects says sees no error; the writer with go-redis's default
// retries may (Redis 7.0's stale-PONG window: see Failover), and its errors are logged.
func TestFailoverUnderWriteLoad(t *testing.T) {
	if !*remind {
		prev := redisctl.SetRemindUnbound(false)
		t.Cleanup(func() { redisctl.SetRemindUnbound(prev) })
	}
	c := redistest.Start(t, redistest.Config{Shards: 5, PodsPerShard: 2})
	run := runFailoversUnderLoad(t, c, *failovers)
	med, max := durationStats(run.Durations)
	t.Logf("%d failovers under write load: median %s, max %s; a node serving none of the shard's slots in %d of them", len(run.Durations), med, max, run.Unbound)
	t.Logf("go-redis's default retries (MaxRedirects 3): %d writes acknowledged, all read back; %d failed, last error %q", run.Defaults.Acked, run.Defaults.Failed, run.Defaults.LastError)
	t.Logf("MaxRedirects %d: %d writes acknowledged, all read back; %d failed, last error %q", redisctl.FailoverRetryRedirects, run.Retrying.Acked, run.Retrying.Failed, run.Retrying.LastError)
	if run.Retrying.Failed > 0 {
		t.Errorf("%d writes failed through a client with MaxRedirects %d (last error %q), want none", run.Retrying.Failed, redisctl.FailoverRetryRedirects, run.Retrying.LastError)
	}
}

// BenchmarkFailoverUnderLoad measures failover time under write load (one op = one failover of
// the next shard's master, health gate and replica choice included in ns/op; the metrics
// median-ms and max-ms are the failover alone: CLUSTER FAILOVER sent → all nodes show the new
// master). For the figures: go test ./redisctl -run '^$' -bench FailoverUnderLoad -benchtime 20x
//
// It uses 5 shards so that a node is promoted again only after about 13 s: Redis lets a replica
// start an election only 4 × cluster-node-timeout (8 s here) after its previous one, even for a
// manual failover ("Failover attempt expired" in its log), and with 3 shards the same node would
// be promoted every ~8 s, adding up to ~2.5 s of that wait to some failovers.
func BenchmarkFailoverUnderLoad(b *testing.B) {
	c := redistest.Start(b, redistest.Config{Shards: 5, PodsPerShard: 2})
	b.ResetTimer()
	ds := runFailoversUnderLoad(b, c, b.N).Durations
	b.StopTimer()
	med, max := durationStats(ds)
	b.ReportMetric(float64(med.Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(max.Microseconds())/1000, "max-ms")
	b.Logf("%d failovers under write load: median %s, max %s; all: %v", len(ds), med, max, ds)
}

func TestFailoverRefused(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2, ExtraArgs: []string{"--enable-debug-command", "yes"}})
	cc := c.ClusterClient()
	// A client with a short read timeout, so that a node in DEBUG SLEEP times out quickly.
	quick, err := redisctl.New(redisctl.Options{ReadTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer quick.Close()

	tests := []struct {
		name  string
		shard int
		// fault breaks shard's replica and returns the undo.
		fault func(t *testing.T, master, replica *redistest.Pod) (undo func())
		// client is the redisctl client that checks (c.Client when nil).
		client *redisctl.Client
		// wantHealth are reason codes CheckHealth must report (among others).
		wantHealth []redisctl.ReasonCode
		wantChoose error
		wantFail   error // nil: any error will do (the replica cannot even be read)
	}{
		{
			name:  "replica 2 MiB behind (CLIENT PAUSE WRITE while the master takes writes): refused, replica_lag",
			shard: 0,
			fault: func(t *testing.T, master, replica *redistest.Pod) func() {
				mustDo(t, c.Client, replica.Addr(), "client", "pause", "20000", "write")
				writeToShard(t, cc, c.Client, master.Addr(), 40, 64<<10)
				return func() { mustDo(t, c.Client, replica.Addr(), "client", "unpause") }
			},
			wantHealth: []redisctl.ReasonCode{redisctl.ReasonReplicaLag},
			wantChoose: redisctl.ErrNoInSyncReplica,
			wantFail:   redisctl.ErrNotInSync,
		},
		{
			name:  "replica in DEBUG SLEEP (not answering): refused, node_unreachable",
			shard: 1,
			fault: func(t *testing.T, master, replica *redistest.Pod) func() {
				done := debugSleep(t, replica.Addr(), 3*time.Second)
				// Wait until the sleep has begun: a quick PING times out.
				err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
					_, err := quick.Do(ctx, replica.Addr(), "ping")
					return err != nil, nil
				})
				if err != nil {
					t.Fatalf("DEBUG SLEEP did not start: %v", err)
				}
				return func() { <-done }
			},
			client:     quick,
			wantHealth: []redisctl.ReasonCode{redisctl.ReasonNodeUnreachable},
			wantChoose: redisctl.ErrNoInSyncReplica,
		},
		{
			name:  "replica stopped: refused, node_unreachable and no_connected_replica",
			shard: 2,
			fault: func(t *testing.T, master, replica *redistest.Pod) func() {
				replica.Stop()
				return func() {
					if err := replica.Start(); err != nil {
						t.Fatal(err)
					}
					if err := c.Client.WaitRejoin(ctx, replica.Addr(), "", 30*time.Second, nil); err != nil {
						t.Fatal(err)
					}
				}
			},
			wantHealth: []redisctl.ReasonCode{redisctl.ReasonNodeUnreachable, redisctl.ReasonNoConnectedReplica},
			wantChoose: redisctl.ErrNoInSyncReplica,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := tc.client
			if cl == nil {
				cl = c.Client
			}
			h, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			topo := h.Topology
			master, replica := c.Shards[tc.shard][0], c.Shards[tc.shard][1]
			mNode, _ := topo.NodeByIP(master.IP)
			undo := tc.fault(t, master, replica)
			func() {
				defer undo()
				_, err := cl.CheckHealth(ctx, c.Addrs(), redisctl.HealthOptions{})
				var he *redisctl.HealthError
				if !errors.As(err, &he) {
					t.Fatalf("CheckHealth: %v, want a *HealthError", err)
				}
				for _, code := range tc.wantHealth {
					if !he.Has(code) {
						t.Errorf("CheckHealth reasons %v lack %s: %v", he.Codes(), code, he)
					}
				}
				if _, err := cl.ChooseReplica(ctx, topo, mNode.ID, nil); !errors.Is(err, tc.wantChoose) {
					t.Errorf("ChooseReplica: %v, want %v", err, tc.wantChoose)
				} else {
					t.Logf("ChooseReplica refused: %v", err)
				}
				_, err = cl.Failover(ctx, replica.Addr(), redisctl.FailoverOptions{Timeout: 5 * time.Second})
				switch {
				case err == nil:
					t.Errorf("Failover succeeded, want a refusal")
				case tc.wantFail != nil && !errors.Is(err, tc.wantFail):
					t.Errorf("Failover: %v, want %v", err, tc.wantFail)
				default:
					t.Logf("Failover refused: %v", err)
				}
			}()
			// Left alone: the cluster heals and the master is still the master.
			healsWithMaster(ctx, t, c, master)
		})
	}
}

// TestFailoverTimeout: a default-mode failover whose replica cannot catch up (its clients are
// paused, so it does not apply the last writes) is not verified; Failover reports what it saw
// and leaves the cluster alone: Redis aborts its manual failover after 5 s and the master stays.
func TestFailoverTimeout(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	master, replica := c.Shards[0][0], c.Shards[0][1]
	cc := c.ClusterClient()
	// Paused for longer than Redis' manual-failover timeout (5 s) after the failover starts.
	mustDo(t, c.Client, replica.Addr(), "client", "pause", "8000", "write")
	writeToShard(t, cc, c.Client, master.Addr(), 1, 100) // 100 bytes behind: still "in sync"
	start := time.Now()
	_, err := c.Client.Failover(ctx, replica.Addr(), redisctl.FailoverOptions{Timeout: 2 * time.Second})
	if !errors.Is(err, redisctl.ErrFailoverNotVerified) {
		t.Fatalf("Failover: %v, want ErrFailoverNotVerified", err)
	}
	t.Logf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
	for _, want := range []string{"replica role:slave", "old master reports flags myself,master"} {
		if !contains(err.Error(), want) {
			t.Errorf("error does not say %q", want)
		}
	}
	// Once the pause ends (after Redis gave up), the cluster is healthy with the same master.
	healsWithMaster(ctx, t, c, master)
}

// healsWithMaster waits until the cluster passes the health gate again and checks that master
// kept its role (ROLE), after a failover that was refused or not verified.
func healsWithMaster(ctx context.Context, t testing.TB, c *redistest.Cluster, master *redistest.Pod) {
	t.Helper()
	if _, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if role := mustDo(t, c.Client, master.Addr(), "role").([]interface{})[0]; role != "master" {
		t.Errorf("ROLE of %s (the master before the failover) = %v, want master", master.Name(), role)
	}
}

// TestFailoverMasterDown covers a master that is down: the default mode refuses (it cannot
// check the replica is in sync, and Redis needs the master for it), FORCE and TAKEOVER (explicit
// options) promote the replica and are verified without the old master, which later rejoins as
// a replica of the new master. Rows run in order on one cluster (node timeout 5 s, so that the
// replica does not fail over on its own first).
func TestFailoverMasterDown(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2, NodeTimeout: 5 * time.Second})
	tests := []struct {
		name    string
		shard   int
		mode    redisctl.FailoverMode
		wantErr error
	}{
		{name: "default mode, master killed: refused, replica not in sync", shard: 0, mode: redisctl.FailoverDefault, wantErr: redisctl.ErrNotInSync},
		{name: "FORCE, master killed: verified without the old master, which rejoins as replica", shard: 1, mode: redisctl.FailoverForce},
		{name: "TAKEOVER, master killed: verified without the old master, which rejoins as replica", shard: 2, mode: redisctl.FailoverTakeover},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 60*time.Second); err != nil {
				t.Fatal(err)
			}
			master, replica := c.Shards[tc.shard][0], c.Shards[tc.shard][1]
			if role := mustDo(t, c.Client, master.Addr(), "role").([]interface{})[0]; role != "master" {
				t.Fatalf("%s is %v, want master", master.Name(), role)
			}
			master.Kill()
			res, err := c.Client.Failover(ctx, replica.Addr(), redisctl.FailoverOptions{Mode: tc.mode, Timeout: 10 * time.Second})
			if restartErr := master.Start(); restartErr != nil {
				t.Fatal(restartErr)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Failover: %v, want %v", err, tc.wantErr)
				}
				t.Logf("refused: %v", err)
				// The restarted master is still the master of its shard.
				if err := c.Client.WaitRejoin(ctx, replica.Addr(), nodeAt(t, c, master.Addr()).ID, 30*time.Second, nil); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s failover verified in %s; not answering: %v", tc.mode, res.Duration, res.Unreachable)
			if err := c.Client.WaitRejoin(ctx, master.Addr(), res.NewMasterID, 30*time.Second, func(s string) { t.Log(s) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}
