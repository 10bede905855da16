package redisctl_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redisserver"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// TestReintroduce replaces replicas the way a released claim does (the pod comes back on a new
// IP with an empty volume: a new Redis node knowing nobody) and checks that Reintroduce makes the
// new node a replica of the shard's master and every node forget the old one, that WaitRejoin
// then sees it in sync after its full sync, holding the master's keys, and that the cluster is
// healthy with as many nodes as pods; and that Reintroduce refuses what it must not touch. Rows
// run in order on one cluster.
func TestReintroduce(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	cc := c.ClusterClient()
	for i := range 300 {
		if err := cc.Set(ctx, fmt.Sprintf("reintroduce:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// emptied restarts replica p on a new IP with an empty data directory (the test's: it outlives
	// the row), as its pod re-created with a released claim, and returns its old node ID.
	top := t
	emptied := func(t *testing.T, p *redistest.Pod) string {
		t.Helper()
		old := nodeAt(t, c, p.Addr()).ID
		p.Stop()
		p.Dir = top.TempDir()
		if err := p.Restart(c.NewIP()); err != nil {
			t.Fatal(err)
		}
		return old
	}
	// outsider starts a node in cluster mode that is no pod of the cluster (stopped when the row
	// ends) and returns its address.
	outsider := func(t *testing.T) string {
		t.Helper()
		ip := c.NewIP()
		srv, err := redisserver.Start(ctx, redisserver.Config{IP: ip, Dir: t.TempDir(), ExtraArgs: c.Args(ip)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Stop)
		return srv.Addr()
	}
	for _, tc := range []struct {
		name string
		// prepare returns the address of the node to re-introduce, the old ID and the master.
		prepare func(t *testing.T) (addr, oldID, masterID string)
		wantErr error
		// wantSame: the node keeps oldID (nothing to do).
		wantSame bool
	}{
		{
			name: "a replica back empty on a new IP → a replica of its master again, the old node forgotten, in sync after a full sync",
			prepare: func(t *testing.T) (string, string, string) {
				p := c.Shards[0][1]
				old := emptied(t, p)
				return p.Addr(), old, nodeAt(t, c, c.Shards[0][0].Addr()).ID
			},
		},
		{
			name: "a master failed over, its pod back empty → a replica of the new master",
			prepare: func(t *testing.T) (string, string, string) {
				res := failoverShard(ctx, t, c, 1)
				p := c.Pod(res.OldMasterAddr)
				old := emptied(t, p)
				return p.Addr(), old, res.NewMasterID
			},
		},
		{
			name: "a replica restarted with its data (same node ID) → nothing to do",
			prepare: func(t *testing.T) (string, string, string) {
				p := c.Shards[2][1]
				old := nodeAt(t, c, p.Addr()).ID
				if err := p.Restart(c.NewIP()); err != nil {
					t.Fatal(err)
				}
				return p.Addr(), old, nodeAt(t, c, c.Shards[2][0].Addr()).ID
			},
			wantSame: true,
		},
		{
			name: "a node serving slots → ErrNotFresh, nothing changed",
			prepare: func(t *testing.T) (string, string, string) {
				addr := outsider(t)
				if _, err := c.Client.Do(ctx, addr, "cluster", "addslots", "0"); err != nil {
					t.Fatal(err)
				}
				return addr, "0000000000000000000000000000000000000000", nodeAt(t, c, c.Shards[2][0].Addr()).ID
			},
			wantErr: redisctl.ErrNotFresh,
		},
		{
			name: "the old node still answers → ErrOldNodeAlive: it is never forgotten",
			prepare: func(t *testing.T) (string, string, string) {
				return outsider(t), nodeAt(t, c, c.Shards[2][1].Addr()).ID, nodeAt(t, c, c.Shards[2][0].Addr()).ID
			},
			wantErr: redisctl.ErrOldNodeAlive,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second); err != nil {
				t.Fatal(err)
			}
			addr, oldID, masterID := tc.prepare(t)
			start := time.Now()
			var steps []string
			progress := func(s string) {
				steps = append(steps, fmt.Sprintf("%6s %s", time.Since(start).Round(time.Millisecond), s))
			}
			id, err := c.Client.Reintroduce(ctx, addr, oldID, masterID, c.Addrs(), 30*time.Second, progress)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Reintroduce: %v, want %v", err, tc.wantErr)
				}
				t.Logf("Reintroduce: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (id == oldID) != tc.wantSame {
				t.Fatalf("node ID %s, old %s: want same %v", id, oldID, tc.wantSame)
			}
			if err := c.Client.WaitRejoin(ctx, addr, masterID, 60*time.Second, progress); err != nil {
				t.Fatal(err)
			}
			for _, s := range steps {
				t.Log(s)
			}
			h, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(h.Topology.Nodes), len(c.Addrs()); got != want {
				t.Errorf("topology has %d nodes, want %d (the old one forgotten)", got, want)
			}
			for _, v := range h.Topology.Views {
				if _, ok := v.Node(oldID); ok && !tc.wantSame {
					t.Errorf("%s still lists the old node %s", v.Addr, oldID)
				}
			}
			// The replica holds what its master holds.
			var master string
			for _, n := range h.Topology.Nodes {
				if n.ID == masterID {
					master = n.Addr()
				}
			}
			mk, err := c.Client.Do(ctx, master, "dbsize")
			if err != nil {
				t.Fatal(err)
			}
			rk, err := c.Client.Do(ctx, addr, "dbsize")
			if err != nil {
				t.Fatal(err)
			}
			if mk != rk || mk.(int64) == 0 {
				t.Errorf("replica holds %v keys, its master %v", rk, mk)
			}
		})
	}
}
