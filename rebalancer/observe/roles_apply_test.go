package observe

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// topologyReader answers Topology with fixed nodes.
type topologyReader struct{ nodes []redisctl.Node }

func (r topologyReader) AddrOf(ip string) string { return ip + ":6379" }

func (r topologyReader) Topology(context.Context, []string) (*redisctl.Topology, error) {
	return &redisctl.Topology{Nodes: r.nodes}, nil
}

// TestApplyRedis checks the roles read from CLUSTER NODES: a master serving slots, a master
// without slots (EmptyMaster: it does not vote, MasterQuorum does not count it), a replica, and a
// pod Redis does not list (unknown, never guessed).
func TestApplyRedis(t *testing.T) {
	sc := scenario.PostScaleDown()
	m, err := policies.Build(sc.MustSnapshot(), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	ip := func(s, o int) string { return fmt.Sprintf("10.0.%d.%d", s, o) }
	for _, mem := range c.Members {
		var s, o int
		fmt.Sscanf(mem.Name(), "redis-s%d-%d", &s, &o)
		mem.Pod.Status.PodIP = ip(s, o)
	}
	node := func(s, o int, flag string, slots ...redisctl.SlotRange) redisctl.Node {
		return redisctl.Node{ID: fmt.Sprintf("id-%d-%d", s, o), IP: ip(s, o), Port: 6379, Flags: []string{flag}, Slots: slots}
	}
	rd := topologyReader{nodes: []redisctl.Node{
		node(0, 0, redisctl.FlagMaster, redisctl.SlotRange{Start: 0, End: 8191}),
		node(0, 1, redisctl.FlagReplica),
		node(1, 0, redisctl.FlagMaster), // no slots
		node(1, 1, redisctl.FlagReplica),
	}}
	if _, err := ApplyRedis(context.Background(), rd, c); err != nil {
		t.Fatal(err)
	}
	type role struct {
		Role  policies.Role
		Empty bool
	}
	got := map[string]role{}
	for _, mem := range c.Members[:4] {
		got[mem.Name()] = role{mem.Role, mem.EmptyMaster}
	}
	want := map[string]role{
		"redis-s0-0": {policies.RoleMaster, false}, "redis-s0-1": {policies.RoleReplica, false},
		"redis-s1-0": {policies.RoleMaster, true}, "redis-s1-1": {policies.RoleReplica, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	if r := c.Members[4].Role; r != policies.RoleUnknown {
		t.Errorf("%s, not in the topology, has role %q, want unknown", c.Members[4].Name(), r)
	}
	if q := c.MasterQuorum(); q.Masters != 1 {
		t.Errorf("MasterQuorum counts %d masters, want 1 (the master without slots does not vote)", q.Masters)
	}
}
