package observe

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// HealthState is the verdict on a Redis cluster's health, the health gate's before every move
// ("Compliant" means the placement rules hold and the state is HealthHealthy).
type HealthState string

const (
	// HealthHealthy: every pod Ready and the health gate passes (cluster_state:ok, 16384 slots
	// served, no node failing, every master with a connected, in-sync replica).
	HealthHealthy HealthState = "healthy"
	// HealthResyncing: every pod Ready, every slot served, no node failing or unreachable; only
	// replicas are catching up with their master (link down, full sync in progress, offset lag,
	// stale last I/O, or a master without a connected replica yet). It heals on its own; a move
	// waits for it.
	HealthResyncing HealthState = "resyncing"
	// HealthUnhealthy: anything else (pods missing or not Ready, cluster_state not ok, slots not
	// served, nodes failing or unreachable, views that disagree, open slot migrations).
	HealthUnhealthy HealthState = "unhealthy"
	// HealthUnknown: Redis was not read (an offline snapshot, or live without Redis access).
	HealthUnknown HealthState = "unknown"
)

// Health is a Redis cluster's health as `check` and `run` report it. JSON: {"state": "resyncing",
// "reasons": ["replica_link_down 10.0.0.7:6379: master_link_status:down, down for 3 s"]}.
type Health struct {
	// State is the verdict.
	State HealthState `json:"state"`
	// Reasons say why the state is not HealthHealthy, one line each ("pods not Ready: a, b";
	// redisctl.Reason.String() for Redis's own reasons); empty when healthy.
	Reasons []string `json:"reasons"`
	// Redis is the health gate's result the verdict came from (nil when Redis was not read or
	// no node answered).
	Redis *redisctl.Health `json:"-"`
	// Waiting are the pods Pending that the verdict accepts (Unschedulable pods a move may fix,
	// or pods a planned Pending step leaves Pending), sorted.
	Waiting []string `json:"waiting,omitempty"`
}

// Healthy reports whether the state is HealthHealthy.
func (h Health) Healthy() bool { return h.State == HealthHealthy }

// Summary returns the state followed by its first reason ("resyncing: replica_link_down ...";
// "healthy").
func (h Health) Summary() string {
	if len(h.Reasons) == 0 {
		return string(h.State)
	}
	s := string(h.State) + ": " + h.Reasons[0]
	if len(h.Reasons) > 1 {
		s += fmt.Sprintf(" (and %d more)", len(h.Reasons)-1)
	}
	return s
}

// UnknownHealth returns the HealthUnknown verdict with why Redis was not read.
func UnknownHealth(why string) Health {
	return Health{State: HealthUnknown, Reasons: []string{why}}
}

// HealthReader reads the health gate from Redis (*redisctl.Client implements it).
type HealthReader interface {
	// AddrOf returns the Redis address of a pod IP.
	AddrOf(ip string) string
	// CheckHealth is redisctl.Client.CheckHealth.
	CheckHealth(ctx context.Context, addrs []string, opts redisctl.HealthOptions) (*redisctl.Health, error)
}

// resyncCodes are the health gate's reasons that only say a replica is catching up.
var resyncCodes = map[redisctl.ReasonCode]bool{
	redisctl.ReasonReplicaLinkDown:    true,
	redisctl.ReasonReplicaLag:         true,
	redisctl.ReasonReplicaLastIO:      true,
	redisctl.ReasonNoConnectedReplica: true,
}

// JudgeHealth judges cluster c's health from pods, the cluster's pods as they are now (a fresh
// list, or c's members' pods), and the health gate read from Redis through their Ready pods.
// Pods the scheduler cannot place (Pending, PodScheduled=False/Unschedulable) are what a move
// may fix, so they do not make the cluster unhealthy, nor does their shard's master lacking the
// replica they would be (the Unschedulable rule reports them). Fewer pods than c.N, pods not
// Ready, and every Redis reason but a replica catching up make it HealthUnhealthy; only replicas
// catching up make it HealthResyncing. ctx ending while Redis is read gives HealthUnhealthy with
// the context's error.
func JudgeHealth(ctx context.Context, rc HealthReader, c *policies.Cluster, pods []*corev1.Pod) Health {
	return JudgeHealthExpecting(ctx, rc, c, pods, nil)
}

// JudgeHealthExpecting is JudgeHealth for a run whose plan lets pods wait Pending (Pending
// steps): only the pods pending names may be Pending (another Pending pod makes the cluster
// unhealthy), whether or not the scheduler has judged them yet. With pending nil it is
// JudgeHealth. Either way, what the absence of an accepted Pending pod costs Redis is accepted:
// its shard's master without a connected replica, and a replica Redis still lists but no longer
// reaches (failing, unreachable, or seen so by some views only) whose address is no pod's any
// more and whose master's shard has such a Pending pod. A Pending pod whose shard Redis does not
// know (shards read from Redis, as in Bitnami's layout: a pod not in Redis has no shard) vouches
// for one such replica of any shard, and for its master's missing replica: a drain that evicted
// a replica its zonal volume cannot re-place leaves exactly that, and it must not stop the
// failovers of the other shards' masters off the nodes being emptied.
func JudgeHealthExpecting(ctx context.Context, rc HealthReader, c *policies.Cluster, pods []*corev1.Pod, pending map[string]bool) Health {
	shardOf := map[string]string{} // pod name → shard, for the members whose shard is known
	for _, m := range c.Members {
		if m.ShardKnown() {
			shardOf[m.Pod.Name] = m.Shard
		}
	}
	var addrs, notReady, unexpected, accepted, reasons []string
	pendingShard := map[string]bool{}
	unknownPending := 0 // accepted Pending pods whose shard is not known
	accept := func(name string) {
		accepted = append(accepted, name)
		if s, ok := shardOf[name]; ok {
			pendingShard[s] = true
		} else {
			unknownPending++
		}
	}
	shardOfAddr := map[string]string{}
	podAddr := map[string]bool{} // the addresses of every pod that has an IP
	for _, p := range pods {
		if p.Status.PodIP != "" {
			podAddr[rc.AddrOf(p.Status.PodIP)] = true
		}
		waiting := p.Spec.NodeName == "" && p.DeletionTimestamp == nil
		switch {
		case PodReady(p):
			addr := rc.AddrOf(p.Status.PodIP)
			addrs = append(addrs, addr)
			shardOfAddr[addr] = shardOf[p.Name]
		case waiting && pending != nil && pending[p.Name]:
			accept(p.Name)
		case waiting && pending != nil && UnschedulableMessage(p) != "":
			unexpected = append(unexpected, p.Name)
		case waiting && pending == nil && UnschedulableMessage(p) != "":
			accept(p.Name)
		default:
			notReady = append(notReady, p.Name)
		}
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		reasons = append(reasons, "pods Pending that no planned step leaves Pending: "+strings.Join(unexpected, ", "))
	}
	unhealthy := len(unexpected) > 0
	if len(notReady) > 0 {
		sort.Strings(notReady)
		reasons = append(reasons, "pods not Ready: "+strings.Join(notReady, ", "))
		unhealthy = true
	}
	if len(pods) < c.N {
		reasons = append(reasons, fmt.Sprintf("%d of %d pods exist", len(pods), c.N))
		unhealthy = true
	}
	if len(addrs) == 0 {
		return Health{State: HealthUnhealthy, Reasons: append(reasons, "no pod is Ready: Redis not read")}
	}
	h, err := rc.CheckHealth(ctx, addrs, redisctl.HealthOptions{})
	if h == nil {
		return Health{State: HealthUnhealthy, Reasons: append(reasons, "redis: "+err.Error())}
	}
	// goneNode returns the replica reason r is about when Redis still lists it but its address
	// is no pod's any more (a failing, unreachable or disputed node), and its master.
	goneNode := func(r redisctl.Reason) (n, master redisctl.Node, ok bool) {
		if h.Topology == nil {
			return n, master, false
		}
		switch r.Code {
		case redisctl.ReasonNodeFailing, redisctl.ReasonNodeUnreachable, redisctl.ReasonViewsDisagree:
		default:
			return n, master, false
		}
		n, ok = h.Topology.Node(r.NodeID)
		if !ok {
			n, ok = h.Topology.NodeByAddr(r.Addr)
		}
		if !ok || !n.IsReplica() || podAddr[n.Addr()] {
			return n, master, false
		}
		master, ok = h.Topology.Node(n.MasterID)
		return n, master, ok
	}
	// The gone replicas of shards without a known Pending pod, which the Pending pods of unknown
	// shards vouch for while there are no more of them than of those pods.
	orphans := map[string]redisctl.Node{} // node ID → its master
	for _, r := range h.Reasons {
		if n, master, ok := goneNode(r); ok && !pendingShard[shardOfAddr[master.Addr()]] {
			orphans[n.ID] = master
		}
	}
	vouched := len(orphans) > 0 && len(orphans) <= unknownPending
	orphanMaster := map[string]bool{} // address of a vouched-for orphan's master
	if vouched {
		for _, m := range orphans {
			orphanMaster[m.Addr()] = true
		}
	}
	// goneReplica reports whether reason r is about a gone replica an accepted Pending pod stands
	// for.
	goneReplica := func(r redisctl.Reason) bool {
		n, master, ok := goneNode(r)
		if !ok {
			return false
		}
		if pendingShard[shardOfAddr[master.Addr()]] {
			return true
		}
		_, orphan := orphans[n.ID]
		return orphan && vouched
	}
	for _, r := range h.Reasons {
		if s, ok := shardOfAddr[r.Addr]; ok && r.Code == redisctl.ReasonNoConnectedReplica && pendingShard[s] {
			continue
		}
		if r.Code == redisctl.ReasonNoConnectedReplica && orphanMaster[r.Addr] {
			continue
		}
		if goneReplica(r) {
			continue
		}
		reasons = append(reasons, r.String())
		if !resyncCodes[r.Code] {
			unhealthy = true
		}
	}
	if reasons == nil {
		reasons = []string{}
	}
	state := HealthHealthy
	switch {
	case unhealthy:
		state = HealthUnhealthy
	case len(reasons) > 0:
		state = HealthResyncing
	}
	sort.Strings(accepted)
	return Health{State: state, Reasons: reasons, Redis: h, Waiting: accepted}
}

// MemberPods returns the pods of c's members (what the snapshot c was built from holds).
func MemberPods(c *policies.Cluster) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(c.Members))
	for i, m := range c.Members {
		pods[i] = m.Pod
	}
	return pods
}

// PodReady reports whether p is Running with a pod IP, not terminating, and Ready.
func PodReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// UnschedulableMessage returns the message of p's PodScheduled=False condition (kube-scheduler's
// "0/6 nodes are available: ..."), or "" when p has none. A condition without a message gives
// its reason.
func UnschedulableMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			if c.Message == "" {
				return c.Reason
			}
			return c.Message
		}
	}
	return ""
}
