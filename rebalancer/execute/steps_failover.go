package execute

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-redis/redis/v8"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// The steps around a master's failover: the failover itself (to the replica the plan names,
// verified), the client drain after it, and the role check just before the eviction.

// failover is the failover step: a master is failed over to the in-sync replica the plan names (one
// whose node and zone keep MasterQuorum; without a name, its shard's best in-sync replica), and
// the switch verified. It first checks that the window still leaves time for the rest of the
// move: from here to the pod's return nothing is interrupted. A failover Redis refuses (no
// in-sync replica, the named replica not in sync or not the master's replica, an error reply)
// skips; one not verified in time, or a Redis that does not answer, aborts. In a failover step
// of the plan, a pod that is no longer a master skips (the roles changed since the plan).
func (cr *clusterRun) failover(ctx context.Context, m *moveRun) result {
	if r := cr.windowCheck(ctx, m, m.index, "the rest of the move (failover to re-observe)"); r.outcome != report.OutcomeContinue {
		return r
	}
	topo := m.health.Redis.Topology
	self, ok := nodeByAddr(topo, m.addr)
	if !ok {
		return skip("failover: pod %s (%s) is not in the Redis topology", m.pod.Name, m.addr)
	}
	m.nodeID = self.ID
	if !self.IsMaster() {
		if m.mv.Kind == plan.KindFailover {
			return skip("failover: %s is no longer a master (roles changed since the plan); the next plan starts from Redis's roles", m.pod.Name)
		}
		m.masterID = self.MasterID
		return proceed("%s is a replica: no failover needed", m.pod.Name)
	}
	fo, newMasterID, err := cr.failoverMaster(ctx, m.c, topo, self, m.mv)
	switch {
	case err == nil:
	case refused(err):
		cr.cfg.Observer.Failover(cr.key, FailoverRefused)
		cr.events.pod(m.pod, corev1.EventTypeWarning, ReasonFailoverRefused, ActionFailover, "Redis refused to fail master %s over; the pod is not evicted: %v", m.pod.Name, err)
		return skip("failover refused: %v", err)
	default:
		cr.cfg.Observer.Failover(cr.key, FailoverFailed)
		cr.events.pod(m.pod, corev1.EventTypeWarning, ReasonFailoverFailed, ActionFailover, "failover of master %s failed; the pod is not evicted: %v", m.pod.Name, err)
		return abort(fmt.Errorf("failover: %w", err))
	}
	cr.cfg.Observer.Failover(cr.key, FailoverSucceeded)
	why, reason := "before its eviction", ReasonFailover
	switch {
	case cr.handOff != "":
		why, reason = "before a disruption another tool makes: "+cr.handOff, ReasonHandOff
	case m.mv.Kind == plan.KindFailover:
		why = "so that no node or zone holds half of the masters (MasterQuorum); no pod moves"
		if _, drain := cr.cfg.Goal.(HandOff); drain {
			why = "before a drain: " + m.mv.Reason + "; no pod moves"
		}
	}
	cr.events.pod(m.pod, corev1.EventTypeNormal, reason, ActionFailover, "master %s failed over to its in-sync replica %s (verified in %.3fs) %s", fo.OldMaster, fo.NewMaster, fo.Seconds, why)
	m.rep.Failover = fo
	m.masterID = newMasterID
	return proceed("verified in %s: %s is master, %s its replica", time.Duration(fo.Seconds*float64(time.Second)).Round(time.Millisecond), fo.NewMaster, fo.OldMaster)
}

// refused reports whether a failover error is Redis saying no (no in-sync replica, not a replica,
// an error reply), as opposed to a failover not verified in time or a node that does not answer.
func refused(err error) bool {
	var reply redis.Error
	return errors.Is(err, redisctl.ErrNoInSyncReplica) || errors.Is(err, redisctl.ErrNotInSync) ||
		errors.Is(err, redisctl.ErrNotReplica) || errors.Is(err, errNotNamedReplica) || errors.As(err, &reply)
}

// errNotNamedReplica: the replica a plan names for a failover is not, in Redis, a replica of the
// master to fail over (the plan's shards are StatefulSets; Redis's may differ).
var errNotNamedReplica = errors.New("the replica the plan names is not this master's replica in Redis")

// failoverMaster fails master over to the replica mv names (mv.FailoverTo, chosen by the planner
// to keep MasterQuorum), or, without one, to its shard's best in-sync replica preferring a
// replica whose pod is in no violation, and verifies the switch (redisctl.Client.Failover, which
// refuses a replica not in sync). It returns the failover and the new master's node ID.
func (cr *clusterRun) failoverMaster(ctx context.Context, c *policies.Cluster, topo *redisctl.Topology, master redisctl.Node, mv plan.Move) (*report.Failover, string, error) {
	podOf := map[string]*corev1.Pod{}
	for _, mem := range c.Members {
		if mem.Pod.Status.PodIP != "" {
			podOf[cr.cfg.Redis.AddrOf(mem.Pod.Status.PodIP)] = mem.Pod
		}
	}
	var replica redisctl.Node
	if mv.To != "" && mv.FailoverTo >= 0 && mv.FailoverTo < len(c.Members) {
		named := c.Members[mv.FailoverTo].Pod
		n, ok := nodeByAddr(topo, cr.cfg.Redis.AddrOf(named.Status.PodIP))
		if named.Status.PodIP == "" || !ok || !n.IsReplica() || n.MasterID != master.ID {
			return nil, "", fmt.Errorf("%w: %s (master %s)", errNotNamedReplica, named.Name, podName(mv.Pod))
		}
		replica = n
	} else {
		bad := map[string]bool{}
		for _, v := range policies.Hard(c.Evaluate(c.Current())) {
			for _, p := range v.Pods {
				bad[p] = true
			}
		}
		prefer := func(n redisctl.Node) bool {
			p := podOf[n.Addr()]
			return p != nil && !bad[p.Namespace+"/"+p.Name]
		}
		staying, barred := withoutLeaving(c, topo, master.ID, cr.cfg.Redis.AddrOf)
		var err error
		if replica, err = cr.cfg.Redis.ChooseReplica(ctx, staying, master.ID, prefer); err != nil {
			if len(barred) > 0 {
				err = fmt.Errorf("%w (not failover targets, on nodes being emptied: %s)", err, strings.Join(barred, ", "))
			}
			return nil, "", err
		}
	}
	name := func(addr string) string {
		if p := podOf[addr]; p != nil {
			return p.Name
		}
		return addr
	}
	cr.printf("  … %s is a master: CLUSTER FAILOVER (%s) on its replica %s\n", name(master.Addr()), cr.cfg.FailoverMode, name(replica.Addr()))
	var all []string
	for addr := range podOf {
		all = append(all, addr)
	}
	res, err := cr.cfg.Redis.Failover(ctx, replica.Addr(), redisctl.FailoverOptions{
		Mode: cr.cfg.FailoverMode, Timeout: cr.cfg.FailoverTimeout, AllAddrs: all,
	})
	if err != nil {
		return nil, "", err
	}
	return &report.Failover{OldMaster: name(res.OldMasterAddr), NewMaster: name(res.NewMasterAddr), Seconds: report.Seconds(res.Duration)}, res.NewMasterID, nil
}

// withoutLeaving returns topo without the replicas of masterID whose pods run on a node being
// emptied (policies.Node.Leaving): never failover targets, since the drain evicts them next. It
// also returns their pod names, sorted. topo itself is not changed.
func withoutLeaving(c *policies.Cluster, topo *redisctl.Topology, masterID string, addrOf func(ip string) string) (*redisctl.Topology, []string) {
	leaving := map[string]string{} // address → pod name
	for _, mem := range c.Members {
		if mem.Node >= 0 && c.Model().Nodes[mem.Node].Leaving != "" && mem.Pod.Status.PodIP != "" {
			leaving[addrOf(mem.Pod.Status.PodIP)] = mem.Pod.Name
		}
	}
	if len(leaving) == 0 {
		return topo, nil
	}
	out := *topo
	out.Nodes = make([]redisctl.Node, 0, len(topo.Nodes))
	var barred []string
	for _, n := range topo.Nodes {
		if name, ok := leaving[n.Addr()]; ok && n.IsReplica() && n.MasterID == masterID {
			barred = append(barred, name)
			continue
		}
		out.Nodes = append(out.Nodes, n)
	}
	sort.Strings(barred)
	return &out, barred
}

// drain waits, after a failover, until the old master's clients have gone quiet, so that they
// learn the new master from its MOVED replies before it goes away. It never stops the move: busy
// clients reconnect.
func (cr *clusterRun) drain(ctx context.Context, m *moveRun) result {
	if m.rep.Failover == nil {
		return proceed("no failover: no clients to drain")
	}
	busy, err := cr.cfg.Redis.WaitClientsDrained(ctx, m.addr, cr.cfg.DrainQuiet, cr.cfg.DrainTimeout)
	switch {
	case ctx.Err() != nil:
		return abort(fmt.Errorf("drain: interrupted: %w", ctx.Err()))
	case err != nil:
		return proceed("could not watch the old master's clients: %v", err)
	case len(busy) > 0:
		return proceed("%d clients still use %s after %s (they will reconnect): %s", len(busy), m.pod.Name, cr.cfg.DrainTimeout, clientsText(busy))
	}
	return proceed("clients moved off %s (no keyspace command for %s)", m.pod.Name, cr.cfg.DrainQuiet)
}

// roleCheck asks Redis, just before the eviction, for the pod's role: only a replica is evicted.
func (cr *clusterRun) roleCheck(ctx context.Context, m *moveRun) result {
	reply, err := cr.cfg.Redis.Do(ctx, m.addr, "ROLE")
	if err != nil {
		return abort(fmt.Errorf("role check: read ROLE of %s: %w", m.addr, err))
	}
	role := roleFromReply(reply)
	m.rep.RoleAtEviction = role
	if role != policies.RoleReplica {
		return skip("role check: %s reports role %s just before the eviction; not evicting it", m.pod.Name, roleName(role))
	}
	return proceed("%s reports role replica", m.pod.Name)
}

func clientsText(cs []redisctl.ClientConn) string {
	var parts []string
	for i, c := range cs {
		if i == 5 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s, idle %s)", c.Addr, c.Cmd, c.Idle))
	}
	return strings.Join(parts, ", ")
}

// podName returns the name of "namespace/name".
func podName(key string) string {
	_, name, ok := strings.Cut(key, "/")
	if !ok {
		return key
	}
	return name
}

func nodeByAddr(t *redisctl.Topology, addr string) (redisctl.Node, bool) {
	for _, n := range t.Nodes {
		if n.Addr() == addr {
			return n, true
		}
	}
	return redisctl.Node{}, false
}

// roleFromReply reads the first element of a ROLE reply ("master", "slave", "sentinel").
func roleFromReply(v interface{}) policies.Role {
	if arr, ok := v.([]interface{}); ok && len(arr) > 0 {
		if s, ok := arr[0].(string); ok {
			return policies.ParseRole(s)
		}
	}
	return policies.RoleUnknown
}

func roleName(r policies.Role) string {
	if r == policies.RoleUnknown {
		return "unknown"
	}
	return string(r)
}
