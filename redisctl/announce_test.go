package redisctl_test

import (
	"context"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// TestAnnouncedLoadBalancerAddresses: nodes that announce LoadBalancer IPs (the Bitnami chart's
// externalAccess) are read at their pods' addresses and reported there, by a Client that learns
// each alias from the node itself; the health gate and a verified failover work as with pod IPs.
func TestAnnouncedLoadBalancerAddresses(t *testing.T) {
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2, AnnounceLoadBalancer: true})
	ctx := context.Background()
	podOf := map[string]string{} // announced "ip:port" → pod address
	for _, p := range c.Pods() {
		podOf[net.JoinHostPort(p.AnnounceIP, "6379")] = p.Addr()
	}
	// Redis itself announces the LoadBalancer IPs: what CLUSTER NODES prints, unlocalized.
	raw, err := c.Client.Do(ctx, c.Pods()[0].Addr(), "cluster", "nodes")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := redisctl.ParseClusterNodes(raw.(string))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range lines {
		if _, ok := podOf[n.Addr()]; !ok {
			t.Fatalf("CLUSTER NODES lists %s at %s, not at a LoadBalancer stand-in address", n.ID, n.Addr())
		}
	}

	t.Run("a fresh Client learns one alias per node it reads", func(t *testing.T) {
		cl, err := redisctl.New(c.Options)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		first := c.Pods()[0]
		nodes, err := cl.ClusterNodes(ctx, first.Addr())
		if err != nil {
			t.Fatal(err)
		}
		var self redisctl.Node
		localized := 0
		for _, n := range nodes {
			if n.IsMyself() {
				self = n
			}
			if n.Announced != "" {
				localized++
			}
		}
		if self.Addr() != first.Addr() || self.Announced != net.JoinHostPort(first.AnnounceIP, "6379") {
			t.Fatalf("myself at %s announced %q, want %s announced %s:6379", self.Addr(), self.Announced, first.Addr(), first.AnnounceIP)
		}
		if localized != 1 {
			t.Fatalf("%d nodes reported at a pod address after reading one node, want 1 (itself)", localized)
		}
		if diff := cmp.Diff(map[string][2]string{self.ID: {first.AnnounceIP, first.IP}}, cl.Announced()); diff != "" {
			t.Fatalf("aliases (-want +got):\n%s", diff)
		}
	})

	t.Run("after a topology read, one node's view names every pod", func(t *testing.T) {
		cl, err := redisctl.New(c.Options)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, err := cl.Topology(ctx, c.Addrs()); err != nil {
			t.Fatal(err)
		}
		nodes, err := cl.ClusterNodes(ctx, c.Pods()[1].Addr())
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, n := range nodes {
			got = append(got, n.Addr()+" announced "+n.Announced)
		}
		for lb, pod := range podOf {
			want = append(want, pod+" announced "+lb)
		}
		sort.Strings(got)
		sort.Strings(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("nodes (-want +got):\n%s", diff)
		}
		// INFO replication names the master at its pod's address too.
		for _, p := range c.Pods() {
			r, err := cl.InfoReplication(ctx, p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			if r.IsReplica() && c.Pod(net.JoinHostPort(r.MasterHost, "6379")) == nil {
				t.Fatalf("replica %s: master_host %s is no pod IP", p.Addr(), r.MasterHost)
			}
		}
	})

	t.Run("topology, health gate and failover at pod addresses", func(t *testing.T) {
		cl, err := redisctl.New(c.Options)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		h, err := cl.CheckHealth(ctx, c.Addrs(), redisctl.HealthOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !h.Healthy() {
			t.Fatalf("health gate: %v", h.Reasons)
		}
		if len(h.Topology.Unreachable) > 0 {
			t.Fatalf("unreachable: %v", h.Topology.Unreachable)
		}
		var read []string
		for _, v := range h.Topology.Views {
			read = append(read, v.Addr)
		}
		want := c.Addrs()
		sort.Strings(want)
		if diff := cmp.Diff(want, read); diff != "" {
			t.Fatalf("views read (-want pod addresses +got):\n%s", diff)
		}
		for _, p := range c.Pods() {
			if n, ok := h.Topology.NodeByIP(p.IP); !ok || n.Announced != net.JoinHostPort(p.AnnounceIP, "6379") {
				t.Fatalf("NodeByIP(%s) = %+v, %v", p.IP, n, ok)
			}
		}
		m := h.Topology.Masters()[0]
		r, err := cl.ChooseReplica(ctx, h.Topology, m.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cl.Failover(ctx, r.Addr(), redisctl.FailoverOptions{Timeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("Failover at pod address %s: %v", r.Addr(), err)
		}
		if res.NewMasterID != r.ID || res.OldMasterAddr != m.Addr() {
			t.Fatalf("failover result %+v, want new master %s, old master at %s", res, r.ID, m.Addr())
		}
	})
}
