package redisctl_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

func TestFormedClusters(t *testing.T) {
	tests := []struct {
		name         string
		shards, pods int
	}{
		{name: "6 nodes (3 shards x 2): formed, healthy, every pod mapped, writes reach every shard", shards: 3, pods: 2},
		{name: "10 nodes (5 shards x 2): formed, healthy, every pod mapped, writes reach every shard", shards: 5, pods: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			c := redistest.Start(t, redistest.Config{Shards: tc.shards, PodsPerShard: tc.pods})
			t.Logf("formed %d nodes in %s", tc.shards*tc.pods, time.Since(start))
			ctx := context.Background()
			h, err := c.Client.CheckHealth(ctx, c.Addrs(), redisctl.HealthOptions{})
			if err != nil {
				t.Fatalf("CheckHealth: %v", err)
			}
			if h.SlotsServed != redisctl.NumSlots {
				t.Errorf("SlotsServed = %d", h.SlotsServed)
			}
			topo := h.Topology
			shares := redistest.SlotShares(tc.shards)
			type role struct {
				Pod, Role, Slots, MasterPod string
			}
			var want, got []role
			for k, shard := range c.Shards {
				for i, p := range shard {
					r := role{Pod: p.Name(), Role: "replica", MasterPod: shard[0].Name()}
					if i == 0 {
						r = role{Pod: p.Name(), Role: "master", Slots: shares[k].String()}
					}
					want = append(want, r)
					n, ok := topo.NodeByIP(p.IP)
					if !ok {
						t.Errorf("NodeByIP(%s) not found", p.IP)
						continue
					}
					g := role{Pod: p.Name(), Role: n.Role()}
					if n.IsMaster() {
						g.Slots = fmt.Sprint(n.Slots[0])
					} else if m, ok := topo.MasterOf(n.ID); ok {
						g.MasterPod = c.Pod(m.Addr()).Name()
					}
					got = append(got, g)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
			cc, err := redisctl.NewClusterClient(c.Options, c.Addrs()[:1])
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			for i := 0; i < 200; i++ {
				if err := cc.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
					t.Fatalf("SET through the cluster client: %v", err)
				}
			}
			var keys int64
			for _, shard := range c.Shards {
				n, err := c.Client.Do(ctx, shard[0].Addr(), "dbsize")
				if err != nil {
					t.Fatal(err)
				}
				if n.(int64) == 0 {
					t.Errorf("master %s got no key", shard[0].Name())
				}
				keys += n.(int64)
			}
			if keys != 200 {
				t.Errorf("masters hold %d keys, want 200", keys)
			}
		})
	}
}

func TestChooseReplica(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 2, PodsPerShard: 3})
	cc := c.ClusterClient()
	master, r1, r2 := c.Shards[0][0], c.Shards[0][1], c.Shards[0][2]
	onPod := func(p *redistest.Pod) func(redisctl.Node) bool {
		return func(n redisctl.Node) bool { return n.IP == p.IP }
	}
	tests := []struct {
		name   string
		prefer func(redisctl.Node) bool
		lag    *redistest.Pod // made to lag 2 MiB behind (CLIENT PAUSE WRITE) before choosing
		want   *redistest.Pod
	}{
		{name: "no preference, both in sync: the lower address", want: r1},
		{name: "placement prefers the second replica: it is chosen", prefer: onPod(r2), want: r2},
		{name: "placement prefers a replica 2 MiB behind: the in-sync one is chosen anyway", prefer: onPod(r2), lag: r2, want: r1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if tc.lag != nil {
				mustDo(t, c.Client, tc.lag.Addr(), "client", "pause", "10000", "write")
				defer mustDo(t, c.Client, tc.lag.Addr(), "client", "unpause")
				writeToShard(t, cc, c.Client, master.Addr(), 40, 64<<10)
			}
			// The replicas that are not paused must have applied the master's writes before the
			// choice: on a loaded machine one can be a moment behind, and ChooseReplica judges the
			// lag as it is.
			for _, r := range []*redistest.Pod{r1, r2} {
				if r != tc.lag {
					waitApplied(t, c.Client, master.Addr(), r.Addr())
				}
			}
			m, _ := h.Topology.NodeByIP(master.IP)
			got, err := c.Client.ChooseReplica(ctx, h.Topology, m.ID, tc.prefer)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.Addr(), got.Addr()); diff != "" {
				t.Errorf("chosen replica (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClusterClientRedis7 checks the two go-redis v8 workarounds of NewClusterClient against the
// installed Redis: the slot map comes from CLUSTER NODES, and COMMAND info (needed to find each
// command's key) arrives in the 7-element format v8 parses.
func TestClusterClientRedis7(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	cc, err := redisctl.NewClusterClient(c.Options, c.Addrs()[:1])
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	type check struct{ Name, Got string }
	var got []check
	info, err := cc.Command(ctx).Result()
	if err != nil {
		got = append(got, check{"COMMAND through the cluster client", err.Error()})
	} else {
		got = append(got, check{"COMMAND through the cluster client", "ok"})
		for _, name := range []string{"set", "get", "mget"} {
			ci := info[name]
			if ci == nil {
				got = append(got, check{name + " first key", "missing"})
				continue
			}
			got = append(got, check{name + " first key", fmt.Sprint(ci.FirstKeyPos)})
		}
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	_ = slots // ClusterSlots (the command) fails on Redis 7 with v8; the client does not need it.
	got = append(got, check{"CLUSTER SLOTS reply parse (v8 limitation)", fmt.Sprint(err != nil)})
	// Keys are routed straight to their master: no MOVED redirection is counted by the servers.
	before := movedTotal(t, c)
	for i := 0; i < 300; i++ {
		if err := cc.Set(ctx, fmt.Sprintf("route:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got = append(got, check{"redirections for 300 SETs", fmt.Sprint(movedTotal(t, c) - before)})
	want := []check{
		{"COMMAND through the cluster client", "ok"},
		{"set first key", "1"},
		{"get first key", "1"},
		{"mget first key", "1"},
		{"CLUSTER SLOTS reply parse (v8 limitation)", "true"},
		{"redirections for 300 SETs", "0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cluster client (-want +got):\n%s", diff)
	}
}

// movedTotal sums the MOVED errors all nodes have replied (INFO errorstats, Redis 6.2+).
func movedTotal(t *testing.T, c *redistest.Cluster) int64 {
	t.Helper()
	var total int64
	for _, a := range c.Addrs() {
		v := mustDo(t, c.Client, a, "info", "errorstats")
		info := redisctl.ParseInfo(fmt.Sprint(v))
		s, _ := info.Get("errorstat_MOVED")
		if s != "" {
			var n int64
			fmt.Sscanf(strings.TrimPrefix(s, "count="), "%d", &n)
			total += n
		}
	}
	return total
}
