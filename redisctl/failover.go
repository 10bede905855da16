package redisctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoInSyncReplica: ChooseReplica found no in-sync replica for the master.
	ErrNoInSyncReplica = errors.New("no in-sync replica")
	// ErrNotInSync: Failover refused because the replica is not in sync with its master.
	ErrNotInSync = errors.New("replica not in sync")
	// ErrNotReplica: Failover was asked of a node that is not a replica.
	ErrNotReplica = errors.New("not a replica")
	// ErrFailoverNotVerified: the failover was not seen complete before the timeout.
	ErrFailoverNotVerified = errors.New("failover not verified")
	// ErrRejoinTimeout: WaitRejoin's node was not back in sync before the timeout.
	ErrRejoinTimeout = errors.New("node not rejoined")
)

// FailoverMode is the variant of CLUSTER FAILOVER (https://redis.io/commands/cluster-failover/).
type FailoverMode int

const (
	// FailoverDefault is plain CLUSTER FAILOVER: the master stops its clients, the replica
	// catches up with the master's replication offset, then takes over. No acknowledged write is
	// lost. The only mode the rebalancer uses unless told otherwise.
	FailoverDefault FailoverMode = iota
	// FailoverForce is CLUSTER FAILOVER FORCE: no handshake with the master (for a master that is
	// down); the replica still needs a majority of masters. Writes the replica has not received
	// are lost.
	FailoverForce
	// FailoverTakeover is CLUSTER FAILOVER TAKEOVER: no handshake and no election; the replica
	// bumps the config epoch on its own. Writes can be lost and epochs can collide.
	FailoverTakeover
)

// String returns "default", "force" or "takeover".
func (m FailoverMode) String() string {
	switch m {
	case FailoverDefault:
		return "default"
	case FailoverForce:
		return "force"
	case FailoverTakeover:
		return "takeover"
	}
	return fmt.Sprintf("FailoverMode(%d)", int(m))
}

// FailoverOptions tunes Failover.
type FailoverOptions struct {
	// Mode is the CLUSTER FAILOVER variant; FailoverDefault unless the caller explicitly opts in
	// to FORCE or TAKEOVER.
	Mode FailoverMode
	// Timeout bounds the whole failover, from the pre-check to the last verification;
	// 30 s when 0.
	Timeout time.Duration
	// AllAddrs are the nodes that must all show the new master serving the slots. When empty,
	// every node with an address in the replica's view that is not flagged fail or fail?.
	// Nodes that do not answer are skipped (and listed in FailoverResult.Unreachable).
	AllAddrs []string
	// PollInterval is the time between two verification rounds; 25 ms when 0.
	PollInterval time.Duration
}

// FailoverResult describes a verified failover.
type FailoverResult struct {
	// NewMasterID and NewMasterAddr are the promoted replica.
	NewMasterID, NewMasterAddr string
	// OldMasterID and OldMasterAddr are the former master, now its replica.
	OldMasterID, OldMasterAddr string
	// Slots are the slots that moved with the role.
	Slots []SlotRange
	// Mode is the CLUSTER FAILOVER variant used.
	Mode FailoverMode
	// LagBytes is the replica's offset lag measured by the pre-check (-1 when not measured).
	LagBytes int64
	// Duration is the time from sending CLUSTER FAILOVER to the verification that every
	// reachable node shows the new master (resolution: PollInterval).
	Duration time.Duration
	// Verified are the addresses that confirmed the new master; Unreachable those that did not
	// answer in the last round.
	Verified, Unreachable []string
	// Unbound are the addresses of the nodes a verification round found serving none of the
	// shard's slots (Redis 7.0's stale-PONG race: see Failover), each once, in the order found.
	Unbound []string
}

// ChooseReplica returns the best in-sync replica of masterID, for a failover. Only replicas that
// are not flagged fail/fail?, have completed the handshake, and are in sync right now (read
// fresh: role, master address, master_link_status, offset lag, master_last_io_seconds_ago, with
// the Client's MaxLagBytes and MaxLastIOSeconds) qualify. Among those, replicas for which prefer
// returns true (for example "its pod placement complies"; nil prefers none) come first, then the
// smallest lag, then the smallest master_last_io_seconds_ago when they differ by more than a
// second (a replica acknowledges every second, so 0 against 1 says only when each last did), then
// the address. The error wraps ErrNoInSyncReplica and says why each replica was rejected.
func (c *Client) ChooseReplica(ctx context.Context, topo *Topology, masterID string, prefer func(Node) bool) (Node, error) {
	m, ok := topo.Node(masterID)
	if !ok {
		return Node{}, c.errf("choose replica of %s: master not in topology", shortID(masterID))
	}
	if !m.IsMaster() {
		return Node{}, c.errf("choose replica of %s (%s): node is not a master", shortID(masterID), m.Addr())
	}
	type cand struct {
		n     Node
		s     ReplicaSync
		pref  bool
		prob  string
		valid bool
	}
	var cands []cand
	for _, r := range topo.ReplicasOf(masterID) {
		cd := cand{n: r}
		switch {
		case r.IsFailing():
			cd.prob = "flagged " + failFlag(r)
		case !r.IsUsable():
			cd.prob = "no address or in handshake"
		default:
			cd.s, cd.prob = c.syncOf(ctx, r.ID, r.Addr(), m.ID, m.Addr(), HealthOptions{})
			cd.valid = cd.prob == ""
		}
		if cd.valid && prefer != nil {
			cd.pref = prefer(r)
		}
		cands = append(cands, cd)
	}
	var best []cand
	var rejected []string
	for _, cd := range cands {
		if cd.valid {
			best = append(best, cd)
		} else {
			rejected = append(rejected, fmt.Sprintf("%s: %s", cd.n.Addr(), cd.prob))
		}
	}
	if len(best) == 0 {
		why := "it has no replica"
		if len(rejected) > 0 {
			why = strings.Join(rejected, "; ")
		}
		return Node{}, c.errf("choose replica of %s (%s): %w: %s", shortID(masterID), m.Addr(), ErrNoInSyncReplica, why)
	}
	sort.SliceStable(best, func(a, b int) bool {
		x, y := best[a], best[b]
		if x.pref != y.pref {
			return x.pref
		}
		if x.s.LagBytes != y.s.LagBytes {
			return x.s.LagBytes < y.s.LagBytes
		}
		if d := x.s.LastIOSeconds - y.s.LastIOSeconds; d > 1 || d < -1 {
			return d < 0
		}
		return x.n.Addr() < y.n.Addr()
	})
	return best[0].n, nil
}

// syncOf reads INFO replication from the replica, then from its master, and evaluates whether the
// replica is in sync. prob is "" when it is, else every problem, joined.
func (c *Client) syncOf(ctx context.Context, id, addr, masterID, masterAddr string, opts HealthOptions) (ReplicaSync, string) {
	opts = opts.withDefaults(c.opts.MaxLagBytes, c.opts.MaxLastIOSeconds)
	rr, err := c.infoReplication(ctx, addr)
	if err != nil {
		return ReplicaSync{ID: id, Addr: addr, LagBytes: -1}, "not answering: " + err.Error()
	}
	var mp *Replication
	if mr, err := c.infoReplication(ctx, masterAddr); err == nil {
		mp = &mr
	}
	s := EvaluateSync(id, addr, masterID, masterAddr, rr, mp, opts)
	var msgs []string
	for _, p := range s.Problems {
		msgs = append(msgs, string(p.Code)+": "+p.Message)
	}
	return s, strings.Join(msgs, ", ")
}

// Failover promotes the replica at replicaAddr to master of its shard with CLUSTER FAILOVER
// (before its master's pod is disrupted) and verifies that it really happened.
//
// Before sending anything, in FailoverDefault mode, it checks that the replica is in sync (as
// ChooseReplica does) and refuses with an error wrapping ErrNotInSync otherwise; FORCE and
// TAKEOVER skip that check, as they exist for a master that is down. Then it sends CLUSTER
// FAILOVER [FORCE|TAKEOVER] and polls until (1) the replica reports role:master in INFO
// replication, (2) the old master reports itself, in its own CLUSTER NODES, a replica of the new
// master (skipped in FORCE/TAKEOVER mode while the old master does not answer), and (3) every
// reachable node of AllAddrs shows the new master, flagged master, serving exactly the old
// master's slots. When opts.Timeout passes first, the error wraps ErrFailoverNotVerified and says
// what each check saw last; Failover then leaves the cluster alone (a default-mode failover that
// did not complete is aborted by Redis itself after its manual-failover timeout of 5 s).
//
// Redis lets a replica start an election only 4 × cluster-node-timeout after its previous one,
// manual failovers included (its log says "Failover attempt expired" meanwhile). A replica
// promoted and demoted again within that window therefore waits; when the wait outlasts the 5 s
// manual-failover window, Redis aborts the failover and Failover reports it not verified.
//
// Redis 7.0 can leave a node serving none of the shard's slots for a while: the old master,
// which pings its replica every 100 ms during a manual failover, may read the replica's PONG
// to its last ping (sent while still a replica, on the connection the old master opened) after
// the new master's announcement (on the new master's own connection); it then takes the stale
// message for a master turned replica and unbinds the slots, and answers "CLUSTERDOWN Hash slot
// not served" for them until it hears from the new master again, which Redis only guarantees
// within cluster-node-timeout/2. A third node that hears the old master's new role before the
// new master's announcement is left the same way. (Later Redis versions ignore the stale
// message.) When a round finds a node whose view has no master serving the shard's slots,
// Failover makes the new master CLUSTER MEET it (at most every 250 ms per node): the MEET
// carries the new master's claim, which the node binds at once; MEET of a known node changes
// nothing else (the new master drops the handshake once the node answers with its known ID).
// The node is listed in FailoverResult.Unbound.
func (c *Client) Failover(ctx context.Context, replicaAddr string, opts FailoverOptions) (*FailoverResult, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 25 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	fail := func(format string, args ...interface{}) error {
		return c.errf("failover %s: "+format, append([]interface{}{replicaAddr}, args...)...)
	}

	view, err := c.clusterNodes(ctx, replicaAddr)
	if err != nil {
		return nil, fail("%w", err)
	}
	me, ok := (View{Nodes: view}).Myself()
	if !ok {
		return nil, fail("no myself line in CLUSTER NODES")
	}
	if !me.IsReplica() || me.MasterID == "" {
		return nil, fail("%w: node %s has flags %s", ErrNotReplica, shortID(me.ID), strings.Join(me.Flags, ","))
	}
	old, ok := (View{Nodes: view}).Node(me.MasterID)
	if !ok {
		return nil, fail("master %s is not in the replica's view", shortID(me.MasterID))
	}
	res := &FailoverResult{
		NewMasterID: me.ID, NewMasterAddr: replicaAddr,
		OldMasterID: old.ID, OldMasterAddr: old.Addr(),
		Slots: normalizeSlots(old.Slots), Mode: opts.Mode, LagBytes: -1,
	}
	if opts.Mode == FailoverDefault {
		s, prob := c.syncOf(ctx, me.ID, replicaAddr, old.ID, old.Addr(), HealthOptions{})
		if prob != "" {
			return nil, fail("%w with master %s: %s", ErrNotInSync, old.Addr(), prob)
		}
		res.LagBytes = s.LagBytes
	}
	verify := opts.AllAddrs
	if len(verify) == 0 {
		for _, n := range view {
			if n.IsUsable() && !n.IsFailing() {
				verify = append(verify, n.Addr())
			}
		}
	}
	verify = uniq(verify)

	args := []interface{}{"cluster", "failover"}
	switch opts.Mode {
	case FailoverDefault:
	case FailoverForce:
		args = append(args, "force")
	case FailoverTakeover:
		args = append(args, "takeover")
	default:
		return nil, fail("unknown mode %v", opts.Mode)
	}
	klog.V(2).InfoS("Sending CLUSTER FAILOVER", "replica", replicaAddr, "master", old.Addr(), "mode", opts.Mode, "lagBytes", res.LagBytes)
	start := time.Now()
	if _, err := c.do(ctx, replicaAddr, args...); err != nil {
		return nil, fail("%w", err)
	}

	var seen failoverSeen
	observed := false
	reminded := map[string]time.Time{} // address → when the new master last MET it (zero: never)
	err = wait.PollUntilContextTimeout(ctx, opts.PollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		s := c.observeFailover(ctx, res, verify)
		if ctx.Err() != nil && observed {
			// A round cut short by the deadline says nothing: report the last whole one.
			return false, nil
		}
		seen, observed = s, true
		for _, n := range s.unbound {
			last, seen := reminded[n.Addr()]
			if !seen {
				res.Unbound = append(res.Unbound, n.Addr())
			}
			if !remindUnbound || time.Since(last) < remindInterval {
				continue
			}
			reminded[n.Addr()] = time.Now()
			c.remind(ctx, res.NewMasterAddr, n)
		}
		return seen.done(opts.Mode), nil
	})
	res.Duration = time.Since(start)
	if err != nil {
		return nil, fail("%w after %s (mode %s): %s: %w", ErrFailoverNotVerified, res.Duration.Round(time.Millisecond), opts.Mode, seen.String(), err)
	}
	res.Verified, res.Unreachable = seen.verified, seen.unreachable
	klog.V(2).InfoS("Failover verified", "newMaster", replicaAddr, "oldMaster", old.Addr(), "duration", res.Duration)
	return res, nil
}

// remindUnbound turns Failover's MEETs on (always, but in the measurement that compares
// failovers without them: redisctl's TestFailoverWritesUnderLoad).
var remindUnbound = true

// remindInterval is the least time between two MEETs of the same node by the new master
// (Failover): a MEET takes up to one clusterCron period (100 ms) to be sent.
const remindInterval = 250 * time.Millisecond

// remind makes the new master at newMaster CLUSTER MEET node n (the myself line of a node whose
// view has no master serving the shard's slots), at the address and bus port n announces. An
// error is logged, not returned: the next round tries again, and the failover is verified
// without it once the node hears from the new master by itself.
func (c *Client) remind(ctx context.Context, newMaster string, n Node) {
	host, port := n.IP, n.Port
	if n.Announced != "" {
		if h, p, err := net.SplitHostPort(n.Announced); err == nil {
			if pn, err := strconv.Atoi(p); err == nil {
				host, port = h, pn
			}
		}
	}
	if host == "" || port == 0 {
		return
	}
	args := []interface{}{"cluster", "meet", host, strconv.Itoa(port)}
	if n.BusPort != 0 {
		args = append(args, strconv.Itoa(n.BusPort))
	}
	if _, err := c.do(ctx, newMaster, args...); err != nil {
		klog.V(2).InfoS("New master could not MEET a node that serves none of the shard's slots", "newMaster", newMaster, "node", n.Addr(), "err", err)
		return
	}
	klog.InfoS("New master MET a node that served none of the shard's slots (Redis 7.0, after a stale PONG; it answered CLUSTERDOWN Hash slot not served meanwhile)", "newMaster", newMaster, "node", n.Addr())
}

// failoverSeen is one round of failover verification.
type failoverSeen struct {
	replicaRole      string // INFO replication role of the promoted replica, or the error
	replicaIsMaster  bool
	oldMasterState   string
	oldIsReplica     bool
	oldUnreachable   bool
	pending          []string // "addr: what it shows"
	verified         []string
	unreachable      []string
	unreachableNotes []string
	// unbound are the myself lines of the nodes whose views have no master serving the
	// shard's first slot (see Failover).
	unbound []Node
}

func (s failoverSeen) done(mode FailoverMode) bool {
	oldOK := s.oldIsReplica || (mode != FailoverDefault && s.oldUnreachable)
	return s.replicaIsMaster && oldOK && len(s.pending) == 0 && len(s.verified) > 0
}

func (s failoverSeen) String() string {
	parts := []string{"replica " + s.replicaRole, "old master " + s.oldMasterState}
	if len(s.pending) > 0 {
		parts = append(parts, "not yet showing the new master: "+strings.Join(s.pending, "; "))
	}
	if len(s.unreachableNotes) > 0 {
		parts = append(parts, "not answering: "+strings.Join(s.unreachableNotes, "; "))
	}
	return strings.Join(parts, "; ")
}

func (c *Client) observeFailover(ctx context.Context, res *FailoverResult, verify []string) failoverSeen {
	var s failoverSeen
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r, err := c.infoReplication(ctx, res.NewMasterAddr)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			s.replicaRole = "not answering (" + err.Error() + ")"
			return
		}
		s.replicaRole = "role:" + r.Role
		s.replicaIsMaster = r.IsMaster()
	}()
	go func() {
		defer wg.Done()
		nodes, err := c.clusterNodes(ctx, res.OldMasterAddr)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			s.oldMasterState = "not answering (" + err.Error() + ")"
			s.oldUnreachable = true
			return
		}
		me, ok := (View{Nodes: nodes}).Myself()
		switch {
		case !ok:
			s.oldMasterState = "has no myself line"
		case me.ID != res.OldMasterID:
			s.oldMasterState = fmt.Sprintf("is now node %s", shortID(me.ID))
		case me.IsReplica() && me.MasterID == res.NewMasterID:
			s.oldMasterState = "is a replica of the new master"
			s.oldIsReplica = true
		case me.MasterID != "":
			s.oldMasterState = fmt.Sprintf("reports flags %s, master %s", strings.Join(me.Flags, ","), shortID(me.MasterID))
		default:
			s.oldMasterState = "reports flags " + strings.Join(me.Flags, ",")
		}
	}()
	for _, a := range verify {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes, err := c.clusterNodes(ctx, a)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.unreachable = append(s.unreachable, a)
				s.unreachableNotes = append(s.unreachableNotes, err.Error())
				return
			}
			v := View{Nodes: nodes}
			if me, ok := v.Myself(); ok && me.ID != res.NewMasterID && !servesSlot(nodes, res.Slots) {
				s.unbound = append(s.unbound, me)
			}
			nm, ok := v.Node(res.NewMasterID)
			switch {
			case !ok:
				s.pending = append(s.pending, a+": does not know the new master")
			case !nm.IsMaster():
				s.pending = append(s.pending, fmt.Sprintf("%s: new master has flags %s", a, strings.Join(nm.Flags, ",")))
			case slotsString(nm.Slots) != slotsString(res.Slots):
				s.pending = append(s.pending, fmt.Sprintf("%s: new master serves %q, want %q", a, slotsString(nm.Slots), slotsString(res.Slots)))
			default:
				if om, ok := v.Node(res.OldMasterID); ok && len(om.Slots) > 0 {
					s.pending = append(s.pending, fmt.Sprintf("%s: old master still serves %q", a, slotsString(om.Slots)))
					return
				}
				s.verified = append(s.verified, a)
			}
		}()
	}
	wg.Wait()
	sort.Strings(s.pending)
	sort.Strings(s.verified)
	sort.Strings(s.unreachable)
	sort.Strings(s.unreachableNotes)
	return s
}

// servesSlot reports whether a master of nodes (one node's view) serves the first slot of
// slots; true when slots is empty.
func servesSlot(nodes []Node, slots []SlotRange) bool {
	if len(slots) == 0 {
		return true
	}
	slot := slots[0].Start
	for _, n := range nodes {
		if !n.IsMaster() {
			continue
		}
		for _, r := range n.Slots {
			if r.Start <= slot && slot <= r.End {
				return true
			}
		}
	}
	return false
}
