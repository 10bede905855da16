package redisctl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// TestRejoinStray makes a replica a stray master as Redis 7.0 does (its nodes.conf saved with
// myself flagged master while it replicated; restarted, Redis's start-up check marks every slot
// it holds keys of importing from their owner), and checks that the health gate names it once
// (stray_master), that RejoinStray refuses another owner (ErrNotStray, nothing changed), and that
// with the right owner it becomes a replica again, in sync after a full sync, with every key
// written before still readable and the cluster healthy.
func TestRejoinStray(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	cc := c.ClusterClient()
	const keys = 300
	for i := range keys {
		if err := cc.Set(ctx, fmt.Sprintf("stray:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	master, replica := c.Shards[0][0], c.Shards[0][1]
	waitApplied(t, c.Client, master.Addr(), replica.Addr())
	owner := nodeAt(t, c, master.Addr())

	// What Redis 7.0 saves after an UPDATE message about itself: "myself,master -".
	replica.Stop()
	conf := filepath.Join(replica.Dir, "nodes.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) > 3 && strings.Contains(f[2], "myself") {
			f[2], f[3] = "myself,master", "-"
			lines[i] = strings.Join(f, " ")
		}
	}
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replica.Start(); err != nil {
		t.Fatal(err)
	}
	var stray redisctl.StrayMaster
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		topo, err := c.Client.Topology(ctx, c.Addrs())
		if err != nil {
			return false, nil
		}
		for _, s := range topo.StrayMasters() {
			if s.Addr == replica.Addr() {
				stray = s
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("%s never became a stray master: %v", replica.Addr(), err)
	}
	t.Logf("stray master: %s", stray)
	if stray.Owner.ID != owner.ID || stray.Count == 0 {
		t.Fatalf("stray master %s: want owner %s and importing slots", stray, owner.ID)
	}
	_, err = c.Client.CheckHealth(ctx, c.Addrs(), redisctl.HealthOptions{})
	var he *redisctl.HealthError
	if !errors.As(err, &he) || !he.Has(redisctl.ReasonStrayMaster) || he.Has(redisctl.ReasonSlotMigration) {
		t.Fatalf("health gate: %v, want stray_master and no slot_migration", err)
	}
	t.Logf("health gate: %v", err)

	other := nodeAt(t, c, c.Shards[1][0].Addr())
	if err := c.Client.RejoinStray(ctx, replica.Addr(), other.ID, c.Addrs(), 10*time.Second, nil); !errors.Is(err, redisctl.ErrNotStray) {
		t.Fatalf("RejoinStray with another owner: %v, want ErrNotStray", err)
	}
	var steps []string
	progress := func(s string) { steps = append(steps, s) }
	if err := c.Client.RejoinStray(ctx, replica.Addr(), owner.ID, c.Addrs(), 30*time.Second, progress); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.WaitRejoin(ctx, replica.Addr(), owner.ID, 60*time.Second, progress); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		t.Log(s)
	}
	if _, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		k := fmt.Sprintf("stray:%d", i)
		if v, err := cc.Get(ctx, k).Int(); err != nil || v != i {
			t.Errorf("%s = %d, %v; want %d", k, v, err, i)
		}
	}
}
