// Package execute carries out plans on a live Kubernetes cluster, one safe move at a time per
// Redis cluster, so that no write is lost: a master is failed over before its pod is disrupted,
// pods are evicted through the policy/v1 Eviction API so that PodDisruptionBudgets hold, and only
// inside maintenance windows. A move is an explicit list of steps (steps.go): window →
// health gate → placeability check → PodDisruptionBudget dry run → failover of a master (to the
// replica the plan names) → client drain → role check → eviction → re-creation → rejoin →
// re-observe; a plan's failover step (MasterQuorum) moves no pod: window → health gate → failover
// → client drain → re-observe. Each step continues, skips (a safety check said no: the cluster is
// left as it is) or aborts (an error); the report lists the steps with their durations, and a
// skip or an abort keeps the first real reason. With Pending steps (Config.Plan.AllowPendingSteps)
// a pod the plan lets wait Pending is not waited for, and the health gate accepts exactly the
// planned Pending pods (observe.JudgeHealthExpecting).
//
// It owns the Executor and its Config, a cluster's observe–plan–move loop (cluster.go), one
// move's driver (move.go), the steps (their list and shared state in steps.go; the step funcs in
// steps_gate.go, steps_failover.go and steps_evict.go; the health wait in health.go), the run's
// eviction limits (limits.go), the steps' expected durations (estimates.go) and the step history
// kept between runs in a ConfigMap (history.go), the structured log lines (log.go) and the
// progress output: line-prefixed for clusters run in parallel, or log entries (output.go). It depends on Kubernetes through kubernetes.Interface and on Redis through the Redis interface
// declared here. It imports observe (what the cluster looks like now, its health), plan (what to
// move), report (what it did, and the maps it prints), window (maintenance windows), policies and
// redisctl; nothing in rebalancer/ imports it.
package execute

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Defaults of Config, used when a field is 0: the policy's (api/v1alpha1), but the poll interval.
const (
	// DefaultMaxMoves is Config.MaxMoves: evictions per Redis cluster in one run.
	DefaultMaxMoves = v1alpha1.DefaultMaxMovesPerCluster
	// DefaultMaxParallelClusters is Config.MaxParallelClusters.
	DefaultMaxParallelClusters = v1alpha1.DefaultMaxParallelClusters
	// DefaultFailoverTimeout is Config.FailoverTimeout.
	DefaultFailoverTimeout = v1alpha1.DefaultFailoverTimeout
	// DefaultDrainQuiet and DefaultDrainTimeout are Config.DrainQuiet and Config.DrainTimeout.
	DefaultDrainQuiet   = v1alpha1.DefaultDrainQuiet
	DefaultDrainTimeout = v1alpha1.DefaultDrainTimeout
	// DefaultHealthTimeout is Config.HealthTimeout.
	DefaultHealthTimeout = v1alpha1.DefaultHealthTimeout
	// DefaultRecreateTimeout is Config.RecreateTimeout.
	DefaultRecreateTimeout = v1alpha1.DefaultRecreateTimeout
	// DefaultRejoinTimeout is Config.RejoinTimeout.
	DefaultRejoinTimeout = v1alpha1.DefaultRejoinTimeout
	// DefaultFullSyncTimeout is Config.FullSyncTimeout.
	DefaultFullSyncTimeout = v1alpha1.DefaultFullSyncTimeout
	// DefaultRequestTimeout is Config.RequestTimeout.
	DefaultRequestTimeout = v1alpha1.DefaultRequestTimeout
	// DefaultPollInterval is Config.PollInterval.
	DefaultPollInterval = 500 * time.Millisecond
)

// Redis is what the executor asks of Redis; *redisctl.Client implements it (see its methods for
// the meaning of each).
type Redis interface {
	// AddrOf returns the Redis address of a pod IP.
	AddrOf(ip string) string
	// Topology reads the merged CLUSTER NODES views (the roles).
	Topology(ctx context.Context, addrs []string) (*redisctl.Topology, error)
	// CheckHealth is the health gate: Redis healthy before a move disrupts anything.
	CheckHealth(ctx context.Context, addrs []string, opts redisctl.HealthOptions) (*redisctl.Health, error)
	// ChooseReplica picks the in-sync replica a master is failed over to.
	ChooseReplica(ctx context.Context, topo *redisctl.Topology, masterID string, prefer func(redisctl.Node) bool) (redisctl.Node, error)
	// Failover runs CLUSTER FAILOVER on a replica and verifies the switch.
	Failover(ctx context.Context, replicaAddr string, opts redisctl.FailoverOptions) (*redisctl.FailoverResult, error)
	// WaitClientsDrained waits until the old master's clients have gone quiet.
	WaitClientsDrained(ctx context.Context, addr string, quiet, timeout time.Duration) ([]redisctl.ClientConn, error)
	// Do sends one command (ROLE, for the role check).
	Do(ctx context.Context, addr string, args ...interface{}) (interface{}, error)
	// WaitRejoin waits until a re-created pod's node is an in-sync replica again.
	WaitRejoin(ctx context.Context, addr, masterID string, timeout time.Duration, progress func(string)) error
	// Reintroduce makes a pod's node that came back empty (its claims released) a replica of
	// its shard's master again, and the cluster forget the node it replaces.
	Reintroduce(ctx context.Context, addr, oldID, masterID string, addrs []string, timeout time.Duration, progress func(string)) (string, error)
	// RejoinStray makes a stray master (a master without slots holding a copy of its owner's
	// keys, redisctl.StrayMaster) a replica of its owner again.
	RejoinStray(ctx context.Context, addr, ownerID string, addrs []string, timeout time.Duration, progress func(string)) error
}

// Config configures an Executor. Client and Redis are required.
type Config struct {
	// Client talks to the Kubernetes API server.
	Client kubernetes.Interface
	// Redis talks to the Redis nodes (auth, TLS and timeouts are its options).
	Redis Redis
	// Selection picks the Redis clusters (the zero value: all); its namespace ("" = all) also
	// limits what is read from the API server.
	Selection observe.Selection
	// Policy tunes the rules (cluster label, relaxed limits, ...). With ReleaseReplicaClaims, a
	// move the plan says releases a pod's claims deletes them once the pod's eviction is accepted
	// (steps_release.go).
	Policy policies.Options
	// Plan bounds the planner's search.
	Plan plan.Options
	// Window holds the maintenance windows: outside every window a run only observes and
	// reports, and a move starts only when the window leaves time for it (window.Config).
	Window window.Config
	// IgnoreWindows lets a manual run act outside the windows (logged and reported).
	IgnoreWindows bool
	// MaxMoves is the number of evictions one run may make per Redis cluster (DefaultMaxMoves
	// when 0). Failover steps are bounded apart: the cluster's shards plus MaxMoves.
	MaxMoves int
	// MaxParallelClusters is how many Redis clusters progress at once, each with one disruption
	// in flight at most (DefaultMaxParallelClusters when 0).
	MaxParallelClusters int
	// MaxPodsToEvictPerNode, MaxPodsToEvictPerNamespace and MaxPodsToEvictTotal limit the
	// evictions of one run, counted over every cluster: per node the pod ran on, per namespace,
	// and in all (nil: no limit). They are the descheduler's limits (its policy's
	// maxNoOfPodsToEvictPerNode, ...PerNamespace, ...Total), enforced by its PodEvictor.
	MaxPodsToEvictPerNode, MaxPodsToEvictPerNamespace, MaxPodsToEvictTotal *uint
	// DryRun plans and prints, but neither fails over nor evicts.
	DryRun bool
	// FailoverMode is the CLUSTER FAILOVER variant (default mode unless set explicitly).
	FailoverMode redisctl.FailoverMode
	// FailoverTimeout bounds a failover, verification included (DefaultFailoverTimeout when 0).
	FailoverTimeout time.Duration
	// DrainQuiet and DrainTimeout: after a failover, wait until no client has run a keyspace
	// command on the old master for DrainQuiet (DefaultDrainQuiet when 0), at most DrainTimeout
	// (DefaultDrainTimeout when 0), so that clients learn the new master from its MOVED replies
	// before it goes away.
	DrainQuiet, DrainTimeout time.Duration
	// HealthTimeout bounds the wait for the cluster to be healthy before a move, and again after
	// it (DefaultHealthTimeout when 0).
	HealthTimeout time.Duration
	// RecreateTimeout bounds the wait for an evicted pod to be re-created, scheduled and Ready
	// (DefaultRecreateTimeout when 0).
	RecreateTimeout time.Duration
	// RejoinTimeout bounds the wait for the re-created pod's Redis node to be back as an in-sync
	// replica (DefaultRejoinTimeout when 0).
	RejoinTimeout time.Duration
	// FullSyncTimeout bounds the same wait for a pod whose claims the move released: its node
	// comes back empty, is re-introduced and copies its master's whole dataset
	// (DefaultFullSyncTimeout when 0).
	FullSyncTimeout time.Duration
	// RequestTimeout bounds each step that has no timeout of its own: the placeability check's
	// reads, the dry run, the role check, the eviction request, the re-observation's reads
	// (DefaultRequestTimeout when 0).
	RequestTimeout time.Duration
	// PollInterval is the period of the waits (DefaultPollInterval when 0).
	PollInterval time.Duration
	// Out receives the human-readable progress: maps, steps and durations (discarded when nil).
	// Lines of clusters run in parallel are prefixed with "[namespace/name] ".
	Out io.Writer
	// ProgressLog writes the progress as structured log entries instead of to Out: one klog
	// entry "Progress" per non-blank line, its text under "text", a cluster's lines with the
	// keys namespace and cluster (no prefix). With --logging-format=json every line the process
	// writes on its standard error is then one JSON object.
	ProgressLog bool
	// LogEveryStep logs every step of a move at level 0 (one log entry per step, with its
	// duration); otherwise the steps that only continue are logged at V(2), and only skips,
	// aborts, failovers, evictions and the move's end at level 0 (log.go).
	LogEveryStep bool
	// Clock gives the time of the maintenance windows and measures durations (the real clock
	// when nil). The waits' timeouts run on real time.
	Clock clock.PassiveClock
	// Observer is told what the run does as it does it (the metrics); nothing is told when nil.
	Observer Observer
	// Recorder records the run's Kubernetes Events (events.go). When nil, a run that is not a
	// dry run records them on a broadcaster of its own, to the API server, and waits for them to
	// be written before Run returns.
	Recorder events.EventRecorder
	// Stop, when closed, asks the run to stop at the next safe point (a graceful stop: SIGTERM).
	// The step in flight finishes if it is a request (placeability, dry run, failover, role
	// check, eviction), or is abandoned if it is a wait (health gate, drain, re-creation, rejoin,
	// re-observation: abandoning a wait disrupts nothing); no further step, move or cluster
	// starts. A master failed over and not yet evicted stays a replica and is not evicted: the
	// next run starts again from the health gate and the role check. Clusters stopped so report
	// StoppedBy report.StoppedGracefulStop. Cancelling Run's context is the hard stop: every
	// step in flight is cut short. Nil: never.
	Stop <-chan struct{}
	// History names the ConfigMap where the durations of the steps a run measures are kept
	// between runs, one key per Redis cluster (history.go): a run that is not a dry run adds
	// what it measured in a cluster once done with it, and with the p95 step estimate a run
	// starts from what earlier runs measured (estimates.go). A run that cannot read or write it
	// (RBAC: get and update that ConfigMap, create configmaps in its namespace) logs why once
	// and goes on without it. Empty Name: no history kept.
	History types.NamespacedName
	// Source is where observations read the API server's objects (observe.Lister on Client, a
	// LIST per resource and observation, when nil; serve gives its watched cache).
	Source observe.Source
	// Goal is what the run works toward (Compliance when nil): when a cluster is done, and the
	// plan its next move is taken from.
	Goal Goal
	// Yield, when set, says whether another part of this process is acting on a Redis cluster
	// (key "namespace/name") and why: serve's hand-off failing the cluster's masters over off
	// nodes being emptied, which takes several failovers whose intermediate states may break a
	// rule (a zone holding one master too many until the next one). A run then makes no further
	// move in that cluster (report.StoppedHandOff, Yield's reason), so that it never plans from
	// such a state and undoes the hand-off's work; the next run continues.
	Yield func(key string) (why string, yield bool)
	// EvictPod, when set, makes the eviction step's request instead of the run's own PodEvictor
	// (then not created): the descheduler plugin (hack/descheduler-plugin) gives its profile's
	// Evictor, the descheduler's PodEvictor with the DeschedulerPolicy's limits and events. Every
	// step before and after the eviction (health gate, failover, role check, re-creation, rejoin)
	// is the same. Its errors are judged as the PodEvictor's: a descheduler limit error
	// (*evictions.EvictionTotalLimitError, ...NodeLimitError, ...NamespaceLimitError) or a 429
	// (the PodEvictor's "error when evicting pod (ignoring)" text) skips the move, any other
	// error aborts it. Nil: the run's own PodEvictor with the MaxPodsToEvict... limits.
	EvictPod func(ctx context.Context, pod *corev1.Pod) error
	// Requests, when set, counts Client's API requests (observe.RequestCounter.Wrap on its
	// rest.Config); Run's report then holds the counts.
	Requests *observe.RequestCounter
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Redis == nil {
		return c, errors.New("execute: a Kubernetes client and a Redis client are required")
	}
	if c.MaxMoves < 0 || c.MaxParallelClusters < 0 {
		return c, fmt.Errorf("execute: max moves and max parallel clusters must not be negative, got %d and %d", c.MaxMoves, c.MaxParallelClusters)
	}
	setDefault := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	if c.MaxMoves == 0 {
		c.MaxMoves = DefaultMaxMoves
	}
	if c.MaxParallelClusters == 0 {
		c.MaxParallelClusters = DefaultMaxParallelClusters
	}
	setDefault(&c.FailoverTimeout, DefaultFailoverTimeout)
	setDefault(&c.DrainQuiet, DefaultDrainQuiet)
	setDefault(&c.DrainTimeout, DefaultDrainTimeout)
	setDefault(&c.HealthTimeout, DefaultHealthTimeout)
	setDefault(&c.RecreateTimeout, DefaultRecreateTimeout)
	setDefault(&c.RejoinTimeout, DefaultRejoinTimeout)
	setDefault(&c.FullSyncTimeout, DefaultFullSyncTimeout)
	setDefault(&c.RequestTimeout, DefaultRequestTimeout)
	setDefault(&c.PollInterval, DefaultPollInterval)
	switch {
	case c.ProgressLog:
		c.Out = newLogWriter()
	case c.Out == nil:
		c.Out = io.Discard
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Observer == nil {
		c.Observer = noObserver{}
	}
	if c.Goal == nil {
		c.Goal = Compliance{}
	}
	if c.Source == nil {
		c.Source = observe.Lister{Client: c.Client}
	}
	return c, nil
}

// Executor finds Redis clusters whose placement breaks the rules and fixes them one safe move at
// a time per cluster.
type Executor struct {
	cfg     Config
	windows *window.Schedule
	// locks keeps one disruption in flight per Redis cluster across Run and HandOff: a hand-off
	// holds its cluster's lock from its first step to its last, a run from the plan of each move
	// (and the Yield check before it) to the move's last step.
	locks keyedMutex
}

// keyedMutex is a mutex per key (a Redis cluster's "namespace/name"), made on first use.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

// lock locks key's mutex and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*sync.Mutex{}
	}
	l, ok := k.m[key]
	if !ok {
		l = &sync.Mutex{}
		k.m[key] = l
	}
	k.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// New returns an Executor for cfg, defaults filled. It fails when a required field is missing,
// MaxMoves or MaxParallelClusters is negative, or a maintenance window does not validate
// (window.Validate).
func New(cfg Config) (*Executor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ws, err := window.New(cfg.Window)
	if err != nil {
		return nil, fmt.Errorf("execute: %w", err)
	}
	return &Executor{cfg: cfg, windows: ws}, nil
}

// MoveBound returns the longest one eviction move may take with the Executor's timeouts: the
// sum of its steps' bounds (each wait's timeout; RequestTimeout for a step without one). With
// v1alpha1.StepEstimateBound, such a move starts only when the open window has this much time
// left (a failover step of a plan, which moves no pod, has fewer steps and needs less; a move
// that releases claims has one more, and waits FullSyncTimeout instead of RejoinTimeout).
func (e *Executor) MoveBound() time.Duration {
	cr := &clusterRun{run: &run{Executor: e}}
	var sum time.Duration
	for _, s := range cr.steps(plan.Move{Kind: plan.KindEvict}) {
		sum += s.bound
	}
	return sum
}

// HandOff fails one master of cluster c over before a disruption another tool makes (why says
// which: "node n1 is being emptied (cordoned)", "the guard held the eviction of pod x"): mv is a
// plan.KindFailover move naming the master (Member) and the in-sync replica that takes over
// (FailoverTo, To), as a plan's failover step does, and it is carried out by the same steps:
// health gate → failover to the named replica, verified → client drain → re-observe. Maintenance
// windows do not apply (the disruption comes whatever they say); the failover's Event is
// ReasonHandOff. It never evicts. It returns the move as it happened (its Outcome says whether
// every step continued), the cluster observed at its end (nil unless every step continued), and
// the error of a step that aborted.
func (e *Executor) HandOff(ctx context.Context, c *policies.Cluster, mv plan.Move, why string) (report.MoveResult, *policies.Cluster, error) {
	switch {
	case mv.Kind != plan.KindFailover:
		return report.MoveResult{}, nil, fmt.Errorf("execute: a hand-off is a failover move, got %q", mv.Kind)
	case e.cfg.DryRun:
		return report.MoveResult{}, nil, errors.New("execute: a dry run hands nothing off")
	}
	rn := &run{Executor: e, budget: newBudget(e.cfg), estimates: newEstimates(e.windows.StepEstimate()), act: true, handOff: why}
	if !e.cfg.DryRun {
		rn.events = newRecording(e.cfg.Client, e.cfg.Recorder)
	}
	defer rn.close()
	cr := &clusterRun{run: rn, key: c.Key(), out: e.cfg.Out}
	defer e.locks.lock(cr.key)()
	cr.printf("\nhand-off (%s): %s\n", why, report.MoveText(mv))
	mr, after, res := cr.move(ctx, c, plan.Plan{Moves: []plan.Move{mv}, Failovers: 1})
	if res.outcome == report.OutcomeAbort {
		return mr, nil, fmt.Errorf("execute: hand-off of %s: %w", mv.Pod, res.err)
	}
	return mr, after, nil
}

// Run examines every selected Redis cluster and moves pods until each complies, a step skips (a
// maintenance window without time left, an unhealthy cluster, an unplaceable pod, a
// PodDisruptionBudget, an eviction limit, a refused failover, a role mismatch), a step aborts,
// or MaxMoves is spent. Up to MaxParallelClusters clusters progress at once, with one disruption
// in flight per cluster. Outside every maintenance window (and without IgnoreWindows) it only
// observes, plans and reports. It returns the report (never nil) and the errors of the clusters
// whose run aborted or could not be observed, each "cluster ns/name: <first real reason>".
func (e *Executor) Run(ctx context.Context) (*report.Run, error) {
	clk := e.cfg.Clock
	start := clk.Now()
	rn := e.newRun(ctx)
	defer rn.close()
	rep := &report.Run{Started: start.UTC(), Window: rn.windowState(start), Clusters: []report.ClusterRun{}, Limits: report.Limits{
		MaxPodsToEvictPerNode: e.cfg.MaxPodsToEvictPerNode, MaxPodsToEvictPerNamespace: e.cfg.MaxPodsToEvictPerNamespace,
		MaxPodsToEvictTotal: e.cfg.MaxPodsToEvictTotal, MaxParallelClusters: e.cfg.MaxParallelClusters,
	}}
	defer func() { rep.Seconds = report.Seconds(clk.Since(start)) }()
	e.printWindow(rep.Window)

	keys, notRedis, err := e.clusterKeys(ctx)
	if err != nil {
		err = fmt.Errorf("execute: %w", err)
		rep.Classify(err)
		return rep, err
	}
	if len(keys) == 0 {
		fmt.Fprintf(e.cfg.Out, "no Redis cluster found (pods labelled %s", cmp.Or(e.cfg.Policy.ClusterLabel, policies.DefaultClusterLabel))
		if sel := e.cfg.Selection.Selector; sel != nil && !sel.Empty() {
			fmt.Fprintf(e.cfg.Out, " and matching %s", sel)
		}
		if len(notRedis) > 0 {
			fmt.Fprintf(e.cfg.Out, "; left out as no Redis Cluster, their Ready pods refusing the Redis port or answering without cluster mode: %s", strings.Join(notRedis, ", "))
		}
		fmt.Fprint(e.cfg.Out, "): nothing to do")
		if e.cfg.Selection.AllowEmpty {
			fmt.Fprint(e.cfg.Out, " (allowEmpty)")
		}
		fmt.Fprintln(e.cfg.Out)
	}
	rep.Clusters = make([]report.ClusterRun, len(keys))
	errs := make([]error, len(keys))
	for i, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		rep.Clusters[i] = report.ClusterRun{Namespace: ns, Name: name, Stopped: "interrupted: the run stopped before this cluster's turn", StoppedBy: report.StoppedObserve}
	}
	out := newSyncWriter(e.cfg.Out)
	parallel := e.cfg.MaxParallelClusters > 1 && len(keys) > 1
	// No cluster starts once a graceful stop is asked for; the clusters started go on with ctx.
	dispatch, cancel := withStop(ctx, e.cfg.Stop)
	defer cancel()
	ran := make([]bool, len(keys))
	workqueue.ParallelizeUntil(dispatch, e.cfg.MaxParallelClusters, len(keys), func(i int) {
		if rn.stopping() {
			return
		}
		ran[i] = true
		var w io.Writer = out
		switch {
		case e.cfg.ProgressLog:
			lw := newLogWriter(clusterKeys(keys[i])...)
			defer lw.Flush()
			w = lw
		case parallel:
			pw := newPrefixWriter(out, "["+keys[i]+"] ")
			defer pw.Flush()
			w = pw
		}
		cr := &clusterRun{run: rn, key: keys[i], out: w}
		rep.Clusters[i], errs[i] = cr.runCluster(ctx)
		if errs[i] != nil {
			errs[i] = fmt.Errorf("cluster %s: %w", keys[i], errs[i])
		}
		rn.saveHistory(ctx, keys[i])
		e.cfg.Observer.Cluster(rep.Clusters[i])
	})
	if rn.stopping() {
		for i := range rep.Clusters {
			if !ran[i] {
				rep.Clusters[i].StoppedBy, rep.Clusters[i].Stopped = report.StoppedGracefulStop, "graceful stop: the run stopped before this cluster's turn"
			}
		}
	}
	rep.Limits.Evicted = rep.Moves()
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("execute: %w", ctx.Err()))
	}
	if e.cfg.Requests != nil {
		rep.APIRequests = e.cfg.Requests.Counts()
	}
	err = errors.Join(errs...)
	rep.Classify(err)
	return rep, err
}

// clusterKeys returns the keys of the Redis clusters the run looks at, sorted: from the Source
// when it keeps them (observe.ClusterObserver), else from a model of the selection, without the
// clusters left out as no Redis Cluster (dropNotRedis, when the policy names no workload), whose
// keys it returns second. A selection that matches nothing is an error (a typo) unless allowed
// (observe.Selection.Check).
func (e *Executor) clusterKeys(ctx context.Context) (keys, notRedis []string, err error) {
	if o, ok := e.cfg.Source.(observe.ClusterObserver); ok {
		if keys := o.ClusterKeys(e.cfg.Selection); len(keys) > 0 || e.cfg.Selection.AllowEmpty {
			return keys, nil, nil
		}
	}
	snap, err := e.cfg.Source.Snapshot(ctx, e.cfg.Selection.Namespace)
	if err != nil {
		return nil, nil, err
	}
	model, err := observe.Model(snap, e.cfg.Policy, e.cfg.Selection)
	if err != nil {
		return nil, nil, err
	}
	if err := e.cfg.Selection.Check(snap, e.cfg.Policy, model); err != nil {
		return nil, nil, err
	}
	if !observe.NamesWorkloads(e.cfg.Policy) {
		if notRedis, err = e.dropNotRedis(ctx, model); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range model.Clusters {
		keys = append(keys, c.Key())
	}
	sort.Strings(keys)
	return keys, notRedis, nil
}

// printWindow says whether the run may act, and why.
func (e *Executor) printWindow(w report.WindowState) {
	e.logWindow(w)
	switch {
	case len(w.Windows) == 0:
		return
	case w.Ignored:
		fmt.Fprintf(e.cfg.Out, "maintenance windows ignored (--ignore-windows): %s\n", e.windows)
	case w.Open:
		fmt.Fprintf(e.cfg.Out, "maintenance window open until %s (windows: %s; step estimate: %s)\n", timeText(*w.Closes), e.windows, w.StepEstimate)
	default:
		fmt.Fprintf(e.cfg.Out, "outside every maintenance window (%s): observing only; %s\n", e.windows, nextOpenText(w.NextOpen, e.cfg.Clock.Now()))
	}
}

// withStop returns a context that ends with ctx or when stop is closed (never, when stop is nil).
func withStop(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if stop != nil {
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// timeText writes t in RFC 3339, UTC.
func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// nextOpenText says when the next window opens: "next window opens at T (in D)".
func nextOpenText(next *time.Time, now time.Time) string {
	if next == nil {
		return "no window opens within five years"
	}
	return fmt.Sprintf("next window opens at %s (in %s)", timeText(*next), next.Sub(now).Round(time.Second))
}

// dropNotRedis reads the Redis topology of every cluster of model at once (under
// observe.DefaultRedisDeadline) and removes from model.Clusters those whose pods are no Redis
// Cluster (observe.ErrNotRedis), returning their keys sorted, and an error when that leaves none
// (observe.Selection.CheckRedis). The roles read are not used: each cluster's turn observes it
// again.
func (e *Executor) dropNotRedis(ctx context.Context, model *policies.Model) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, observe.DefaultRedisDeadline)
	defer cancel()
	errs := make([]error, len(model.Clusters))
	workqueue.ParallelizeUntil(ctx, 16, len(model.Clusters), func(i int) {
		_, errs[i] = observe.ApplyRedis(ctx, e.cfg.Redis, model.Clusters[i])
	})
	byKey := map[string]error{}
	for i, c := range model.Clusters {
		if errs[i] != nil {
			byKey[c.Key()] = errs[i]
		}
	}
	dropped := observe.DropNotRedis(model, byKey)
	for _, k := range dropped {
		klog.V(2).InfoS("Left out: no Redis Cluster", "cluster", k, "reason", byKey[k])
	}
	sort.Strings(dropped)
	return dropped, e.cfg.Selection.CheckRedis(model, dropped, byKey)
}
