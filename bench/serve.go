package bench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
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

// Lists returns the LIST requests the cache's client has made so far.
func (w *Watched) Lists() int64 { return w.lists.Load() }

// Close stops the cache's informers.
func (w *Watched) Close() { w.cancel() }

// ServePass is what one serve pass computes before it acts, read from the watched cache: the
// snapshot of every namespace (observe.LiveFrom on the cache: no request), the model, every
// cluster's verdict and a plan for each non-compliant one (what the plan command computes; the
// executor plans each cluster it acts on the same way). It returns the figures and the LIST
// requests the pass made.
func ServePass(w *Watched, opts policies.Options, popts plan.Options) (*policies.Model, Planning, int64, error) {
	before := w.Lists()
	snap, err := w.Cache.Snapshot(context.Background(), "")
	if err != nil {
		return nil, Planning{}, 0, err
	}
	m, p, err := Plan(snap, opts, popts, nil)
	return m, p, w.Lists() - before, err
}

// ObserveEach is the executor's first observation of each cluster in one pass, read from the
// watched cache: the model of the cluster's namespace (observe.LiveFrom with the namespace), built
// once per cluster as execute's clusterRun.observe builds it. It returns the clusters observed,
// the total time, and the LIST requests made.
func ObserveEach(w *Watched, opts policies.Options) (clusters int, took time.Duration, lists int64, err error) {
	before := w.Lists()
	start := time.Now()
	for _, key := range w.Cache.Clusters() {
		ns, name, _ := strings.Cut(key, "/")
		m, err := observe.LiveFrom(context.Background(), w.Cache, opts, observe.Selection{Namespace: ns})
		if err != nil {
			return clusters, time.Since(start), w.Lists() - before, err
		}
		found := false
		for _, c := range m.Clusters {
			found = found || c.Name == name
		}
		if !found {
			return clusters, time.Since(start), w.Lists() - before, fmt.Errorf("cluster %s not in its namespace's model", key)
		}
		clusters++
	}
	return clusters, time.Since(start), w.Lists() - before, nil
}
