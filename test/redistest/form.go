package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Forming a cluster is test-only work (the rebalancer never creates or grows a cluster): it
// lives here, built on redisctl's public Client (Do, ClusterNodes, CheckHealth), for Start, the
// e2e harness and its operator stand-in.

// SlotShares splits the 16384 slots into k contiguous ranges, in order; the first 16384 mod k
// ranges get one slot more. It returns nil when k < 1.
func SlotShares(k int) []redisctl.SlotRange {
	if k < 1 {
		return nil
	}
	base, extra := redisctl.NumSlots/k, redisctl.NumSlots%k
	out := make([]redisctl.SlotRange, k)
	start := 0
	for i := range out {
		n := base
		if i < extra {
			n++
		}
		out[i] = redisctl.SlotRange{Start: start, End: start + n - 1}
		start += n
	}
	return out
}

// FormCluster forms a new cluster from fresh nodes with c, deterministically: shards[i][0]
// becomes the master of shard i, with config epoch i+1 (CLUSTER SET-CONFIG-EPOCH, as
// redis-cli --cluster create does) and the contiguous slots SlotShares(len(shards))[i]
// (CLUSTER ADDSLOTSRANGE, or ADDSLOTS on Redis 6); the first master meets every other node
// (CLUSTER MEET); each shards[i][1:] node then becomes a replica of shard i's master (CLUSTER
// REPLICATE, retried while gossip spreads). Finally it waits, like WaitFormed, until the cluster
// passes redisctl's health gate: cluster_state:ok, all slots served, all views agree and every
// replica is in sync. A master that already serves its share is left as is, so a re-run after a
// partial failure continues. timeout bounds the whole.
func FormCluster(ctx context.Context, c *redisctl.Client, shards [][]string, timeout time.Duration) (*redisctl.Health, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if len(shards) == 0 {
		return nil, errors.New("redistest: form cluster: no shards")
	}
	for i, s := range shards {
		if len(s) == 0 {
			return nil, fmt.Errorf("redistest: form cluster: shard %d has no node", i)
		}
	}
	shares := SlotShares(len(shards))
	masterIDs := make([]string, len(shards))
	var all []string
	for i, s := range shards {
		all = append(all, s...)
		addr := s[0]
		nodes, err := c.ClusterNodes(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("redistest: form cluster: %w", err)
		}
		me, ok := redisctl.View{Nodes: nodes}.Myself()
		if !ok {
			return nil, fmt.Errorf("redistest: form cluster: %s: no myself line", addr)
		}
		masterIDs[i] = me.ID
		switch {
		case serves(me.Slots, shares[i]):
			continue // already done by an earlier run
		case len(me.Slots) > 0:
			return nil, fmt.Errorf("redistest: form cluster: %s already serves slots %v, want %s", addr, me.Slots, shares[i])
		}
		if len(nodes) == 1 && me.ConfigEpoch == 0 {
			if _, err := c.Do(ctx, addr, "cluster", "set-config-epoch", i+1); err != nil {
				return nil, fmt.Errorf("redistest: form cluster: %w", err)
			}
		}
		if err := addSlots(ctx, c, addr, shares[i]); err != nil {
			return nil, fmt.Errorf("redistest: form cluster: %w", err)
		}
	}
	seed := shards[0][0]
	known, err := c.ClusterNodes(ctx, seed)
	if err != nil {
		return nil, fmt.Errorf("redistest: form cluster: %w", err)
	}
	knownAddr := map[string]bool{}
	for _, n := range known {
		knownAddr[n.Addr()] = true
	}
	for _, a := range all[1:] {
		if knownAddr[a] {
			continue
		}
		if err := meet(ctx, c, seed, a); err != nil {
			return nil, fmt.Errorf("redistest: form cluster: %w", err)
		}
	}
	for i, s := range shards {
		for _, a := range s[1:] {
			if err := replicateWhenKnown(ctx, c, a, masterIDs[i], seed, timeout); err != nil {
				return nil, fmt.Errorf("redistest: form cluster: %w", err)
			}
		}
	}
	// A shard given without replicas has, by design, a master without a connected replica.
	alone := map[string]bool{}
	for i, s := range shards {
		if len(s) == 1 {
			alone[masterIDs[i]] = true
		}
	}
	return waitHealthy(ctx, c, all, timeout, func(r redisctl.Reason) bool {
		return r.Code == redisctl.ReasonNoConnectedReplica && alone[r.NodeID]
	})
}

// AddReplica adds the fresh node at addr to the cluster that seedAddr belongs to, as a replica of
// masterID, as an operator does after a scale-up or a re-created pod with an empty volume:
// seedAddr meets it, then it replicates masterID once it knows it. It returns when CLUSTER
// REPLICATE was accepted; use redisctl's Client.WaitRejoin to wait until the new replica is in
// sync.
func AddReplica(ctx context.Context, c *redisctl.Client, addr, seedAddr, masterID string, timeout time.Duration) error {
	if err := meet(ctx, c, seedAddr, addr); err != nil {
		return fmt.Errorf("redistest: add replica %s: %w", addr, err)
	}
	if err := replicateWhenKnown(ctx, c, addr, masterID, seedAddr, timeout); err != nil {
		return fmt.Errorf("redistest: add replica %s: %w", addr, err)
	}
	return nil
}

// WaitFormed polls c.CheckHealth (every 100 ms, the client's default HealthOptions) until the
// cluster of addrs is healthy or timeout passes. On timeout the error wraps the last
// *redisctl.HealthError.
func WaitFormed(ctx context.Context, c *redisctl.Client, addrs []string, timeout time.Duration) (*redisctl.Health, error) {
	return waitHealthy(ctx, c, addrs, timeout, func(redisctl.Reason) bool { return false })
}

// waitHealthy is WaitFormed, tolerating the reasons skip accepts.
func waitHealthy(ctx context.Context, c *redisctl.Client, addrs []string, timeout time.Duration, skip func(redisctl.Reason) bool) (*redisctl.Health, error) {
	var h *redisctl.Health
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		hh, err := c.CheckHealth(ctx, addrs, redisctl.HealthOptions{})
		if hh != nil {
			h = hh
			err = hh.Except(skip)
		}
		last = err
		return err == nil, nil
	})
	if err != nil {
		if last == nil {
			last = err
		}
		return h, fmt.Errorf("redistest: wait for a healthy cluster: %v: %w", err, last)
	}
	return h, nil
}

// serves reports whether slots are exactly the range want.
func serves(slots []redisctl.SlotRange, want redisctl.SlotRange) bool {
	n := 0
	for _, r := range slots {
		if r.Start < want.Start || r.End > want.End {
			return false
		}
		n += r.Len()
	}
	return len(slots) > 0 && n == want.Len()
}

// meet makes the node at addr meet the node at peerAddr (CLUSTER MEET ip port; the peer's cluster
// bus port is taken to be port+10000, Redis' default). The handshake completes asynchronously.
func meet(ctx context.Context, c *redisctl.Client, addr, peerAddr string) error {
	host, port, err := net.SplitHostPort(peerAddr)
	if err != nil {
		return fmt.Errorf("%s: CLUSTER MEET %q: %w", addr, peerAddr, err)
	}
	_, err = c.Do(ctx, addr, "cluster", "meet", host, port)
	return err
}

// addSlots assigns ranges to the master at addr with CLUSTER ADDSLOTSRANGE (Redis 7), falling
// back to CLUSTER ADDSLOTS (Redis 6 and older) when the server does not know ADDSLOTSRANGE.
func addSlots(ctx context.Context, c *redisctl.Client, addr string, ranges ...redisctl.SlotRange) error {
	if len(ranges) == 0 {
		return nil
	}
	args := []interface{}{"cluster", "addslotsrange"}
	for _, r := range ranges {
		args = append(args, r.Start, r.End)
	}
	_, err := c.Do(ctx, addr, args...)
	if err == nil || !isUnknownCommand(err) {
		return err
	}
	for _, r := range ranges {
		for s := r.Start; s <= r.End; s += 1000 {
			args := []interface{}{"cluster", "addslots"}
			for i := s; i <= r.End && i < s+1000; i++ {
				args = append(args, i)
			}
			if _, err := c.Do(ctx, addr, args...); err != nil {
				return err
			}
		}
	}
	return nil
}

func isUnknownCommand(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "unknown subcommand") || strings.Contains(s, "unknown command")
}

// rememeetEvery is how often replicateWhenKnown meets the seed again while the node does not
// know its master.
const rememeetEvery = 3 * time.Second

// replicateWhenKnown sends CLUSTER REPLICATE masterID to the node at addr every 100 ms until it
// knows masterID and accepts ("Unknown node" is expected while gossip spreads), or timeout
// passes. While the node answers "Unknown node" it meets seedAddr again every rememeetEvery: a
// handshake that timed out (cluster-node-timeout, on a busy machine) is never retried by Redis,
// and the node would stay alone.
func replicateWhenKnown(ctx context.Context, c *redisctl.Client, addr, masterID, seedAddr string, timeout time.Duration) error {
	var last error
	lastMeet := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, last = c.Do(ctx, addr, "cluster", "replicate", masterID)
		if last != nil && strings.Contains(last.Error(), "Unknown node") && time.Since(lastMeet) > rememeetEvery {
			lastMeet = time.Now()
			_ = meet(ctx, c, addr, seedAddr) // best effort; the next REPLICATE tells
		}
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s: replicate %.8s: %w (last error: %v)", addr, masterID, err, last)
	}
	return nil
}
