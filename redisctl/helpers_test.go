package redisctl_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis/v8"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

func mustDo(t testing.TB, cl *redisctl.Client, addr string, args ...interface{}) interface{} {
	t.Helper()
	v, err := cl.Do(context.Background(), addr, args...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// waitApplied waits (up to 30 s) until the replica at replicaAddr has applied the master's
// replication stream up to the offset the master has now.
func waitApplied(t testing.TB, cl *redisctl.Client, masterAddr, replicaAddr string) {
	t.Helper()
	ctx := context.Background()
	m, err := cl.InfoReplication(ctx, masterAddr)
	if err != nil {
		t.Fatal(err)
	}
	var applied int64
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cl.InfoReplication(ctx, replicaAddr)
		if err != nil {
			return false, err
		}
		applied = r.ReplicaReplOffset
		return applied >= m.MasterReplOffset, nil
	})
	if err != nil {
		t.Fatalf("replica %s applied offset %d, master %s is at %d: %v", replicaAddr, applied, masterAddr, m.MasterReplOffset, err)
	}
}

// writeToShard writes n values of size bytes to keys served by the master at masterAddr, through
// the cluster client.
func writeToShard(t testing.TB, cc *redis.ClusterClient, cl *redisctl.Client, masterAddr string, n, size int) {
	t.Helper()
	ctx := context.Background()
	nodes, err := cl.ClusterNodes(ctx, masterAddr)
	if err != nil {
		t.Fatal(err)
	}
	var me redisctl.Node
	for _, x := range nodes {
		if x.IsMyself() {
			me = x
		}
	}
	// Find a hash tag whose slot the master serves.
	tag := ""
	for i := 0; tag == "" && i < 10000; i++ {
		cand := fmt.Sprintf("t%d", i)
		v := mustDo(t, cl, masterAddr, "cluster", "keyslot", cand)
		slot := int(v.(int64))
		for _, r := range me.Slots {
			if slot >= r.Start && slot <= r.End {
				tag = cand
			}
		}
	}
	if tag == "" {
		t.Fatalf("no hash tag for %s's slots %v", masterAddr, me.Slots)
	}
	val := strings.Repeat("x", size)
	pipe := cc.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Set(ctx, fmt.Sprintf("{%s}:big:%d", tag, i), val, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("writes to %s: %v", masterAddr, err)
	}
}

// debugSleep sends DEBUG SLEEP to addr on its own connection (the server stops answering
// everyone for d); the returned channel is closed when the server answers again.
func debugSleep(t testing.TB, addr string, d time.Duration) <-chan struct{} {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: d + 5*time.Second, MaxRetries: -1})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cl.Close()
		_ = cl.Do(context.Background(), "debug", "sleep", fmt.Sprintf("%.1f", d.Seconds())).Err()
	}()
	return done
}
