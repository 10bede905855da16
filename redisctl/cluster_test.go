package redisctl_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl/redistest"
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
			shares := redisctl.SlotShares(tc.shards)
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
