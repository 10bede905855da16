package redisctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ErrNotStray is returned by RejoinStray when the node is not (or no longer) a stray master of
// the given owner: nothing was changed.
var ErrNotStray = errors.New("not a stray master")

// StrayMaster is a master that serves no slot but holds a copy of another master's keys, each
// slot of them marked importing from that master although no migration runs: the owner migrates
// none of them to it. Redis's start-up check (verifyClusterConfigWithData in cluster.c: "I have
// keys for slot N, but the slot is assigned to another node. Setting it to importing state.")
// leaves a node so when its nodes.conf says master and it holds keys of slots another node owns.
// Redis 7.0 writes such a nodes.conf for a replica that receives an UPDATE message about itself:
// the UPDATE handler flags a node it knows as a replica as master before
// clusterUpdateSlotsConfigWith discards the message ("Discarding UPDATE message about myself."),
// so the replica, still replicating, saves itself as a master without slots, and comes back from
// its next restart as a stray master. Before that restart it is one too, Replicating: its own
// CLUSTER NODES flags it a master without slots (and the other nodes learn so from its gossip)
// while its INFO replication still says role:slave of its old master. Either way its shard has
// lost its replica, and every health gate refuses (ReasonStrayMaster) until it replicates its
// owner again (Client.RejoinStray).
type StrayMaster struct {
	// Addr and ID are the stray master's.
	Addr, ID string
	// Owner is the master its importing slots come from (or, Replicating, the master it
	// replicates), as Topology.Nodes lists it.
	Owner Node
	// Slots are its importing slots, as ranges; Count how many slots they hold.
	Slots []SlotRange
	Count int
	// Replicating: the stray master has not restarted yet: no importing slot, its INFO
	// replication says role:slave of Owner. Redis refuses CLUSTER REPLICATE (it holds keys) and
	// FLUSHALL (a read-only replica) until its server restarts.
	Replicating bool
}

// String formats s as "<addr> (node <id>): N slots (ranges) importing from <owner addr> (node
// <id>)", or, Replicating, "<addr> (node <id>): flagged master without slots while it replicates
// <owner addr> (node <id>)".
func (s StrayMaster) String() string {
	if s.Replicating {
		return fmt.Sprintf("%s (node %s): flagged master without slots while it replicates %s (node %s)", s.Addr, shortID(s.ID), s.Owner.Addr(), shortID(s.Owner.ID))
	}
	return fmt.Sprintf("%s (node %s): %d slots (%s) importing from %s (node %s)", s.Addr, shortID(s.ID), s.Count, abbreviate(slotsString(s.Slots), 60), s.Owner.Addr(), shortID(s.Owner.ID))
}

// StrayMasters returns t's stray masters (see StrayMaster), sorted by address. A node is one
// when its own view says it is a master serving no slot, with at least one importing slot, every
// one of them from the same node, the owner: a master in t.Nodes, not failing, that answered and
// whose own view serves each of those slots and migrates none of them to the node; and no view
// migrates a slot to it. Anything else (an owner that did not answer, slots from two owners, a
// matching migrating slot: a resharding) is not stray.
func (t *Topology) StrayMasters() []StrayMaster {
	migratingTo := map[string]bool{} // node ID → some view migrates a slot to it
	for _, v := range t.Views {
		if me, ok := v.Myself(); ok {
			for _, m := range me.Migrating {
				migratingTo[m.NodeID] = true
			}
		}
	}
	var out []StrayMaster
	for _, v := range t.Views {
		me, ok := v.Myself()
		if !ok || !me.IsMaster() || len(me.Slots) > 0 || len(me.Migrating) > 0 || migratingTo[me.ID] {
			continue
		}
		if len(me.Importing) == 0 {
			if s, ok := t.replicatingStray(v, me); ok {
				out = append(out, s)
			}
			continue
		}
		ownerID := me.Importing[0].NodeID
		owner, known := t.Node(ownerID)
		if !known || !owner.IsMaster() || owner.IsFailing() {
			continue
		}
		ov, answered := t.View(owner.Addr())
		if !answered {
			continue
		}
		oself, ok := ov.Myself()
		if !ok || oself.ID != ownerID {
			continue
		}
		serves := make(map[int]bool, NumSlots/4)
		for _, r := range oself.Slots {
			for s := r.Start; s <= r.End; s++ {
				serves[s] = true
			}
		}
		stray := true
		slots := make([]int, 0, len(me.Importing))
		for _, m := range me.Importing {
			if m.NodeID != ownerID || !serves[m.Slot] {
				stray = false
				break
			}
			slots = append(slots, m.Slot)
		}
		if !stray {
			continue
		}
		sort.Ints(slots)
		var ranges []SlotRange
		for _, s := range slots {
			if l := len(ranges); l > 0 && ranges[l-1].End == s-1 {
				ranges[l-1].End = s
			} else {
				ranges = append(ranges, SlotRange{Start: s, End: s})
			}
		}
		out = append(out, StrayMaster{Addr: v.Addr, ID: me.ID, Owner: owner, Slots: ranges, Count: len(slots)})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Addr < out[b].Addr })
	return out
}

// replicatingStray reports whether view v, whose myself me is a master without slots and without
// importing slots, is a Replicating stray master: its INFO replication says role:slave with the
// link up to a master of t that serves slots and is not failing.
func (t *Topology) replicatingStray(v View, me Node) (StrayMaster, bool) {
	r := v.Replication
	if r.Role != "slave" || r.MasterLinkStatus != "up" || r.MasterHost == "" {
		return StrayMaster{}, false
	}
	owner, ok := t.NodeByAddr(net.JoinHostPort(r.MasterHost, strconv.Itoa(r.MasterPort)))
	if !ok || owner.ID == me.ID || !owner.IsMaster() || owner.IsFailing() || len(owner.Slots) == 0 {
		return StrayMaster{}, false
	}
	return StrayMaster{Addr: v.Addr, ID: me.ID, Owner: owner, Replicating: true}, true
}

// strayFix is what an SRE runs by hand to make stray master s replicate its owner again.
func strayFix(s StrayMaster) string {
	host, port, _ := strings.Cut(s.Addr, ":")
	fix := fmt.Sprintf("redis-cli -h %s -p %s FLUSHALL, then CLUSTER REPLICATE %s", host, port, s.Owner.ID)
	if s.Replicating {
		fix = fmt.Sprintf("restart its redis-server (redis-cli -h %s -p %s SHUTDOWN NOSAVE: its container restarts), then ", host, port) + fix
	}
	return fix
}

// RejoinStray makes the stray master at addr (see StrayMaster) a replica of ownerID again, as
// Redis would have made it had its nodes.conf not said master: it reads the cluster at addrs
// (addr included) and proceeds only while addr is still a stray master of ownerID, then empties
// it (FLUSHALL: its keys are a copy of slots ownerID serves at a newer config epoch, which a
// replica's full sync discards anyway) and sends CLUSTER REPLICATE ownerID, which closes its
// importing slots. It returns once the node reports itself a replica of ownerID, within timeout;
// the full sync that follows is Client.WaitRejoin's to wait for. ErrNotStray (nothing changed)
// when the check fails; ErrRejoinTimeout when the node does not report the new role in time.
// progress, when not nil, receives one line per step.
func (c *Client) RejoinStray(ctx context.Context, addr, ownerID string, addrs []string, timeout time.Duration, progress func(string)) error {
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	topo, err := c.Topology(ctx, append([]string{addr}, addrs...))
	if err != nil {
		return c.errf("rejoin stray master %s: %w", addr, err)
	}
	var stray *StrayMaster
	for _, s := range topo.StrayMasters() {
		if s.Addr == addr && s.Owner.ID == ownerID {
			stray = &s
		}
	}
	if stray == nil {
		return c.errf("rejoin stray master %s: %w of %s now", addr, ErrNotStray, shortID(ownerID))
	}
	if stray.Replicating {
		if stray, err = c.restartStray(ctx, *stray, addrs, say); err != nil {
			return c.errf("rejoin stray master %s: %w", addr, err)
		}
	}
	if _, err := c.do(ctx, addr, "flushall"); err != nil {
		return c.errf("rejoin stray master %s: %w", addr, err)
	}
	say("FLUSHALL: its copy of %d slots of %s discarded", stray.Count, stray.Owner.Addr())
	if _, err := c.do(ctx, addr, "cluster", "replicate", ownerID); err != nil {
		return c.errf("rejoin stray master %s: %w", addr, err)
	}
	say("CLUSTER REPLICATE %s accepted: a full sync from %s begins", shortID(ownerID), stray.Owner.Addr())
	var last string
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.clusterNodes(ctx, addr)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		me, _ := View{Nodes: nodes}.Myself()
		last = "flags " + strings.Join(me.Flags, ",")
		return me.IsReplica() && me.MasterID == ownerID, nil
	}); err != nil {
		return c.errf("rejoin stray master %s: %w: not a replica of %s (%s): %w", addr, ErrRejoinTimeout, shortID(ownerID), last, err)
	}
	return nil
}

// restartStray restarts the server of Replicating stray master s (SHUTDOWN NOSAVE: it serves
// nothing; its container restarts with its data, as the kubelet restarts an exited container)
// and waits until it answers again as the same node, a master: a stray master of the same owner
// (its start-up check marked the slots of its keys importing), or an empty master without slots
// (it held no key). It returns what it came back as.
func (c *Client) restartStray(ctx context.Context, s StrayMaster, addrs []string, say func(string, ...any)) (*StrayMaster, error) {
	// The server exits before it answers: the error is the connection's, expected.
	_, _ = c.do(ctx, s.Addr, "shutdown", "nosave")
	say("SHUTDOWN NOSAVE: Redis refuses CLUSTER REPLICATE and FLUSHALL while it replicates flagged a master; waiting for its server to restart")
	var back *StrayMaster
	last := "not answering"
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, false, func(ctx context.Context) (bool, error) {
		topo, err := c.Topology(ctx, append([]string{s.Addr}, addrs...))
		if err != nil {
			return false, nil
		}
		v, ok := topo.View(s.Addr)
		if !ok {
			return false, nil
		}
		me, _ := v.Myself()
		switch {
		case me.ID != s.ID:
			return false, fmt.Errorf("%s answers as node %s, not %s", s.Addr, shortID(me.ID), shortID(s.ID))
		case v.Replication.Role != "master":
			last = "still replicating: the server has not restarted yet"
			return false, nil
		case !me.IsMaster() || len(me.Slots) > 0:
			return false, fmt.Errorf("%w: it restarted with flags %s and %d slots", ErrNotStray, strings.Join(me.Flags, ","), me.SlotCount())
		}
		for _, x := range topo.StrayMasters() {
			if x.Addr == s.Addr && x.Owner.ID == s.Owner.ID {
				back = &x
				return true, nil
			}
		}
		if len(me.Importing) == 0 {
			n, err := c.do(ctx, s.Addr, "dbsize")
			if keys, _ := n.(int64); err == nil && keys == 0 {
				back = &StrayMaster{Addr: s.Addr, ID: s.ID, Owner: s.Owner}
				return true, nil
			}
		}
		last = "restarted, but neither a stray master of " + shortID(s.Owner.ID) + " nor empty"
		return false, nil
	}); err != nil {
		return nil, fmt.Errorf("%w: after SHUTDOWN NOSAVE: %s: %w", ErrRejoinTimeout, last, err)
	}
	say("restarted: %s", back)
	return back, nil
}
