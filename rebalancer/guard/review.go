package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// The Kubernetes Events the guard records (events.k8s.io/v1, reporting controller
// redis-rebalancer), on the evicted pod. A dry-run eviction records none.
const (
	// EventEvictionHeld (Normal): the guard denied the pod's eviction with 429 for the first
	// time; the note names the reason. The leader watches these Events (every replica answers
	// reviews; only the leader hands off).
	EventEvictionHeld = "RedisEvictionHeld"
	// EventHoldExpired (Warning): the pod's eviction was admitted after guard.maxHold without a
	// hand-off.
	EventHoldExpired = "RedisEvictionHoldExpired"
	// ActionGuard is the action of the guard's Events.
	ActionGuard = "Guard"
)

// DefaultRedisTimeout bounds the guard's Redis read per review when Config.RedisTimeout is 0.
const DefaultRedisTimeout = time.Second

// Redis is what the guard reads from Redis; *redisctl.Client implements it.
type Redis interface {
	// AddrOf returns the Redis address of a pod IP.
	AddrOf(ip string) string
	// ClusterNodes reads a node's CLUSTER NODES.
	ClusterNodes(ctx context.Context, addr string) ([]redisctl.Node, error)
	// InfoReplication reads a node's INFO replication.
	InfoReplication(ctx context.Context, addr string) (redisctl.Replication, error)
}

// Observer is told each review's answer and each expired hold (the metrics); nil: nothing.
type Observer interface {
	// Review counts one answer: its reason, whether it allowed the eviction, whether it was a
	// dry run, and how long it took.
	Review(reason Reason, allowed, dryRun bool, took time.Duration)
}

// Config configures a Guard.
type Config struct {
	// Source is the watched cache (required).
	Source Source
	// Redis reads the evicted pod's role (required).
	Redis Redis
	// ClusterLabel is the pod label naming a pod's Redis cluster (selection.clusterLabel).
	ClusterLabel string
	// Selection picks the Redis clusters guarded: its namespaces and label selector (a cluster is
	// guarded when one of its pods matches).
	Selection observe.Selection
	// Members says which of a guarded cluster's pods are its members (its WorkloadSelector and
	// RecreatingOwners, as the model reads them: policies.WhyNotMember); the guard does not judge
	// the others (a Job's pod, another controller's of the same release).
	Members policies.Options
	// MaxHold is guard.maxHold (0: holds never expire).
	MaxHold time.Duration
	// RedisTimeout bounds the Redis read of one review (DefaultRedisTimeout when 0).
	RedisTimeout time.Duration
	// DrainTaints are guard.drainTaints.
	DrainTaints []string
	// MaxLagBytes and MaxLastIOSeconds judge whether a replica is in sync from its master's INFO
	// replication (its acknowledged offset, and the seconds since it acknowledged); 0 takes
	// redisctl's defaults.
	MaxLagBytes      int64
	MaxLastIOSeconds int
	// Holds remembers the holds (required; shared with the hand-off in the same process).
	Holds *Holds
	// Recorder records the guard's Events (none when nil).
	Recorder events.EventRecorder
	// Observer is told each answer (nil: nothing).
	Observer Observer
	// OnHold is called after each denial that is not a dry run (the hand-off enqueues the pod's
	// cluster); nil: nothing.
	OnHold func(Hold)
	// Clock measures the reviews (the real clock when nil).
	Clock clock.PassiveClock
}

// Guard answers eviction reviews.
type Guard struct {
	cfg Config
}

// New returns a Guard for cfg, defaults filled; it fails when a required field is missing.
func New(cfg Config) (*Guard, error) {
	if cfg.Source == nil || cfg.Redis == nil || cfg.Holds == nil || cfg.ClusterLabel == "" {
		return nil, errors.New("guard: a source, a Redis client, holds and the cluster label are required")
	}
	if cfg.RedisTimeout == 0 {
		cfg.RedisTimeout = DefaultRedisTimeout
	}
	if cfg.MaxLagBytes == 0 {
		cfg.MaxLagBytes = redisctl.DefaultMaxLagBytes
	}
	if cfg.MaxLastIOSeconds == 0 {
		cfg.MaxLastIOSeconds = redisctl.DefaultMaxLastIOSeconds
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Guard{cfg: cfg}, nil
}

// Review answers one AdmissionRequest. Anything but a CREATE of pods/eviction is allowed (the
// webhook configuration sends only those). The answer comes from the watched cache and at most
// two Redis reads under Config.RedisTimeout: CLUSTER NODES of the evicted pod's Redis node, and,
// for a replica, INFO replication of its master. A dry run (the request's dryRun, or the
// Eviction's deleteOptions.dryRun) gets the same answer with no side effect; any other denial
// records the hold (Holds, an Event the first time, OnHold), and an expired hold a Warning Event.
func (g *Guard) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	start := g.cfg.Clock.Now()
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create || req.Resource.Resource != "pods" || req.SubResource != "eviction" {
		return resp
	}
	ns, name := req.Namespace, req.Name
	ev, dryRun, err := evictionOf(req)
	if err != nil {
		klog.InfoS("Eviction review with an object the guard cannot read: allowed", "err", err, "pod", klog.KRef(ns, name))
	}
	if ev != nil && name == "" {
		ns, name = ev.Namespace, ev.Name
	}
	var v Verdict
	pod, ok := g.cfg.Source.Pod(ns, name)
	if !ok {
		v = allow(ReasonNotGuarded, "pod %s/%s is not in the watched cache", ns, name)
	} else {
		v = Decide(g.State(ctx, pod))
	}
	resp.Allowed = v.Allowed
	if !v.Allowed {
		resp.Result = &metav1.Status{
			Status: metav1.StatusFailure, Code: 429, Reason: metav1.StatusReasonTooManyRequests, Message: v.Message,
		}
	}
	if v.Reason == ReasonHoldExpired {
		resp.Warnings = []string{MessagePrefix + v.Message}
	}
	if pod != nil && !dryRun {
		g.record(pod, v)
	}
	took := g.cfg.Clock.Since(start)
	if g.cfg.Observer != nil {
		g.cfg.Observer.Review(v.Reason, v.Allowed, dryRun, took)
	}
	klog.V(2).InfoS("Eviction reviewed", "pod", klog.KRef(ns, name), "allowed", v.Allowed, "reason", v.Reason, "dryRun", dryRun, "took", took, "message", v.Message)
	return resp
}

// record keeps the side effects of an answer that is not a dry run: a denial holds the pod (an
// Event the first time, OnHold each time); an expired hold is released with a Warning Event; an
// allowed eviction of a pod held before releases it.
func (g *Guard) record(pod *corev1.Pod, v Verdict) {
	switch {
	case !v.Allowed:
		h, first := g.cfg.Holds.Hold(Hold{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: pod.Spec.NodeName, Reason: v.Reason})
		if first {
			klog.InfoS("Eviction held", "pod", klog.KObj(pod), "reason", v.Reason, "message", v.Message)
			g.event(pod, corev1.EventTypeNormal, EventEvictionHeld, "%s: %s", v.Reason, strings.TrimPrefix(v.Message, MessagePrefix+string(v.Reason)+": "))
		}
		if g.cfg.OnHold != nil {
			g.cfg.OnHold(h)
		}
	case v.Reason == ReasonHoldExpired:
		klog.InfoS("Eviction hold expired: admitted", "pod", klog.KObj(pod), "message", v.Message)
		g.event(pod, corev1.EventTypeWarning, EventHoldExpired, "%s", v.Message)
		g.cfg.Holds.Release(pod.UID)
	default:
		g.cfg.Holds.Release(pod.UID)
	}
}

func (g *Guard) event(pod *corev1.Pod, eventType, reason, format string, args ...any) {
	if g.cfg.Recorder == nil {
		return
	}
	note := fmt.Sprintf(format, args...)
	if r := []rune(note); len(r) > 1024 {
		note = string(r[:1023]) + "…"
	}
	g.cfg.Recorder.Eventf(pod, nil, eventType, reason, ActionGuard, "%s", note)
}

// evictionOf decodes the request's Eviction and says whether the eviction is a dry run: the
// request's dryRun (?dryRun=All on the eviction), or the Eviction's deleteOptions.dryRun (what
// `kubectl drain --dry-run=server` sends, which the request's dryRun does not reflect).
func evictionOf(req *admissionv1.AdmissionRequest) (*policyv1.Eviction, bool, error) {
	dry := req.DryRun != nil && *req.DryRun
	if len(req.Object.Raw) == 0 {
		return nil, dry, nil
	}
	ev := &policyv1.Eviction{}
	if err := jsonUnmarshal(req.Object.Raw, ev); err != nil {
		return nil, dry, fmt.Errorf("decode the Eviction: %w", err)
	}
	if ev.DeleteOptions != nil && slices.Contains(ev.DeleteOptions.DryRun, metav1.DryRunAll) {
		dry = true
	}
	return ev, dry, nil
}

// State builds what Decide reads about pod's eviction: from the cache, its cluster (and whether
// the policy selects it), its node's readiness and whether it is being emptied, and the hold; then,
// unless the node is not Ready or the hold has expired, its Redis role and shard from one
// CLUSTER NODES of its Redis node and, for a replica, the in-sync state of the shard's replicas
// from its master's INFO replication, both under Config.RedisTimeout.
func (g *Guard) State(ctx context.Context, pod *corev1.Pod) State {
	s := State{Pod: pod.Namespace + "/" + pod.Name, MaxHold: g.cfg.MaxHold, Role: policies.RoleUnknown}
	cluster, ok := pod.Labels[g.cfg.ClusterLabel]
	if !ok {
		return s
	}
	pods := g.cfg.Source.ClusterPods(pod.Namespace, cluster)
	if !g.selected(pod.Namespace, pods) {
		return s
	}
	var sts *appsv1.StatefulSet
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.Kind == "StatefulSet" {
		sts, _ = g.cfg.Source.StatefulSet(pod.Namespace, ref.Name)
	}
	if s.NotMember = policies.WhyNotMember(pod, sts, g.cfg.Members); s.NotMember != "" {
		return s
	}
	s.Cluster = pod.Namespace + "/" + cluster
	node, _ := g.cfg.Source.Node(pod.Spec.NodeName)
	s.NodeReady, s.NodeNotReady = NodeReady(node)
	s.Leaving, _ = policies.NodeLeaving(node, g.cfg.DrainTaints)
	s.PodReady = observe.PodReady(pod)
	s.HeldFor, s.Held = g.cfg.Holds.HeldFor(pod.UID)
	s.HandingOff = g.cfg.Holds.HandingOff(s.Pod)
	if !s.NodeReady || s.Held && s.MaxHold > 0 && s.HeldFor >= s.MaxHold {
		return s
	}
	if pod.Status.PodIP == "" {
		s.RoleErr = "the pod has no IP"
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.RedisTimeout)
	defer cancel()
	nodes, err := g.cfg.Redis.ClusterNodes(ctx, g.cfg.Redis.AddrOf(pod.Status.PodIP))
	if err != nil {
		s.RoleErr = err.Error()
		return s
	}
	self, ok := myself(nodes)
	if !ok {
		s.RoleErr = "CLUSTER NODES has no line flagged myself"
		return s
	}
	s.Role = policies.ParseRole(self.Role())
	masterID := self.ID
	if s.Role == policies.RoleReplica {
		masterID = self.MasterID
	} else {
		s.Slots = self.SlotCount()
	}
	master, hasMaster := nodeByID(nodes, masterID)
	if hasMaster {
		s.Shard = shardName(master)
	}
	peer := func(n redisctl.Node) Peer { return g.peer(n, pods) }
	if s.Role == policies.RoleReplica && hasMaster {
		m := peer(master)
		s.Master = &m
	}
	for _, n := range nodes {
		if n.IsReplica() && n.MasterID == masterID && n.ID != self.ID && !n.HasFlag(redisctl.FlagHandshake) {
			s.Replicas = append(s.Replicas, peer(n))
		}
	}
	if s.Master == nil || !s.Master.Serving {
		return s
	}
	repl, err := g.cfg.Redis.InfoReplication(ctx, master.Addr())
	if err != nil {
		// The master did not answer its replication state: it is not serving as far as the
		// guard can tell.
		s.Master.Serving, s.Master.NotServing = false, "INFO replication: "+err.Error()
		return s
	}
	s.InSync = g.inSync(repl, self.Addr())
	for i := range s.Replicas {
		s.Replicas[i].InSync = g.inSync(repl, s.Replicas[i].Addr)
	}
	return s
}

// selected reports whether the Redis cluster of pods, in namespace, is one the policy selects.
func (g *Guard) selected(namespace string, pods []*corev1.Pod) bool {
	sel := g.cfg.Selection
	if sel.Namespace != "" && namespace != sel.Namespace {
		return false
	}
	if len(sel.IncludeNamespaces) > 0 && !slices.Contains(sel.IncludeNamespaces, namespace) || slices.Contains(sel.ExcludeNamespaces, namespace) {
		return false
	}
	if sel.Selector == nil || sel.Selector.Empty() {
		return true
	}
	for _, p := range pods {
		if sel.Selector.Matches(labelSet(p.Labels)) {
			return true
		}
	}
	return false
}

// peer describes Redis node n, matched to one of pods by pod IP or announced hostname.
func (g *Guard) peer(n redisctl.Node, pods []*corev1.Pod) Peer {
	p := Peer{Addr: n.Addr(), Serving: true}
	var pod *corev1.Pod
	for _, c := range pods {
		if c.DeletionTimestamp == nil && (c.Status.PodIP != "" && c.Status.PodIP == n.IP || n.Hostname != "" && policies.HostnameMatches(n.Hostname, c)) {
			pod = c
			break
		}
	}
	notServing := func(why string) {
		if p.Serving {
			p.Serving, p.NotServing = false, why
		}
	}
	switch {
	case n.HasFlag(redisctl.FlagFail):
		notServing("flagged fail")
	case n.HasFlag(redisctl.FlagPFail):
		notServing("flagged fail?")
	case n.HasFlag(redisctl.FlagNoAddr):
		notServing("no address")
	case !n.IsMyself() && n.LinkState != redisctl.LinkConnected:
		notServing("cluster bus link " + n.LinkState)
	}
	if pod == nil {
		notServing("no pod matches its address")
		return p
	}
	p.Pod = pod.Namespace + "/" + pod.Name
	p.Node = pod.Spec.NodeName
	node, _ := g.cfg.Source.Node(pod.Spec.NodeName)
	if ready, why := NodeReady(node); !ready {
		notServing("node " + pod.Spec.NodeName + " not Ready: " + why)
	}
	if !observe.PodReady(pod) {
		notServing("pod not Ready")
	}
	p.Leaving, _ = policies.NodeLeaving(node, g.cfg.DrainTaints)
	return p
}

// inSync reports whether the master's INFO replication lists the replica at addr online, having
// acknowledged an offset within MaxLagBytes of the master's, at most MaxLastIOSeconds ago.
func (g *Guard) inSync(master redisctl.Replication, addr string) bool {
	for _, r := range master.Replicas {
		if !sameAddr(r, addr) {
			continue
		}
		return r.State == "online" && master.MasterReplOffset >= 0 && r.Offset >= 0 &&
			master.MasterReplOffset-r.Offset <= g.cfg.MaxLagBytes && r.Lag >= 0 && r.Lag <= int64(g.cfg.MaxLastIOSeconds)
	}
	return false
}
