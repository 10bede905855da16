// Package cache is serve's watched view of a Kubernetes cluster and its Redis clusters: client-go
// informers on every object the rules read (nodes, pods, StatefulSets, PodDisruptionBudgets,
// PersistentVolumeClaims, PersistentVolumes, CSINodes, Services), each object trimmed as it
// arrives (observe.Trimmer),
// and each Redis cluster's roles (CLUSTER NODES), read again on an interval. After the informers'
// first LIST and WATCH, reading the cache issues no request: serve's passes observe through it
// (it is an observe.Source), and the eviction guard answers from it.
//
// Roles are read from the pods' addresses every Options.RolesInterval; handlers registered with
// OnRoles are told of every read, changed or not, and QuorumWatch turns the reads into the
// Redis clusters whose MasterQuorum is broken, so that serve acts on a role change (Redis's own
// promotions after a node loss) without waiting for its schedule.
//
// It owns Cache, Options, Roles and the quorum watch. It imports observe (the Source it
// implements, the trimming, the roles' conversion), policies and redisctl; serve and the CLI wire
// it, nothing in rebalancer/ but them imports it.
package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Defaults of Options.
const (
	// DefaultRolesInterval is Options.RolesInterval: how often the roles are read again (the
	// policy's watch.rolesInterval).
	DefaultRolesInterval = v1alpha1.DefaultRolesInterval
	// DefaultRolesTimeout is Options.RolesTimeout: the bound on one read of one Redis cluster.
	DefaultRolesTimeout = 5 * time.Second
	// DefaultRolesParallel is Options.RolesParallel: Redis clusters read at once.
	DefaultRolesParallel = 16
	// trimmerLimit is how many shared parts an informer's Trimmer keeps before it starts a new
	// table (observe.NewTrimmer): about a large cluster's distinct parts.
	trimmerLimit = 1 << 16
)

// ClusterIndex is the name of the pod informer's index by Redis cluster: "namespace/value of the
// cluster label" (ClusterKey).
const ClusterIndex = "redisCluster"

// Options configure a Cache.
type Options struct {
	// Namespace limits the namespaced informers (pods, StatefulSets, PodDisruptionBudgets,
	// PersistentVolumeClaims) to one namespace ("" all), as observe's LISTs are.
	Namespace string
	// ClusterLabel is the pod label whose value names a pod's Redis cluster
	// (policies.DefaultClusterLabel when empty): the key of ClusterIndex.
	ClusterLabel string
	// Redis reads the roles (a *redisctl.Client); nil: roles are never read.
	Redis observe.TopologyReader
	// Selection limits the Redis clusters whose roles are read (the zero value: all).
	Selection observe.Selection
	// RolesInterval is how often every selected Redis cluster's roles are read again
	// (DefaultRolesInterval when 0); RolesTimeout bounds one cluster's read
	// (DefaultRolesTimeout); RolesParallel is how many clusters are read at once
	// (DefaultRolesParallel).
	RolesInterval, RolesTimeout time.Duration
	RolesParallel               int
	// Clock stamps the reads (the real clock when nil).
	Clock clock.PassiveClock
}

func (o Options) withDefaults() Options {
	if o.ClusterLabel == "" {
		o.ClusterLabel = policies.DefaultClusterLabel
	}
	if o.RolesInterval == 0 {
		o.RolesInterval = DefaultRolesInterval
	}
	if o.RolesTimeout == 0 {
		o.RolesTimeout = DefaultRolesTimeout
	}
	if o.RolesParallel == 0 {
		o.RolesParallel = DefaultRolesParallel
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Roles is what the cache last read of one Redis cluster's CLUSTER NODES.
type Roles struct {
	// Nodes are the Redis nodes as the model reads them (observe.RedisNodes), from the last read
	// that succeeded; Topology is that read's merged view.
	Nodes    []policies.RedisNode
	Topology *redisctl.Topology
	// Read is when Nodes were read; Err is the last read's error (nil when it succeeded), which
	// leaves Nodes as they were.
	Read time.Time
	Err  error
	// Changed is true when the last read that succeeded found other roles, masters, slots,
	// failing flags or addresses than the one before it (always true for a first read).
	Changed bool
}

// Cache is the watched view (the package doc). Its methods are safe for concurrent use; the
// objects it returns are shared and trimmed: read them, never change them.
type Cache struct {
	opts    Options
	factory informers.SharedInformerFactory
	// The informers, in the order of a snapshot's fields, and whether the cache's own handlers
	// have seen each one's first list.
	nodes, pods, statefulSets, budgets, claims, volumes, csiNodes, services toolscache.SharedIndexInformer
	handled                                                                 []toolscache.InformerSynced
	// watched are the informers by resource, in informers' order, with their last list or watch
	// error (WaitForSync names the ones not synced, and why).
	watched []*watchedResource
	// generation counts the changes the model can see (an update that changes only what trimming
	// drops, such as a node's heartbeat, is none); clusterScoped those of nodes and
	// PersistentVolumes.
	generation, clusterScoped atomic.Uint64
	synced                    atomic.Bool

	mu       sync.Mutex
	roles    map[string]Roles // by ClusterKey
	handlers []func(key string, r Roles)
	// changes counts, by namespace, the changes of its objects and of its clusters' roles
	// (models' validity, models.go); models are the models kept by namespace.
	changes map[string]uint64
	models  map[string]*namespaceModel
}

// ClusterKey returns the key of a Redis cluster in ClusterIndex and Roles: "namespace/name".
func ClusterKey(namespace, name string) string { return namespace + "/" + name }

// New returns a Cache on client; Start starts it.
func New(client kubernetes.Interface, opts Options) *Cache {
	opts = opts.withDefaults()
	var fopts []informers.SharedInformerOption
	if opts.Namespace != "" {
		fopts = append(fopts, informers.WithNamespace(opts.Namespace))
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, fopts...)
	c := &Cache{
		opts: opts, factory: f, roles: map[string]Roles{}, changes: map[string]uint64{}, models: map[string]*namespaceModel{},
		nodes:        f.Core().V1().Nodes().Informer(),
		pods:         f.Core().V1().Pods().Informer(),
		statefulSets: f.Apps().V1().StatefulSets().Informer(),
		budgets:      f.Policy().V1().PodDisruptionBudgets().Informer(),
		claims:       f.Core().V1().PersistentVolumeClaims().Informer(),
		volumes:      f.Core().V1().PersistentVolumes().Informer(),
		csiNodes:     f.Storage().V1().CSINodes().Informer(),
		services:     f.Core().V1().Services().Informer(),
	}
	label := opts.ClusterLabel
	_ = c.pods.AddIndexers(toolscache.Indexers{ClusterIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		if v, ok := p.Labels[label]; ok {
			return []string{ClusterKey(p.Namespace, v)}, nil
		}
		return nil, nil
	}})
	for i, inf := range c.informers() {
		w := &watchedResource{resource: resourceNames[i], informer: inf}
		c.watched = append(c.watched, w)
		// Informers not started yet: SetWatchErrorHandlerWithContext cannot fail.
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *toolscache.Reflector, err error) {
			w.lastErr.Store(&err)
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
		})
		t := observe.NewTrimmer(trimmerLimit)
		// Informers not started yet: SetTransform cannot fail. Each informer calls its transform
		// from one goroutine at a time (its queue's lock), so one Trimmer each is safe.
		_ = inf.SetTransform(func(obj any) (any, error) { return t.Trim(obj), nil })
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    c.changed,
			DeleteFunc: c.changed,
			UpdateFunc: func(old, new any) {
				if !sameIgnoringVersion(old, new) {
					c.changed(new)
				}
			},
		})
		if err == nil { // an informer not started yet takes every handler
			c.handled = append(c.handled, reg.HasSynced)
		}
	}
	return c
}

// changed counts a change of obj: in the generation, and in its namespace's count (a namespaced
// object) or the cluster-scoped count (nodes, PersistentVolumes).
// The generation moves last, so that whoever sees it move also sees the count that the model's
// reuse checks (Model).
func (c *Cache) changed(obj any) {
	defer c.generation.Add(1)
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetNamespace() == "" {
		c.clusterScoped.Add(1)
		return
	}
	c.mu.Lock()
	c.changes[m.GetNamespace()]++
	c.mu.Unlock()
}

func (c *Cache) informers() []toolscache.SharedIndexInformer {
	return []toolscache.SharedIndexInformer{c.nodes, c.pods, c.statefulSets, c.budgets, c.claims, c.volumes, c.csiNodes, c.services}
}

// resourceNames are the resources of the informers, in informers' order, as RBAC names them.
var resourceNames = []string{"nodes", "pods", "statefulsets.apps", "poddisruptionbudgets.policy", "persistentvolumeclaims", "persistentvolumes", "csinodes.storage.k8s.io", "services"}

// watchedResource is one informer of the cache and the last error its list or watch met.
type watchedResource struct {
	resource string
	informer toolscache.SharedIndexInformer
	lastErr  atomic.Pointer[error]
}

// notSynced says which informers have not listed their objects yet, each with the last error
// its list or watch met ("no answer yet" without one): "csinodes.storage.k8s.io (csinodes is
// forbidden: ...)".
func (c *Cache) notSynced() string {
	var out []string
	for _, w := range c.watched {
		if w.informer.HasSynced() {
			continue
		}
		why := "no answer yet"
		if err := w.lastErr.Load(); err != nil {
			why = (*err).Error()
		}
		out = append(out, fmt.Sprintf("%s (%s)", w.resource, why))
	}
	return strings.Join(out, ", ")
}

// sameIgnoringVersion reports whether two trimmed versions of an object differ only in their
// resourceVersion (what trimming keeps of a node's heartbeat or a pod's container restart).
func sameIgnoringVersion(old, new any) bool {
	switch o := old.(type) {
	case *corev1.Node:
		n, ok := new.(*corev1.Node)
		if !ok {
			return false
		}
		a, b := *o, *n
		a.ResourceVersion, b.ResourceVersion = "", ""
		return equality.Semantic.DeepEqual(&a, &b)
	case *corev1.Pod:
		n, ok := new.(*corev1.Pod)
		if !ok {
			return false
		}
		a, b := *o, *n
		a.ResourceVersion, b.ResourceVersion = "", ""
		return equality.Semantic.DeepEqual(&a, &b)
	case *appsv1.StatefulSet:
		n, ok := new.(*appsv1.StatefulSet)
		if !ok {
			return false
		}
		a, b := *o, *n
		a.ResourceVersion, b.ResourceVersion = "", ""
		return equality.Semantic.DeepEqual(&a, &b)
	case *policyv1.PodDisruptionBudget:
		n, ok := new.(*policyv1.PodDisruptionBudget)
		if !ok {
			return false
		}
		a, b := *o, *n
		a.ResourceVersion, b.ResourceVersion = "", ""
		return equality.Semantic.DeepEqual(&a, &b)
	}
	return false
}

// Factory returns the informer factory the cache's informers come from: another informer made
// from it shares the cache's connection (start it with Factory().Start). Its objects are not
// trimmed unless the caller sets a transform before starting it.
func (c *Cache) Factory() informers.SharedInformerFactory { return c.factory }

// Start starts the informers and, once they have synced and with Options.Redis set, the roles'
// reads; it returns at once. Everything stops when ctx ends.
func (c *Cache) Start(ctx context.Context) {
	c.factory.Start(ctx.Done())
	go func() {
		if err := c.WaitForSync(ctx); err != nil {
			return
		}
		if c.opts.Redis == nil {
			return
		}
		wait.UntilWithContext(ctx, c.refreshRoles, c.opts.RolesInterval)
	}()
}

// Wait waits, once the context given to Start has ended, until the informers' goroutines have
// returned (client-go's SharedInformerFactory.Shutdown): nothing of the cache runs after it.
func (c *Cache) Wait() { c.factory.Shutdown() }

// WaitForSync waits until every informer has listed its objects once and the cache has counted
// them (Synced), or ctx ends; its error then names the resources not listed yet, each with the
// last error its list or watch met (RBAC's forbidden, an API server gone).
func (c *Cache) WaitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), c.handled...) {
		if which := c.notSynced(); which != "" {
			return fmt.Errorf("cache: informers not synced (%w): %s", context.Cause(ctx), which)
		}
		return fmt.Errorf("cache: informers not synced: %w", context.Cause(ctx))
	}
	c.synced.Store(true)
	return nil
}

// Synced reports whether every informer has listed its objects once, and the cache counted them.
func (c *Cache) Synced() bool {
	if c.synced.Load() {
		return true
	}
	for _, has := range c.handled {
		if !has() {
			return false
		}
	}
	c.synced.Store(true)
	return true
}

// Generation returns a number that changes whenever an object the model reads is added, deleted
// or changed in what trimming keeps: two equal generations mean the same snapshot.
func (c *Cache) Generation() uint64 { return c.generation.Load() }

// Pod returns the pod namespace/name as the cache holds it.
func (c *Cache) Pod(namespace, name string) (*corev1.Pod, bool) {
	return get[corev1.Pod](c.pods, namespace+"/"+name)
}

// StatefulSet returns the StatefulSet namespace/name as the cache holds it (trimmed: its
// replicas, selector and template).
func (c *Cache) StatefulSet(namespace, name string) (*appsv1.StatefulSet, bool) {
	return get[appsv1.StatefulSet](c.statefulSets, namespace+"/"+name)
}

// Node returns the node name as the cache holds it (its Ready condition's status and reason
// kept, observe.Trimmer).
func (c *Cache) Node(name string) (*corev1.Node, bool) {
	return get[corev1.Node](c.nodes, name)
}

// Nodes returns every node, by name.
func (c *Cache) Nodes() []*corev1.Node {
	out := all[corev1.Node](c.nodes.GetStore().List())
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ClusterPods returns the pods of Redis cluster namespace/name: those of namespace whose cluster
// label (Options.ClusterLabel) has that value, terminating ones included, in no order.
func (c *Cache) ClusterPods(namespace, name string) []*corev1.Pod {
	objs, _ := c.pods.GetIndexer().ByIndex(ClusterIndex, ClusterKey(namespace, name))
	return all[corev1.Pod](objs)
}

// Clusters returns the keys of every Redis cluster the cache holds pods of, sorted.
func (c *Cache) Clusters() []string {
	keys := c.pods.GetIndexer().ListIndexFuncValues(ClusterIndex)
	sort.Strings(keys)
	return keys
}

// AddNodeHandler calls handler with every node added (old nil), changed, or deleted (new nil),
// trimmed; the informer's events, from its goroutine.
func (c *Cache) AddNodeHandler(handler func(old, new *corev1.Node)) error {
	node := func(obj any) *corev1.Node {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		n, _ := obj.(*corev1.Node)
		return n
	}
	_, err := c.nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { handler(nil, node(obj)) },
		UpdateFunc: func(old, new any) { handler(node(old), node(new)) },
		DeleteFunc: func(obj any) { handler(node(obj), nil) },
	})
	return err
}

// Snapshot returns the cache's objects as a snapshot of namespace ("" all): observe.Source. It
// issues no request. With Options.Namespace set, another namespace's objects are not held.
func (c *Cache) Snapshot(_ context.Context, namespace string) (*policies.Snapshot, error) {
	if !c.Synced() {
		return nil, errors.New("cache: not synced yet")
	}
	if c.opts.Namespace != "" && namespace != c.opts.Namespace {
		return nil, fmt.Errorf("cache: watches namespace %q only, not %q", c.opts.Namespace, namespace)
	}
	return &policies.Snapshot{
		Nodes:                  all[corev1.Node](c.nodes.GetStore().List()),
		Pods:                   all[corev1.Pod](c.inNamespace(c.pods, namespace)),
		StatefulSets:           all[appsv1.StatefulSet](c.inNamespace(c.statefulSets, namespace)),
		PodDisruptionBudgets:   all[policyv1.PodDisruptionBudget](c.inNamespace(c.budgets, namespace)),
		PersistentVolumeClaims: all[corev1.PersistentVolumeClaim](c.inNamespace(c.claims, namespace)),
		PersistentVolumes:      all[corev1.PersistentVolume](c.volumes.GetStore().List()),
		CSINodes:               all[storagev1.CSINode](c.csiNodes.GetStore().List()),
		Services:               all[corev1.Service](c.inNamespace(c.services, namespace)),
	}, nil
}

// Pods returns the pods of namespace ("" all) that selector matches (nil: all): observe.Source.
func (c *Cache) Pods(_ context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	if !c.Synced() {
		return nil, errors.New("cache: not synced yet")
	}
	var out []*corev1.Pod
	for _, p := range all[corev1.Pod](c.inNamespace(c.pods, namespace)) {
		if selector == nil || selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// WaitForPod waits until the cache holds pod p's namespace and name with p's UID and a
// resourceVersion no older than p's (or another UID): observe.PodWaiter. Versions are compared
// as numbers, as kube-apiserver's watch cache does; one that is not a number counts as seen
// once equal.
func (c *Cache) WaitForPod(ctx context.Context, p *corev1.Pod) error {
	return wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		got, ok := c.Pod(p.Namespace, p.Name)
		if !ok {
			return false, nil
		}
		return got.UID != p.UID || !olderVersion(got.ResourceVersion, p.ResourceVersion), nil
	})
}

// olderVersion reports whether resourceVersion a is older than b.
func olderVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x < y
}

// inNamespace returns the informer's objects in namespace ("" all).
func (c *Cache) inNamespace(inf toolscache.SharedIndexInformer, namespace string) []any {
	if namespace == "" {
		return inf.GetStore().List()
	}
	objs, _ := inf.GetIndexer().ByIndex(toolscache.NamespaceIndex, namespace)
	return objs
}

// get returns the object of key in inf's store, of type *T.
func get[T any](inf toolscache.SharedIndexInformer, key string) (*T, bool) {
	obj, ok, err := inf.GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, false
	}
	o, ok := obj.(*T)
	return o, ok
}

// all returns the objects of type *T among objs.
func all[T any](objs []any) []*T {
	out := make([]*T, 0, len(objs))
	for _, obj := range objs {
		if o, ok := obj.(*T); ok {
			out = append(out, o)
		}
	}
	return out
}

// Roles returns what the cache last read of Redis cluster namespace/name's roles, and whether it
// has read them at all.
func (c *Cache) Roles(namespace, name string) (Roles, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.roles[ClusterKey(namespace, name)]
	return r, ok
}

// OnRoles registers handler, called after every read of a Redis cluster's roles (key
// "namespace/name"; Roles.Changed says whether they changed), from the reading goroutine, one
// call at a time.
func (c *Cache) OnRoles(handler func(key string, r Roles)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, handler)
}

// refreshRoles reads the roles of every selected Redis cluster the cache holds pods of, at most
// Options.RolesParallel at a time, each under Options.RolesTimeout, then tells the handlers.
func (c *Cache) refreshRoles(ctx context.Context) {
	var keys []string
	live := map[string]bool{} // namespaces with a Redis cluster
	for _, k := range c.Clusters() {
		ns, _, _ := strings.Cut(k, "/")
		live[ns] = true
		if c.selected(k) {
			keys = append(keys, k)
		}
	}
	c.forgetModels(live)
	read := make([]Roles, len(keys))
	workqueue.ParallelizeUntil(ctx, c.opts.RolesParallel, len(keys), func(i int) {
		read[i] = c.readRoles(ctx, keys[i])
	})
	if ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	handlers := c.handlers
	c.mu.Unlock()
	for i, k := range keys {
		for _, h := range handlers {
			h(k, read[i])
		}
	}
}

// RefreshRoles reads Redis cluster namespace/name's roles now (as the interval's reads do) and
// returns them.
func (c *Cache) RefreshRoles(ctx context.Context, namespace, name string) Roles {
	return c.readRoles(ctx, ClusterKey(namespace, name))
}

// readRoles reads one cluster's CLUSTER NODES through its pods' addresses and stores the result.
func (c *Cache) readRoles(ctx context.Context, key string) Roles {
	ns, name, _ := strings.Cut(key, "/")
	var addrs []string
	for _, p := range c.ClusterPods(ns, name) {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			addrs = append(addrs, c.opts.Redis.AddrOf(p.Status.PodIP))
		}
	}
	sort.Strings(addrs)
	rctx, cancel := context.WithTimeout(ctx, c.opts.RolesTimeout)
	defer cancel()
	var topo *redisctl.Topology
	err := errors.New("no pod has an address")
	if len(addrs) > 0 {
		topo, err = c.opts.Redis.Topology(rctx, addrs)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, had := c.roles[key]
	r := prev
	r.Err, r.Changed = err, false
	if err == nil {
		nodes := observe.RedisNodes(topo.Nodes)
		r = Roles{Nodes: nodes, Topology: topo, Read: c.opts.Clock.Now(), Changed: !had || !sameRoles(prev.Nodes, nodes)}
		if r.Changed {
			c.changes[ns]++
		}
	} else {
		klog.V(2).InfoS("Redis roles not read", "cluster", key, "err", err)
	}
	c.roles[key] = r
	return r
}

// sameRoles reports whether two reads hold the same nodes with the same roles, masters, slots,
// failing flags and addresses.
func sameRoles(a, b []policies.RedisNode) bool {
	if len(a) != len(b) {
		return false
	}
	type role struct {
		role     policies.Role
		master   string
		slots    string
		failing  bool
		hostname string
	}
	of := func(ns []policies.RedisNode) map[string]role {
		out := make(map[string]role, len(ns))
		for _, n := range ns {
			out[n.ID] = role{n.Role, n.MasterID, fmt.Sprint(n.Slots), n.Failing, n.IP + "," + n.Hostname}
		}
		return out
	}
	x, y := of(a), of(b)
	for id, r := range x {
		if y[id] != r {
			return false
		}
	}
	return true
}

// selected reports whether Options.Selection selects the Redis cluster of key.
func (c *Cache) selected(key string) bool { return c.selects(c.opts.Selection, key) }

// ClusterKeys returns the keys of the Redis clusters sel selects, sorted:
// observe.ClusterObserver.
func (c *Cache) ClusterKeys(sel observe.Selection) []string {
	var out []string
	for _, k := range c.Clusters() {
		if c.selects(sel, k) {
			out = append(out, k)
		}
	}
	return out
}

// selects reports whether sel selects the Redis cluster of key: its namespace, and one of its
// pods matching the label selector (observe.Selection.Matches).
func (c *Cache) selects(sel observe.Selection, key string) bool {
	ns, name, _ := strings.Cut(key, "/")
	if sel.Namespace != "" && ns != sel.Namespace {
		return false
	}
	if len(sel.IncludeNamespaces) > 0 && !slices.Contains(sel.IncludeNamespaces, ns) || slices.Contains(sel.ExcludeNamespaces, ns) {
		return false
	}
	if sel.Selector == nil || sel.Selector.Empty() {
		return true
	}
	for _, p := range c.ClusterPods(ns, name) {
		if sel.Selector.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}
