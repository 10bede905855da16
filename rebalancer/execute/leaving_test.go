package execute

import (
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestWithoutLeaving covers the failover without a replica named by the plan (ChooseReplica's
// choice): the replicas of the master on a node being emptied are taken out of the topology it
// chooses from, never the master itself nor another master's replicas. Role-only: s0's master on
// n1, its replica on n3; s1's master on n1, its replica on n5.
func TestWithoutLeaving(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cordon  []string
		wantOut []string // the pods whose Redis nodes are taken out
	}{
		{name: "nothing cordoned → the topology as it is", wantOut: nil},
		{name: "n3 cordoned → s0's replica taken out, named", cordon: []string{"n3"}, wantOut: []string{"redis-s0-1"}},
		{name: "n1 cordoned (the master's own node) → nothing taken out: the master is no target", cordon: []string{"n1"}, wantOut: nil},
		{name: "n5 cordoned (s1's replica) → nothing taken out for s0's master", cordon: []string{"n5"}, wantOut: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario.RoleOnly()
			sc.RoleLabels = true
			snap := sc.MustSnapshot()
			for _, n := range snap.Nodes {
				if slices.Contains(tc.cordon, n.Name) {
					fixture.Cordoned()(n)
				}
			}
			for k, p := range snap.Pods {
				p.Status.PodIP = "10.0.0." + strconv.Itoa(k+1)
			}
			m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			addrOf := func(ip string) string { return net.JoinHostPort(ip, "6379") }
			// One Redis node per member: -0 masters, -1 replicas of their shard's master.
			topo := &redisctl.Topology{}
			ids := map[string]string{}
			for s := range sc.Shards {
				ids[sc.PodName(s, 0)] = strconv.Itoa(s) + "-master"
			}
			for _, mem := range c.Members {
				n := redisctl.Node{ID: mem.Pod.Name, IP: mem.Pod.Status.PodIP, Port: 6379}
				if id, ok := ids[mem.Pod.Name]; ok {
					n.ID, n.Flags = id, []string{redisctl.FlagMaster}
				} else {
					n.Flags, n.MasterID = []string{redisctl.FlagReplica}, ids[mem.Pod.Name[:len(mem.Pod.Name)-1]+"0"]
				}
				topo.Nodes = append(topo.Nodes, n)
			}
			out, barred := withoutLeaving(c, topo, ids[sc.PodName(0, 0)], addrOf)
			if diff := cmp.Diff(tc.wantOut, barred); diff != "" {
				t.Errorf("pods taken out (-want +got):\n%s", diff)
			}
			if got, want := len(out.Nodes), len(topo.Nodes)-len(tc.wantOut); got != want {
				t.Errorf("%d Redis nodes left, want %d", got, want)
			}
			for _, n := range out.Nodes {
				if slices.Contains(tc.wantOut, n.ID) {
					t.Errorf("Redis node of %s still a candidate", n.ID)
				}
			}
			if len(topo.Nodes) != sc.N() {
				t.Errorf("the topology given was changed: %d nodes, want %d", len(topo.Nodes), sc.N())
			}
		})
	}
}
