package redisctl_test

import (
	"context"
	"flag"
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

var capture = flag.Bool("capture", false, "capture real CLUSTER NODES / INFO outputs from redis-server into testdata/ (TestCaptureTestdata)")

// TestCaptureTestdata records real replies of the installed redis-server in the states the
// parsers must handle; they are the parser tests' inputs and the fuzz targets' seed corpora.
// Run: go test ./redisctl -run TestCaptureTestdata -capture
func TestCaptureTestdata(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to refresh testdata/")
	}
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	cl := c.Client
	version := serverVersion(t, cl, c.Shards[0][0].Addr())
	save := func(kind, name, text string) {
		t.Helper()
		dir := filepath.Join("testdata", kind)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "redis"+version+"-"+name+".txt")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
	text := func(addr string, args ...interface{}) string {
		t.Helper()
		v, err := cl.Do(ctx, addr, args...)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v)
	}
	var m0 string
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("waiting for %s: %v\n%s", what, err, text(m0, "cluster", "nodes"))
		}
	}
	m0 = c.Shards[0][0].Addr()
	r0 := c.Shards[0][1].Addr()
	m1 := c.Shards[1][0].Addr()
	m2, r2 := c.Shards[2][0].Addr(), c.Shards[2][1].Addr()
	cc := c.ClusterClient()
	for i := 0; i < 100; i++ {
		if err := cc.Set(ctx, fmt.Sprintf("key%d", i), strings.Repeat("v", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// Healthy cluster, one node announcing a hostname (Redis 7 "ip:port@cport,hostname").
	text(m0, "config", "set", "cluster-announce-hostname", "shard-0-0.redis.test")
	waitFor("hostname gossip", func() bool { return strings.Contains(text(m1, "cluster", "nodes"), ",shard-0-0") })
	save("clusternodes", "master", text(m1, "cluster", "nodes"))
	save("clusternodes", "replica", text(r0, "cluster", "nodes"))
	save("clusternodes", "hostname-myself", text(m0, "cluster", "nodes"))
	save("info", "replication-master", text(m0, "info", "replication"))
	save("info", "replication-replica", text(r0, "info", "replication"))
	save("info", "all-master", text(m0, "info", "everything"))
	save("info", "cluster-info-ok", text(m0, "cluster", "info"))

	// Open slot migration: only the two masters' own lines show it.
	id0, id1 := text(m0, "cluster", "myid"), text(m1, "cluster", "myid")
	text(m1, "cluster", "setslot", "5", "importing", id0)
	text(m0, "cluster", "setslot", "5", "migrating", id1)
	save("clusternodes", "migrating", text(m0, "cluster", "nodes"))
	save("clusternodes", "importing", text(m1, "cluster", "nodes"))
	text(m0, "cluster", "setslot", "5", "stable")
	text(m1, "cluster", "setslot", "5", "stable")

	// A handshake with an address where nothing listens.
	ghost := c.NewIP()
	text(m0, "cluster", "meet", ghost, "6379")
	save("clusternodes", "handshake", text(m0, "cluster", "nodes"))

	// Shard 2's replica stopped: pfail, then fail; its master has no replica left.
	c.Shards[2][1].Stop()
	waitFor("pfail or fail", func() bool { return strings.Contains(text(m0, "cluster", "nodes"), "slave,fail") })
	if v := text(m0, "cluster", "nodes"); strings.Contains(v, "fail?") {
		save("clusternodes", "pfail", v)
	}
	waitFor("fail", func() bool { return strings.Contains(text(m0, "cluster", "nodes"), "slave,fail ") })
	save("clusternodes", "fail", text(m0, "cluster", "nodes"))
	save("info", "replication-master-no-replica", text(m2, "info", "replication"))

	// Then its master killed: its slots are not served, cluster_state:fail.
	c.Shards[2][0].Kill()
	waitFor("cluster_state:fail", func() bool { return strings.Contains(text(m0, "cluster", "info"), "cluster_state:fail") })
	save("info", "cluster-info-fail", text(m0, "cluster", "info"))
	waitFor("master fail", func() bool { return strings.Contains(text(m0, "cluster", "nodes"), "master,fail ") })
	save("clusternodes", "master-fail", text(m0, "cluster", "nodes"))

	// The replica back (its master still down): link down.
	if err := c.Shards[2][1].Start(); err != nil {
		t.Fatal(err)
	}
	waitFor("replica answers", func() bool {
		_, err := cl.Do(ctx, r2, "ping")
		return err == nil
	})
	save("info", "replication-replica-link-down", text(r2, "info", "replication"))
	save("clusternodes", "replica-master-down", text(r2, "cluster", "nodes"))
}

func serverVersion(t *testing.T, cl *redisctl.Client, addr string) string {
	t.Helper()
	v, err := cl.Do(context.Background(), addr, "info", "server")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := redisctl.ParseInfo(fmt.Sprint(v)).Get("redis_version")
	if s == "" {
		t.Fatal("no redis_version")
	}
	return strings.TrimSpace(s)
}
