// Package handoff is the eviction guard's hand-off: while `serve` leads, it fails each Redis master
// whose eviction the guard held, and every master on a node being emptied (cordoned, or tainted
// with one of guard.drainTaints: node.kubernetes.io/unschedulable, ToBeDeletedByClusterAutoscaler,
// karpenter.sh/disrupted), over to an in-sync replica on a node that stays, chosen so that
// MasterQuorum holds over the nodes that stay (a Planner). One disruption at a time per Redis
// cluster; each hand-off is the executor's failover step (execute.Executor.HandOff: health gate,
// verified CLUSTER FAILOVER, client drain, re-observe; Event RedisHandOff). The evictor's next
// retry then finds a replica, which the guard lets through. The hand-off never evicts.
//
// It learns of held evictions from this process's guard (Controller.Enqueue) and, since every
// replica of serve answers reviews, from the RedisEvictionHeld Events the other replicas record;
// of nodes being emptied from serve's watched cache. Before any hand-off it reads the cluster
// again: its nodes and pods as the cache last watched them (no request to the API server: no
// LIST per attempt, nor per re-check of a node that stays cordoned) and the roles from Redis now
// (Source.ObserveCluster), and acts only on what those say: a forged AdmissionReview can at most
// make it fail a master over.
//
// It imports guard (the cache and the holds), execute (the failover step), observe, plan and
// policies; cmd/redis-rebalancer/app wires it into serve.
package handoff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// Defaults of Config.
const (
	// DefaultScanInterval is Config.ScanInterval.
	DefaultScanInterval = time.Second
	// DefaultSettledFor is Config.SettledFor.
	DefaultSettledFor = 30 * time.Second
	// DefaultObserveTimeout is Config.ObserveTimeout.
	DefaultObserveTimeout = 30 * time.Second
	// DefaultStaleAfter is Config.StaleAfter: 6 of kubectl drain's retries, 3 of
	// cluster-autoscaler's.
	DefaultStaleAfter = 30 * time.Second
)

// Outcomes of one hand-off attempt (Observer.HandOff).
const (
	// OutcomeDone: the master was failed over and the cluster re-observed healthy.
	OutcomeDone = "done"
	// OutcomeSkipped: a safety check said no (the health gate, Redis refused the failover, the
	// master is no longer one); retried with backoff.
	OutcomeSkipped = "skipped"
	// OutcomeAborted: a step failed; retried with backoff.
	OutcomeAborted = "aborted"
	// OutcomeInfeasible: a master leaving has no replica on a node that stays.
	OutcomeInfeasible = "infeasible"
)

// Executor is what the hand-off asks of the executor; *execute.Executor implements it.
type Executor interface {
	HandOff(ctx context.Context, c *policies.Cluster, mv plan.Move, why string) (report.MoveResult, *policies.Cluster, error)
}

// Observer is told each hand-off's outcome (the metrics); nil: nothing.
type Observer interface {
	HandOff(outcome string)
}

// Source is serve's watched cache (rebalancer/cache's *Cache implements it): the nodes being
// emptied and the pods on them (guard.Source), and each Redis cluster as it is now, its pods and
// nodes as last watched and its roles read from Redis (observe.ClusterObserver).
type Source interface {
	guard.Source
	observe.ClusterObserver
}

// Config configures a Controller.
type Config struct {
	// Client watches the RedisEvictionHeld Events.
	Client kubernetes.Interface
	// Source is serve's watched cache: the nodes being emptied, the pods on them, and the
	// cluster read before each hand-off.
	Source Source
	// Holds are this process's guard's holds.
	Holds *guard.Holds
	// Executor runs the hand-offs.
	Executor Executor
	// Policy and Selection are the policy's rules options and selection: only the clusters it
	// selects are handed off.
	Policy    policies.Options
	Selection observe.Selection
	// DrainTaints are guard.drainTaints.
	DrainTaints []string
	// MaxHold is guard.maxHold: a hold older than this is not handed off any more (the guard
	// admits its eviction).
	MaxHold time.Duration
	// StaleAfter is how long after its last denial a hold of this process's guard is still
	// handed off (DefaultStaleAfter when 0): an evictor that has not retried for longer has
	// stopped asking (a drain given up, its node uncordoned), and failing its master over then
	// moves a master off a node that stays for nothing, maybe against MasterQuorum. A hold another
	// replica made is known from its Event, which tells its first denial only: it is handed off
	// within StaleAfter of that Event (an evictor still retrying reaches this replica too, behind
	// the Service, and renews a hold of its own), and kept until MaxHold for nothing else.
	StaleAfter time.Duration
	// Planner plans the failovers (DrainPlanner when nil).
	Planner Planner
	// Workers is how many Redis clusters are handed off at once (1 when 0); one disruption at a
	// time per cluster.
	Workers int
	// ScanInterval is how often the cache is scanned for nodes being emptied and holds
	// (DefaultScanInterval when 0). SettledFor is how long a cluster found with nothing to hand
	// off is not looked at again while what leaves stays the same (DefaultSettledFor when 0).
	ScanInterval, SettledFor time.Duration
	// ObserveTimeout bounds each observation of a cluster (DefaultObserveTimeout when 0).
	ObserveTimeout time.Duration
	// Observer is told each hand-off's outcome (nil: nothing).
	Observer Observer
}

// Controller hands masters off while its Run runs (the leader's term).
type Controller struct {
	cfg   Config
	queue workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// remote are the holds other replicas recorded (RedisEvictionHeld Events), by pod UID.
	remote map[types.UID]guard.Hold
	// settled remembers, per cluster, what was leaving when it was last found with nothing
	// to hand off, and when; backoff, per cluster, until when it is not retried.
	settled map[string]settled
	backoff map[string]time.Time
	// active are the clusters whose masters are being handed off (Busy), with why: from the start
	// of a hand-off until the cluster is found with nothing more to hand off, or an attempt fails.
	active map[string]string
}

type settled struct {
	sig string
	at  time.Time
}

// New returns a Controller for cfg, defaults filled.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Source == nil || cfg.Holds == nil || cfg.Executor == nil {
		return nil, errors.New("handoff: a client, a source, holds and an executor are required")
	}
	if cfg.Planner == nil {
		cfg.Planner = DrainPlanner
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.ScanInterval == 0 {
		cfg.ScanInterval = DefaultScanInterval
	}
	if cfg.SettledFor == 0 {
		cfg.SettledFor = DefaultSettledFor
	}
	if cfg.ObserveTimeout == 0 {
		cfg.ObserveTimeout = DefaultObserveTimeout
	}
	if cfg.StaleAfter == 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	return &Controller{cfg: cfg, remote: map[types.UID]guard.Hold{}, settled: map[string]settled{}, backoff: map[string]time.Time{}, active: map[string]string{}}, nil
}

// Busy reports whether the hand-off is at work on the Redis cluster key ("namespace/name"), and
// why: a hand-off of one of its masters runs, or one ran and the cluster has not been found with
// nothing more to hand off since (a drain often needs several failovers, and the states between
// them may break a rule the last one restores). serve's passes leave such a cluster to it
// (execute.Config.Yield), so that none plans from those states and undoes the hand-off's work.
func (c *Controller) Busy(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	why, ok := c.active[key]
	return why, ok
}

// Enqueue asks for the hand-off of a hold this process's guard made (guard.Config.OnHold). It
// is safe to call while no Run runs: the next Run's scan finds the hold in Holds.
func (c *Controller) Enqueue(h guard.Hold) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q == nil {
		return
	}
	if key, ok := c.clusterOf(h.Namespace, h.Name); ok {
		c.forgetSettled(key)
		q.Add(key)
	}
}

// Run hands off until ctx ends (the leader's term): it watches the RedisEvictionHeld Events,
// scans the cache every ScanInterval for nodes being emptied and for holds, and works on the
// clusters they name, Workers at a time. It returns once every worker has stopped.
func (c *Controller) Run(ctx context.Context) {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](2*time.Second, time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "handoff"})
	c.mu.Lock()
	c.queue = q
	c.mu.Unlock()
	defer func() {
		q.ShutDown()
		c.mu.Lock()
		c.queue = nil
		c.mu.Unlock()
	}()
	c.watchHeldEvents(ctx)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.work(ctx, q) {
			}
		}()
	}
	klog.InfoS("Hand-off running: masters on nodes being emptied and held evictions are failed over", "drainTaints", c.cfg.DrainTaints)
	wait.UntilWithContext(ctx, func(ctx context.Context) { c.scan(q) }, c.cfg.ScanInterval)
	q.ShutDown()
	wg.Wait()
}

// watchHeldEvents starts an informer on the Events the guards record when they hold an eviction
// (reason RedisEvictionHeld), so that holds answered by other replicas are handed off here.
func (c *Controller) watchHeldEvents(ctx context.Context) {
	f := informers.NewSharedInformerFactoryWithOptions(c.cfg.Client, 0, informers.WithNamespace(c.cfg.Selection.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("reason", guard.EventEvictionHeld).String()
		}))
	inf := f.Core().V1().Events().Informer()
	add := func(obj any) {
		ev, ok := obj.(*corev1.Event)
		if !ok || ev.InvolvedObject.Kind != "Pod" || ev.ReportingController != "" && ev.ReportingController != execute.EventSource {
			return
		}
		when := ev.EventTime.Time
		if ev.Series != nil {
			when = ev.Series.LastObservedTime.Time
		}
		if when.IsZero() {
			when = ev.LastTimestamp.Time
		}
		if c.cfg.MaxHold > 0 && time.Since(when) > c.cfg.MaxHold {
			return
		}
		h := guard.Hold{Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name, UID: ev.InvolvedObject.UID, Since: when, Last: when}
		c.mu.Lock()
		c.remote[h.UID] = h
		c.mu.Unlock()
		c.Enqueue(h)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }})
	f.Start(ctx.Done())
}

// holds returns the holds to hand off: this process's renewed within StaleAfter, and the other
// replicas' whose Event came within StaleAfter (forgotten after MaxHold). The 3-minute soak in
// make test: a zone drain given up at +3m32s, the zone uncordoned and the cluster compliant, a
// hold another replica made during the drain was handed off at +4m31s, failing a master over
// for an evictor long gone.
func (c *Controller) holds() []guard.Hold {
	hs := c.cfg.Holds.Renewed(c.cfg.StaleAfter)
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, h := range c.remote {
		age := time.Since(h.Last)
		if c.cfg.MaxHold > 0 && age > c.cfg.MaxHold {
			delete(c.remote, uid)
			continue
		}
		if age <= c.cfg.StaleAfter {
			hs = append(hs, h)
		}
	}
	return hs
}

// scan enqueues the clusters with a pod on a node being emptied or a held pod, unless found
// settled with the same leaving set within SettledFor, or backing off.
func (c *Controller) scan(q workqueue.TypedRateLimitingInterface[string]) {
	sig := map[string][]string{}
	leaving := map[string]string{} // node → why
	for _, n := range c.cfg.Source.Nodes() {
		is, why := policies.NodeLeaving(n, c.cfg.DrainTaints)
		if ready, _ := guard.NodeReady(n); is && ready {
			leaving[n.Name] = why
		}
	}
	if len(leaving) > 0 {
		for _, key := range c.cfg.Source.Clusters() {
			ns, name, _ := strings.Cut(key, "/")
			for _, p := range c.cfg.Source.ClusterPods(ns, name) {
				why, on := leaving[p.Spec.NodeName]
				if k, ok := c.clusterKey(p); on && ok {
					sig[k] = append(sig[k], "node "+p.Spec.NodeName+" "+why)
				}
			}
		}
	}
	for _, h := range c.holds() {
		if key, ok := c.clusterOf(h.Namespace, h.Name); ok {
			sig[key] = append(sig[key], "hold "+string(h.UID))
		}
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, parts := range sig {
		sort.Strings(parts)
		s := strings.Join(parts, ",")
		if st, ok := c.settled[key]; ok && st.sig == s && now.Sub(st.at) < c.cfg.SettledFor {
			continue
		}
		if until, ok := c.backoff[key]; ok && now.Before(until) {
			continue
		}
		q.Add(key)
	}
}

// clusterOf returns the cluster key of the pod namespace/name in the cache, when the policy
// selects its cluster.
func (c *Controller) clusterOf(namespace, name string) (string, bool) {
	p, ok := c.cfg.Source.Pod(namespace, name)
	if !ok {
		return "", false
	}
	return c.clusterKey(p)
}

// clusterKey returns pod's cluster key ("namespace/cluster") when it has the cluster label and
// its namespace is selected (the label selector is checked on the fresh observation).
func (c *Controller) clusterKey(p *corev1.Pod) (string, bool) {
	v, ok := p.Labels[c.cfg.Policy.ClusterLabel]
	if !ok {
		return "", false
	}
	sel := c.cfg.Selection
	if sel.Namespace != "" && p.Namespace != sel.Namespace || !namespaceSelected(sel, p.Namespace) {
		return "", false
	}
	return p.Namespace + "/" + v, true
}

func (c *Controller) forgetSettled(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.settled, key)
	delete(c.backoff, key)
}

// work takes one cluster from the queue and hands off its first master leaving; it reports false
// once the queue is shut down.
func (c *Controller) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(key)
	again, sig, err := c.handOff(ctx, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || !again {
		delete(c.active, key)
	}
	switch {
	case err != nil:
		d := q.NumRequeues(key)
		q.AddRateLimited(key)
		c.backoff[key] = time.Now().Add(time.Duration(1<<min(d, 5)) * 2 * time.Second)
		klog.InfoS("Hand-off not done; retried later", "cluster", key, "err", err)
	case again:
		q.Forget(key)
		delete(c.backoff, key)
		q.Add(key)
	default:
		q.Forget(key)
		delete(c.backoff, key)
		c.settled[key] = settled{sig: sig, at: time.Now()}
	}
	return true
}

// handOff observes the cluster afresh (nodes and pods as the cache last watched them, roles from
// Redis now), finds the masters leaving (on a node being emptied that is Ready, or held by the
// guard: same pod UID, not terminating) and hands the first one off. It reports whether a hand-off
// was done (then the cluster is looked at again at once), what was leaving (the settled
// signature), and an error when a master leaving could not be handed off.
func (c *Controller) handOff(ctx context.Context, key string) (bool, string, error) {
	ns, name, _ := strings.Cut(key, "/")
	if len(c.cfg.Source.ClusterPods(ns, name)) == 0 {
		return false, "", nil // no pod left
	}
	octx, cancel := context.WithTimeout(ctx, c.cfg.ObserveTimeout)
	defer cancel()
	cl, err := c.cfg.Source.ObserveCluster(octx, c.cfg.Policy, key)
	switch {
	case cl == nil && err != nil:
		return false, "", fmt.Errorf("observe: %w", err)
	case err != nil:
		return false, "", fmt.Errorf("roles: %w", err)
	case !c.cfg.Selection.Matches(cl):
		return false, "", nil
	}
	model := cl.Model()
	l := Leaving{Nodes: map[string]string{}, Members: map[int]string{}}
	var sig []string
	for _, n := range model.Nodes {
		// The model's nodes are trimmed of their conditions: a node not Ready is told by the
		// node lifecycle controller's taints (its Redis nodes are gone; Redis promotes).
		notReady, _ := guard.NodeTaintedNotReady(n.Obj)
		if leaving, why := policies.NodeLeaving(n.Obj, c.cfg.DrainTaints); leaving && !notReady {
			l.Nodes[n.Name] = why
			sig = append(sig, "node "+n.Name+" "+why)
		}
	}
	held := map[types.UID]bool{}
	for _, h := range c.holds() {
		held[h.UID] = true
	}
	for i, m := range cl.Members {
		if held[m.Pod.UID] && !m.Terminating {
			l.Members[i] = "the guard held the eviction of pod " + m.Key()
			sig = append(sig, "hold "+string(m.Pod.UID))
		}
	}
	sort.Strings(sig)
	p := c.cfg.Planner(cl, l)
	if len(p.Moves) == 0 {
		if p.Infeasible != "" {
			c.observe(OutcomeInfeasible)
			return false, "", fmt.Errorf("no hand-off: %s", p.Infeasible)
		}
		klog.V(2).InfoS("Nothing to hand off: no master serving slots leaves", "cluster", key, "leaving", sig)
		return false, strings.Join(sig, ","), nil
	}
	mv := p.Moves[0]
	why := mv.Reason
	c.mu.Lock()
	c.active[key] = "failing " + mv.From + " over to " + mv.To + " (" + why + ")"
	c.mu.Unlock()
	end := c.cfg.Holds.BeginHandOff(mv.Pod) // the guard holds the pod until the clients have moved
	mr, _, err := c.cfg.Executor.HandOff(ctx, cl, mv, why)
	end()
	switch {
	case err != nil:
		c.observe(OutcomeAborted)
		return false, "", err
	case mr.Outcome != report.OutcomeContinue:
		c.observe(OutcomeSkipped)
		return false, "", fmt.Errorf("hand-off of %s skipped at %s: %s", mv.Pod, lastStep(mr), mr.Skipped)
	}
	c.observe(OutcomeDone)
	klog.InfoS("Handed off", "cluster", key, "master", mv.From, "to", mv.To, "toNode", mv.ToNode, "why", why)
	return true, "", nil
}

func (c *Controller) observe(outcome string) {
	if c.cfg.Observer != nil {
		c.cfg.Observer.HandOff(outcome)
	}
}

func lastStep(m report.MoveResult) string {
	if len(m.Steps) == 0 {
		return "start"
	}
	return m.Steps[len(m.Steps)-1].Name
}

// namespaceSelected reports whether sel's namespace lists keep namespace.
func namespaceSelected(sel observe.Selection, namespace string) bool {
	if len(sel.IncludeNamespaces) > 0 && !slices.Contains(sel.IncludeNamespaces, namespace) {
		return false
	}
	return !slices.Contains(sel.ExcludeNamespaces, namespace)
}

var _ Executor = (*execute.Executor)(nil)
