package observe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// oneStatefulSet returns the pods rc-0…rc-<n-1> of one StatefulSet rc (serviceName rc-headless;
// the Bitnami chart's layout, every node of the cluster in one StatefulSet), labelled
// app.kubernetes.io/instance=rc, Ready on n1…, with pod IPs ip(i).
func oneStatefulSet(n int, ip func(i int) string) *policies.Snapshot {
	labels := map[string]string{policies.DefaultClusterLabel: "rc"}
	sts := fixture.StatefulSet("rc", int32(n), labels, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "rc-headless" })
	snap := &policies.Snapshot{Nodes: fixture.ZonedNodes(2, "a", "b", "c"), StatefulSets: []*appsv1.StatefulSet{sts}}
	for i := 0; i < n; i++ {
		snap.Pods = append(snap.Pods, fixture.StatefulSetPod(sts, i, fixture.On(fmt.Sprintf("n%d", i%6+1)), fixture.Ready(),
			func(p *corev1.Pod) { p.Status.PodIP = ip(i) }))
	}
	return snap
}

// shardsOf returns each shard's name and its members with their roles ("rc-0 master, rc-1
// replica").
func shardsOf(c *policies.Cluster) map[string]string {
	out := map[string]string{}
	for _, sh := range c.Shards {
		var parts []string
		for _, i := range sh.Members {
			parts = append(parts, c.Members[i].Name()+" "+string(c.Members[i].Role))
		}
		out[sh.Name] = strings.Join(parts, ", ")
	}
	return out
}

// TestHostnamesOnRealClusterNodes matches Redis nodes to pods by the hostnames they announce, on
// real CLUSTER NODES output: a redis-server 7 cluster (3 shards × 2) whose nodes announce their
// pod's FQDN (cluster-announce-hostname, cluster-preferred-endpoint-type hostname: what OT's
// operator and KubeBlocks configure), read three ways that must agree: the CLUSTER NODES text as
// a --redis-nodes file, against pods whose IPs are not Redis's (so only the hostnames can match);
// the same text against pods at Redis's IPs; and live through the pods' IPs (ApplyRedis).
func TestHostnamesOnRealClusterNodes(t *testing.T) {
	rc := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := rc.Pods() // shard-major: pods[2k] is shard k's master, pods[2k+1] its replica
	fqdn := func(i int) string { return fmt.Sprintf("rc-%d.rc-headless.%s.svc.cluster.local", i, fixture.Namespace) }
	for i, p := range pods {
		for _, kv := range [][2]string{{"cluster-announce-hostname", fqdn(i)}, {"cluster-preferred-endpoint-type", "hostname"}} {
			if _, err := rc.Client.Do(ctx, p.Addr(), "CONFIG", "SET", kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Hostnames spread by gossip: wait until one node's CLUSTER NODES shows every one.
	var text string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		v, err := rc.Client.Do(ctx, pods[0].Addr(), "CLUSTER", "NODES")
		if err != nil {
			return false, err
		}
		text = fmt.Sprint(v)
		nodes, err := redisctl.ParseClusterNodes(text)
		if err != nil {
			return false, err
		}
		for _, n := range nodes {
			if n.Hostname == "" {
				return false, nil
			}
		}
		return len(nodes) == len(pods), nil
	})
	if err != nil {
		t.Fatalf("hostnames not gossiped: %v\n%s", err, text)
	}
	t.Logf("CLUSTER NODES of %s:\n%s", pods[0].Addr(), text)

	shares := redistest.SlotShares(3)
	want := map[string]string{}
	for k, r := range shares {
		want[fmt.Sprintf("slots-%d-%d", r.Start, r.End)] = fmt.Sprintf("rc-%d master, rc-%d replica", 2*k, 2*k+1)
	}
	build := func(ip func(int) string) *policies.Cluster {
		m, err := policies.Build(oneStatefulSet(len(pods), ip), policies.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m.Clusters[0]
	}
	check := func(what string, c *policies.Cluster) {
		t.Helper()
		if diff := cmp.Diff(want, shardsOf(c)); diff != "" {
			t.Errorf("%s: shards (-want +got):\n%s", what, diff)
		}
		if c.ShardSource.Kind != policies.ShardRedis || len(c.Warnings) != 0 {
			t.Errorf("%s: shard source %s, warnings %q; want redis (one StatefulSet is not one shard), none", what, c.ShardSource, c.Warnings)
		}
		for _, mem := range c.Members {
			if mem.RedisID == "" || mem.NotEvictable() != "" {
				t.Errorf("%s: %s matched to %q, not evictable: %q", what, mem.Name(), mem.RedisID, mem.NotEvictable())
			}
		}
	}

	// The text as a --redis-nodes file; the pods' IPs are none of Redis's.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, RedisNodesFile(fixture.Namespace, "rc")+".txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	byCluster, err := LoadRedisNodes(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := build(func(i int) string { return fmt.Sprintf("10.9.0.%d", i+1) })
	for _, n := range byCluster[c.Key()] {
		if !strings.HasSuffix(n.Hostname, ".rc-headless."+fixture.Namespace+".svc.cluster.local") {
			t.Errorf("node %s at %s: hostname %q, want the FQDN it announces", n.ID, n.IP, n.Hostname)
		}
	}
	m := c.Model()
	if unused := ApplyRedisNodes(m, byCluster); len(unused) > 0 {
		t.Fatalf("files not used: %v", unused)
	}
	check("file, pods at other IPs (hostnames only)", c)

	// Live: the topology read through the pods' IPs, which are Redis's.
	c = build(func(i int) string { return pods[i].IP })
	if _, err := ApplyRedis(ctx, rc.Client, c); err != nil {
		t.Fatal(err)
	}
	check("live", c)
}
