package observe

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// healthReader answers CheckHealth with fixed reasons and topology (or an error with no
// Health), and records the addresses it was asked.
type healthReader struct {
	reasons []redisctl.Reason
	topo    *redisctl.Topology
	err     error
	asked   []string
}

func (r *healthReader) AddrOf(ip string) string { return ip + ":6379" }

func (r *healthReader) CheckHealth(_ context.Context, addrs []string, _ redisctl.HealthOptions) (*redisctl.Health, error) {
	r.asked = addrs
	if r.err != nil {
		return nil, r.err
	}
	h := &redisctl.Health{SlotsServed: redisctl.NumSlots, Reasons: r.reasons, Topology: r.topo}
	return h, h.Err()
}

func TestJudgeHealth(t *testing.T) {
	reason := func(code redisctl.ReasonCode, addr, msg string) redisctl.Reason {
		return redisctl.Reason{Code: code, Addr: addr, Message: msg}
	}
	// The 3-shard deadlock (scenario.SeedDeadlock): redis-s2-1 is Pending (Unschedulable); every
	// other pod Ready, pod IP 10.0.<shard>.<ordinal>.
	sc := scenario.SeedDeadlock()
	for _, tc := range []struct {
		name        string
		reasons     []redisctl.Reason
		err         error
		change      func(pods []*corev1.Pod) []*corev1.Pod
		wantState   HealthState
		wantReasons []string
	}{
		{name: "every pod Ready, Redis healthy → healthy", wantState: HealthHealthy},
		{
			name:      "a replica's link down → resyncing",
			reasons:   []redisctl.Reason{reason(redisctl.ReasonReplicaLinkDown, "10.0.0.1:6379", "master_link_status:down, down for 3 s")},
			wantState: HealthResyncing, wantReasons: []string{"replica_link_down 10.0.0.1:6379: master_link_status:down, down for 3 s"},
		},
		{
			name: "a master without a connected replica and its replica syncing → resyncing",
			reasons: []redisctl.Reason{
				reason(redisctl.ReasonReplicaLinkDown, "10.0.0.1:6379", "master_sync_in_progress:1 (full sync from its master)"),
				reason(redisctl.ReasonNoConnectedReplica, "10.0.0.0:6379", "master of 0-5460 has no connected replica (1 known)"),
			},
			wantState: HealthResyncing,
			wantReasons: []string{
				"replica_link_down 10.0.0.1:6379: master_sync_in_progress:1 (full sync from its master)",
				"no_connected_replica 10.0.0.0:6379: master of 0-5460 has no connected replica (1 known)",
			},
		},
		{
			name: "a replica unreachable → unhealthy",
			reasons: []redisctl.Reason{
				reason(redisctl.ReasonNodeUnreachable, "10.0.1.1:6379", "dial tcp: connection refused"),
				reason(redisctl.ReasonNoConnectedReplica, "10.0.1.0:6379", "master of 5461-10922 has no connected replica (1 known)"),
			},
			wantState: HealthUnhealthy,
			wantReasons: []string{
				"node_unreachable 10.0.1.1:6379: dial tcp: connection refused",
				"no_connected_replica 10.0.1.0:6379: master of 5461-10922 has no connected replica (1 known)",
			},
		},
		{
			name:      "the Pending pod's master lacks the replica it would be → tolerated: healthy",
			reasons:   []redisctl.Reason{reason(redisctl.ReasonNoConnectedReplica, "10.0.2.0:6379", "master of 10923-16383 has no connected replica (0 known)")},
			wantState: HealthHealthy,
		},
		{
			name: "a pod not Ready → unhealthy, named",
			change: func(pods []*corev1.Pod) []*corev1.Pod {
				pods[1].Status.Conditions = nil
				return pods
			},
			wantState: HealthUnhealthy, wantReasons: []string{"pods not Ready: redis-s0-1"},
		},
		{
			name:      "a pod missing → unhealthy",
			change:    func(pods []*corev1.Pod) []*corev1.Pod { return pods[1:] },
			wantState: HealthUnhealthy, wantReasons: []string{"5 of 6 pods exist"},
		},
		{
			name:      "no node answers → unhealthy with Redis's error",
			err:       errors.New("redisctl: topology: no node answered: WRONGPASS invalid username-password pair"),
			wantState: HealthUnhealthy, wantReasons: []string{"redis: redisctl: topology: no node answered: WRONGPASS invalid username-password pair"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := sc.MustSnapshot()
			for i, p := range snap.Pods {
				if p.Spec.NodeName != "" {
					p.Status.PodIP = fmt.Sprintf("10.0.%d.%d", i/sc.PodsPerShard, i%sc.PodsPerShard)
				}
			}
			m, err := Model(snap, policies.Options{}, Selection{})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			pods := MemberPods(c)
			if tc.change != nil {
				pods = tc.change(pods)
			}
			rc := &healthReader{reasons: tc.reasons, err: tc.err}
			got := JudgeHealth(context.Background(), rc, c, pods)
			checkVerdict(t, got, tc.wantState, tc.wantReasons)
		})
	}
}

// checkVerdict compares a health verdict with the state and reasons wanted (nil: none; the
// verdict's reasons are never null, for the JSON).
func checkVerdict(t *testing.T, got Health, wantState HealthState, wantReasons []string) {
	t.Helper()
	if got.State != wantState {
		t.Errorf("state %q, want %q (reasons %q)", got.State, wantState, got.Reasons)
	}
	if wantReasons == nil {
		wantReasons = []string{}
	}
	if diff := cmp.Diff(wantReasons, got.Reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
}

func TestUnschedulableMessage(t *testing.T) {
	p := fixture.Pod("p", fixture.Unschedulable())
	if got := UnschedulableMessage(p); got != "Unschedulable" {
		t.Errorf("without a message: %q, want the reason", got)
	}
	p.Status.Conditions[0].Message = "0/6 nodes are available: 6 node(s) were unschedulable."
	if got := UnschedulableMessage(p); got != p.Status.Conditions[0].Message {
		t.Errorf("got %q", got)
	}
	if got := UnschedulableMessage(fixture.Pod("q", fixture.On("n1"), fixture.Ready())); got != "" {
		t.Errorf("a scheduled pod: %q", got)
	}
}

// TestJudgeHealthExpecting covers the health gate of a run whose plan lets a pod wait Pending:
// post-scale-down's redis-s0-1 was evicted and re-created Pending (no node, no IP); Redis still
// lists its node, 10.0.0.1:6379, as a replica of redis-s0-0 it no longer reaches.
func TestJudgeHealthExpecting(t *testing.T) {
	const gone = "10.0.0.1:6379"
	failing := redisctl.Reason{Code: redisctl.ReasonNodeFailing, Addr: gone, NodeID: "id-0-1", Message: "flagged by 10.0.0.0:6379"}
	noReplica := redisctl.Reason{Code: redisctl.ReasonNoConnectedReplica, Addr: "10.0.0.0:6379", NodeID: "id-0-0", Message: "master of 0 has no connected replica (1 known)"}
	unreachable := redisctl.Reason{Code: redisctl.ReasonNodeUnreachable, Addr: gone, Message: "dial tcp 10.0.0.1:6379: connect: connection refused"}
	disagree := redisctl.Reason{Code: redisctl.ReasonViewsDisagree, NodeID: "id-0-1", Message: "node id-0-1 failing: 10.0.0.0:6379=fail, 10.0.1.0:6379=fail?"}
	for _, tc := range []struct {
		name        string
		pending     map[string]bool
		reasons     []redisctl.Reason
		change      func(pods []*corev1.Pod)
		wantState   HealthState
		wantReasons []string
	}{
		{
			name: "the planned Pending pod, its node failing and unreachable, its master without a replica → healthy", pending: map[string]bool{"redis-s0-1": true},
			reasons: []redisctl.Reason{failing, unreachable, noReplica, disagree}, wantState: HealthHealthy,
		},
		{
			name: "the Pending pod is not the planned one → unhealthy: the pod and its node named", pending: map[string]bool{"redis-s1-1": true},
			reasons: []redisctl.Reason{failing, noReplica}, wantState: HealthUnhealthy,
			change: func(pods []*corev1.Pod) { fixture.Unschedulable()(pods[1]) },
			wantReasons: []string{"pods Pending that no planned step leaves Pending: redis-s0-1", "node_failing 10.0.0.1:6379: flagged by 10.0.0.0:6379",
				"no_connected_replica 10.0.0.0:6379: master of 0 has no connected replica (1 known)"},
		},
		{
			name: "the planned pod is Pending, but a master fails → unhealthy", pending: map[string]bool{"redis-s0-1": true},
			reasons:     []redisctl.Reason{failing, {Code: redisctl.ReasonNodeFailing, Addr: "10.0.1.0:6379", NodeID: "id-1-0", Message: "flagged by 10.0.0.0:6379"}},
			wantState:   HealthUnhealthy,
			wantReasons: []string{"node_failing 10.0.1.0:6379: flagged by 10.0.0.0:6379"},
		},
		{
			name: "the planned pod is Pending, but another shard's replica fails → unhealthy", pending: map[string]bool{"redis-s0-1": true},
			reasons:     []redisctl.Reason{{Code: redisctl.ReasonNodeFailing, Addr: "10.0.1.1:6379", NodeID: "id-1-1", Message: "flagged by 10.0.0.0:6379"}},
			wantState:   HealthUnhealthy,
			wantReasons: []string{"node_failing 10.0.1.1:6379: flagged by 10.0.0.0:6379"},
		},
		{
			name:    "without a plan (JudgeHealth): the re-created pod Unschedulable, its node failing and unreachable, its master without a replica → healthy",
			reasons: []redisctl.Reason{failing, unreachable, noReplica, disagree}, wantState: HealthHealthy,
			change: func(pods []*corev1.Pod) { fixture.Unschedulable()(pods[1]) },
		},
		{
			name: "without a plan (JudgeHealth): the re-created pod Unschedulable, but another shard's replica fails → unhealthy", reasons: []redisctl.Reason{failing, {Code: redisctl.ReasonNodeFailing, Addr: "10.0.1.1:6379", NodeID: "id-1-1", Message: "flagged by 10.0.0.0:6379"}},
			change:      func(pods []*corev1.Pod) { fixture.Unschedulable()(pods[1]) },
			wantState:   HealthUnhealthy,
			wantReasons: []string{"node_failing 10.0.1.1:6379: flagged by 10.0.0.0:6379"},
		},
		{
			name: "without a plan that lets it wait (JudgeHealth): the re-created pod not yet judged by the scheduler → unhealthy", reasons: []redisctl.Reason{failing},
			wantState: HealthUnhealthy, wantReasons: []string{"pods not Ready: redis-s0-1", "node_failing 10.0.0.1:6379: flagged by 10.0.0.0:6379"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario.PostScaleDown()
			snap := sc.MustSnapshot()
			topo := &redisctl.Topology{}
			for i, p := range snap.Pods {
				s, o := i/sc.PodsPerShard, i%sc.PodsPerShard
				p.Status.PodIP = fmt.Sprintf("10.0.%d.%d", s, o)
				n := redisctl.Node{ID: fmt.Sprintf("id-%d-%d", s, o), IP: p.Status.PodIP, Port: 6379, Flags: []string{redisctl.FlagMaster}, Slots: []redisctl.SlotRange{{Start: s, End: s}}}
				if o > 0 {
					n.Flags, n.Slots, n.MasterID = []string{redisctl.FlagReplica}, nil, fmt.Sprintf("id-%d-0", s)
				}
				topo.Nodes = append(topo.Nodes, n)
			}
			m, err := Model(snap, policies.Options{}, Selection{})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			pods := MemberPods(c)
			// redis-s0-1 re-created Pending: no node, no IP, not yet judged by the scheduler.
			pods[1] = fixture.Pod("redis-s0-1", func(p *corev1.Pod) { p.Namespace, p.Labels = pods[1].Namespace, pods[1].Labels })
			if tc.change != nil {
				tc.change(pods)
			}
			rc := &healthReader{reasons: tc.reasons, topo: topo}
			var got Health
			if tc.pending == nil {
				got = JudgeHealth(context.Background(), rc, c, pods)
			} else {
				got = JudgeHealthExpecting(context.Background(), rc, c, pods, tc.pending)
			}
			checkVerdict(t, got, tc.wantState, tc.wantReasons)
		})
	}
}

// TestJudgeHealthUnknownShard covers shards read from Redis (Bitnami's layout: one StatefulSet):
// a replica a drain evicted comes back Pending and Unschedulable (its zonal volume's zone
// cordoned), not in Redis, so its shard is unknown; Redis still lists its old node as a failing
// replica. The Pending pod stands for one gone replica of any shard, not for two.
func TestJudgeHealthUnknownShard(t *testing.T) {
	failing := func(id, addr string) redisctl.Reason {
		return redisctl.Reason{Code: redisctl.ReasonNodeFailing, Addr: addr, NodeID: id, Message: "flagged by 10.0.0.0:6379=fail"}
	}
	noReplica := redisctl.Reason{Code: redisctl.ReasonNoConnectedReplica, Addr: "10.0.0.0:6379", NodeID: "id-0-0", Message: "master of 0 has no connected replica (1 known)"}
	for _, tc := range []struct {
		name        string
		reasons     []redisctl.Reason
		wantState   HealthState
		wantReasons []string
	}{
		{
			name:      "one Pending pod of unknown shard, one gone replica, its master without a replica → healthy",
			reasons:   []redisctl.Reason{failing("id-0-1", "10.0.0.1:6379"), noReplica},
			wantState: HealthHealthy,
		},
		{
			name:      "one Pending pod of unknown shard, a second replica failing at a pod's address → unhealthy",
			reasons:   []redisctl.Reason{failing("id-0-1", "10.0.0.1:6379"), failing("id-1-1", "10.0.1.1:6379")},
			wantState: HealthUnhealthy, wantReasons: []string{"node_failing 10.0.1.1:6379: flagged by 10.0.0.0:6379=fail"},
		},
		{
			name:        "one Pending pod of unknown shard, two gone replicas → unhealthy: both named",
			reasons:     []redisctl.Reason{failing("id-0-1", "10.0.0.1:6379"), failing("id-9-9", "10.0.9.9:6379")},
			wantState:   HealthUnhealthy,
			wantReasons: []string{"node_failing 10.0.0.1:6379: flagged by 10.0.0.0:6379=fail", "node_failing 10.0.9.9:6379: flagged by 10.0.0.0:6379=fail"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario.PostScaleDown()
			snap := sc.MustSnapshot()
			topo := &redisctl.Topology{}
			var nodes []policies.RedisNode
			for i, p := range snap.Pods {
				s, o := i/sc.PodsPerShard, i%sc.PodsPerShard
				p.Status.PodIP = fmt.Sprintf("10.0.%d.%d", s, o)
				n := redisctl.Node{ID: fmt.Sprintf("id-%d-%d", s, o), IP: p.Status.PodIP, Port: 6379, Flags: []string{redisctl.FlagMaster}, Slots: []redisctl.SlotRange{{Start: s, End: s}}}
				rn := policies.RedisNode{ID: n.ID, IP: n.IP, Role: policies.RoleMaster, Slots: [][2]int{{s, s}}}
				if o > 0 {
					n.Flags, n.Slots, n.MasterID = []string{redisctl.FlagReplica}, nil, fmt.Sprintf("id-%d-0", s)
					rn.Role, rn.Slots, rn.MasterID = policies.RoleReplica, nil, n.MasterID
				}
				topo.Nodes = append(topo.Nodes, n)
				if i != 1 { // redis-s0-1 is Pending: Redis's node for it has no pod
					nodes = append(nodes, rn)
				}
			}
			// A gone replica of another shard, at an address no pod has.
			topo.Nodes = append(topo.Nodes, redisctl.Node{ID: "id-9-9", IP: "10.0.9.9", Port: 6379, Flags: []string{redisctl.FlagReplica}, MasterID: "id-1-0"})
			pending := snap.Pods[1]
			pending.Spec.NodeName, pending.Status.PodIP = "", ""
			pending.Status.Phase, pending.Status.Conditions = corev1.PodPending, nil
			fixture.Unschedulable()(pending)
			m, err := Model(snap, policies.Options{ShardSource: policies.ShardSource{Kind: policies.ShardRedis}}, Selection{})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			c.ApplyRedis(nodes)
			var unknown []string
			for _, mem := range c.Members {
				if !mem.ShardKnown() {
					unknown = append(unknown, mem.Pod.Name)
				}
			}
			if diff := cmp.Diff([]string{"redis-s0-1"}, unknown); diff != "" {
				t.Fatalf("members of unknown shard (-want +got):\n%s", diff)
			}
			got := JudgeHealth(context.Background(), &healthReader{reasons: tc.reasons, topo: topo}, c, MemberPods(c))
			checkVerdict(t, got, tc.wantState, tc.wantReasons)
		})
	}
}
