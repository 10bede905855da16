package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-redis/redis/v8"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// The steps of a move (SPEC "Safe disruption"), in the order steps() lists them. Each reason
// starts with what said no ("health gate: ...", "PodDisruptionBudget forbids ...", "failover
// refused: ..."), so that its first words tell an operator where the move stopped.

// windowStep is SPEC step 1: a window is open with time left for the whole move.
func (cr *clusterRun) windowStep(_ context.Context, m *move) result {
	return cr.windowCheck(m, m.index, "the move")
}

// gateStatus is one round of the health wait: the verdict in words, and whether it is an error
// of the API server rather than a verdict on the cluster.
type gateStatus struct {
	text   string
	apiErr bool
}

// sameGate reports whether two rounds of the health wait say the same thing: the same state and
// the same "code address" of each reason, whatever their messages (an i/o error names a new local
// port every time).
func sameGate(a, b gateStatus) bool {
	return a.apiErr == b.apiErr && gateKey(a.text) == gateKey(b.text)
}

// gateKey is text ("state: reason; reason") without the reasons' messages: "state: code addr; ...".
func gateKey(text string) string {
	state, reasons, _ := strings.Cut(text, ": ")
	parts := []string{state}
	for _, r := range strings.Split(reasons, "; ") {
		head, _, _ := strings.Cut(r, ": ")
		parts = append(parts, head)
	}
	return strings.Join(parts, "; ")
}

// waitHealthy waits up to HealthTimeout until every pod of c is Ready and Redis is healthy
// (observe.JudgeHealthExpecting on a fresh list of the pods, the planned Pending pods accepted),
// reintroducing nodes that lost each other's address meanwhile. The first round judges first
// when given (the pods of an observation just made: they are not listed again), the others a
// fresh list. On timeout it returns the last whole round's status with the error.
func (cr *clusterRun) waitHealthy(ctx context.Context, c *policies.Cluster, first []*corev1.Pod) (observe.Health, gateStatus, error) {
	var h observe.Health
	met := map[[2]string]bool{} // (viewer, node ID) pairs reintroduced (reintroduce)
	sel := metav1.ListOptions{LabelSelector: c.Model().Options.ClusterLabel + "=" + c.Name}
	status, err := poll(ctx, cr.cfg.PollInterval, cr.cfg.HealthTimeout, sameGate, func(s gateStatus) {
		cr.printf("    … waiting for a healthy cluster: %s\n", s.text)
	}, func(ctx context.Context) (bool, gateStatus) {
		pods := first
		if first != nil {
			first = nil
		} else {
			list, err := cr.cfg.Client.CoreV1().Pods(c.Namespace).List(ctx, sel)
			if err != nil {
				return false, gateStatus{text: "list pods: " + err.Error(), apiErr: true}
			}
			pods = make([]*corev1.Pod, len(list.Items))
			for i := range list.Items {
				pods[i] = &list.Items[i]
			}
		}
		got := observe.JudgeHealthExpecting(ctx, cr.cfg.Redis, c, pods, cr.pending)
		if got.Healthy() {
			h = got
			return true, gateStatus{}
		}
		if got.Redis != nil {
			cr.reintroduce(ctx, got.Redis.Topology, met)
		}
		return false, gateStatus{text: string(got.State) + ": " + strings.Join(got.Reasons, "; ")}
	})
	return h, status, err
}

// reintroduce sends CLUSTER MEET to each node whose view lists another node without an address
// (noaddr), with that node's address as the node itself reports it, once per pair (met). Two
// pods that swap nodes in one move may swap pod IPs too (a CNI that reuses a freed IP at once,
// kwok's does): each Redis node then finds the other's ID at its own new address, drops the
// address, and neither ever pings the other again; the others' gossip does not restore an
// address Redis has dropped. A MEET does: the handshake finds the known ID and updates its
// address. It changes no role and no slot.
func (cr *clusterRun) reintroduce(ctx context.Context, topo *redisctl.Topology, met map[[2]string]bool) {
	if topo == nil {
		return
	}
	self := map[string]redisctl.Node{} // node ID → its own line
	for _, v := range topo.Views {
		if me, ok := v.Myself(); ok {
			self[me.ID] = me
		}
	}
	for _, d := range topo.Disagreements {
		n, ok := self[d.NodeID]
		if d.Field != "addr" || !ok || n.IP == "" {
			continue
		}
		for viewer, addr := range d.Values {
			pair := [2]string{viewer, d.NodeID}
			if addr != "" || viewer == n.Addr() || met[pair] {
				continue
			}
			met[pair] = true
			if _, err := cr.cfg.Redis.Do(ctx, viewer, "CLUSTER", "MEET", n.IP, n.Port); err != nil {
				cr.printf("    … %s lists node %s without an address; CLUSTER MEET %s: %v\n", viewer, shortNodeID(d.NodeID), n.Addr(), err)
				continue
			}
			cr.printf("    … %s lists node %s without an address: CLUSTER MEET %s (its address, as it reports it)\n", viewer, shortNodeID(d.NodeID), n.Addr())
		}
	}
}

func shortNodeID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// healthText describes a healthy verdict.
func healthText(h observe.Health) string {
	pods := "all pods Ready"
	if len(h.Waiting) > 0 {
		pods = "every other pod Ready, " + strings.Join(h.Waiting, ", ") + " Pending (accepted)"
	}
	return fmt.Sprintf("cluster_state ok, %d slots served, %d replicas in sync, %s", h.Redis.SlotsServed, len(h.Redis.Replicas), pods)
}

// healthResult turns a health wait's outcome into a step result: a verdict on the cluster skips,
// an API server error or an interruption aborts.
func (cr *clusterRun) healthResult(ctx context.Context, what string, status gateStatus, err error) result {
	switch {
	case ctx.Err() != nil:
		return abort(fmt.Errorf("%s: interrupted: %w (last seen: %s)", what, ctx.Err(), status.text))
	case status.apiErr:
		return abort(fmt.Errorf("%s: not healthy after %s: %s", what, cr.cfg.HealthTimeout, status.text))
	}
	return skip("%s: not healthy after %s: %s", what, cr.cfg.HealthTimeout, status.text)
}

// healthGate is SPEC step 2: every pod Ready, Redis healthy. A cluster still resyncing is waited
// for.
func (cr *clusterRun) healthGate(ctx context.Context, m *move) result {
	h, status, err := cr.waitHealthy(ctx, m.c, nil)
	if err != nil {
		return cr.healthResult(ctx, "health gate", status, err)
	}
	m.health = h
	return proceed("%s", healthText(h))
}

// placeable observes the cluster afresh and checks that the pod, re-created from its template,
// passes the filter on at least one node now (a node cordoned since the plan, for instance,
// would leave it Pending and its shard without a replica).
func (cr *clusterRun) placeable(ctx context.Context, m *move) result {
	model, err := observe.Live(ctx, cr.cfg.Client, cr.cfg.Policy, observe.Selection{Namespace: m.c.Namespace})
	if err != nil {
		return abort(fmt.Errorf("placeability: %w", err))
	}
	var fresh *policies.Cluster
	for _, c := range model.Clusters {
		if c.Key() == m.c.Key() {
			fresh = c
		}
	}
	i := -1
	if fresh != nil {
		for k, mem := range fresh.Members {
			if mem.Pod.Name == m.pod.Name {
				i = k
			}
		}
	}
	if i < 0 || fresh.Members[i].Pod.UID != m.pod.UID || fresh.Members[i].Terminating {
		return skip("placeability: pod %s changed since it was planned (gone, re-created or terminating)", m.pod.Name)
	}
	m.pod = fresh.Members[i].Pod
	cands := fresh.Candidates(fresh.Current(), i)
	if len(cands) == 0 && m.mv.WaitsPending {
		return proceed("re-created from its template now, %s fits no node, as the plan says: it waits Pending until a later move frees room (%s)", m.pod.Name, fresh.Explain(fresh.Current(), i).Summary())
	}
	if len(cands) == 0 {
		return skip("placeability: %s, re-created from its template now, fits no node: %s", m.pod.Name, fresh.Explain(fresh.Current(), i).Summary())
	}
	names := make([]string, len(cands))
	for k, n := range cands {
		names[k] = model.Nodes[n].Name
	}
	return proceed("re-created from its template now, %s fits %s", m.pod.Name, strings.Join(names, ", "))
}

// pdbDryRun is SPEC step 3, with the run's eviction limits: it reserves the eviction against the
// limits, then asks the API server for a dry-run eviction. A 429 means a PodDisruptionBudget
// forbids it now (skip); any other error, such as the 500 of a pod covered by more than one
// PodDisruptionBudget, aborts.
func (cr *clusterRun) pdbDryRun(ctx context.Context, m *move) result {
	release, err := cr.budget.reserve(m.pod)
	if err != nil {
		r := skip("eviction limit: %v", err)
		r.stoppedBy = report.StoppedEvictionLimit
		return r
	}
	m.release = release
	pod := m.pod
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err = cr.cfg.Client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
	switch {
	case err == nil:
		return proceed("eviction dry run accepted: the PodDisruptionBudget allows it")
	case apierrors.IsTooManyRequests(err) && guard.Denied(err.Error(), guard.ReasonMaster):
		// The eviction guard holds a master's eviction until its failover, which comes next;
		// it answers before the PodDisruptionBudget is asked, so the eviction itself asks it.
		return proceed("the eviction guard holds %s's eviction while it is a master (the failover comes next); the PodDisruptionBudget is asked at the eviction", pod.Name)
	case apierrors.IsTooManyRequests(err):
		return skip("PodDisruptionBudget forbids evicting %s now: %v", pod.Name, err)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return skip("pod %s changed since it was planned: %v", pod.Name, err)
	}
	return abort(fmt.Errorf("eviction dry run for %s: %w", pod.Name, err))
}

// failover is SPEC step 4: a master is failed over to the in-sync replica the plan names (one
// whose node and zone keep MasterQuorum; without a name, its shard's best in-sync replica), and
// the switch verified. It first checks that the window still leaves time for the rest of the
// move: from here to the pod's return nothing is interrupted. A failover Redis refuses (no
// in-sync replica, the named replica not in sync or not the master's replica, an error reply)
// skips; one not verified in time, or a Redis that does not answer, aborts. In a failover step
// of the plan, a pod that is no longer a master skips (the roles changed since the plan).
func (cr *clusterRun) failover(ctx context.Context, m *move) result {
	if r := cr.windowCheck(m, m.index, "the rest of the move (failover to re-observe)"); r.outcome != report.OutcomeContinue {
		return r
	}
	topo := m.health.Redis.Topology
	self, ok := nodeByAddr(topo, m.addr)
	if !ok {
		return skip("failover: pod %s (%s) is not in the Redis topology", m.pod.Name, m.addr)
	}
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
		var err error
		if replica, err = cr.cfg.Redis.ChooseReplica(ctx, topo, master.ID, prefer); err != nil {
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

// drain waits, after a failover, until the old master's clients have gone quiet, so that they
// learn the new master from its MOVED replies before it goes away. It never stops the move: busy
// clients reconnect.
func (cr *clusterRun) drain(ctx context.Context, m *move) result {
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
func (cr *clusterRun) roleCheck(ctx context.Context, m *move) result {
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

// evictionRefusedPrefix starts the text of the error the descheduler's PodEvictor returns for a
// 429 (it flattens the API error into text: evictions.go, evictPod).
const evictionRefusedPrefix = "error when evicting pod (ignoring)"

// evict is SPEC step 5: the run's PodEvictor evicts the pod through the policy/v1 Eviction API
// (it records an event on the pod and counts the eviction against the limits). A 429 skips (a
// PodDisruptionBudget's, or the eviction guard's, named as such): the pod is never deleted
// instead. Any other error aborts.
func (cr *clusterRun) evict(ctx context.Context, m *move) result {
	// The PodEvictor records the eviction's event (reason EvictionStrategy); the move's reason is
	// in the run's report and progress, not in the event's reason, which must be a short word.
	err := cr.evictor.pe.EvictPod(ctx, m.pod, evictions.EvictOptions{StrategyName: EvictionStrategy, ProfileName: EventSource})
	var (
		total *evictions.EvictionTotalLimitError
		node  *evictions.EvictionNodeLimitError
		ns    *evictions.EvictionNamespaceLimitError
	)
	switch {
	case err == nil:
		m.rep.Evicted = true
		if m.mv.WaitsPending {
			// From now on the health gate accepts it Pending (and its absence from Redis).
			if cr.pending == nil {
				cr.pending = map[string]bool{}
			}
			cr.pending[m.pod.Name] = true
		}
		cr.cfg.Observer.Eviction(cr.key, EvictionEvicted)
		return proceed("evicted %s (a replica, as Redis reported just before)", m.pod.Name)
	case errors.As(err, &total) || errors.As(err, &node) || errors.As(err, &ns):
		cr.cfg.Observer.Eviction(cr.key, EvictionRefused)
		r := skip("eviction limit: %v", err)
		r.stoppedBy = report.StoppedEvictionLimit
		return r
	case strings.HasPrefix(err.Error(), evictionRefusedPrefix) && strings.Contains(err.Error(), guard.MessagePrefix):
		cr.cfg.Observer.Eviction(cr.key, EvictionRefused)
		return skip("the eviction guard refused the eviction of %s: %v", m.pod.Name, err)
	case strings.HasPrefix(err.Error(), evictionRefusedPrefix):
		cr.cfg.Observer.Eviction(cr.key, EvictionRefused)
		return skip("PodDisruptionBudget refused the eviction of %s: %v", m.pod.Name, err)
	}
	cr.cfg.Observer.Eviction(cr.key, EvictionFailed)
	return abort(fmt.Errorf("eviction: evict %s: %w", m.pod.Name, err))
}

// recreate is the first half of SPEC step 6: wait until the pod exists again with another UID,
// is scheduled, Running and Ready. A pod the plan lets wait Pending is not waited for: once
// re-created and still unscheduled, the step continues (the next move frees its room).
func (cr *clusterRun) recreate(ctx context.Context, m *move) result {
	old := m.pod
	var got *corev1.Pod
	status, err := poll(ctx, cr.cfg.PollInterval, cr.cfg.RecreateTimeout, nil, func(s string) {
		cr.printf("    … %s: %s\n", old.Name, s)
	}, func(ctx context.Context) (bool, string) {
		p, err := cr.cfg.Client.CoreV1().Pods(old.Namespace).Get(ctx, old.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, "deleted, not re-created yet"
		case err != nil:
			return false, "get: " + err.Error()
		case p.UID == old.UID:
			return false, "old pod still terminating"
		case p.Spec.NodeName == "" && m.mv.WaitsPending:
			got = p
			return true, ""
		case p.Spec.NodeName == "":
			if why := observe.UnschedulableMessage(p); why != "" {
				return false, "re-created, not scheduled yet: " + why
			}
			return false, "re-created, not scheduled yet"
		case !observe.PodReady(p):
			return false, fmt.Sprintf("scheduled on %s, %s, not Ready yet", p.Spec.NodeName, p.Status.Phase)
		}
		got = p
		return true, ""
	})
	if err != nil {
		if ctx.Err() != nil {
			return abort(fmt.Errorf("re-creation: interrupted waiting for %s: %w (last seen: %s)", old.Name, ctx.Err(), status))
		}
		return abort(fmt.Errorf("re-creation: pod %s not back after %s: %s", old.Name, cr.cfg.RecreateTimeout, status))
	}
	m.recreated = got
	if got.Spec.NodeName == "" {
		return proceed("%s re-created and Pending, as the plan says: the next move frees its room", got.Name)
	}
	m.rep.To = got.Spec.NodeName
	track := "as planned"
	if m.rep.To != m.mv.Expected {
		track = "the plan expected " + m.mv.Expected
	}
	return proceed("%s re-created on %s (%s), Ready", got.Name, m.rep.To, track)
}

// rejoin is the second half of SPEC step 6: wait until the re-created pod's Redis node is back
// as a connected, in-sync replica of its shard's master. A pod left Pending as planned rejoins
// later: the health gate of the next move waits for it once a node fits it.
func (cr *clusterRun) rejoin(ctx context.Context, m *move) result {
	if m.recreated.Spec.NodeName == "" {
		return proceed("%s waits Pending: it rejoins once a later move frees its room; its shard runs without it meanwhile", m.recreated.Name)
	}
	addr := cr.cfg.Redis.AddrOf(m.recreated.Status.PodIP)
	err := cr.cfg.Redis.WaitRejoin(ctx, addr, m.masterID, cr.cfg.RejoinTimeout, func(s string) {
		cr.printf("    … %s: %s\n", m.recreated.Name, s)
	})
	if err != nil {
		return abort(fmt.Errorf("rejoin: %w", err))
	}
	return proceed("%s (%s) rejoined as an in-sync replica", m.recreated.Name, addr)
}

// reobserve observes the cluster after the move (the next plan starts from it) and waits until
// it is healthy again, so that the next move, or the run's verdict, sees it settled.
func (cr *clusterRun) reobserve(ctx context.Context, m *move) result {
	octx, cancel := context.WithTimeout(ctx, cr.cfg.RequestTimeout)
	after, err := cr.observe(octx)
	cancel()
	if err != nil {
		return abort(fmt.Errorf("re-observe: %w", err))
	}
	// The observation just listed the cluster's pods: the wait's first round judges them.
	h, status, err := cr.waitHealthy(ctx, after, observe.MemberPods(after))
	if err != nil {
		return cr.healthResult(ctx, "re-observe", status, err)
	}
	m.after = after
	return proceed("healthy again: %s", healthText(h))
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
