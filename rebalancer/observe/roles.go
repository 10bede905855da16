package observe

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// TopologyReader reads the Redis topology (*redisctl.Client implements it).
type TopologyReader interface {
	// AddrOf returns the Redis address of a pod IP.
	AddrOf(ip string) string
	// Topology is redisctl.Client.Topology.
	Topology(ctx context.Context, addrs []string) (*redisctl.Topology, error)
}

// ApplyRoles reads the Redis topology through the members' pod IPs (rc.AddrOf) and sets each
// member's Role from what Redis reports (CLUSTER NODES), and EmptyMaster for a master that serves
// no slot; members Redis does not list, and members without a pod IP or terminating, get
// RoleUnknown. It returns the topology read, or an error when no member has
// a pod IP or no node answers.
func ApplyRoles(ctx context.Context, rc TopologyReader, c *policies.Cluster) (*redisctl.Topology, error) {
	var addrs []string
	for _, m := range c.Members {
		if m.Pod.Status.PodIP != "" && !m.Terminating {
			addrs = append(addrs, rc.AddrOf(m.Pod.Status.PodIP))
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("no member has a pod IP")
	}
	topo, err := rc.Topology(ctx, addrs)
	if err != nil {
		return nil, fmt.Errorf("read Redis topology: %w", err)
	}
	byAddr := map[string]redisctl.Node{}
	for _, n := range topo.Nodes {
		byAddr[n.Addr()] = n
	}
	for _, m := range c.Members {
		m.Role, m.EmptyMaster = policies.RoleUnknown, false
		if m.Pod.Status.PodIP == "" || m.Terminating {
			continue
		}
		if n, ok := byAddr[rc.AddrOf(m.Pod.Status.PodIP)]; ok {
			m.Role = policies.ParseRole(n.Role())
			// A master serving no slot does not vote (MasterQuorum counts masters serving slots).
			m.EmptyMaster = n.IsMaster() && len(n.Slots) == 0
		}
	}
	return topo, nil
}
