package soak

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	rcache "github.com/redis-rebalancer/redis-rebalancer/rebalancer/cache"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// The monitor: what the soak sees of the Redis cluster as it goes, judged the way the product
// judges it (rebalancer/cache's watched view, observe's model, policies' rules, Redis's roles
// and health gate), every sampleEvery; the pods' terminations with why (their DisruptionTarget
// condition); the Events the rebalancer, the guard and the descheduler record.

// sampleEvery is how often the monitor judges the cluster.
const sampleEvery = 2 * time.Second

// sample is one judgement of the cluster.
type sample struct {
	at time.Time
	// broken are the hard rules broken, with how many violations each; err is why the cluster
	// could not be judged (then broken is nil).
	broken map[policies.Rule]int
	err    string
	// quorum: MasterQuorum holds (the roles read, no violation of it).
	quorum bool
	// health is the cluster's health as run judges it.
	health observe.HealthState
	// masters maps each shard (its first slot) to the pod serving it as master.
	masters map[int]string
}

// compliant: no hard rule broken and Redis healthy.
func (s sample) compliant() bool {
	return s.err == "" && len(s.broken) == 0 && s.health == observe.HealthHealthy
}

// termination is a pod going away.
type termination struct {
	at        time.Time
	pod, node string
	uid       string
	// reason is its DisruptionTarget condition's reason (EvictionByEvictionAPI,
	// DeletionByTaintManager, DeletionByPodGC, ...), or "Deleted" without one (the StatefulSet
	// controller's rolling update, a force delete).
	reason string
}

// failover is a shard's master changing.
type failover struct {
	at       time.Time
	shard    int
	from, to string
}

// event is a Kubernetes Event about a pod of the Redis namespace.
type event struct {
	at                   time.Time
	reason, pod, uid     string
	controller, typ, msg string
}

// monitor samples the cluster and records what happens to its pods.
type monitor struct {
	rc        *redisctl.Client
	cache     *rcache.Cache
	opts      policies.Options
	sel       observe.Selection
	factory   informers.SharedInformerFactory
	namespace string

	mu           sync.Mutex
	samples      []sample
	terminations []termination
	failovers    []failover
	events       []event
	seenEvents   map[string]bool
	deleting     map[string]bool // pod UIDs seen terminating
}

// startMonitor starts the monitor's watches and its sampling until ctx ends.
func (s *Soak) startMonitor(ctx context.Context) (*monitor, error) {
	l := v1alpha1.DefaultsOf(v1alpha1.LayoutBitnami)
	src, err := policies.ParseShardSource(l.ShardSource)
	if err != nil {
		return nil, err
	}
	m := &monitor{
		rc:        s.env.Redis,
		namespace: s.env.Namespace,
		opts: policies.Options{ClusterLabel: l.ClusterLabel, ShardSource: src,
			WorkloadSelector: labels.SelectorFromSet(l.WorkloadLabels)},
		sel:        observe.Selection{Namespace: s.env.Namespace},
		seenEvents: map[string]bool{}, deleting: map[string]bool{},
	}
	m.cache = rcache.New(s.env.Client(), rcache.Options{Namespace: s.env.Namespace, ClusterLabel: l.ClusterLabel})
	m.cache.Start(ctx)
	if err := m.cache.WaitForSync(ctx); err != nil {
		return nil, err
	}
	m.factory = informers.NewSharedInformerFactoryWithOptions(s.env.Client(), 0, informers.WithNamespace(s.env.Namespace))
	if _, err := m.factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.pod(obj) },
		UpdateFunc: func(_, obj any) { m.pod(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			m.podGone(obj)
		},
	}); err != nil {
		return nil, err
	}
	if _, err := m.factory.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.event(obj) },
		UpdateFunc: func(_, obj any) { m.event(obj) },
	}); err != nil {
		return nil, err
	}
	m.factory.Start(ctx.Done())
	m.factory.WaitForCacheSync(ctx.Done())
	go func() {
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			sm := m.judge(sctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			m.add(sm)
		}
	}()
	return m, nil
}

// judge judges the cluster now.
func (m *monitor) judge(ctx context.Context) sample {
	sm := sample{at: time.Now()}
	snap, err := m.cache.Snapshot(ctx, m.namespace)
	if err != nil {
		sm.err = err.Error()
		return sm
	}
	model, err := observe.Model(snap, m.opts, m.sel)
	if err == nil && len(model.Clusters) != 1 {
		err = fmt.Errorf("%d Redis clusters", len(model.Clusters))
	}
	if err != nil {
		sm.err = err.Error()
		return sm
	}
	c := model.Clusters[0]
	topo, err := observe.ApplyRedis(ctx, m.rc, c)
	if err != nil {
		sm.err = "roles: " + err.Error()
		return sm
	}
	sm.broken = map[policies.Rule]int{}
	sm.quorum = true
	for _, v := range policies.Hard(c.Evaluate(c.Current())) {
		sm.broken[v.Rule]++
		if v.Rule == policies.MasterQuorum {
			sm.quorum = false
		}
	}
	sm.health = observe.JudgeHealth(ctx, m.rc, c, observe.MemberPods(c)).State
	sm.masters = map[int]string{}
	podOf := map[string]string{}
	for _, p := range snap.Pods {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			podOf[m.rc.AddrOf(p.Status.PodIP)] = p.Name
		}
	}
	if topo != nil {
		for _, n := range topo.Masters() {
			if len(n.Slots) > 0 && !n.HasFlag(redisctl.FlagFail) {
				sm.masters[n.Slots[0].Start] = podOf[n.Addr()]
			}
		}
	}
	return sm
}

// add records a sample, and the failovers it shows (a shard's master another pod than in the
// last sample that knew it).
func (m *monitor) add(sm sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sm.err == "" {
		for i := len(m.samples) - 1; i >= 0; i-- {
			prev := m.samples[i]
			if prev.err != "" {
				continue
			}
			for shard, pod := range sm.masters {
				if was, ok := prev.masters[shard]; ok && was != pod && was != "" && pod != "" {
					m.failovers = append(m.failovers, failover{at: sm.at, shard: shard, from: was, to: pod})
				}
			}
			break
		}
	}
	m.samples = append(m.samples, sm)
}

// pod records a pod's termination the first time it is seen terminating.
func (m *monitor) pod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleting[string(p.UID)] {
		return
	}
	m.deleting[string(p.UID)] = true
	reason := "Deleted"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			reason = c.Reason
		}
	}
	m.terminations = append(m.terminations, termination{at: time.Now(), pod: p.Name, node: p.Spec.NodeName, uid: string(p.UID), reason: reason})
}

// podGone records a pod deleted without being seen terminating first (a force delete).
func (m *monitor) podGone(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleting[string(p.UID)] {
		return
	}
	m.deleting[string(p.UID)] = true
	m.terminations = append(m.terminations, termination{at: time.Now(), pod: p.Name, node: p.Spec.NodeName, uid: string(p.UID), reason: "ForceDeleted"})
}

// event records a Kubernetes Event (each occurrence of a series once).
func (m *monitor) event(obj any) {
	e, ok := obj.(*corev1.Event)
	if !ok || e.InvolvedObject.Kind != "Pod" {
		return
	}
	at := e.EventTime.Time
	if e.Series != nil {
		at = e.Series.LastObservedTime.Time
	}
	if at.IsZero() {
		at = e.LastTimestamp.Time
	}
	if at.IsZero() {
		at = e.CreationTimestamp.Time
	}
	id := fmt.Sprintf("%s/%d", e.UID, e.Count)
	if e.Series != nil {
		id = fmt.Sprintf("%s/s%d", e.UID, e.Series.Count)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seenEvents[id] {
		return
	}
	m.seenEvents[id] = true
	m.events = append(m.events, event{at: at, reason: e.Reason, pod: e.InvolvedObject.Name, uid: string(e.InvolvedObject.UID),
		controller: e.ReportingController, typ: e.Type, msg: e.Message})
}

// snapshot returns copies of what the monitor recorded, sorted by time.
func (m *monitor) snapshot() (samples []sample, terms []termination, fos []failover, evs []event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	samples = slices.Clone(m.samples)
	terms = slices.Clone(m.terminations)
	fos = slices.Clone(m.failovers)
	evs = slices.Clone(m.events)
	sort.Slice(evs, func(a, b int) bool { return evs[a].at.Before(evs[b].at) })
	sort.Slice(terms, func(a, b int) bool { return terms[a].at.Before(terms[b].at) })
	return
}

// last returns the last sample, and whether there is one.
func (m *monitor) last() (sample, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) == 0 {
		return sample{}, false
	}
	return m.samples[len(m.samples)-1], true
}

// brokenText formats the rules broken ("MasterQuorum×2, MaxPodsPerNode").
func (s sample) brokenText() string {
	if s.err != "" {
		return "unknown (" + s.err + ")"
	}
	var parts []string
	for r, n := range s.broken {
		if n > 1 {
			parts = append(parts, fmt.Sprintf("%s×%d", r, n))
		} else {
			parts = append(parts, string(r))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// podsOn returns the names of the Redis pods bound to node now, from the monitor's cache.
func (m *monitor) podsOn(node string) []string {
	snap, err := m.cache.Snapshot(context.Background(), m.namespace)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range snap.Pods {
		if p.Spec.NodeName == node {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

var _ = metav1.Now
