package guard

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// MessagePrefix starts the message of every eviction the guard denies, followed by the Reason
// and ": " ("redis-rebalancer guard: MasterServingSlots: pod ..."). kube-apiserver passes it on
// after `admission webhook "NAME" denied the request: `, which is how a client tells the guard's
// 429 from a PodDisruptionBudget's (Denied).
const MessagePrefix = "redis-rebalancer guard: "

// Reason names why the guard answered as it did: the reason label of its metrics and the first
// word of its Events' notes. Stable.
type Reason string

// Reasons of an allowed eviction.
const (
	// ReasonNotGuarded: the pod is not a member of a Redis cluster the policy selects (no
	// cluster label, another namespace, a cluster the selector leaves out), or it is not in the
	// watched cache (the eviction then fails with 404 anyway).
	ReasonNotGuarded Reason = "NotGuarded"
	// ReasonNodeNotReady: the pod's node is NotReady or unreachable; its Redis node is gone
	// already, and holding the eviction would only hold up the node's replacement.
	ReasonNodeNotReady Reason = "NodeNotReady"
	// ReasonNotServing: the pod's Redis node serves nothing: a master without slots, a pod not
	// Ready whose Redis does not answer, or one Redis does not know.
	ReasonNotServing Reason = "NotServing"
	// ReasonReplicaCovered: a replica whose shard keeps a serving master and, if it had another
	// replica, an in-sync one; the hand-off of a master leaving does not need it.
	ReasonReplicaCovered Reason = "ReplicaCovered"
	// ReasonHoldExpired: the guard has held the pod's eviction longer than guard.maxHold; it is
	// admitted with a Warning Event so that a drain never hangs forever.
	ReasonHoldExpired Reason = "HoldExpired"
)

// Reasons of a denied eviction (429 TooManyRequests).
const (
	// ReasonMaster: the pod is a master serving slots. The leader fails it over (the hand-off);
	// the evictor's next retry finds a replica.
	ReasonMaster Reason = "MasterServingSlots"
	// ReasonShardExposed: the eviction would leave the pod's shard without a serving master or
	// without an in-sync replica: its master is failing, not Ready or going away, or another
	// replica of the shard is not in sync (one disruption at a time per shard).
	ReasonShardExposed Reason = "ShardExposed"
	// ReasonHandOffNeedsReplica: the pod is the only in-sync replica, on a node that stays, of a
	// master whose node is being emptied: the master's hand-off needs it.
	ReasonHandOffNeedsReplica Reason = "HandOffNeedsReplica"
	// ReasonRoleUnknown: the pod is Ready and its Redis node did not tell its role within the
	// guard's bounded read; it may be a master.
	ReasonRoleUnknown Reason = "RoleUnknown"
	// ReasonHandOffRunning: the pod is a master this process's hand-off has just failed over (a
	// replica already), and the hand-off still waits until the clients have moved to the new
	// master (its client drain) and the cluster is observed again (Holds.BeginHandOff): evicting
	// the pod now would refuse the connections of clients whose slot map still names it.
	ReasonHandOffRunning Reason = "HandOffRunning"
)

// Peer is another member of the evicted pod's shard, as the guard sees it at review time.
type Peer struct {
	// Pod is the member's pod "namespace/name" ("" when its Redis node matches no pod); Addr its
	// Redis address.
	Pod, Addr string
	// Node is the pod's node ("" when unknown).
	Node string
	// Serving is true when the pod is Ready and not terminating, its node Ready, and Redis flags
	// the node neither fail nor fail? and its cluster bus link is connected. NotServing says why
	// not ("" when Serving).
	Serving    bool
	NotServing string
	// InSync is true for a replica whose master lists it online with an offset within the
	// policy's redis.maxLagBytes.
	InSync bool
	// Leaving is true when the pod's node is being emptied (cordoned, or a drain taint).
	Leaving bool
}

// State is what the decision reads: the evicted pod, its node, its Redis role read at review
// time and its shard. The handler builds it from the watched cache and one bounded Redis read.
type State struct {
	// Pod is the evicted pod, "namespace/name".
	Pod string
	// Cluster is the pod's Redis cluster, "namespace/name"; "" when the guard does not guard the
	// pod (ReasonNotGuarded).
	Cluster string
	// NotMember says why the pod, though it carries the cluster label of a guarded cluster, is no
	// member of it (policies.WhyNotMember: a Job's pod, another controller's, a workload the
	// workload selector does not name); "" for a member. Cluster is "" then.
	NotMember string
	// NodeReady is false when the pod's node is NotReady or unreachable (its Ready condition not
	// True, or an unreachable or not-ready taint). NodeNotReady says how.
	NodeReady    bool
	NodeNotReady string
	// Leaving is true when the pod's node is being emptied.
	Leaving bool
	// PodReady is true when the pod is Ready and not terminating.
	PodReady bool
	// Role is the pod's Redis role as its Redis node reported it at review time (RoleUnknown
	// when it did not answer: RoleErr says why). Slots is the number of slots it serves as a
	// master; Shard the shard's name (its master's first slot range).
	Role    policies.Role
	RoleErr string
	Slots   int
	Shard   string
	// InSync is true for a replica its master lists in sync.
	InSync bool
	// Master is a replica's master (nil for a master, or when its master is unknown).
	Master *Peer
	// Replicas are the shard's other replicas (the master's, the pod excepted).
	Replicas []Peer
	// HeldFor is how long the guard has held the pod's eviction (since its first 429 for this
	// pod, by UID); Held is false when it has not held it yet.
	Held    bool
	HeldFor time.Duration
	// HandingOff is true while this process's hand-off of the pod (as the master it fails over)
	// runs: Holds.HandingOff.
	HandingOff bool
	// MaxHold is guard.maxHold.
	MaxHold time.Duration
}

// Verdict is the guard's answer to one eviction.
type Verdict struct {
	// Allowed is the admission answer; a denial is a 429 TooManyRequests.
	Allowed bool
	// Reason names why.
	Reason Reason
	// Message says why in words, with the pod, its shard and what happens next; a denial's
	// starts with MessagePrefix.
	Message string
}

// Decide answers one eviction from s. It is a pure function of s: the handler reads the cache
// and Redis, Decide judges, the handler records. In order: a pod the guard does not guard, on a
// node that is not Ready, or held longer than MaxHold is allowed; a pod whose role is unknown is
// allowed when it is not Ready (its Redis serves nothing) and denied otherwise; a master serving
// slots is denied (the hand-off fails it over); a master without slots is allowed; a replica is
// denied while this process's hand-off of it runs (HandingOff), when its master is not serving, when it is the last in-sync replica while another
// replica of its shard is disrupted, or when it is the only in-sync replica on a node that stays
// of a master on a node being emptied; any other replica is allowed.
func Decide(s State) Verdict {
	switch {
	case s.Cluster == "" && s.NotMember != "":
		return allow(ReasonNotGuarded, "pod %s is not a Redis cluster member: %s", s.Pod, s.NotMember)
	case s.Cluster == "":
		return allow(ReasonNotGuarded, "pod %s is not a member of a Redis cluster the policy selects", s.Pod)
	case !s.NodeReady:
		return allow(ReasonNodeNotReady, "pod %s runs on a node that is not Ready (%s): its Redis node is gone already", s.Pod, s.NodeNotReady)
	case s.Held && s.MaxHold > 0 && s.HeldFor >= s.MaxHold:
		return allow(ReasonHoldExpired, "the eviction of pod %s (Redis %s) has been held for %s, guard.maxHold is %s: admitted without a hand-off", s.Pod, roleText(s.Role), s.HeldFor.Round(time.Second), s.MaxHold)
	}
	switch s.Role {
	case policies.RoleMaster:
		if s.Slots == 0 {
			return allow(ReasonNotServing, "pod %s is a Redis master serving no slot", s.Pod)
		}
		return deny(s, ReasonMaster, "pod %s is the Redis master of shard %s (%d slots): the eviction is held while the leader fails it over to an in-sync replica on a node that stays (hand-off); a retry then finds a replica and passes", s.Pod, s.Shard, s.Slots)
	case policies.RoleReplica:
		if s.HandingOff {
			return deny(s, ReasonHandOffRunning, "pod %s was just failed over by the hand-off, which waits until its clients have moved to the new master: a retry passes once it is done", s.Pod)
		}
		return decideReplica(s)
	}
	if !s.PodReady {
		return allow(ReasonNotServing, "pod %s is not Ready and its Redis node did not tell its role (%s): it serves nothing", s.Pod, s.RoleErr)
	}
	return deny(s, ReasonRoleUnknown, "pod %s is Ready and its Redis node did not tell its role (%s): it may be a master; the eviction is held until its role is known", s.Pod, s.RoleErr)
}

// decideReplica judges the eviction of a replica.
func decideReplica(s State) Verdict {
	m := s.Master
	switch {
	case m == nil:
		return deny(s, ReasonShardExposed, "pod %s is a replica whose master Redis does not list: it may hold the shard's only copy", s.Pod)
	case !m.Serving:
		return deny(s, ReasonShardExposed, "pod %s is a replica of shard %s whose master %s is not serving (%s): it may hold the shard's only copy and be promoted", s.Pod, s.Shard, peerName(*m), m.NotServing)
	}
	others, inSync := 0, 0
	var disrupted []string
	stayingInSync := 0
	for _, r := range s.Replicas {
		others++
		if r.Serving && r.InSync {
			inSync++
			if !r.Leaving {
				stayingInSync++
			}
			continue
		}
		why := r.NotServing
		if why == "" {
			why = "not in sync"
		}
		disrupted = append(disrupted, peerName(r)+" ("+why+")")
	}
	if s.InSync && others > 0 && inSync == 0 {
		return deny(s, ReasonShardExposed, "pod %s is the last in-sync replica of shard %s while %s: its eviction would leave the shard without an in-sync replica (one disruption at a time per shard)", s.Pod, s.Shard, strings.Join(disrupted, ", "))
	}
	if m.Leaving && s.InSync && !s.Leaving && stayingInSync == 0 {
		return deny(s, ReasonHandOffNeedsReplica, "pod %s is the only in-sync replica on a node that stays of master %s, whose node is being emptied: the eviction is held until the master's hand-off to it", s.Pod, peerName(*m))
	}
	return allow(ReasonReplicaCovered, "pod %s is a replica of shard %s, whose master %s serves it", s.Pod, s.Shard, peerName(*m))
}

func allow(r Reason, format string, args ...any) Verdict {
	return Verdict{Allowed: true, Reason: r, Message: fmt.Sprintf(format, args...)}
}

// deny words a denial: the prefix, the reason, and how long the eviction has been held.
func deny(s State, r Reason, format string, args ...any) Verdict {
	msg := MessagePrefix + string(r) + ": " + fmt.Sprintf(format, args...)
	if s.MaxHold > 0 {
		msg += fmt.Sprintf(" (held for %s of at most %s)", s.HeldFor.Round(time.Second), s.MaxHold)
	}
	return Verdict{Reason: r, Message: msg}
}

func peerName(p Peer) string {
	if p.Pod != "" {
		return p.Pod
	}
	return p.Addr
}

func roleText(r policies.Role) string {
	if r == policies.RoleUnknown {
		return "role unknown"
	}
	return string(r)
}

// Denied reports whether text, an eviction's error message, is the guard's denial with reason r
// (MessagePrefix, r, ": ").
func Denied(text string, r Reason) bool {
	return strings.Contains(text, MessagePrefix+string(r)+": ")
}
