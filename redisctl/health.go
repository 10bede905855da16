package redisctl

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// ReasonCode names one way a cluster fails the health gate (CheckHealth).
type ReasonCode string

// Reason codes reported by CheckHealth, EvaluateHealth and the in-sync checks.
const (
	// ReasonClusterState: a node's CLUSTER INFO says cluster_state is not "ok".
	ReasonClusterState ReasonCode = "cluster_state"
	// ReasonSlotsNotServed: fewer than 16384 slots are served by masters not flagged fail.
	ReasonSlotsNotServed ReasonCode = "slots_not_served"
	// ReasonNodeFailing: a node is flagged fail or fail? (PFAIL) in some view.
	ReasonNodeFailing ReasonCode = "node_failing"
	// ReasonNodeHandshake: a node is still in handshake or has no address.
	ReasonNodeHandshake ReasonCode = "node_handshake"
	// ReasonNodeUnreachable: a node did not answer (connection, AUTH, TLS or timeout error).
	ReasonNodeUnreachable ReasonCode = "node_unreachable"
	// ReasonNoConnectedReplica: a master serving slots has no connected replica whose link to it
	// is up.
	ReasonNoConnectedReplica ReasonCode = "no_connected_replica"
	// ReasonSlotMigration: a slot is importing or migrating.
	ReasonSlotMigration ReasonCode = "slot_migration"
	// ReasonStrayMaster: a master serving no slot holds a copy of another master's keys, its
	// slots marked importing though no migration runs (StrayMaster): its shard has lost a
	// replica. One reason per stray master, instead of one slot_migration per slot.
	ReasonStrayMaster ReasonCode = "stray_master"
	// ReasonViewsDisagree: nodes report different addresses, roles, masters, slots, config
	// epochs or failure flags for a node, or one does not know it.
	ReasonViewsDisagree ReasonCode = "views_disagree"
	// ReasonReplicaRole: a node listed as a replica does not report role:slave, or replicates
	// another address than its master's.
	ReasonReplicaRole ReasonCode = "replica_role"
	// ReasonReplicaLinkDown: a replica's master_link_status is not "up", or it is loading a full
	// sync.
	ReasonReplicaLinkDown ReasonCode = "replica_link_down"
	// ReasonReplicaLag: a replica's offset lag (master master_repl_offset − replica
	// slave_repl_offset) exceeds MaxLagBytes, or cannot be measured.
	ReasonReplicaLag ReasonCode = "replica_lag"
	// ReasonReplicaLastIO: a replica's master_last_io_seconds_ago exceeds MaxLastIOSeconds.
	ReasonReplicaLastIO ReasonCode = "replica_last_io"
)

// Reason is one precise reason why the cluster (or a replica) is not healthy.
type Reason struct {
	// Code is the kind of problem.
	Code ReasonCode
	// Addr is the address of the node concerned ("" when the reason is cluster-wide).
	Addr string
	// NodeID is the ID of the node concerned, when known.
	NodeID string
	// Message says what was seen, with numbers and units.
	Message string
}

// String formats r as "code addr: message".
func (r Reason) String() string {
	s := string(r.Code)
	switch {
	case r.Addr != "":
		s += " " + r.Addr
	case r.NodeID != "":
		s += " " + shortID(r.NodeID)
	}
	return s + ": " + r.Message
}

// HealthError is returned when the cluster is not healthy. It lists every reason found.
type HealthError struct {
	Reasons []Reason
}

// Error lists every reason.
func (e *HealthError) Error() string {
	parts := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		parts[i] = r.String()
	}
	return "redisctl: cluster not healthy: " + strings.Join(parts, "; ")
}

// Has reports whether e lists a reason with code.
func (e *HealthError) Has(code ReasonCode) bool {
	for _, r := range e.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// Codes returns the distinct reason codes of e, sorted.
func (e *HealthError) Codes() []ReasonCode {
	m := map[ReasonCode]bool{}
	var out []ReasonCode
	for _, r := range e.Reasons {
		if !m[r.Code] {
			m[r.Code] = true
			out = append(out, r.Code)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// HealthOptions tunes the health gate. Zero fields take the Client's values (Options.MaxLagBytes,
// Options.MaxLastIOSeconds), or the package defaults in EvaluateHealth.
type HealthOptions struct {
	// MaxLagBytes is the largest replica offset lag in bytes still in sync.
	MaxLagBytes int64
	// MaxLastIOSeconds is the largest master_last_io_seconds_ago still in sync.
	MaxLastIOSeconds int
}

func (o HealthOptions) withDefaults(lag int64, io int) HealthOptions {
	if o.MaxLagBytes == 0 {
		o.MaxLagBytes = lag
	}
	if o.MaxLastIOSeconds == 0 {
		o.MaxLastIOSeconds = io
	}
	return o
}

// ReplicaSync is the replication state of one replica relative to its master.
type ReplicaSync struct {
	// ID and Addr identify the replica; MasterID and MasterAddr its master.
	ID, Addr, MasterID, MasterAddr string
	// LinkStatus is the replica's master_link_status ("" when the replica did not answer).
	LinkStatus string
	// LastIOSeconds is the replica's master_last_io_seconds_ago (-1 unknown).
	LastIOSeconds int
	// SyncInProgress is master_sync_in_progress.
	SyncInProgress bool
	// LagBytes is the master's master_repl_offset minus the replica's slave_repl_offset,
	// clamped at 0; -1 when either could not be read.
	LagBytes int64
	// InSync is true when Problems is empty.
	InSync bool
	// Problems say why the replica is not in sync.
	Problems []Reason
}

// EvaluateSync decides whether a replica is in sync with its master from their INFO replication
// replies (master nil when the master could not be read). It checks the replica's role and
// master address, master_link_status, master_sync_in_progress, master_last_io_seconds_ago and
// the offset lag. The replica should be read before the master, so that the lag is an upper
// bound.
func EvaluateSync(id, addr, masterID, masterAddr string, replica Replication, master *Replication, opts HealthOptions) ReplicaSync {
	opts = opts.withDefaults(DefaultMaxLagBytes, DefaultMaxLastIOSeconds)
	s := ReplicaSync{
		ID: id, Addr: addr, MasterID: masterID, MasterAddr: masterAddr,
		LinkStatus:     replica.MasterLinkStatus,
		LastIOSeconds:  replica.MasterLastIOSecondsAgo,
		SyncInProgress: replica.MasterSyncInProgress,
		LagBytes:       -1,
	}
	add := func(code ReasonCode, format string, args ...interface{}) {
		s.Problems = append(s.Problems, Reason{Code: code, Addr: addr, NodeID: id, Message: fmt.Sprintf(format, args...)})
	}
	if !replica.IsReplica() {
		add(ReasonReplicaRole, "reports role:%s, want slave", replica.Role)
		return s
	}
	if masterAddr != "" {
		if host, port, err := net.SplitHostPort(masterAddr); err == nil {
			if replica.MasterHost != host || strconv.Itoa(replica.MasterPort) != port {
				add(ReasonReplicaRole, "replicates %s, want its master %s",
					net.JoinHostPort(replica.MasterHost, strconv.Itoa(replica.MasterPort)), masterAddr)
			}
		}
	}
	if replica.MasterLinkStatus != "up" {
		msg := fmt.Sprintf("master_link_status:%s", replica.MasterLinkStatus)
		if replica.MasterLinkDownSinceSeconds >= 0 {
			msg += fmt.Sprintf(", down for %d s", replica.MasterLinkDownSinceSeconds)
		}
		add(ReasonReplicaLinkDown, "%s", msg)
	}
	if replica.MasterSyncInProgress {
		add(ReasonReplicaLinkDown, "master_sync_in_progress:1 (full sync from its master)")
	}
	if replica.MasterLinkStatus == "up" && (replica.MasterLastIOSecondsAgo < 0 || replica.MasterLastIOSecondsAgo > opts.MaxLastIOSeconds) {
		add(ReasonReplicaLastIO, "master_last_io_seconds_ago:%d, more than %d s", replica.MasterLastIOSecondsAgo, opts.MaxLastIOSeconds)
	}
	roff := replica.ReplicaReplOffset
	if roff < 0 {
		roff = replica.MasterReplOffset
	}
	switch {
	case master == nil:
		add(ReasonReplicaLag, "offset lag unknown: master %s not read", masterAddr)
	case master.MasterReplOffset < 0 || roff < 0:
		add(ReasonReplicaLag, "offset lag unknown: master offset %d, replica offset %d", master.MasterReplOffset, roff)
	default:
		s.LagBytes = master.MasterReplOffset - roff
		if s.LagBytes < 0 {
			s.LagBytes = 0
		}
		if s.LagBytes > opts.MaxLagBytes {
			add(ReasonReplicaLag, "offset lag %d bytes (master %d, replica %d), more than %d", s.LagBytes, master.MasterReplOffset, roff, opts.MaxLagBytes)
		}
	}
	s.InSync = len(s.Problems) == 0
	return s
}

// Health is the result of the health gate.
type Health struct {
	// Topology is the merged view the gate was evaluated on.
	Topology *Topology
	// SlotsServed is the number of slots served by masters not flagged fail (of 16384).
	SlotsServed int
	// Replicas is the replication state of every replica, sorted by address.
	Replicas []ReplicaSync
	// Reasons lists every problem found; empty when healthy.
	Reasons []Reason
}

// Except returns a *HealthError with the reasons skip does not accept, or nil when skip accepts
// every reason. Callers use it to tolerate a problem they know about, e.g. a master without a
// replica because the replica's pod cannot be scheduled yet.
func (h *Health) Except(skip func(Reason) bool) error {
	var rest []Reason
	for _, r := range h.Reasons {
		if !skip(r) {
			rest = append(rest, r)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	return &HealthError{Reasons: rest}
}

// Healthy reports whether no problem was found.
func (h *Health) Healthy() bool { return len(h.Reasons) == 0 }

// Err returns a *HealthError listing h.Reasons, or nil when healthy.
func (h *Health) Err() error {
	if h.Healthy() {
		return nil
	}
	return &HealthError{Reasons: h.Reasons}
}

// CheckHealth is the health gate a cluster passes before any disruption. It reads the views of
// addrs (and of every other node they list) and returns the Health, plus a *HealthError (use
// errors.As) listing every reason when the cluster is not healthy: cluster_state, slots not served,
// nodes flagged fail/pfail or in handshake, unreachable nodes, masters without a connected replica,
// open slot migrations, views that disagree, and replicas out of sync (master_link_status, offset
// lag in bytes, master_last_io_seconds_ago from INFO replication). Other errors (no address, ctx
// done) are returned as is, with a nil Health.
func (c *Client) CheckHealth(ctx context.Context, addrs []string, opts HealthOptions) (*Health, error) {
	opts = opts.withDefaults(c.opts.MaxLagBytes, c.opts.MaxLastIOSeconds)
	t, err := c.Topology(ctx, addrs)
	if t == nil {
		return nil, err
	}
	// When no node answered, t lists them all as unreachable: the gate reports each of them.
	h := EvaluateHealth(t, opts)
	return h, h.Err()
}

// EvaluateHealth applies the health gate to a topology already read (see CheckHealth). Zero
// fields of opts take the package defaults.
func EvaluateHealth(t *Topology, opts HealthOptions) *Health {
	opts = opts.withDefaults(DefaultMaxLagBytes, DefaultMaxLastIOSeconds)
	h := &Health{Topology: t}
	add := func(r Reason) { h.Reasons = append(h.Reasons, r) }

	for _, a := range uniq(keys(t.Unreachable)) {
		r := Reason{Code: ReasonNodeUnreachable, Addr: a, Message: t.Unreachable[a].Error()}
		if n, ok := t.NodeByAddr(a); ok {
			r.NodeID = n.ID
		}
		add(r)
	}
	for _, v := range t.Views {
		if st := v.ClusterInfo.ClusterState(); st != "ok" {
			add(Reason{Code: ReasonClusterState, Addr: v.Addr, Message: fmt.Sprintf("cluster_state:%s", st)})
		}
	}
	owners := t.SlotOwners(true)
	var missing []SlotRange
	for s, o := range owners {
		if o != "" {
			h.SlotsServed++
			continue
		}
		if l := len(missing); l > 0 && missing[l-1].End == s-1 {
			missing[l-1].End = s
		} else {
			missing = append(missing, SlotRange{Start: s, End: s})
		}
	}
	if h.SlotsServed < NumSlots {
		add(Reason{Code: ReasonSlotsNotServed, Message: fmt.Sprintf("%d of %d slots served; not served: %s", h.SlotsServed, NumSlots, abbreviate(slotsString(missing), 120))})
	}
	for _, n := range t.Nodes {
		if n.IsFailing() {
			var by []string
			for _, v := range t.Views {
				if o, ok := v.Node(n.ID); ok && o.IsFailing() {
					by = append(by, v.Addr+"="+failFlag(o))
				}
			}
			add(Reason{Code: ReasonNodeFailing, Addr: n.Addr(), NodeID: n.ID, Message: "flagged by " + strings.Join(by, ", ")})
		}
		if n.HasFlag(FlagHandshake) || n.HasFlag(FlagNoAddr) || n.IP == "" {
			add(Reason{Code: ReasonNodeHandshake, Addr: n.Addr(), NodeID: n.ID, Message: "flags " + strings.Join(n.Flags, ",")})
		}
	}
	strays := map[string]StrayMaster{}
	for _, s := range t.StrayMasters() {
		strays[s.Addr] = s
	}
	for _, v := range t.Views {
		me, ok := v.Myself()
		if !ok {
			continue
		}
		if s, ok := strays[v.Addr]; ok && s.Replicating {
			add(Reason{Code: ReasonStrayMaster, Addr: v.Addr, NodeID: me.ID, Message: fmt.Sprintf("flags itself a master without slots while it replicates %s (node %s), as Redis 7.0 leaves a replica after an UPDATE message about itself: its shard lost this replica, and its next restart brings it back holding a copy of that master's keys; a run inside a maintenance window restarts it and makes it a replica of %s again, or by hand: %s",
				s.Owner.Addr(), shortID(s.Owner.ID), s.Owner.Addr(), strayFix(s))})
			continue
		} else if ok {
			add(Reason{Code: ReasonStrayMaster, Addr: v.Addr, NodeID: me.ID, Message: fmt.Sprintf("a master without slots holding a copy of %d slots (%s) of %s (node %s), marked importing by Redis's start-up check though no migration runs: its shard lost this replica; a run inside a maintenance window makes it a replica of %s again, or by hand: %s",
				s.Count, abbreviate(slotsString(s.Slots), 60), s.Owner.Addr(), shortID(s.Owner.ID), s.Owner.Addr(), strayFix(s))})
			continue
		}
		for _, m := range me.Migrating {
			add(Reason{Code: ReasonSlotMigration, Addr: v.Addr, NodeID: me.ID, Message: fmt.Sprintf("slot %d migrating to %s", m.Slot, shortID(m.NodeID))})
		}
		for _, m := range me.Importing {
			add(Reason{Code: ReasonSlotMigration, Addr: v.Addr, NodeID: me.ID, Message: fmt.Sprintf("slot %d importing from %s", m.Slot, shortID(m.NodeID))})
		}
	}
	for _, d := range t.Disagreements {
		add(Reason{Code: ReasonViewsDisagree, NodeID: d.NodeID, Message: d.String()})
	}

	// Replicas, shard by shard.
	for _, m := range t.Masters() {
		var mrepl *Replication
		if mv, ok := t.View(m.Addr()); ok {
			r := mv.Replication
			mrepl = &r
		}
		connected := 0
		for _, r := range t.ReplicasOf(m.ID) {
			rv, ok := t.View(r.Addr())
			if !ok {
				// Unreachable: already reported; it is neither connected nor in sync.
				h.Replicas = append(h.Replicas, ReplicaSync{ID: r.ID, Addr: r.Addr(), MasterID: m.ID, MasterAddr: m.Addr(), LagBytes: -1, LastIOSeconds: -1,
					Problems: []Reason{{Code: ReasonNodeUnreachable, Addr: r.Addr(), NodeID: r.ID, Message: "replica did not answer"}}})
				continue
			}
			s := EvaluateSync(r.ID, r.Addr(), m.ID, m.Addr(), rv.Replication, mrepl, opts)
			h.Replicas = append(h.Replicas, s)
			for _, p := range s.Problems {
				add(p)
			}
			if s.LinkStatus == "up" && !r.IsFailing() && r.LinkState == LinkConnected {
				connected++
			}
		}
		if connected == 0 && len(m.Slots) > 0 {
			add(Reason{Code: ReasonNoConnectedReplica, Addr: m.Addr(), NodeID: m.ID, Message: fmt.Sprintf("master of %s has no connected replica (%d known)", abbreviate(slotsString(m.Slots), 60), len(t.ReplicasOf(m.ID)))})
		}
	}
	sort.Slice(h.Replicas, func(a, b int) bool { return h.Replicas[a].Addr < h.Replicas[b].Addr })
	return h
}

func failFlag(n Node) string {
	if n.HasFlag(FlagFail) {
		return FlagFail
	}
	return FlagPFail
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
