package redisctl_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// TestRejoin moves pods the way the rebalancer does (evict, then the StatefulSet recreates the
// pod elsewhere, with a new IP and the same volume) and checks that WaitRejoin sees each node
// back, and that every view then agrees on the new addresses. Rows run in order on one cluster.
func TestRejoin(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	cc := c.ClusterClient()

	tests := []struct {
		name string
		// move disrupts a pod and returns it with the master ID it must come back under.
		move func(t *testing.T) (p *redistest.Pod, masterID string)
		// timeout for WaitRejoin; wantErr, when set, is the error it must wrap.
		timeout time.Duration
		wantErr error
	}{
		{
			name: "replica restarted on a new IP: back as an in-sync replica of its master, every view shows the new IP",
			move: func(t *testing.T) (*redistest.Pod, string) {
				p := c.Shards[0][1]
				mid := nodeAt(t, c, c.Shards[0][0].Addr()).ID
				if err := p.Restart(c.NewIP()); err != nil {
					t.Fatal(err)
				}
				return p, mid
			},
			timeout: 30 * time.Second,
		},
		{
			name: "master failed over, stopped, restarted on a new IP: back as an in-sync replica of the new master",
			move: func(t *testing.T) (*redistest.Pod, string) {
				res := failoverShard(ctx, t, c, 1)
				p := c.Pod(res.OldMasterAddr)
				if err := p.Restart(c.NewIP()); err != nil {
					t.Fatal(err)
				}
				return p, res.NewMasterID
			},
			timeout: 30 * time.Second,
		},
		{
			name: "fresh pod added to shard 2 with AddReplica: in sync after a full sync",
			move: func(t *testing.T) (*redistest.Pod, string) {
				p, err := c.AddPod(2)
				if err != nil {
					t.Fatal(err)
				}
				mid := nodeAt(t, c, c.Shards[2][0].Addr()).ID
				if err := redistest.AddReplica(ctx, c.Client, p.Addr(), c.Shards[0][0].Addr(), mid, 30*time.Second); err != nil {
					t.Fatal(err)
				}
				return p, mid
			},
			timeout: 30 * time.Second,
		},
		{
			name: "replica stopped and not restarted: ErrRejoinTimeout saying it does not answer",
			move: func(t *testing.T) (*redistest.Pod, string) {
				p := c.Shards[2][2]
				mid := nodeAt(t, c, c.Shards[2][0].Addr()).ID
				p.Stop()
				t.Cleanup(func() { _ = p.Start() })
				return p, mid
			},
			timeout: time.Second,
			wantErr: redisctl.ErrRejoinTimeout,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second); err != nil {
				t.Fatal(err)
			}
			p, mid := tc.move(t)
			start := time.Now()
			var steps []string
			err := c.Client.WaitRejoin(ctx, p.Addr(), mid, tc.timeout, func(s string) {
				steps = append(steps, fmt.Sprintf("%6s %s", time.Since(start).Round(time.Millisecond), s))
			})
			for _, s := range steps {
				t.Log(s)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !contains(err.Error(), "not answering") {
					t.Fatalf("WaitRejoin: %v, want %v saying the node is not answering", err, tc.wantErr)
				}
				t.Logf("WaitRejoin: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s rejoined in %s", p.Name(), time.Since(start).Round(time.Millisecond))
			h, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// Every node, seen from every view, is at its pod's current address.
			type place struct{ Pod, Addr string }
			var want, got []place
			for _, q := range c.Pods() {
				want = append(want, place{q.Name(), q.Addr()})
				n, ok := h.Topology.NodeByIP(q.IP)
				if !ok {
					got = append(got, place{q.Name(), "(no node)"})
					continue
				}
				got = append(got, place{q.Name(), n.Addr()})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("node addresses (-want +got):\n%s", diff)
			}
			if len(h.Topology.Nodes) != len(c.Pods()) {
				t.Errorf("topology has %d nodes, want %d (a stale entry?)", len(h.Topology.Nodes), len(c.Pods()))
			}
			// The cluster client follows the new addresses once its state is reloaded.
			cc.ReloadState(ctx)
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
				for i := 0; i < 100; i++ {
					if err := cc.Set(ctx, fmt.Sprintf("rejoin:%d", i), i, 0).Err(); err != nil {
						cc.ReloadState(ctx)
						return false, nil
					}
				}
				return true, nil
			})
			if err != nil {
				t.Errorf("writes through the cluster client after the move: %v", err)
			}
		})
	}
}

// nodeAt returns the node at addr as it sees itself.
func nodeAt(t testing.TB, c *redistest.Cluster, addr string) redisctl.Node {
	t.Helper()
	// A node that has just been restarted answers LOADING while it replays its append-only
	// file: wait for it to answer.
	var v redisctl.View
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		v, lastErr = c.Client.ReadView(ctx, addr)
		return lastErr == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (%v)", addr, lastErr, err)
	}
	me, ok := v.Myself()
	if !ok {
		t.Fatalf("%s: no myself line", addr)
	}
	return me
}
