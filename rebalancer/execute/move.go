package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"
	"sigs.k8s.io/descheduler/pkg/features"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// EventSource is the reporting controller of the events the evictions record.
const EventSource = "redis-rebalancer"

// errSkip marks a move refused by a safety check: the cluster is left as it is.
type errSkip struct{ why string }

func (e errSkip) Error() string { return e.why }

// move carries out one planned move with SPEC's safe-disruption steps 2–6.
func (e *Executor) move(ctx context.Context, c *policies.Cluster, mv plan.Move) (report.Move, error) {
	clk := e.cfg.Clock
	start := clk.Now()
	mem := c.Members[mv.Member]
	pod := mem.Pod
	mr := report.Move{Pod: mv.Pod, From: mv.Node, Expected: mv.Expected}
	defer func() { mr.Total = clk.Since(start) }()

	// Step 2: Redis healthy, every pod of the cluster Ready.
	t0 := clk.Now()
	health, err := e.waitHealthy(ctx, c)
	mr.Gate = clk.Since(t0)
	if err != nil {
		mr.Skipped = "health gate: " + err.Error()
		return mr, nil
	}
	e.printf("  ✓ health gate passed in %s (cluster_state ok, %d slots served, %d replicas in sync, all pods Ready)\n", round(mr.Gate), health.SlotsServed, len(health.Replicas))

	// Step 3: the PodDisruptionBudget allows the eviction (server-side dry run).
	if err := e.dryRunEvict(ctx, pod); err != nil {
		var s errSkip
		if errors.As(err, &s) {
			mr.Skipped = s.why
			return mr, nil
		}
		return mr, err
	}
	e.printf("  ✓ eviction dry run accepted (PodDisruptionBudget allows it)\n")

	// Step 4: a master is failed over to its best in-sync replica first.
	addr := e.cfg.Redis.AddrOf(pod.Status.PodIP)
	self, ok := nodeByAddr(health.Topology, addr)
	if !ok {
		mr.Skipped = fmt.Sprintf("pod %s (%s) is not in the Redis topology", pod.Name, addr)
		return mr, nil
	}
	masterID := self.MasterID
	if self.IsMaster() {
		fo, newMasterID, err := e.failover(ctx, c, health.Topology, self)
		if err != nil {
			mr.Skipped = "failover: " + err.Error()
			return mr, nil
		}
		mr.Failover = fo
		masterID = newMasterID
		t0 := clk.Now()
		busy, err := e.cfg.Redis.WaitClientsDrained(ctx, addr, e.cfg.DrainQuiet, e.cfg.DrainTimeout)
		mr.Drain = clk.Since(t0)
		switch {
		case err != nil:
			e.printf("  ! could not watch the old master's clients: %v\n", err)
		case len(busy) > 0:
			e.printf("  ! %d clients still use %s after %s (they will reconnect): %s\n", len(busy), pod.Name, e.cfg.DrainTimeout, clientsText(busy))
		default:
			e.printf("  ✓ clients moved off %s in %s (no keyspace command for %s)\n", pod.Name, round(mr.Drain), e.cfg.DrainQuiet)
		}
	}
	// The pod must be a replica, as Redis says right now, before it is evicted.
	role, err := e.cfg.Redis.Do(ctx, addr, "ROLE")
	if err != nil {
		mr.Skipped = fmt.Sprintf("read ROLE of %s: %v", addr, err)
		return mr, nil
	}
	mr.RoleAtEviction = roleFromReply(role)
	if mr.RoleAtEviction != policies.RoleReplica {
		mr.Skipped = fmt.Sprintf("%s reports role %q just before the eviction; not evicting a master", pod.Name, mr.RoleAtEviction)
		return mr, nil
	}

	// Step 5: evict through the policy/v1 Eviction API (descheduler's PodEvictor).
	t0 = clk.Now()
	if err := e.evict(ctx, pod, mv.Reason); err != nil {
		var s errSkip
		if errors.As(err, &s) {
			mr.Skipped = s.why
			return mr, nil
		}
		return mr, err
	}
	mr.Evicted = true
	mr.Evict = clk.Since(t0)
	e.printf("  ✓ evicted %s (a replica, as Redis reported just before) in %s\n", pod.Name, round(mr.Evict))

	// Step 6: wait for the pod to be re-created, scheduled and Ready, then for its Redis node to
	// be back as a connected, in-sync replica of its shard's master.
	t0 = clk.Now()
	np, err := e.waitRecreated(ctx, pod)
	mr.Recreate = clk.Since(t0)
	if err != nil {
		return mr, err
	}
	mr.To = np.Spec.NodeName
	track := "as planned"
	if mr.To != mv.Expected {
		track = "plan expected " + mv.Expected
	}
	e.printf("  ✓ %s re-created on %s (%s), Ready in %s\n", np.Name, mr.To, track, round(mr.Recreate))
	t0 = clk.Now()
	newAddr := e.cfg.Redis.AddrOf(np.Status.PodIP)
	err = e.cfg.Redis.WaitRejoin(ctx, newAddr, masterID, e.cfg.RejoinTimeout, func(s string) {
		e.printf("    … %s: %s\n", np.Name, s)
	})
	mr.Rejoin = clk.Since(t0)
	if err != nil {
		return mr, err
	}
	e.printf("  ✓ %s (%s) rejoined as an in-sync replica in %s; move took %s\n", np.Name, newAddr, round(mr.Rejoin), round(clk.Since(start)))
	return mr, nil
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

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

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

// waitHealthy waits up to HealthTimeout for every pod of the cluster to be Running and Ready and
// for the Redis health gate to pass. It returns the last health read.
func (e *Executor) waitHealthy(ctx context.Context, c *policies.Cluster) (*redisctl.Health, error) {
	var health *redisctl.Health
	status := ""
	last := time.Time{}
	err := wait.PollUntilContextTimeout(ctx, e.cfg.PollInterval, e.cfg.HealthTimeout, true, func(ctx context.Context) (bool, error) {
		s, h := e.healthStatus(ctx, c)
		health = h
		if s != status || e.cfg.Clock.Since(last) > 10*time.Second {
			if s != "" {
				e.printf("    … waiting for a healthy cluster: %s\n", s)
			}
			status, last = s, e.cfg.Clock.Now()
		}
		return s == "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("not healthy after %s: %s", e.cfg.HealthTimeout, status)
	}
	return health, nil
}

// healthStatus returns "" when every member pod is Ready and Redis is healthy, else why not.
// Pods the scheduler cannot place (Pending, unschedulable) are what a move may fix: they do not
// fail the gate, nor does their shard's master lacking the replica they would be.
func (e *Executor) healthStatus(ctx context.Context, c *policies.Cluster) (string, *redisctl.Health) {
	pods, err := e.cfg.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: c.Model().Options.ClusterLabel + "=" + c.Name,
	})
	if err != nil {
		return "list pods: " + err.Error(), nil
	}
	shardOf := map[string]string{} // pod name → shard
	for _, m := range c.Members {
		shardOf[m.Pod.Name] = m.Shard
	}
	var addrs, notReady []string
	pendingShard := map[string]bool{}
	shardOfAddr := map[string]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		switch {
		case podReady(p):
			addr := e.cfg.Redis.AddrOf(p.Status.PodIP)
			addrs = append(addrs, addr)
			shardOfAddr[addr] = shardOf[p.Name]
		case p.Spec.NodeName == "" && p.DeletionTimestamp == nil && unschedulableNote(p) != "":
			pendingShard[shardOf[p.Name]] = true
		default:
			notReady = append(notReady, p.Name)
		}
	}
	if len(notReady) > 0 {
		return "pods not Ready: " + strings.Join(notReady, ", "), nil
	}
	if len(pods.Items) < c.N {
		return fmt.Sprintf("%d of %d pods exist", len(pods.Items), c.N), nil
	}
	h, err := e.cfg.Redis.CheckHealth(ctx, addrs, redisctl.HealthOptions{})
	if h == nil {
		return "redis: " + err.Error(), nil
	}
	if err := h.Except(func(reason redisctl.Reason) bool {
		s, ok := shardOfAddr[reason.Addr]
		return reason.Code == redisctl.ReasonNoConnectedReplica && ok && pendingShard[s]
	}); err != nil {
		return "redis: " + err.Error(), h
	}
	return "", h
}

func podReady(p *corev1.Pod) bool {
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

// dryRunEvict asks the API server whether the eviction would be allowed (DryRun: All). A 429
// means a PodDisruptionBudget forbids it now: errSkip.
func (e *Executor) dryRunEvict(ctx context.Context, pod *corev1.Pod) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := e.cfg.Client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
	switch {
	case err == nil:
		return nil
	case apierrors.IsTooManyRequests(err):
		return errSkip{"PodDisruptionBudget forbids evicting " + pod.Name + " now: " + err.Error()}
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return errSkip{"pod " + pod.Name + " changed since it was planned: " + err.Error()}
	}
	return fmt.Errorf("eviction dry run for %s: %w", pod.Name, err)
}

// failover fails master over to its shard's best in-sync replica, preferring a replica whose pod
// is in no violation, and verifies the switch (redisctl.Client.Failover).
func (e *Executor) failover(ctx context.Context, c *policies.Cluster, topo *redisctl.Topology, master redisctl.Node) (*report.Failover, string, error) {
	bad := map[string]bool{}
	for _, v := range policies.Hard(c.Evaluate(c.Current())) {
		for _, p := range v.Pods {
			bad[p] = true
		}
	}
	podOf := map[string]*corev1.Pod{}
	for _, m := range c.Members {
		if m.Pod.Status.PodIP != "" {
			podOf[e.cfg.Redis.AddrOf(m.Pod.Status.PodIP)] = m.Pod
		}
	}
	prefer := func(n redisctl.Node) bool {
		p := podOf[n.Addr()]
		return p != nil && !bad[p.Namespace+"/"+p.Name]
	}
	replica, err := e.cfg.Redis.ChooseReplica(ctx, topo, master.ID, prefer)
	if err != nil {
		return nil, "", err
	}
	name := func(addr string) string {
		if p := podOf[addr]; p != nil {
			return p.Name
		}
		return addr
	}
	e.printf("  … %s is a master: CLUSTER FAILOVER (%s) on its replica %s\n", name(master.Addr()), e.cfg.FailoverMode, name(replica.Addr()))
	var all []string
	for addr := range podOf {
		all = append(all, addr)
	}
	res, err := e.cfg.Redis.Failover(ctx, replica.Addr(), redisctl.FailoverOptions{
		Mode: e.cfg.FailoverMode, Timeout: e.cfg.FailoverTimeout, AllAddrs: all,
	})
	if err != nil {
		return nil, "", err
	}
	e.printf("  ✓ failover verified in %s: %s is master, %s its replica\n", round(res.Duration), name(res.NewMasterAddr), name(res.OldMasterAddr))
	return &report.Failover{OldMaster: name(res.OldMasterAddr), NewMaster: name(res.NewMasterAddr), Duration: res.Duration}, res.NewMasterID, nil
}

// evict evicts pod with descheduler's PodEvictor (policy/v1 Eviction; it records an event on the
// pod). A refusal by a PodDisruptionBudget (429) is errSkip: the pod is never deleted instead.
func (e *Executor) evict(ctx context.Context, pod *corev1.Pod, reason string) error {
	broadcaster := events.NewEventBroadcasterAdapter(e.cfg.Client)
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(EventSource)
	// The pod informer is only used by the EvictionsInBackground feature, which stays off.
	informer := informers.NewSharedInformerFactory(e.cfg.Client, 0).Core().V1().Pods().Informer()
	pe, err := evictions.NewPodEvictor(ctx, e.cfg.Client, recorder, informer, features.DefaultMutableFeatureGate, evictions.NewOptions())
	if err != nil {
		return fmt.Errorf("pod evictor: %w", err)
	}
	err = pe.EvictPod(ctx, pod, evictions.EvictOptions{Reason: reason, StrategyName: "RedisRebalance", ProfileName: EventSource})
	if err == nil {
		return nil
	}
	// PodEvictor flattens the API error into text; a 429 is reported as "Too many requests".
	if strings.Contains(err.Error(), "Too many requests") || strings.Contains(err.Error(), "disruption budget") {
		return errSkip{"PodDisruptionBudget refused the eviction of " + pod.Name + ": " + err.Error()}
	}
	return fmt.Errorf("evict %s: %w", pod.Name, err)
}

// waitRecreated waits until the pod named like old exists with another UID, is scheduled, Running
// and Ready, and returns it.
func (e *Executor) waitRecreated(ctx context.Context, old *corev1.Pod) (*corev1.Pod, error) {
	var got *corev1.Pod
	status := ""
	last := e.cfg.Clock.Now()
	err := wait.PollUntilContextTimeout(ctx, e.cfg.PollInterval, e.cfg.RecreateTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := e.cfg.Client.CoreV1().Pods(old.Namespace).Get(ctx, old.Name, metav1.GetOptions{})
		s := ""
		switch {
		case apierrors.IsNotFound(err):
			s = "deleted, not re-created yet"
		case err != nil:
			s = "get: " + err.Error()
		case p.UID == old.UID:
			s = "old pod still terminating"
		case p.Spec.NodeName == "":
			s = "re-created, not scheduled yet" + unschedulableNote(p)
		case !podReady(p):
			s = fmt.Sprintf("scheduled on %s, %s, not Ready yet", p.Spec.NodeName, p.Status.Phase)
		default:
			got = p
			return true, nil
		}
		if s != status || e.cfg.Clock.Since(last) > 10*time.Second {
			e.printf("    … %s: %s\n", old.Name, s)
			status, last = s, e.cfg.Clock.Now()
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s not back after %s: %s", old.Name, e.cfg.RecreateTimeout, status)
	}
	return got, nil
}

func unschedulableNote(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return ": " + c.Message
		}
	}
	return ""
}
