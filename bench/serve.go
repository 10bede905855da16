package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/cache"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
)

// Watched is serve's watched cache (rebalancer/cache) started on a client-go fake clientset that
// holds a snapshot's objects, its LIST requests counted: serve after start-up.
type Watched struct {
	// Cache is the started, synced cache.
	Cache *cache.Cache
	// Load is the time loading the fake clientset took; Sync the time from the cache's start to
	// its informers' sync (their LISTs and the trimming of every object).
	Load, Sync time.Duration

	// Memo is serve's planner memo (execute.Compliance's): the plans kept between passes.
	Memo plan.Memo

	client *fake.Clientset
	lists  atomic.Int64
	cancel context.CancelFunc
}

// StartWatched loads snap's objects into a fake clientset and starts a cache on it (no Redis: the
// roles come from the role label, PolicyOptions), waiting until its informers have synced.
func StartWatched(snap *policies.Snapshot) (*Watched, error) {
	w := &Watched{}
	start := time.Now()
	var objs []k8sruntime.Object
	for _, o := range snap.Objects() {
		objs = append(objs, o)
	}
	client := fake.NewSimpleClientset(objs...)
	w.client = client
	client.PrependReactor("list", "*", func(clienttesting.Action) (bool, k8sruntime.Object, error) {
		w.lists.Add(1)
		return false, nil, nil
	})
	w.Load = time.Since(start)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	start = time.Now()
	w.Cache = cache.New(client, cache.Options{ClusterLabel: PolicyOptions().ClusterLabel})
	w.Cache.Start(ctx)
	if err := w.Cache.WaitForSync(ctx); err != nil {
		cancel()
		return nil, err
	}
	w.Sync = time.Since(start)
	return w, nil
}

// Touch changes one pod of Redis cluster key as an update through the API would (a label the
// rules do not read), and waits until the cache has seen it: the cluster's namespace then gets a
// new model, and its clusters new plans, on the next pass.
func (w *Watched) Touch(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	pods := w.Cache.ClusterPods(ns, name)
	if len(pods) == 0 {
		return fmt.Errorf("touch %s: no pod", key)
	}
	p, err := w.client.CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("touch %s: %w", key, err)
	}
	gen := w.Cache.Generation()
	p = p.DeepCopy()
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["bench.redis-rebalancer/touched"] = strconv.FormatUint(gen, 10)
	if _, err := w.client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("touch %s: %w", key, err)
	}
	return wait.PollUntilContextTimeout(ctx, time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return w.Cache.Generation() != gen, nil
	})
}

// Lists returns the LIST requests the cache's client has made so far.
func (w *Watched) Lists() int64 { return w.lists.Load() }

// Close stops the cache's informers.
func (w *Watched) Close() { w.cancel() }

// PassFigures are what one ServePass did.
type PassFigures struct {
	// Clusters is the number of Redis clusters looked at; NonCompliant those breaking a hard
	// rule, each planned.
	Clusters, NonCompliant int
	// Built is the number of namespace models the cache built (0 when nothing changed since the
	// last pass); Models the time the cluster's models took to get (built or kept).
	Built  int
	Models time.Duration
	// Evaluate is the time every verdict took; Plans the time the plans took (clusters in
	// parallel, as plan.ComputeAll plans them).
	Evaluate, Plans time.Duration
	// Moves and Failovers sum the plans' steps.
	Moves, Failovers int
	// Planned and Reused count the non-compliant clusters planned in the pass and those whose
	// plan the memo kept (Watched.Memo).
	Planned, Reused int
	// Lists is the number of LIST requests the pass made.
	Lists int64
	// Todo are the keys of the non-compliant clusters.
	Todo []string
}

// ServePass is what one serve pass computes before it acts, read from the watched cache as the
// executor reads it (observe.ClusterObserver): the selected Redis clusters' keys, each cluster from
// its namespace's model the cache keeps (Cache.Model: built on the first pass after start-up,
// then reused while nothing it was built from changes), every cluster's verdict, and a plan for
// each non-compliant one, through serve's planner memo (a cluster whose model and roles did not
// change keeps its plan), as execute.Compliance plans with it. The roles are the role label's (no Redis: the executor would also read
// each cluster's roles from Redis, and its health). seen carries the models of the previous pass,
// to count the models built.
func ServePass(w *Watched, opts policies.Options, popts plan.Options, seen map[string]*policies.Model) (PassFigures, error) {
	var f PassFigures
	before := w.Lists()
	start := time.Now()
	var todo []*policies.Cluster
	var clusters []*policies.Cluster
	for _, key := range w.Cache.ClusterKeys(observe.Selection{}) {
		ns, _, _ := strings.Cut(key, "/")
		m, err := w.Cache.Model(opts, ns)
		if err != nil {
			return f, err
		}
		if seen[ns] != m {
			seen[ns] = m
			f.Built++
		}
		for _, c := range m.Clusters {
			if c.Key() == key {
				clusters = append(clusters, c)
			}
		}
	}
	f.Models = time.Since(start)
	start = time.Now()
	for _, c := range clusters {
		if len(policies.Hard(c.Evaluate(c.Current()))) > 0 {
			todo = append(todo, c)
			f.Todo = append(f.Todo, c.Key())
		} else {
			w.Memo.Forget(c.Key())
		}
	}
	f.Evaluate = time.Since(start)
	start = time.Now()
	computed, reused := w.Memo.Counts()
	for _, r := range w.Memo.ComputeAll(todo, popts) {
		f.Moves += r.Plan.Evictions
		f.Failovers += r.Plan.Failovers
	}
	c2, r2 := w.Memo.Counts()
	f.Planned, f.Reused = c2-computed, r2-reused
	f.Plans = time.Since(start)
	f.Clusters, f.NonCompliant, f.Lists = len(clusters), len(todo), w.Lists()-before
	return f, nil
}
