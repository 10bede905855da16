package redisctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// SlotShares splits the 16384 slots into k contiguous ranges, in order; the first 16384 mod k
// ranges get one slot more. It returns nil when k < 1.
func SlotShares(k int) []SlotRange {
	if k < 1 {
		return nil
	}
	base, extra := NumSlots/k, NumSlots%k
	out := make([]SlotRange, k)
	start := 0
	for i := range out {
		n := base
		if i < extra {
			n++
		}
		out[i] = SlotRange{Start: start, End: start + n - 1}
		start += n
	}
	return out
}

// MyID returns the node ID of the node at addr (CLUSTER MYID).
func (c *Client) MyID(ctx context.Context, addr string) (string, error) {
	v, err := c.do(ctx, addr, "cluster", "myid")
	if err != nil {
		return "", prefixed(err)
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", c.errf("%s: CLUSTER MYID: unexpected reply %T", addr, v)
	}
	return s, nil
}

// Meet makes the node at addr meet the node at peerAddr (CLUSTER MEET ip port; the peer's
// cluster bus port is taken to be port+10000, Redis' default). Gossip then introduces the peer to
// every other member. The handshake completes asynchronously.
func (c *Client) Meet(ctx context.Context, addr, peerAddr string) error {
	return prefixed(c.meet(ctx, addr, peerAddr))
}

func (c *Client) meet(ctx context.Context, addr, peerAddr string) error {
	host, port, err := net.SplitHostPort(peerAddr)
	if err != nil {
		return fmt.Errorf("%s: CLUSTER MEET %q: %w", addr, peerAddr, err)
	}
	_, err = c.do(ctx, addr, "cluster", "meet", host, port)
	return err
}

// AddSlots assigns ranges to the master at addr with CLUSTER ADDSLOTSRANGE (Redis 7), falling
// back to CLUSTER ADDSLOTS (Redis 6 and older) when the server does not know ADDSLOTSRANGE.
func (c *Client) AddSlots(ctx context.Context, addr string, ranges ...SlotRange) error {
	return prefixed(c.addSlots(ctx, addr, ranges...))
}

func (c *Client) addSlots(ctx context.Context, addr string, ranges ...SlotRange) error {
	if len(ranges) == 0 {
		return nil
	}
	args := []interface{}{"cluster", "addslotsrange"}
	for _, r := range ranges {
		args = append(args, r.Start, r.End)
	}
	_, err := c.do(ctx, addr, args...)
	if err == nil || !isUnknownCommand(err) {
		return err
	}
	for _, r := range ranges {
		for s := r.Start; s <= r.End; s += 1000 {
			args := []interface{}{"cluster", "addslots"}
			for i := s; i <= r.End && i < s+1000; i++ {
				args = append(args, i)
			}
			if _, err := c.do(ctx, addr, args...); err != nil {
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

func setEpoch(ctx context.Context, c *Client, addr string, epoch uint64) error {
	_, err := c.do(ctx, addr, "cluster", "set-config-epoch", epoch)
	return err
}

// SetConfigEpoch sets the config epoch of a fresh node (CLUSTER SET-CONFIG-EPOCH), as
// redis-cli --cluster create does so that masters start with distinct epochs. Redis refuses it
// once the node knows other nodes or has an epoch; that error is returned.
func (c *Client) SetConfigEpoch(ctx context.Context, addr string, epoch uint64) error {
	_, err := c.do(ctx, addr, "cluster", "set-config-epoch", epoch)
	return prefixed(err)
}

// Replicate makes the node at addr a replica of masterID (CLUSTER REPLICATE). The node must
// already know masterID (after Meet and gossip) and, if it is a master, serve no slots and hold
// no keys.
func (c *Client) Replicate(ctx context.Context, addr, masterID string) error {
	_, err := c.do(ctx, addr, "cluster", "replicate", masterID)
	return prefixed(err)
}

// ReplicateWhenKnown calls Replicate until the node at addr knows masterID and accepts, or
// timeout passes (it polls every 100 ms; "Unknown node" is expected while gossip spreads).
func (c *Client) ReplicateWhenKnown(ctx context.Context, addr, masterID string, timeout time.Duration) error {
	return prefixed(c.replicateWhenKnown(ctx, addr, masterID, timeout))
}

func (c *Client) replicateWhenKnown(ctx context.Context, addr, masterID string, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, last = c.do(ctx, addr, "cluster", "replicate", masterID)
		return last == nil, nil
	})
	if err != nil {
		return c.redact(fmt.Errorf("%s: replicate %s: %w (last error: %v)", addr, shortID(masterID), err, last))
	}
	return nil
}

// FormCluster forms a new cluster from fresh nodes, deterministically: shards[i][0] becomes the
// master of shard i, with config epoch i+1 and the contiguous slots SlotShares(len(shards))[i]
// (CLUSTER ADDSLOTSRANGE); the first master meets every other node (CLUSTER MEET); each
// shards[i][1:] node then becomes a replica of shard i's master (CLUSTER REPLICATE). Finally it
// waits, like WaitFormed, until the cluster passes the health gate: cluster_state:ok, all slots
// served, all views agree and every replica is in sync. A master that already serves its share
// is left as is, so a re-run after a partial failure continues. timeout bounds the whole.
func (c *Client) FormCluster(ctx context.Context, shards [][]string, timeout time.Duration) (*Health, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if len(shards) == 0 {
		return nil, errors.New("redisctl: form cluster: no shards")
	}
	for i, s := range shards {
		if len(s) == 0 {
			return nil, fmt.Errorf("redisctl: form cluster: shard %d has no node", i)
		}
	}
	shares := SlotShares(len(shards))
	masterIDs := make([]string, len(shards))
	var all []string
	for i, s := range shards {
		all = append(all, s...)
		addr := s[0]
		nodes, err := c.clusterNodes(ctx, addr)
		if err != nil {
			return nil, c.wrapf(err, "form cluster")
		}
		me, ok := (View{Nodes: nodes}).Myself()
		if !ok {
			return nil, c.errf("form cluster: %s: no myself line", addr)
		}
		masterIDs[i] = me.ID
		switch have := slotsString(me.Slots); {
		case have == shares[i].String():
			continue // already done by an earlier run
		case have != "":
			return nil, c.errf("form cluster: %s already serves slots %s, want %s", addr, have, shares[i])
		}
		if len(nodes) == 1 && me.ConfigEpoch == 0 {
			if err := setEpoch(ctx, c, addr, uint64(i+1)); err != nil {
				return nil, c.wrapf(err, "form cluster")
			}
		}
		if err := c.addSlots(ctx, addr, shares[i]); err != nil {
			return nil, c.wrapf(err, "form cluster")
		}
	}
	seed := shards[0][0]
	known, err := c.clusterNodes(ctx, seed)
	if err != nil {
		return nil, c.wrapf(err, "form cluster")
	}
	knownAddr := map[string]bool{}
	for _, n := range known {
		knownAddr[n.Addr()] = true
	}
	for _, a := range all[1:] {
		if knownAddr[a] {
			continue
		}
		if err := c.meet(ctx, seed, a); err != nil {
			return nil, c.wrapf(err, "form cluster")
		}
	}
	for i, s := range shards {
		for _, a := range s[1:] {
			if err := c.replicateWhenKnown(ctx, a, masterIDs[i], timeout); err != nil {
				return nil, c.wrapf(err, "form cluster")
			}
		}
	}
	klog.V(2).InfoS("Cluster formed, waiting for health", "shards", len(shards), "nodes", len(all))
	// A shard given without replicas has, by design, a master without a connected replica.
	alone := map[string]bool{}
	for i, s := range shards {
		if len(s) == 1 {
			alone[masterIDs[i]] = true
		}
	}
	return c.waitHealthy(ctx, all, timeout, func(r Reason) bool {
		return r.Code == ReasonNoConnectedReplica && alone[r.NodeID]
	})
}

// AddReplica adds the fresh node at addr to the cluster that seedAddr belongs to, as a replica of
// masterID: seedAddr meets it, then it replicates masterID once it knows it. It returns when
// CLUSTER REPLICATE was accepted; use WaitRejoin to wait until the new replica is in sync.
func (c *Client) AddReplica(ctx context.Context, addr, seedAddr, masterID string, timeout time.Duration) error {
	if err := c.meet(ctx, seedAddr, addr); err != nil {
		return c.wrapf(err, "add replica %s", addr)
	}
	if err := c.replicateWhenKnown(ctx, addr, masterID, timeout); err != nil {
		return c.wrapf(err, "add replica %s", addr)
	}
	return nil
}

// WaitFormed polls CheckHealth (every 100 ms, client-default HealthOptions) until the cluster of
// addrs is healthy or timeout passes. On timeout the error wraps the last *HealthError.
func (c *Client) WaitFormed(ctx context.Context, addrs []string, timeout time.Duration) (*Health, error) {
	return c.waitHealthy(ctx, addrs, timeout, func(Reason) bool { return false })
}

// waitHealthy is WaitFormed, tolerating the reasons skip accepts.
func (c *Client) waitHealthy(ctx context.Context, addrs []string, timeout time.Duration, skip func(Reason) bool) (*Health, error) {
	var h *Health
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		hh, err := c.CheckHealth(ctx, addrs, HealthOptions{})
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
		return h, c.wrapf(last, "wait for a healthy cluster: %v", err)
	}
	return h, nil
}

// WaitRejoin waits until the node at addr, after its pod came back (possibly on a new IP), is
// back in the cluster (SPEC "Safe disruption" step 6): it answers, its own CLUSTER NODES shows it
// a replica of masterID (any master when masterID is ""), its master's view lists it at addr,
// connected and not flagged fail/fail?, and it is in sync (master_link_status:up, offset lag and
// master_last_io_seconds_ago within the Client's limits). It polls every 100 ms and calls
// progress (when not nil) with a one-line status each time the status changes. On timeout the
// error wraps ErrRejoinTimeout and gives the last status.
func (c *Client) WaitRejoin(ctx context.Context, addr, masterID string, timeout time.Duration, progress func(string)) error {
	status := ""
	set := func(s string) {
		if s != status {
			status = s
			if progress != nil {
				progress(s)
			}
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, s := c.rejoinStatus(ctx, addr, masterID)
		set(s)
		return ok, nil
	})
	if err != nil {
		return c.errf("rejoin %s: %w after %s: %s: %w", addr, ErrRejoinTimeout, timeout, status, err)
	}
	return nil
}

func (c *Client) rejoinStatus(ctx context.Context, addr, masterID string) (bool, string) {
	nodes, err := c.clusterNodes(ctx, addr)
	if err != nil {
		return false, "not answering: " + err.Error()
	}
	v := View{Nodes: nodes}
	me, ok := v.Myself()
	if !ok {
		return false, "no myself line in CLUSTER NODES"
	}
	if !me.IsReplica() {
		return false, fmt.Sprintf("node %s reports flags %s, not a replica", shortID(me.ID), strings.Join(me.Flags, ","))
	}
	if masterID != "" && me.MasterID != masterID {
		return false, fmt.Sprintf("replica of %s, want %s", shortID(me.MasterID), shortID(masterID))
	}
	m, ok := v.Node(me.MasterID)
	if !ok || !m.IsUsable() {
		return false, fmt.Sprintf("master %s unknown or without address", shortID(me.MasterID))
	}
	mnodes, err := c.clusterNodes(ctx, m.Addr())
	if err != nil {
		return false, "master not answering: " + err.Error()
	}
	seen, ok := (View{Nodes: mnodes}).Node(me.ID)
	switch {
	case !ok:
		return false, fmt.Sprintf("master %s does not know the node yet", m.Addr())
	case seen.Addr() != addr:
		return false, fmt.Sprintf("master %s still has the node at %s", m.Addr(), seen.Addr())
	case seen.IsFailing():
		return false, fmt.Sprintf("master %s flags the node %s", m.Addr(), failFlag(seen))
	case seen.LinkState != LinkConnected:
		return false, fmt.Sprintf("master %s: link to the node %s", m.Addr(), seen.LinkState)
	}
	if _, prob := c.syncOf(ctx, me.ID, addr, m.ID, m.Addr(), HealthOptions{}); prob != "" {
		return false, "not in sync with " + m.Addr() + ": " + prob
	}
	return true, "in sync replica of " + m.Addr() + " (" + shortID(m.ID) + ")"
}
