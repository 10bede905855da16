package redisctl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Sentinel errors of Reintroduce, matched with errors.Is.
var (
	// ErrNotFresh: the node to re-introduce is not an empty node outside any cluster (it serves
	// slots, holds keys, or knows other nodes than the master it is to replicate).
	ErrNotFresh = errors.New("not a fresh, empty node")
	// ErrOldNodeAlive: the node to forget still answers as itself somewhere: it is not gone.
	ErrOldNodeAlive = errors.New("the old node still answers")
	// ErrReintroduceTimeout: the node did not become a replica of its master, or the old node
	// was not forgotten, before the timeout.
	ErrReintroduceTimeout = errors.New("node not re-introduced")
)

// Reintroduce brings back into its cluster the Redis node at addr that started empty in place of
// the replica oldID: its pod's claim was released, so it came back with an empty volume, without
// nodes.conf, as a new node (a new ID, knowing no other node). It makes the node meet masterID
// (CLUSTER MEET with the master's address and bus port, read from the cluster at addrs), waits
// until the handshake is done, makes it replicate masterID (CLUSTER REPLICATE: it starts a full
// sync), then makes every node of the cluster forget oldID (CLUSTER FORGET, which also bans the
// ID from gossip for 60 s), and checks that none lists it any more. It returns the node's ID.
//
// It changes nothing and returns at once when the node's ID is oldID (it kept its data); it skips
// to the forget when the node already replicates masterID (an operator re-added it); it refuses
// (ErrNotFresh) a node that serves slots, holds keys or belongs to a cluster without masterID
// (one that knows masterID, met before a run was stopped, is taken), and never forgets oldID while
// a node answers as oldID (ErrOldNodeAlive). progress (when not nil) is called with a one-line
// status at each stage. On timeout the error wraps ErrReintroduceTimeout. Wait for the full sync
// with WaitRejoin.
func (c *Client) Reintroduce(ctx context.Context, addr, oldID, masterID string, addrs []string, timeout time.Duration, progress func(string)) (string, error) {
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A node that has just started may answer LOADING while it reads its append-only file.
	var me View
	var last error
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		me, last = c.readView(ctx, addr)
		return last == nil, nil
	}); err != nil {
		return "", c.errf("re-introduce %s: %w: %w", addr, ErrReintroduceTimeout, last)
	}
	self, ok := me.Myself()
	if !ok {
		return "", c.errf("re-introduce %s: no myself line in CLUSTER NODES", addr)
	}
	if self.ID == oldID {
		say("node %s kept its identity: nothing to re-introduce", shortID(oldID))
		return self.ID, nil
	}
	if !(self.IsReplica() && self.MasterID == masterID) {
		if err := c.fresh(ctx, addr, me, masterID); err != nil {
			return "", c.errf("re-introduce %s (node %s): %w", addr, shortID(self.ID), err)
		}
		if err := c.meetAndReplicate(ctx, addr, masterID, addrs, say); err != nil {
			return "", c.errf("re-introduce %s (node %s): %w", addr, shortID(self.ID), err)
		}
	}
	if err := c.forgetEverywhere(ctx, oldID, append([]string{addr}, addrs...), say); err != nil {
		return "", c.errf("re-introduce %s (node %s): %w", addr, shortID(self.ID), err)
	}
	return self.ID, nil
}

// fresh returns nil when the node at addr (its view me) is empty and, if it knows other nodes,
// knows masterID (a MEET sent before, the REPLICATE not yet): it serves no slot and holds no key.
// A node of another cluster is not fresh.
func (c *Client) fresh(ctx context.Context, addr string, me View, masterID string) error {
	self, _ := me.Myself()
	if len(self.Slots) > 0 {
		return fmt.Errorf("%w: it serves slots %v", ErrNotFresh, self.Slots)
	}
	if _, knows := me.Node(masterID); !knows {
		for _, n := range me.Nodes {
			if !n.IsMyself() {
				return fmt.Errorf("%w: it knows node %s (%s) of another cluster", ErrNotFresh, shortID(n.ID), n.Addr())
			}
		}
	}
	v, err := c.do(ctx, addr, "dbsize")
	if err != nil {
		return err
	}
	if keys, _ := v.(int64); keys > 0 {
		return fmt.Errorf("%w: it holds %d keys", ErrNotFresh, keys)
	}
	return nil
}

// meetAndReplicate makes the node at addr meet masterID (its address read from the cluster at
// addrs) and replicate it once the handshake is done.
func (c *Client) meetAndReplicate(ctx context.Context, addr, masterID string, addrs []string, say func(string, ...any)) error {
	topo, err := c.Topology(ctx, addrs)
	if err != nil {
		return err
	}
	var master Node
	for _, n := range topo.Nodes {
		if n.ID == masterID {
			master = n
		}
	}
	if !master.IsUsable() || !master.IsMaster() {
		return fmt.Errorf("master %s is not a usable master of the cluster (flags %s)", shortID(masterID), strings.Join(master.Flags, ","))
	}
	meet := []any{"cluster", "meet", master.IP, strconv.Itoa(master.Port)}
	if master.BusPort > 0 {
		meet = append(meet, strconv.Itoa(master.BusPort))
	}
	if _, err := c.do(ctx, addr, meet...); err != nil {
		return err
	}
	say("CLUSTER MEET %s sent: waiting for the handshake", master.Addr())
	var last string
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.clusterNodes(ctx, addr)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, n := range nodes {
			if n.ID == masterID && n.IsUsable() {
				if _, err := c.do(ctx, addr, "cluster", "replicate", masterID); err != nil {
					last = err.Error()
					return false, nil
				}
				return true, nil
			}
		}
		last = "the handshake with the master is not done yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w: CLUSTER REPLICATE %s: %s", ErrReintroduceTimeout, shortID(masterID), last)
	}
	say("CLUSTER REPLICATE %s accepted: a full sync from %s begins", shortID(masterID), master.Addr())
	return nil
}

// forgetEverywhere makes every node of the cluster at addrs forget oldID (CLUSTER FORGET), until
// none lists it; it refuses while a node answers as oldID.
func (c *Client) forgetEverywhere(ctx context.Context, oldID string, addrs []string, say func(string, ...any)) error {
	var last string
	rounds := 0
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		topo, err := c.Topology(ctx, addrs)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var knowing []string
		for _, v := range topo.Views {
			self, _ := v.Myself()
			if self.ID == oldID {
				return false, fmt.Errorf("%w: %s answers as node %s", ErrOldNodeAlive, v.Addr, shortID(oldID))
			}
			if _, ok := v.Node(oldID); ok {
				knowing = append(knowing, v.Addr)
			}
		}
		if len(knowing) == 0 {
			return true, nil
		}
		rounds++
		for _, a := range knowing {
			if _, err := c.do(ctx, a, "cluster", "forget", oldID); err != nil && !strings.Contains(err.Error(), "Unknown node") {
				last = err.Error()
			}
		}
		last = fmt.Sprintf("%d nodes still list %s", len(knowing), shortID(oldID))
		return false, nil
	})
	if errors.Is(err, ErrOldNodeAlive) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: CLUSTER FORGET %s: %s", ErrReintroduceTimeout, shortID(oldID), last)
	}
	if rounds > 0 {
		say("every node forgot the old node %s (CLUSTER FORGET)", shortID(oldID))
	}
	return nil
}
