package redisctl_test

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

func TestEvaluateSync(t *testing.T) {
	master := redisctl.Replication{Role: "master", MasterReplOffset: 5_000_000}
	inSync := redisctl.Replication{Role: "slave", MasterHost: "10.0.0.1", MasterPort: 6379, MasterLinkStatus: "up",
		MasterLastIOSecondsAgo: 1, ReplicaReplOffset: 4_999_900, MasterReplOffset: 4_999_900, MasterLinkDownSinceSeconds: -1}
	with := func(f func(r *redisctl.Replication)) redisctl.Replication {
		r := inSync
		f(&r)
		return r
	}
	type out struct {
		InSync   bool
		LagBytes int64
		Codes    []redisctl.ReasonCode
	}
	tests := []struct {
		name    string
		replica redisctl.Replication
		master  *redisctl.Replication
		opts    redisctl.HealthOptions
		want    out
	}{
		{name: "link up, 100 bytes behind, last io 1 s: in sync", replica: inSync, master: &master,
			want: out{InSync: true, LagBytes: 100}},
		{name: "replica read after the master moved on (negative lag): clamped to 0, in sync",
			replica: with(func(r *redisctl.Replication) { r.ReplicaReplOffset = 5_000_100 }), master: &master,
			want: out{InSync: true, LagBytes: 0}},
		{name: "Redis 6 replica without slave_repl_offset: master_repl_offset used, in sync",
			replica: with(func(r *redisctl.Replication) { r.ReplicaReplOffset = -1 }), master: &master,
			want: out{InSync: true, LagBytes: 100}},
		{name: "2 MiB behind with the default 1 MiB limit: replica_lag",
			replica: with(func(r *redisctl.Replication) { r.ReplicaReplOffset = 5_000_000 - 2<<20 }), master: &master,
			want: out{LagBytes: 2 << 20, Codes: []redisctl.ReasonCode{redisctl.ReasonReplicaLag}}},
		{name: "2 MiB behind with a 4 MiB limit: in sync",
			replica: with(func(r *redisctl.Replication) { r.ReplicaReplOffset = 5_000_000 - 2<<20 }), master: &master,
			opts: redisctl.HealthOptions{MaxLagBytes: 4 << 20}, want: out{InSync: true, LagBytes: 2 << 20}},
		{name: "master_link_status:down: replica_link_down",
			replica: with(func(r *redisctl.Replication) {
				r.MasterLinkStatus, r.MasterLastIOSecondsAgo, r.MasterLinkDownSinceSeconds = "down", -1, 3
			}), master: &master,
			want: out{LagBytes: 100, Codes: []redisctl.ReasonCode{redisctl.ReasonReplicaLinkDown}}},
		{name: "full sync in progress: replica_link_down",
			replica: with(func(r *redisctl.Replication) { r.MasterSyncInProgress = true }), master: &master,
			want: out{LagBytes: 100, Codes: []redisctl.ReasonCode{redisctl.ReasonReplicaLinkDown}}},
		{name: "master_last_io_seconds_ago 20 with the default 15: replica_last_io",
			replica: with(func(r *redisctl.Replication) { r.MasterLastIOSecondsAgo = 20 }), master: &master,
			want: out{LagBytes: 100, Codes: []redisctl.ReasonCode{redisctl.ReasonReplicaLastIO}}},
		{name: "master_last_io_seconds_ago 20 with a 30 s limit: in sync",
			replica: with(func(r *redisctl.Replication) { r.MasterLastIOSecondsAgo = 20 }), master: &master,
			opts: redisctl.HealthOptions{MaxLastIOSeconds: 30}, want: out{InSync: true, LagBytes: 100}},
		{name: "master not read: lag unknown, replica_lag", replica: inSync, master: nil,
			want: out{LagBytes: -1, Codes: []redisctl.ReasonCode{redisctl.ReasonReplicaLag}}},
		{name: "node reports role:master: replica_role only", replica: master, master: &master,
			want: out{LagBytes: -1, Codes: []redisctl.ReasonCode{redisctl.ReasonReplicaRole}}},
		{name: "replicates an old master address: replica_role",
			replica: with(func(r *redisctl.Replication) { r.MasterHost = "10.0.0.9" }), master: &master,
			want: out{LagBytes: 100, Codes: []redisctl.ReasonCode{redisctl.ReasonReplicaRole}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := redisctl.EvaluateSync("r", "10.0.0.2:6379", "m", "10.0.0.1:6379", tc.replica, tc.master, tc.opts)
			got := out{InSync: s.InSync, LagBytes: s.LagBytes}
			for _, p := range s.Problems {
				got.Codes = append(got.Codes, p.Code)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("EvaluateSync (-want +got):\n%s\nproblems: %v", diff, s.Problems)
			}
		})
	}
}

// fakeCluster builds a Topology as CheckHealth would read it from 3 masters (10.0.0.1-3) and
// their replicas (10.0.0.4-6), each node's view being the same node list with its own line
// flagged myself.
type fakeCluster struct {
	nodes       []redisctl.Node
	repl        map[string]redisctl.Replication // by address
	state       map[string]string               // cluster_state by address
	unreachable map[string]bool
	// viewEdit changes what the node at addr reports (after the myself flag is set).
	viewEdit func(addr string, nodes []redisctl.Node) []redisctl.Node
}

// strayNode4 makes replica 4 a master without slots in every view, its own marking slots 0-2
// importing from master 1 (what Redis's start-up check leaves); with resharding, master 1's own
// view also migrates slot 1 to it.
func strayNode4(f *fakeCluster, resharding bool) {
	f.viewEdit = func(a string, nodes []redisctl.Node) []redisctl.Node {
		for i := range nodes {
			if nodes[i].ID == id(4) {
				nodes[i].Flags = slices.DeleteFunc(slices.Clone(nodes[i].Flags), func(f string) bool { return f == "slave" })
				nodes[i].Flags = append(nodes[i].Flags, "master")
				nodes[i].MasterID, nodes[i].ConfigEpoch = "", 4
				if a == addr(4) {
					nodes[i].Importing = []redisctl.SlotMove{{Slot: 0, NodeID: id(1)}, {Slot: 1, NodeID: id(1)}, {Slot: 2, NodeID: id(1)}}
				}
			}
			if resharding && a == addr(1) && nodes[i].ID == id(1) {
				nodes[i].Migrating = []redisctl.SlotMove{{Slot: 1, NodeID: id(4)}}
			}
		}
		return nodes
	}
}

func id(n int) string { return strings.Repeat(strconv.Itoa(n), 40) }

func addr(n int) string { return "10.0.0." + strconv.Itoa(n) + ":6379" }

func newFakeCluster() *fakeCluster {
	f := &fakeCluster{repl: map[string]redisctl.Replication{}, state: map[string]string{}, unreachable: map[string]bool{}}
	shares := redistest.SlotShares(3)
	for i := 1; i <= 3; i++ {
		f.nodes = append(f.nodes, redisctl.Node{ID: id(i), IP: "10.0.0." + strconv.Itoa(i), Port: 6379, BusPort: 16379,
			Flags: []string{"master"}, ConfigEpoch: uint64(i), LinkState: "connected", Slots: []redisctl.SlotRange{shares[i-1]}})
		f.repl[addr(i)] = redisctl.Replication{Role: "master", MasterReplOffset: 1000, ConnectedReplicas: 1}
	}
	for i := 4; i <= 6; i++ {
		f.nodes = append(f.nodes, redisctl.Node{ID: id(i), IP: "10.0.0." + strconv.Itoa(i), Port: 6379, BusPort: 16379,
			Flags: []string{"slave"}, MasterID: id(i - 3), ConfigEpoch: uint64(i - 3), LinkState: "connected"})
		f.repl[addr(i)] = redisctl.Replication{Role: "slave", MasterHost: "10.0.0." + strconv.Itoa(i-3), MasterPort: 6379,
			MasterLinkStatus: "up", MasterLastIOSecondsAgo: 1, ReplicaReplOffset: 1000, MasterReplOffset: 1000}
	}
	for _, n := range f.nodes {
		f.state[n.Addr()] = "ok"
	}
	return f
}

func (f *fakeCluster) topology() *redisctl.Topology {
	var views []redisctl.View
	errs := map[string]error{}
	for _, me := range f.nodes {
		a := me.Addr()
		if f.unreachable[a] {
			errs[a] = errors.New("redisctl: " + a + ": dial tcp " + a + ": connect: connection refused")
			continue
		}
		var nodes []redisctl.Node
		for _, n := range f.nodes {
			n.Flags = append([]string(nil), n.Flags...)
			if n.ID == me.ID {
				n.Flags = append([]string{"myself"}, n.Flags...)
			}
			nodes = append(nodes, n)
		}
		if f.viewEdit != nil {
			nodes = f.viewEdit(a, nodes)
		}
		views = append(views, redisctl.View{Addr: a, Nodes: nodes,
			ClusterInfo: redisctl.Info{"": {"cluster_state": f.state[a]}}, Replication: f.repl[a]})
	}
	t := redisctl.MergeViews(views)
	t.Unreachable = errs
	return t
}

func TestEvaluateHealth(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fakeCluster)
		want  []redisctl.ReasonCode
		// wantMessage, when set, must appear in the error.
		wantMessage string
	}{
		{name: "3 masters with an in-sync replica each: healthy", setup: func(*fakeCluster) {}},
		{name: "one node reports cluster_state:fail: cluster_state",
			setup: func(f *fakeCluster) { f.state[addr(2)] = "fail" },
			want:  []redisctl.ReasonCode{redisctl.ReasonClusterState}, wantMessage: "cluster_state 10.0.0.2:6379: cluster_state:fail"},
		{name: "master 3 flagged fail by the others and not answering: its slots not served, node_failing, node_unreachable, no replica link",
			setup: func(f *fakeCluster) {
				f.unreachable[addr(3)] = true
				r := f.repl[addr(6)]
				r.MasterLinkStatus, r.MasterLastIOSecondsAgo = "down", -1
				f.repl[addr(6)] = r
				f.viewEdit = func(_ string, nodes []redisctl.Node) []redisctl.Node {
					for i := range nodes {
						if nodes[i].ID == id(3) {
							nodes[i].Flags = append(nodes[i].Flags, "fail")
							nodes[i].LinkState = "disconnected"
						}
					}
					return nodes
				}
			},
			want: []redisctl.ReasonCode{redisctl.ReasonNoConnectedReplica, redisctl.ReasonNodeFailing, redisctl.ReasonNodeUnreachable,
				redisctl.ReasonReplicaLag, redisctl.ReasonReplicaLinkDown, redisctl.ReasonSlotsNotServed},
			wantMessage: "10923 of 16384 slots served; not served: 10923-16383"},
		{name: "replica 6 flagged fail? by one master only: node_failing, views_disagree on failing, master 3 has no connected replica left",
			setup: func(f *fakeCluster) {
				f.viewEdit = func(a string, nodes []redisctl.Node) []redisctl.Node {
					for i := range nodes {
						if a == addr(1) && nodes[i].ID == id(6) {
							nodes[i].Flags = append(nodes[i].Flags, "fail?")
						}
					}
					return nodes
				}
			},
			want:        []redisctl.ReasonCode{redisctl.ReasonNoConnectedReplica, redisctl.ReasonNodeFailing, redisctl.ReasonViewsDisagree},
			wantMessage: "flagged by 10.0.0.1:6379=fail?"},
		{name: "slot 5 migrating from master 1 to master 2: slot_migration",
			setup: func(f *fakeCluster) {
				f.viewEdit = func(a string, nodes []redisctl.Node) []redisctl.Node {
					for i := range nodes {
						if a == addr(1) && nodes[i].IsMyself() {
							nodes[i].Migrating = []redisctl.SlotMove{{Slot: 5, NodeID: id(2)}}
						}
					}
					return nodes
				}
			},
			want: []redisctl.ReasonCode{redisctl.ReasonSlotMigration}, wantMessage: "slot 5 migrating to 22222222"},
		{name: "replica 4 back as a master without slots, slots 0-2 importing from master 1 which migrates none: one stray_master, master 1 without connected replica",
			setup:       func(f *fakeCluster) { strayNode4(f, false) },
			want:        []redisctl.ReasonCode{redisctl.ReasonNoConnectedReplica, redisctl.ReasonStrayMaster},
			wantMessage: "stray_master 10.0.0.4:6379: a master without slots holding a copy of 3 slots (0-2) of 10.0.0.1:6379 (node 11111111)"},
		{name: "replica 4 flags itself a master without slots while INFO says it replicates master 1 (Redis 7.0 before its restart): one stray_master, master 1 without connected replica",
			setup: func(f *fakeCluster) {
				strayNode4(f, false)
				edit := f.viewEdit
				f.viewEdit = func(a string, nodes []redisctl.Node) []redisctl.Node {
					nodes = edit(a, nodes)
					for i := range nodes {
						nodes[i].Importing = nil
					}
					return nodes
				}
			},
			want:        []redisctl.ReasonCode{redisctl.ReasonNoConnectedReplica, redisctl.ReasonStrayMaster},
			wantMessage: "stray_master 10.0.0.4:6379: flags itself a master without slots while it replicates 10.0.0.1:6379 (node 11111111)"},
		{name: "node 4 importing slots 0-2 while master 1 migrates slot 1 to it (a resharding): slot_migration per slot, no stray_master",
			setup:       func(f *fakeCluster) { strayNode4(f, true) },
			want:        []redisctl.ReasonCode{redisctl.ReasonNoConnectedReplica, redisctl.ReasonSlotMigration},
			wantMessage: "slot 1 importing from 11111111"},
		{name: "replica 4's link down: replica_link_down and master 1 without connected replica",
			setup: func(f *fakeCluster) {
				r := f.repl[addr(4)]
				r.MasterLinkStatus, r.MasterLastIOSecondsAgo, r.MasterLinkDownSinceSeconds = "down", -1, 4
				f.repl[addr(4)] = r
			},
			want: []redisctl.ReasonCode{redisctl.ReasonNoConnectedReplica, redisctl.ReasonReplicaLinkDown}, wantMessage: "master_link_status:down, down for 4 s"},
		{name: "replica 5 is 2 MiB behind: replica_lag only (still connected)",
			setup: func(f *fakeCluster) {
				r := f.repl[addr(2)]
				r.MasterReplOffset = 1000 + 2<<20
				f.repl[addr(2)] = r
			},
			want: []redisctl.ReasonCode{redisctl.ReasonReplicaLag}, wantMessage: "offset lag 2097152 bytes"},
		{name: "replica 6 last heard from its master 20 s ago: replica_last_io",
			setup: func(f *fakeCluster) {
				r := f.repl[addr(6)]
				r.MasterLastIOSecondsAgo = 20
				f.repl[addr(6)] = r
			},
			want: []redisctl.ReasonCode{redisctl.ReasonReplicaLastIO}},
		{name: "one view lists replica 6 under master 1: views_disagree on master",
			setup: func(f *fakeCluster) {
				f.viewEdit = func(a string, nodes []redisctl.Node) []redisctl.Node {
					for i := range nodes {
						if a == addr(2) && nodes[i].ID == id(6) {
							nodes[i].MasterID = id(1)
						}
					}
					return nodes
				}
			},
			want: []redisctl.ReasonCode{redisctl.ReasonViewsDisagree}, wantMessage: "node 66666666 master: "},
		{name: "replica 5 not answering: node_unreachable and master 2 without connected replica",
			setup: func(f *fakeCluster) { f.unreachable[addr(5)] = true },
			want:  []redisctl.ReasonCode{redisctl.ReasonNoConnectedReplica, redisctl.ReasonNodeUnreachable}},
		{name: "replica 5 removed from the cluster: master 2 without connected replica",
			setup: func(f *fakeCluster) { f.nodes = append(f.nodes[:4], f.nodes[5]) },
			want:  []redisctl.ReasonCode{redisctl.ReasonNoConnectedReplica}, wantMessage: "has no connected replica (0 known)"},
		{name: "node still in handshake: node_handshake and views_disagree (not known everywhere)",
			setup: func(f *fakeCluster) {
				f.viewEdit = func(a string, nodes []redisctl.Node) []redisctl.Node {
					if a == addr(1) {
						nodes = append(nodes, redisctl.Node{ID: id(7), IP: "10.0.0.7", Port: 6379, Flags: []string{"handshake"}, LinkState: "disconnected"})
					}
					return nodes
				}
				f.unreachable[addr(7)] = false
			},
			want: []redisctl.ReasonCode{redisctl.ReasonNodeHandshake, redisctl.ReasonViewsDisagree}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster()
			tc.setup(f)
			h := redisctl.EvaluateHealth(f.topology(), redisctl.HealthOptions{})
			err := h.Err()
			var got []redisctl.ReasonCode
			var he *redisctl.HealthError
			if errors.As(err, &he) {
				got = he.Codes()
			} else if err != nil {
				t.Fatalf("error %v is not a *HealthError", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reason codes (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tc.wantMessage != "" && (err == nil || !strings.Contains(err.Error(), tc.wantMessage)) {
				t.Errorf("error %v does not contain %q", err, tc.wantMessage)
			}
		})
	}
}

func TestTopologyLookups(t *testing.T) {
	f := newFakeCluster()
	f.nodes[4].IP = "::1" // replica 5 on IPv6 loopback
	topo := f.topology()
	type lookup struct{ Name, Got string }
	var got []lookup
	n, _ := topo.NodeByIP("10.0.0.4")
	got = append(got, lookup{"NodeByIP 10.0.0.4", n.ID[:1]})
	n, _ = topo.NodeByIP("0:0:0:0:0:0:0:1")
	got = append(got, lookup{"NodeByIP ::1 spelled out", n.ID[:1]})
	m, _ := topo.MasterOf(id(6))
	got = append(got, lookup{"MasterOf replica 6", m.ID[:1]})
	m, _ = topo.MasterOf(id(2))
	got = append(got, lookup{"MasterOf master 2", m.ID[:1]})
	var reps []string
	for _, r := range topo.ReplicasOf(id(1)) {
		reps = append(reps, r.ID[:1])
	}
	got = append(got, lookup{"ReplicasOf master 1", strings.Join(reps, ",")})
	var masters []string
	for _, m := range topo.Masters() {
		masters = append(masters, m.ID[:1]+"@"+strconv.Itoa(m.Slots[0].Start))
	}
	got = append(got, lookup{"Masters by first slot", strings.Join(masters, ",")})
	_, ok := topo.NodeByIP("10.9.9.9")
	got = append(got, lookup{"NodeByIP unknown", strconv.FormatBool(ok)})
	want := []lookup{
		{"NodeByIP 10.0.0.4", "4"},
		{"NodeByIP ::1 spelled out", "5"},
		{"MasterOf replica 6", "3"},
		{"MasterOf master 2", "2"},
		{"ReplicasOf master 1", "4"},
		{"Masters by first slot", "1@0,2@5462,3@10923"},
		{"NodeByIP unknown", "false"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	if _, _, err := net.SplitHostPort(topo.Nodes[0].Addr()); err != nil {
		t.Errorf("Addr %q: %v", topo.Nodes[0].Addr(), err)
	}
}
