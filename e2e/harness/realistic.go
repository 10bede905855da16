package harness

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
)

// The realistic profile of a test bed: pods, Redis and node losses as slow as on a cloud.
//
// The default bed is kinder than any cloud: kwok pods are Ready within a second, a pod goes as
// soon as it is deleted, Redis fails a node after 2 s and holds a few kilobytes, and a node is
// never lost as the control plane sees it. With BedOptions.Realistic (or RealisticEnv set), the
// bed plays a kubelet (the stand-in below) and Redis as they run in production:
//
//   - a pod becomes Ready a seeded random delay after it is scheduled (ReadyDelayMin to
//     ReadyDelayMax: image pull, container start), plus AttachDelay when one of its claims was
//     last attached to another node (or never: a new disk); kwok's pod-ready stage waits for
//     the time the stand-in writes into localcluster.PodReadyDelayAnnotation, which every pod
//     template carries as a gate (a year) until then;
//   - a deleted pod stays Terminating while its redis-server shuts down: SIGTERM, SIGKILL after
//     the pod's grace period (TerminationGracePeriod in the templates), as the kubelet does
//     (redisrt.Config.TerminationGrace); the stand-in removes the pod once its server has
//     exited (kwok's pod-delete stage is gated the same way);
//   - Redis runs with cluster-node-timeout NodeTimeout (Redis's and Bitnami's default, 15 s),
//     append-only files on, and every master is filled with DatasetMin to DatasetMax bytes once
//     the cluster is formed, so that resyncs and the learned step estimates are measured on real
//     sizes;
//   - a node is lost as the control plane sees it (Bed.LoseNode): its redis-servers stopped
//     (SIGSTOP), its kubelet silent (the stand-in and the Redis runtime act on none of its pods),
//     and its Lease in kube-node-lease no longer renewed, so that kube-controller-manager marks
//     it NotReady after its node monitor grace period (NodeMonitorGracePeriod, the default 50 s)
//     and taint-based eviction deletes its pods (node.kubernetes.io/unreachable) after the
//     pods' tolerationSeconds (UnreachableTolerationSeconds); they stay Terminating, as on a
//     cloud, until the node comes back (Bed.RecoverNode) or is deleted (Bed.DeleteLostNode).
//     A node that comes back sets its pods Ready again, as a kubelet does.

// RealisticEnv is the environment variable that switches a test bed to the realistic profile
// when BedOptions.Realistic is nil: "1" (or "true") for DefaultRealistic, a number for
// DefaultRealistic with that seed.
const RealisticEnv = "REBALANCER_E2E_REALISTIC"

// Realistic is the realistic profile of a test bed (see above). The zero value of a field takes
// DefaultRealistic's.
type Realistic struct {
	// Seed seeds the pods' delays and the datasets' sizes and contents.
	Seed uint64
	// ReadyDelayMin and ReadyDelayMax bound a pod's delay from its scheduling to Ready (5 s and
	// 20 s).
	ReadyDelayMin, ReadyDelayMax time.Duration
	// AttachDelay is added to a pod's delay when one of its claims was last attached to another
	// node, or never (10 s).
	AttachDelay time.Duration
	// TerminationGracePeriod is the pods' terminationGracePeriodSeconds (30 s, Kubernetes'
	// default).
	TerminationGracePeriod time.Duration
	// NodeTimeout is Redis's cluster-node-timeout (15 s).
	NodeTimeout time.Duration
	// DatasetMin and DatasetMax bound the bytes each master is filled with (100 MB and 200 MB).
	DatasetMin, DatasetMax int64
	// NodeMonitorGracePeriod is kube-controller-manager's --node-monitor-grace-period (50 s,
	// its default).
	NodeMonitorGracePeriod time.Duration
	// UnreachableTolerationSeconds is the tolerationSeconds of the pods' tolerations of
	// node.kubernetes.io/unreachable and node.kubernetes.io/not-ready (300, what the
	// DefaultTolerationSeconds admission plugin gives a pod without its own).
	UnreachableTolerationSeconds int64
}

// DefaultRealistic returns the realistic profile's defaults (seed 1).
func DefaultRealistic() Realistic {
	return Realistic{
		Seed:                         1,
		ReadyDelayMin:                5 * time.Second,
		ReadyDelayMax:                20 * time.Second,
		AttachDelay:                  10 * time.Second,
		TerminationGracePeriod:       30 * time.Second,
		NodeTimeout:                  15 * time.Second,
		DatasetMin:                   100 << 20,
		DatasetMax:                   200 << 20,
		NodeMonitorGracePeriod:       50 * time.Second,
		UnreachableTolerationSeconds: 300,
	}
}

// withDefaults returns r with every zero field set to DefaultRealistic's.
func (r Realistic) withDefaults() Realistic {
	d := DefaultRealistic()
	r.Seed = cmp.Or(r.Seed, d.Seed)
	r.ReadyDelayMin = cmp.Or(r.ReadyDelayMin, d.ReadyDelayMin)
	r.ReadyDelayMax = max(cmp.Or(r.ReadyDelayMax, d.ReadyDelayMax), r.ReadyDelayMin)
	r.AttachDelay = cmp.Or(r.AttachDelay, d.AttachDelay)
	r.TerminationGracePeriod = cmp.Or(r.TerminationGracePeriod, d.TerminationGracePeriod)
	r.NodeTimeout = cmp.Or(r.NodeTimeout, d.NodeTimeout)
	r.DatasetMin = cmp.Or(r.DatasetMin, d.DatasetMin)
	r.DatasetMax = max(cmp.Or(r.DatasetMax, d.DatasetMax), r.DatasetMin)
	r.NodeMonitorGracePeriod = cmp.Or(r.NodeMonitorGracePeriod, d.NodeMonitorGracePeriod)
	r.UnreachableTolerationSeconds = cmp.Or(r.UnreachableTolerationSeconds, d.UnreachableTolerationSeconds)
	return r
}

// RealisticFromEnv returns the profile RealisticEnv asks for, or nil when it is unset, empty,
// "0" or "false". It fails on another value that is not a seed.
func RealisticFromEnv() (*Realistic, error) {
	v := strings.TrimSpace(os.Getenv(RealisticEnv))
	switch strings.ToLower(v) {
	case "", "0", "false":
		return nil, nil
	case "1", "true":
		r := DefaultRealistic()
		return &r, nil
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("harness: %s=%q: want 1, true or a seed (a positive integer)", RealisticEnv, v)
	}
	r := DefaultRealistic()
	r.Seed = seed
	return &r, nil
}

// gateDelay is the delay kwok's pod-ready and pod-delete stages wait for a realistic bed's pods
// until the kubelet stand-in writes the real one (pod-ready) or removes the pod itself
// (pod-delete): a year, so that kwok never plays them first.
const gateDelay = "8760h"

// lostHolder is the holderIdentity of a lost node's Lease: another holder whose lease lasts
// lostLeaseSeconds, so that kwok stops renewing it (it renews only a lease it holds or that has
// expired); RecoverNode shortens it to a second, so that kwok takes it back at its next try, as
// a new holder (which makes it manage the node and its pods again).
const (
	lostHolder       = "harness-node-lost"
	lostLeaseSeconds = 1 << 20
)

// realisticOptions returns opts as a realistic bed lays a scenario out: pod templates gated for
// the stand-in (localcluster.PodReadyDelayAnnotation and PodDeleteDelayAnnotation), with
// TerminationGracePeriod and the tolerations of unreachable and not-ready nodes, and
// redis-servers with cluster-node-timeout NodeTimeout. On a bed without the profile, opts.
func (b *Bed) realisticOptions(opts Options) Options {
	if b.Realistic == nil {
		return opts
	}
	r := *b.Realistic
	ann := map[string]string{}
	for k, v := range opts.PodAnnotations {
		ann[k] = v
	}
	ann[localcluster.PodReadyDelayAnnotation] = gateDelay
	ann[localcluster.PodDeleteDelayAnnotation] = gateDelay
	opts.PodAnnotations = ann
	templates := opts.Templates
	opts.Templates = func(t *corev1.PodTemplateSpec) {
		if templates != nil {
			templates(t)
		}
		grace := int64(r.TerminationGracePeriod / time.Second)
		t.Spec.TerminationGracePeriodSeconds = &grace
		secs := r.UnreachableTolerationSeconds
		t.Spec.Tolerations = slices.DeleteFunc(t.Spec.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == corev1.TaintNodeUnreachable || tol.Key == corev1.TaintNodeNotReady
		})
		for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
			t.Spec.Tolerations = append(t.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs})
		}
	}
	opts.RedisArgs = append(slices.Clone(opts.RedisArgs), "--cluster-node-timeout", strconv.FormatInt(r.NodeTimeout.Milliseconds(), 10))
	return opts
}

// ReadyDelays returns the delays the kubelet stand-in has given the pods so far (scheduling to
// Ready, the attach delay included), in order; nil on a bed without the realistic profile.
func (b *Bed) ReadyDelays() []time.Duration {
	if b.kubelet == nil {
		return nil
	}
	b.kubelet.mu.Lock()
	defer b.kubelet.mu.Unlock()
	return slices.Clone(b.kubelet.delays)
}

// Lost reports whether node is lost (Bed.LoseNode, not recovered or deleted yet).
func (b *Bed) Lost(node string) bool {
	if b.kubelet == nil {
		return false
	}
	return b.kubelet.isLost(node)
}

// LoseNode loses node as the control plane sees a machine that stops answering: the
// redis-server of every pod on it, of every environment, is stopped (SIGSTOP), the kubelet
// stand-in and the Redis runtimes act on none of its pods any more, and its Lease is no longer
// renewed, so that kube-controller-manager marks it NotReady after its node monitor grace period
// and taint-based eviction deletes its pods after their tolerationSeconds (they stay Terminating).
// It needs the realistic profile.
func (b *Bed) LoseNode(ctx context.Context, node string) error {
	if b.kubelet == nil {
		return fmt.Errorf("harness: lose node %s: the bed has no realistic profile", node)
	}
	if !b.kubelet.setLost(node, true) {
		return fmt.Errorf("harness: lose node %s: already lost", node)
	}
	for _, s := range b.kubelet.serversOn(node) {
		if !s.Paused {
			if _, err := s.rt.Pause(s.Namespace, s.Name); err != nil {
				fmt.Fprintf(b.log, "[harness] lose node %s: %v\n", node, err)
			}
		}
	}
	err := b.updateNodeLease(ctx, node, func(l *coordinationv1.Lease) {
		l.Spec.HolderIdentity = ptrTo(lostHolder)
		l.Spec.LeaseDurationSeconds = ptrTo(int32(lostLeaseSeconds))
	})
	if err != nil {
		return fmt.Errorf("harness: lose node %s: %w", node, err)
	}
	fmt.Fprintf(b.log, "[harness] node %s lost: its redis-servers stopped, its Lease no longer renewed\n", node)
	return nil
}

// RecoverNode brings a node lost with LoseNode back: its Lease expires at once, so that kwok
// renews it again (kube-controller-manager then marks the node Ready), its redis-servers go on
// (SIGCONT), and the kubelet stand-in and the Redis runtimes act on its pods again: a pod deleted
// meanwhile terminates, a pod marked NotReady is Ready again.
func (b *Bed) RecoverNode(ctx context.Context, node string) error {
	if b.kubelet == nil || !b.kubelet.isLost(node) {
		return fmt.Errorf("harness: recover node %s: not lost", node)
	}
	err := b.updateNodeLease(ctx, node, func(l *coordinationv1.Lease) {
		l.Spec.HolderIdentity = ptrTo(lostHolder)
		l.Spec.LeaseDurationSeconds = ptrTo(int32(1))
	})
	if err != nil {
		return fmt.Errorf("harness: recover node %s: %w", node, err)
	}
	for _, s := range b.kubelet.serversOn(node) {
		if s.Paused {
			if _, err := s.rt.Resume(s.Namespace, s.Name); err != nil {
				fmt.Fprintf(b.log, "[harness] recover node %s: %v\n", node, err)
			}
		}
	}
	b.kubelet.setLost(node, false)
	b.kubelet.enqueueNode(node)
	fmt.Fprintf(b.log, "[harness] node %s recovered\n", node)
	return nil
}

// DeleteLostNode deletes a node lost with LoseNode, as a cloud does when its machine is gone: its
// redis-servers are killed (SIGKILL), then the node and its pods are deleted
// (localcluster.Cluster.DeleteNode), so that their StatefulSets re-create them elsewhere.
func (b *Bed) DeleteLostNode(ctx context.Context, node string) error {
	if b.kubelet == nil || !b.kubelet.isLost(node) {
		return fmt.Errorf("harness: delete lost node %s: not lost", node)
	}
	for _, s := range b.kubelet.serversOn(node) {
		if p, err := os.FindProcess(s.Pid); err == nil {
			_ = p.Kill()
		}
	}
	err := b.Cluster.DeleteNode(ctx, node)
	b.kubelet.setLost(node, false)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	fmt.Fprintf(b.log, "[harness] lost node %s deleted with its pods\n", node)
	return nil
}

// updateNodeLease changes node's Lease in kube-node-lease, retrying on conflicts (kwok renews it
// meanwhile).
func (b *Bed) updateNodeLease(ctx context.Context, node string, change func(*coordinationv1.Lease)) error {
	leases := b.Cluster.Client().CoordinationV1().Leases(corev1.NamespaceNodeLease)
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("lease of node %s: %w", node, err)
		}
		change(l)
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
}

func ptrTo[T any](v T) *T { return &v }

var everything = labels.Everything()

// kubelet is the realistic bed's kubelet stand-in (see above): it delays each scheduled pod's
// start, removes a terminating pod once its redis-server has exited, sets a Running pod Ready
// again once its node is back, and keeps its hands off the pods of lost nodes.
type kubelet struct {
	client  kubernetes.Interface
	prof    Realistic
	log     io.Writer
	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	queue   workqueue.TypedRateLimitingInterface[string]
	done    chan struct{}

	mu           sync.Mutex
	lost         map[string]bool
	attached     map[string]string // claim "namespace/name" → the node it was last attached to
	incarnations map[string]int    // pod "namespace/name" → delays drawn for it
	delays       []time.Duration
	runtimes     []*redisrt.Runtime
}

// startKubelet starts the stand-in on client; stop with stop.
func startKubelet(ctx context.Context, client kubernetes.Interface, prof Realistic, log io.Writer) (*kubelet, error) {
	k := &kubelet{
		client: client, prof: prof, log: log, done: make(chan struct{}),
		factory: informers.NewSharedInformerFactory(client, 0),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 5*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet"}),
		lost: map[string]bool{}, attached: map[string]string{}, incarnations: map[string]int{},
	}
	podInf := k.factory.Core().V1().Pods()
	nodeInf := k.factory.Core().V1().Nodes()
	k.pods, k.nodes = podInf.Lister(), nodeInf.Lister()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				k.enqueueNode(n.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	k.factory.Start(k.done)
	for _, ok := range k.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			k.stop()
			return nil, fmt.Errorf("kubelet stand-in: informers not synced: %w", context.Cause(ctx))
		}
	}
	for range 4 {
		go func() {
			for k.next() {
			}
		}()
	}
	return k, nil
}

// stop stops the stand-in. Safe to call once.
func (k *kubelet) stop() {
	k.queue.ShutDown()
	close(k.done)
	k.factory.Shutdown()
}

func (k *kubelet) logf(format string, args ...any) {
	fmt.Fprintf(k.log, "[kubelet] "+format+"\n", args...)
}

func (k *kubelet) register(rt *redisrt.Runtime) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.runtimes = append(k.runtimes, rt)
}

func (k *kubelet) unregister(rt *redisrt.Runtime) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.runtimes = slices.DeleteFunc(k.runtimes, func(x *redisrt.Runtime) bool { return x == rt })
}

func (k *kubelet) isLost(node string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost[node]
}

// setLost marks node lost or not, and reports whether that changed anything.
func (k *kubelet) setLost(node string, lost bool) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost[node] == lost {
		return false
	}
	if lost {
		k.lost[node] = true
	} else {
		delete(k.lost, node)
	}
	return true
}

// unreachable returns the Redis runtimes' redisrt.Config.Unreachable on a realistic bed (the
// pod's node is lost), nil on another.
func (b *Bed) unreachable() func(*corev1.Pod) bool {
	if b.kubelet == nil {
		return nil
	}
	return b.kubelet.unreachable
}

// unreachable is the Redis runtimes' redisrt.Config.Unreachable: the pod's node is lost.
func (k *kubelet) unreachable(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && k.isLost(pod.Spec.NodeName)
}

// enqueueNode queues every pod bound to node.
func (k *kubelet) enqueueNode(node string) {
	pods, _ := k.pods.List(everything)
	for _, p := range pods {
		if p.Spec.NodeName == node {
			k.queue.Add(p.Namespace + "/" + p.Name)
		}
	}
}

// runtimeServer is a redis-server of one of the registered runtimes.
type runtimeServer struct {
	redisrt.ServerInfo
	rt *redisrt.Runtime
}

// serversOn returns the servers of the pods bound to node, in every registered runtime.
func (k *kubelet) serversOn(node string) []runtimeServer {
	k.mu.Lock()
	rts := slices.Clone(k.runtimes)
	k.mu.Unlock()
	var out []runtimeServer
	for _, rt := range rts {
		for _, s := range rt.Servers() {
			p, err := k.pods.Pods(s.Namespace).Get(s.Name)
			if err == nil && p.Spec.NodeName == node && p.UID == s.UID {
				out = append(out, runtimeServer{s, rt})
			}
		}
	}
	return out
}

// serving reports whether a registered runtime still runs (or is stopping) a server for the pod.
func (k *kubelet) serving(namespace, name string) bool {
	k.mu.Lock()
	rts := slices.Clone(k.runtimes)
	k.mu.Unlock()
	for _, rt := range rts {
		if _, ok := rt.Addr(namespace, name); ok {
			return true
		}
	}
	return false
}

func (k *kubelet) next() bool {
	key, shutdown := k.queue.Get()
	if shutdown {
		return false
	}
	defer k.queue.Done(key)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.sync(ctx, key); err != nil {
		k.logf("%s: %v; retrying", key, err)
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

// sync plays the kubelet for one pod.
func (k *kubelet) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" || k.isLost(pod.Spec.NodeName) {
		return nil // not scheduled, or its kubelet is gone: nothing happens
	}
	switch {
	case pod.DeletionTimestamp != nil:
		if pod.Annotations[localcluster.PodDeleteDelayAnnotation] != gateDelay {
			return nil // not gated: kwok removes it
		}
		if k.serving(ns, name) {
			k.queue.AddAfter(key, 200*time.Millisecond)
			return nil
		}
		err := k.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: ptrTo(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("remove the terminated pod: %w", err)
		}
		return nil
	case pod.Status.Phase == corev1.PodPending && pod.Annotations[localcluster.PodReadyDelayAnnotation] == gateDelay:
		return k.start(ctx, pod)
	case pod.Status.Phase == corev1.PodRunning && !observe.PodReady(pod):
		return k.ready(ctx, pod)
	}
	return nil
}

// start writes the pod's delay into its ready gate: a seeded draw from the profile's range, plus
// the attach delay when a claim of the pod was last attached elsewhere.
func (k *kubelet) start(ctx context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	k.mu.Lock()
	n := k.incarnations[key]
	h := fnv.New64a()
	fmt.Fprintf(h, "%s#%d", key, n)
	rng := rand.New(rand.NewPCG(k.prof.Seed, h.Sum64()))
	d := k.prof.ReadyDelayMin + time.Duration(rng.Int64N(int64(k.prof.ReadyDelayMax-k.prof.ReadyDelayMin)+1))
	d = d.Round(100 * time.Millisecond)
	attach := false
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim := pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		if k.attached[claim] != pod.Spec.NodeName {
			attach = true
		}
	}
	if attach {
		d += k.prof.AttachDelay
	}
	k.mu.Unlock()
	at := time.Now().Add(d).UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, localcluster.PodReadyDelayAnnotation, at)
	if _, err := k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("set the start delay: %w", err)
	}
	k.mu.Lock()
	k.incarnations[key] = n + 1
	k.delays = append(k.delays, d)
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			k.attached[pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = pod.Spec.NodeName
		}
	}
	k.mu.Unlock()
	k.logf("%s on %s: Ready in %s (attach %v)", key, pod.Spec.NodeName, d, attach)
	return nil
}

// ready sets a Running pod Ready again once its node is Ready (the node lifecycle controller
// marked it NotReady while the node was lost), as the kubelet's status manager does.
func (k *kubelet) ready(ctx context.Context, pod *corev1.Pod) error {
	node, err := k.nodes.Get(pod.Spec.NodeName)
	if err != nil || !nodeReady(node) {
		return nil // the node's update requeues the pod
	}
	p := pod.DeepCopy()
	now := metav1.Now()
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		found := false
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == t {
				c.Status, c.LastTransitionTime, c.Reason, c.Message, found = corev1.ConditionTrue, now, "", "", true
			}
		}
		if !found {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
	}
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = true
	}
	if _, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set Ready again: %w", err)
	}
	k.logf("%s/%s on %s: Ready again", p.Namespace, p.Name, p.Spec.NodeName)
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
