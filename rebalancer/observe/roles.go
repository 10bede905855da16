package observe

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

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

// ApplyRedis reads the Redis topology through the members' pod IPs (rc.AddrOf) and applies it to
// the cluster (policies.Cluster.ApplyRedis): each member's Role from what Redis reports (CLUSTER
// NODES), EmptyMaster for a master that serves no slot, and, as the shard source says, its shard.
// Members Redis does not list, and members without a pod IP or terminating, get RoleUnknown. It
// returns the topology read, or an error when no member has a pod IP or no node answers (the
// cluster is then left as the model built it).
func ApplyRedis(ctx context.Context, rc TopologyReader, c *policies.Cluster) (*redisctl.Topology, error) {
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
		switch {
		case topo != nil && len(topo.Views) == 0 && len(topo.Unreachable) > 0:
			if why := notRedisCluster(c, topo.Unreachable); why != "" {
				return nil, fmt.Errorf("%w: %s", ErrNotRedis, why)
			}
			return nil, unanswered(topo.Unreachable)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("no Redis node answered before the deadline (%s): %w", policies.Plural(len(addrs), "node"), err)
		}
		return nil, fmt.Errorf("read Redis topology: %w", err)
	}
	c.ApplyRedis(RedisNodes(topo.Nodes))
	return topo, nil
}

// ErrNotRedis is what ApplyRedis's error wraps when the cluster's pods are no Redis Cluster at
// the Redis port: every member is Ready, and each refused the connection or answered that it is
// no Redis Cluster node (cluster support disabled, or not the Redis protocol). A workload of
// another application that shares the cluster label looks so; a Redis Cluster that is down does
// not (its pods are not Ready).
var ErrNotRedis = errors.New("not a Redis Cluster")

// notRedisCluster says why c's pods are no Redis Cluster (ErrNotRedis), "" when they may be:
// errs are the errors of every node queried, none of which answered.
func notRedisCluster(c *policies.Cluster, errs map[string]error) string {
	for _, m := range c.Members {
		if !PodReady(m.Pod) {
			return ""
		}
	}
	refused, other := 0, 0
	example := ""
	for _, addr := range slices.Sorted(maps.Keys(errs)) {
		err := errs[addr]
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			refused++
			if example == "" {
				example = fmt.Sprintf("; %s: %v", addr, err)
			}
		case strings.Contains(err.Error(), "cluster support disabled"), // a Redis without cluster mode
			strings.Contains(err.Error(), "redis: invalid reply"), strings.Contains(err.Error(), "redis: can't parse"): // not the Redis protocol
			other++
		default:
			return ""
		}
	}
	return fmt.Sprintf("its %d Ready pods are no Redis Cluster nodes (%d refused the connection, %d answered without cluster mode%s)", len(c.Members), refused, other, example)
}

// DropNotRedis removes from m.Clusters the clusters whose error in errs (by cluster key, as
// ReadRedis returns them) is ErrNotRedis, and returns their keys: with a policy that names no
// Redis workload (no workload selector), a workload is Redis only when its pods answer as Redis
// Cluster nodes.
func DropNotRedis(m *policies.Model, errs map[string]error) []string {
	var dropped []string
	kept := m.Clusters[:0]
	for _, c := range m.Clusters {
		if err, ok := errs[c.Key()]; ok && errors.Is(err, ErrNotRedis) {
			dropped = append(dropped, c.Key())
			continue
		}
		kept = append(kept, c)
	}
	m.Clusters = kept
	return dropped
}

// NamesWorkloads reports whether opts name the Redis workloads (a workload selector): otherwise
// a workload is taken for Redis only when its pods answer as Redis Cluster nodes (DropNotRedis).
func NamesWorkloads(opts policies.Options) bool {
	return opts.WorkloadSelector != nil && !opts.WorkloadSelector.Empty()
}

// RedisNodes converts CLUSTER NODES lines (a merged topology's, or one file's) into what the
// model reads, leaving out nodes still in handshake (their IDs are temporary).
func RedisNodes(nodes []redisctl.Node) []policies.RedisNode {
	out := make([]policies.RedisNode, 0, len(nodes))
	for _, n := range nodes {
		if n.HasFlag(redisctl.FlagHandshake) {
			continue
		}
		rn := policies.RedisNode{
			ID: n.ID, IP: n.IP, Hostname: n.Hostname, Role: policies.ParseRole(n.Role()), MasterID: n.MasterID,
			Failing: n.IsFailing() || n.HasFlag(redisctl.FlagNoAddr),
		}
		for _, r := range n.Slots {
			rn.Slots = append(rn.Slots, [2]int{r.Start, r.End})
		}
		out = append(out, rn)
	}
	return out
}

// DefaultRedisDeadline bounds each pass of the commands that reads every cluster's Redis at once:
// the roles and shards (ReadRedis), then the health (JudgeHealth per cluster).
const DefaultRedisDeadline = 10 * time.Second

// ReadRedis is ApplyRedis for every cluster at once, under ctx's deadline: the clusters are read
// concurrently, their nodes at most redisctl.Options.MaxConcurrentReads at a time in all, so a
// Redis that accepts connections and never answers costs one read timeout per wave of nodes, and
// nothing past ctx's deadline, whatever the number of clusters. It returns, by cluster key, why
// the roles of a cluster stay unknown (its members keep the roles and shards the model gave
// them). The nodes read are forgotten afterwards (redisctl.Client.Forget): a check of thousands
// of pods keeps no connection open.
func ReadRedis(ctx context.Context, rc *redisctl.Client, clusters []*policies.Cluster) map[string]error {
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			topo, err := ApplyRedis(ctx, rc, c)
			ForgetCluster(rc, c, topo)
			if err != nil {
				mu.Lock()
				errs[c.Key()] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// ForgetCluster closes rc's connections to cluster c's nodes (redisctl.Client.Forget): its
// members' pod IPs and the nodes of topo (nil: none), so that reading thousands of pods keeps no
// connection open.
func ForgetCluster(rc *redisctl.Client, c *policies.Cluster, topo *redisctl.Topology) {
	for _, m := range c.Members {
		if m.Pod.Status.PodIP != "" {
			rc.Forget(rc.AddrOf(m.Pod.Status.PodIP))
		}
	}
	if topo != nil {
		for _, n := range topo.Nodes {
			rc.Forget(n.Addr())
		}
	}
}

// unanswered says why no node answered, by cause ("no Redis node answered (12 nodes: 9 timed
// out, 3 not read before the deadline)"), and wraps the error of the first node by address.
func unanswered(errs map[string]error) error {
	addrs := make([]string, 0, len(errs))
	for a := range errs {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	counts := map[string]int{}
	var causes []string
	for _, a := range addrs {
		c := causeOf(errs[a])
		if counts[c] == 0 {
			causes = append(causes, c)
		}
		counts[c]++
	}
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = fmt.Sprintf("%d %s", counts[c], c)
	}
	return fmt.Errorf("no Redis node answered (%s: %s): %w", policies.Plural(len(addrs), "node"), strings.Join(parts, ", "), errs[addrs[0]])
}

// causeOf names the cause of a node's error in a few words.
func causeOf(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "not read"):
		return "not read before the deadline"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused the connection"
	case errors.Is(err, context.Canceled):
		return "not read (canceled)"
	}
	return "failed (" + err.Error() + ")"
}
