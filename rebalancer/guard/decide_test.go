package guard

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// replicaState is a healthy replica's eviction: shard slots-0-5460 of two pods, its master
// serving on a node that stays.
func replicaState(mut ...func(*State)) State {
	s := State{
		Pod: "redis/shard0-1", Cluster: "redis/rc1", NodeReady: true, PodReady: true,
		Role: policies.RoleReplica, Shard: "slots-0-5460", InSync: true,
		Master:  &Peer{Pod: "redis/shard0-0", Addr: "10.0.0.1:6379", Node: "n2", Serving: true},
		MaxHold: 5 * time.Minute,
	}
	for _, m := range mut {
		m(&s)
	}
	return s
}

// masterState is the eviction of a master serving 5461 slots.
func masterState(mut ...func(*State)) State {
	return replicaState(append([]func(*State){func(s *State) {
		s.Pod, s.Role, s.Slots, s.Master, s.InSync = "redis/shard0-0", policies.RoleMaster, 5461, nil, false
		s.Replicas = []Peer{{Pod: "redis/shard0-1", Node: "n3", Serving: true, InSync: true}}
	}}, mut...)...)
}

func TestDecide(t *testing.T) {
	type want struct {
		Allowed bool
		Reason  Reason
	}
	for _, tc := range []struct {
		name  string
		state State
		want  want
		// says is a part of the message.
		says string
	}{
		{
			name:  "a pod of no selected Redis cluster → allowed, not guarded",
			state: replicaState(func(s *State) { s.Cluster, s.Role = "", policies.RoleMaster }),
			want:  want{true, ReasonNotGuarded},
		},
		{
			name:  "a master serving slots → denied (429), the hand-off named",
			state: masterState(),
			want:  want{false, ReasonMaster},
			says:  "redis-rebalancer guard: MasterServingSlots: pod redis/shard0-0 is the Redis master of shard slots-0-5460 (5461 slots)",
		},
		{
			name:  "a master on a NotReady node → allowed: its Redis is gone already",
			state: masterState(func(s *State) { s.NodeReady, s.NodeNotReady = false, "Ready condition Unknown" }),
			want:  want{true, ReasonNodeNotReady},
			says:  "Ready condition Unknown",
		},
		{
			name:  "a master held for maxHold → allowed, the hold expired",
			state: masterState(func(s *State) { s.Held, s.HeldFor = true, 5*time.Minute }),
			want:  want{true, ReasonHoldExpired},
			says:  "held for 5m0s, guard.maxHold is 5m0s",
		},
		{
			name:  "a master held for less than maxHold → still denied, the time held said",
			state: masterState(func(s *State) { s.Held, s.HeldFor = true, 90*time.Second }),
			want:  want{false, ReasonMaster},
			says:  "(held for 1m30s of at most 5m0s)",
		},
		{
			name:  "a master without slots → allowed: it serves nothing",
			state: masterState(func(s *State) { s.Slots = 0 }),
			want:  want{true, ReasonNotServing},
		},
		{
			name:  "role unknown, pod Ready → denied: it may be a master",
			state: replicaState(func(s *State) { s.Role, s.RoleErr, s.Master = policies.RoleUnknown, "i/o timeout", nil }),
			want:  want{false, ReasonRoleUnknown},
			says:  "i/o timeout",
		},
		{
			name: "role unknown, pod not Ready → allowed: it serves nothing",
			state: replicaState(func(s *State) {
				s.Role, s.RoleErr, s.PodReady, s.Master = policies.RoleUnknown, "connection refused", false, nil
			}),
			want: want{true, ReasonNotServing},
		},
		{
			name:  "a replica whose master serves, sole replica of its shard → allowed",
			state: replicaState(),
			want:  want{true, ReasonReplicaCovered},
		},
		{
			name:  "a replica whose hand-off (as the master it was) still runs → denied until its clients have moved",
			state: replicaState(func(s *State) { s.HandingOff = true }),
			want:  want{false, ReasonHandOffRunning},
			says:  "was just failed over by the hand-off, which waits until its clients have moved to the new master",
		},
		{
			name:  "a replica on a node being emptied, its master on a node that stays → allowed",
			state: replicaState(func(s *State) { s.Leaving = true }),
			want:  want{true, ReasonReplicaCovered},
		},
		{
			name:  "a replica whose master is flagged fail → denied: it may be the shard's only copy",
			state: replicaState(func(s *State) { s.Master.Serving, s.Master.NotServing = false, "flagged fail" }),
			want:  want{false, ReasonShardExposed},
			says:  "whose master redis/shard0-0 is not serving (flagged fail)",
		},
		{
			name:  "a replica whose master Redis does not list → denied",
			state: replicaState(func(s *State) { s.Master = nil }),
			want:  want{false, ReasonShardExposed},
		},
		{
			name: "the last in-sync replica while the shard's other replica resyncs → denied: one disruption at a time per shard",
			state: replicaState(func(s *State) {
				s.Replicas = []Peer{{Pod: "redis/shard0-2", Node: "n4", Serving: true, InSync: false}}
			}),
			want: want{false, ReasonShardExposed},
			says: "redis/shard0-2 (not in sync)",
		},
		{
			name: "a replica beside another in-sync replica → allowed",
			state: replicaState(func(s *State) {
				s.Replicas = []Peer{{Pod: "redis/shard0-2", Node: "n4", Serving: true, InSync: true}}
			}),
			want: want{true, ReasonReplicaCovered},
		},
		{
			name: "a replica not in sync itself while the other replica is down → allowed: it gives the shard no copy now",
			state: replicaState(func(s *State) {
				s.InSync = false
				s.Replicas = []Peer{{Pod: "redis/shard0-2", Node: "n4", NotServing: "pod not Ready"}}
			}),
			want: want{true, ReasonReplicaCovered},
		},
		{
			name:  "the only in-sync replica on a node that stays, its master's node being emptied → denied: the hand-off needs it",
			state: replicaState(func(s *State) { s.Master.Leaving = true }),
			want:  want{false, ReasonHandOffNeedsReplica},
			says:  "whose node is being emptied",
		},
		{
			name: "a replica of a master leaving, with another in-sync replica on a node that stays → allowed",
			state: replicaState(func(s *State) {
				s.Master.Leaving = true
				s.Replicas = []Peer{{Pod: "redis/shard0-2", Node: "n4", Serving: true, InSync: true}}
			}),
			want: want{true, ReasonReplicaCovered},
		},
		{
			name:  "a replica leaving with its master (both nodes emptied) → allowed: it comes back on a node that stays and takes the hand-off then",
			state: replicaState(func(s *State) { s.Master.Leaving, s.Leaving = true, true }),
			want:  want{true, ReasonReplicaCovered},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.state)
			if diff := cmp.Diff(tc.want, want{got.Allowed, got.Reason}); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
			if !strings.Contains(got.Message, tc.says) {
				t.Errorf("message %q does not say %q", got.Message, tc.says)
			}
			if !got.Allowed && !Denied(got.Message, got.Reason) {
				t.Errorf("denial %q does not start with the prefix and its reason", got.Message)
			}
		})
	}
}

func TestDeniedTellsTheGuardFromAPodDisruptionBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want bool
	}{
		{"the API server's wording of the guard's master denial → the guard's", `admission webhook "guard.rebalancer.redis.io" denied the request: redis-rebalancer guard: MasterServingSlots: pod redis/a is ...`, true},
		{"a PodDisruptionBudget's 429 → not the guard's", "Cannot evict pod as it would violate the pod's disruption budget.", false},
		{"another denial of the guard → not a master's", "redis-rebalancer guard: ShardExposed: pod redis/a ...", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Denied(tc.text, ReasonMaster); got != tc.want {
				t.Errorf("Denied(%q, master) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}
