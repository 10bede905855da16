// Package redisrt is the Redis pod runtime of the end-to-end tests: it plays the kubelet for Redis
// pods on kwok nodes. kwok marks pods Running and gives them IPs from their node's podCIDR
// (127.10.<i>.0/24, loopback) but runs no containers; the runtime watches the selected pods and runs
// one real redis-server (cluster mode, append-only file) per Running pod, bound to and announcing
// the pod IP.
//
// A pod's data lives with its volume, as on a real node: a pod with a PersistentVolumeClaim keeps
// its data in DataRoot/volumes/<PersistentVolume name> (its first claim's bound volume), so a
// StatefulSet pod re-created with the same claim (same name, new node, new IP) gets a new server
// on its new IP with the same nodes.conf, hence the same Redis node ID, and the cluster learns its
// new address; a pod whose claim was deleted and re-created gets a new, empty volume and starts as
// a new Redis node. A pod without a claim keeps DataRoot/<namespace>/<pod-name>, which outlives
// the pod as if it were one.
//
// Readiness: the runtime never writes to the API. kwok already sets the pod Ready condition (from
// its pod-ready stage); the runtime does not fight it. A server counts as running once it accepts
// TCP connections on its address and answers PING with PONG (not LOADING); WaitForServer and
// friends wait for that.
//
// A server that exits on its own is restarted at once, as the kubelet restarts a container, so
// killing one does not simulate a lost node; Pause does (SIGSTOP: the server stays silent with
// its data and connections until Resume).
//
// It may import test/redisserver (the server process), test/fixture (the test log
// writer) and client-go; nothing of the product.
package redisrt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/redisserver"
)

// DefaultPort is the Redis client port of every pod unless Config.Port says otherwise.
const DefaultPort = redisserver.DefaultPort

// DefaultWorkers is the number of pods reconciled concurrently unless Config.Workers says otherwise.
const DefaultWorkers = 4

const (
	// crashLoopReset is how long a server must have run for a crash not to count towards the
	// restart back-off (the kubelet uses 10 minutes; tests are shorter).
	crashLoopReset = 10 * time.Second
	// firstCrashDelay and maxCrashDelay bound the back-off between restarts after repeated crashes.
	// The first crash is restarted at once.
	firstCrashDelay = 200 * time.Millisecond
	maxCrashDelay   = 5 * time.Second
	// pongTimeout bounds the wait for a started server to answer PING (it may replay its AOF).
	pongTimeout = 30 * time.Second
)

// Config configures a Runtime. Client and DataRoot are required.
type Config struct {
	// Client is the Kubernetes client the pods are watched with.
	Client kubernetes.Interface
	// Namespace limits the runtime to one namespace; "" watches all namespaces.
	Namespace string
	// Selector selects the Redis pods (for example app.kubernetes.io/name=redis); nil selects every
	// pod.
	Selector labels.Selector
	// DataRoot holds the data directories, DataRoot/volumes/<PersistentVolume> for a pod with a
	// claim and DataRoot/<namespace>/<pod-name> for one without; created when missing. The
	// directories outlive the pods and the runtime.
	DataRoot string
	// Port is the Redis client port of every server (DefaultPort when 0); the cluster bus is
	// Port+10000.
	Port int
	// RedisServer is the redis-server executable ("redis-server" on PATH when empty).
	RedisServer string
	// NodeTimeout is cluster-node-timeout (redisserver's default, 2 s, when 0).
	NodeTimeout time.Duration
	// ExtraArgs are appended to every redis-server command line.
	ExtraArgs []string
	// PodArgs, when set, returns more arguments for the server of one pod, appended after
	// ExtraArgs (for example --cluster-announce-hostname with the pod's FQDN).
	PodArgs func(pod *corev1.Pod) []string
	// AnnounceIP, when set, returns the IP the server of one pod announces instead of its pod IP
	// ("" for the pod IP): the address of a LoadBalancer Service that exposes the pod alone (the
	// Bitnami chart's cluster.externalAccess). The server binds it too, standing in for the
	// LoadBalancer that forwards it to the pod.
	AnnounceIP func(pod *corev1.Pod) string
	// Workers is the number of pods reconciled concurrently (DefaultWorkers when 0). One pod is
	// never reconciled by two workers at once.
	Workers int
	// BeforeStop, when set, is called with the pod (as last seen; only name, namespace and UID
	// when it is already gone) and its server's address just before a running server is stopped
	// because its pod went away, stopped running, changed IP or was re-created; the server still
	// answers then. ipChanged is true when the pod stays (the same UID, Running) and only its IP
	// changed: kwok gives a new pod a second IP when it applies its pod-ready stage twice (a
	// second event showing the pod still Pending), so the server restarts on it. Tests use it to
	// ask Redis about a node at the moment its pod is evicted.
	BeforeStop func(pod *corev1.Pod, addr string, ipChanged bool)
	// TerminationGrace makes the runtime stop the server of a terminating pod as the kubelet
	// stops its containers: SIGTERM, then SIGKILL once the pod's grace period has passed (its
	// metadata.deletionGracePeriodSeconds, else spec.terminationGracePeriodSeconds, else 30 s)
	// instead of after 10 s. Servers stopped for another reason (the pod gone, moved or
	// re-created) are stopped as before.
	TerminationGrace bool
	// Unreachable, when set, says that a pod's node is lost (its kubelet unreachable): the
	// runtime then leaves the pod's server as it is, neither stopping nor (re)starting it,
	// whatever happens to the pod, and looks at the pod again every second until Unreachable
	// says otherwise. A pod already deleted is never unreachable: its server goes.
	Unreachable func(pod *corev1.Pod) bool
	// Log receives one line per server start, stop, crash and failed start (discarded when nil),
	// for example "redis-server ns/pod started on 127.10.3.2:6379 (pid 123)".
	Log io.Writer
}

// withDefaults returns cfg with defaults filled in, or an error if it is invalid.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Client == nil {
		return cfg, errors.New("redisrt: Config.Client is required")
	}
	if cfg.DataRoot == "" {
		return cfg, errors.New("redisrt: Config.DataRoot is required")
	}
	if cfg.Selector == nil {
		cfg.Selector = labels.Everything()
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.Port < 1 || cfg.Port+10000 > 65535 {
		return cfg, fmt.Errorf("redisrt: Config.Port %d out of range (1..55535, the cluster bus is Port+10000)", cfg.Port)
	}
	if cfg.RedisServer == "" {
		cfg.RedisServer = "redis-server"
	}
	if cfg.NodeTimeout < 0 {
		return cfg, fmt.Errorf("redisrt: Config.NodeTimeout %v is negative", cfg.NodeTimeout)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Workers < 0 {
		return cfg, fmt.Errorf("redisrt: Config.Workers %d is negative", cfg.Workers)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	root, err := filepath.Abs(cfg.DataRoot)
	if err != nil {
		return cfg, fmt.Errorf("redisrt: data root: %w", err)
	}
	cfg.DataRoot = root
	return cfg, nil
}

// ServerInfo describes a running redis-server.
type ServerInfo struct {
	// Namespace and Name are the pod's.
	Namespace, Name string
	// UID is the UID of the pod the server was started for.
	UID types.UID
	// IP is the pod IP the server binds to and announces; Addr is "IP:Port".
	IP, Addr string
	// Pid is the redis-server process id.
	Pid int
	// Dir is the pod's data directory (nodes.conf, append-only files, redis.log); Volume the
	// PersistentVolume it belongs to ("" for a pod without a claim).
	Dir, Volume string
	// Restarts counts the restarts after crashes since the server was started for this pod and IP.
	Restarts int
	// Paused reports a server stopped with Pause (SIGSTOP) and not resumed yet.
	Paused bool
}

// entry is the runtime's state for one pod key. The worker reconciling the key owns the entry;
// fields read by other goroutines are written under Runtime.mu.
type entry struct {
	key, namespace, name string
	uid                  types.UID
	ip, dir, volume      string
	srv                  *redisserver.Server // exited after a crash until restarted
	stopping             bool                // being stopped on purpose; listed until removed
	exited               bool                // srv crashed: not listed
	paused               bool                // srv stopped with SIGSTOP (Pause) until Resume
	started              time.Time
	restarts             int
	crashLoop            int       // consecutive quick crashes, for the restart back-off
	restartAt            time.Time // zero unless a crash has been seen and not restarted yet

	// grace is, with Config.TerminationGrace, the SIGKILL delay of the server's stop (0: the
	// default).
	grace time.Duration
}

// alive reports whether e's server process is running.
func (e *entry) alive() bool {
	select {
	case <-e.srv.Done():
		return false
	default:
		return true
	}
}

// Runtime runs one redis-server per selected Running pod. Create it with Start; stop it with Stop.
type Runtime struct {
	cfg     Config
	ctx     context.Context
	cancel  context.CancelFunc
	factory informers.SharedInformerFactory
	lister  corelisters.PodLister
	queue   workqueue.TypedRateLimitingInterface[string]
	workers sync.WaitGroup
	watches sync.WaitGroup

	logMu sync.Mutex

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
	changed chan struct{} // closed and replaced on every change of the running servers

	stopOnce sync.Once
	stopped  chan struct{}
}

// Start starts the runtime: it watches the pods selected by cfg and returns once the informer has
// synced. Servers then start asynchronously and count as running once they answer PING (wait with
// WaitForServer, WaitForServers or WaitFor). ctx bounds the initial sync and the runtime's
// lifetime: when ctx is done the runtime stops as if Stop were called. Call Stop to stop every
// server.
func Start(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(cfg.RedisServer); err != nil {
		return nil, fmt.Errorf("redisrt: %w (install Debian's redis-server: apt-get install -y redis-server)", err)
	}
	if err := os.MkdirAll(cfg.DataRoot, 0o755); err != nil {
		return nil, fmt.Errorf("redisrt: data root: %w", err)
	}

	rctx, cancel := context.WithCancel(ctx)
	sel := cfg.Selector.String()
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	pods := factory.Core().V1().Pods()
	r := &Runtime{
		cfg:     cfg,
		ctx:     rctx,
		cancel:  cancel,
		factory: factory,
		lister:  pods.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 5*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "redisrt"}),
		entries: map[string]*entry{},
		changed: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.queue.Add(key)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("redisrt: pod event handler: %w", err)
	}
	factory.Start(rctx.Done())

	for range cfg.Workers {
		r.workers.Go(func() {
			for r.processNext() {
			}
		})
	}
	go func() {
		select {
		case <-rctx.Done():
			r.Stop()
		case <-r.stopped:
		}
	}()

	if !cache.WaitForCacheSync(rctx.Done(), pods.Informer().HasSynced) {
		r.Stop()
		return nil, fmt.Errorf("redisrt: pod informer did not sync: %w", context.Cause(ctx))
	}
	return r, nil
}

// StartForTest starts a runtime for a test: it fails the test if Start fails and stops the runtime
// (and every server) in t.Cleanup. An empty cfg.DataRoot becomes a t.TempDir(); a nil cfg.Log
// logs through t.Logf.
func StartForTest(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	if cfg.DataRoot == "" {
		cfg.DataRoot = t.TempDir()
	}
	if cfg.Log == nil {
		cfg.Log = fixture.LogWriter(t)
	}
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// Stop stops the informer and every server (SIGTERM, so Redis fsyncs its append-only file; SIGKILL
// after 10 s) and waits for them. Data directories are kept. Safe to call more than once and from
// any goroutine; every call returns once everything has stopped.
func (r *Runtime) Stop() {
	r.stopOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		r.cancel() // stops the informer and aborts servers being started
		r.queue.ShutDown()
		r.workers.Wait()
		r.factory.Shutdown()

		r.mu.Lock()
		entries := r.entries
		for _, e := range entries {
			e.stopping = true
		}
		r.mu.Unlock()
		var wg sync.WaitGroup
		for _, e := range entries {
			wg.Go(func() {
				alive := e.alive()
				r.unpause(e)
				e.srv.Stop()
				if alive {
					r.logf("redis-server %s stopped on %s (pid %d): runtime stopped", e.key, e.srv.Addr(), e.srv.Pid())
				}
			})
		}
		wg.Wait()
		r.mu.Lock()
		r.entries = map[string]*entry{}
		r.notifyLocked()
		r.mu.Unlock()
		r.watches.Wait()
		close(r.stopped)
	})
	<-r.stopped
}

// Addr returns the address ("IP:Port") of the running server of a pod.
func (r *Runtime) Addr(namespace, pod string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[namespace+"/"+pod]
	if e == nil || e.exited {
		return "", false
	}
	return e.srv.Addr(), true
}

// Servers returns the running servers, sorted by namespace and pod name. A server stopped by the
// runtime is listed until it has exited and its stop has been logged; a crashed one is not listed
// from its exit until its restart.
func (r *Runtime) Servers() []ServerInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.serversLocked()
}

func (r *Runtime) serversLocked() []ServerInfo {
	var out []ServerInfo
	for _, e := range r.entries {
		if e.exited {
			continue
		}
		out = append(out, ServerInfo{
			Namespace: e.namespace, Name: e.name, UID: e.uid,
			IP: e.ip, Addr: e.srv.Addr(), Pid: e.srv.Pid(), Dir: e.dir, Volume: e.volume, Restarts: e.restarts, Paused: e.paused,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// WaitFor waits until cond, called with the running servers (as Servers returns them) whenever they
// change, returns true. It fails when ctx is done or the runtime stops.
func (r *Runtime) WaitFor(ctx context.Context, cond func(servers []ServerInfo) bool) error {
	for {
		r.mu.Lock()
		servers := r.serversLocked()
		ok := cond(servers)
		changed, closed := r.changed, r.closed
		r.mu.Unlock()
		if ok {
			return nil
		}
		if closed {
			return errors.New("redisrt: runtime stopped")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("redisrt: %w; running servers: %s", context.Cause(ctx), describe(servers))
		}
	}
}

// WaitForServer waits until a server runs for the pod, on ip unless ip is "", and returns it.
func (r *Runtime) WaitForServer(ctx context.Context, namespace, pod, ip string) (ServerInfo, error) {
	var found ServerInfo
	err := r.WaitFor(ctx, func(servers []ServerInfo) bool {
		for _, s := range servers {
			if s.Namespace == namespace && s.Name == pod && (ip == "" || s.IP == ip) {
				found = s
				return true
			}
		}
		return false
	})
	if err != nil {
		return ServerInfo{}, fmt.Errorf("redisrt: waiting for the server of %s/%s on %q: %w", namespace, pod, ip, err)
	}
	return found, nil
}

// WaitForNoServer waits until no server runs for the pod (its process has exited).
func (r *Runtime) WaitForNoServer(ctx context.Context, namespace, pod string) error {
	err := r.WaitFor(ctx, func(servers []ServerInfo) bool {
		for _, s := range servers {
			if s.Namespace == namespace && s.Name == pod {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("redisrt: waiting for the server of %s/%s to stop: %w", namespace, pod, err)
	}
	return nil
}

// WaitForServers waits until exactly n servers are running.
func (r *Runtime) WaitForServers(ctx context.Context, n int) error {
	err := r.WaitFor(ctx, func(servers []ServerInfo) bool { return len(servers) == n })
	if err != nil {
		return fmt.Errorf("redisrt: waiting for %d servers: %w", n, err)
	}
	return nil
}

func describe(servers []ServerInfo) string {
	if len(servers) == 0 {
		return "none"
	}
	parts := make([]string, len(servers))
	for i, s := range servers {
		parts[i] = fmt.Sprintf("%s/%s@%s", s.Namespace, s.Name, s.Addr)
	}
	return strings.Join(parts, ", ")
}

// notifyLocked wakes WaitFor callers; r.mu must be held.
func (r *Runtime) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Runtime) logf(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.cfg.Log, format+"\n", args...)
}

// processNext reconciles one key from the queue; it returns false once the queue is shut down.
func (r *Runtime) processNext() bool {
	key, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(key)
	if err := r.reconcile(key); err != nil {
		r.logf("redis-server %s: %v; retrying", key, err)
		r.queue.AddRateLimited(key)
	}
	return true
}

// desired reports the IP a server should run on for pod (nil when deleted), or why none should.
func desired(pod *corev1.Pod, selector labels.Selector) (ip, whyNot string) {
	switch {
	case pod == nil:
		return "", "pod deleted"
	case !selector.Matches(labels.Set(pod.Labels)):
		return "", "pod no longer selected"
	case pod.DeletionTimestamp != nil:
		return "", "pod is terminating"
	case pod.Status.Phase != corev1.PodRunning:
		return "", fmt.Sprintf("pod phase is %q", pod.Status.Phase)
	case pod.Status.PodIP == "":
		return "", "pod has no IP"
	}
	return pod.Status.PodIP, ""
}

// reconcile makes the server of one pod match the pod: it stops a server whose pod is gone, not
// Running, terminating, recreated or moved, then (re)starts one if the pod should have one. Stops
// are synchronous, and the work queue never hands one key to two workers, so a recreated pod's old
// server has exited before a new one starts on the same data directory.
func (r *Runtime) reconcile(key string) error {
	if r.ctx.Err() != nil {
		return nil
	}
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we queued; dropping it is all we can do
	}
	pod, err := r.lister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		pod = nil
	} else if err != nil {
		return fmt.Errorf("get pod: %w", err)
	}
	if pod != nil && r.cfg.Unreachable != nil && r.cfg.Unreachable(pod) {
		r.queue.AddAfter(key, time.Second) // a lost node's kubelet acts on nothing
		return nil
	}
	ip, whyNot := desired(pod, r.cfg.Selector)
	var uid types.UID
	if pod != nil {
		uid = pod.UID
	}

	r.mu.Lock()
	e := r.entries[key]
	r.mu.Unlock()

	if e != nil {
		reason, ipChanged := whyNot, false
		switch {
		case reason != "":
		case e.uid != uid:
			reason = "pod recreated"
		case e.ip != ip:
			reason, ipChanged = "pod IP changed to "+ip, true
		}
		if reason != "" {
			if r.cfg.BeforeStop != nil && e.alive() {
				p := pod
				if p == nil || p.UID != e.uid {
					p = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.namespace, Name: e.name, UID: e.uid}}
				}
				r.cfg.BeforeStop(p, e.srv.Addr(), ipChanged)
			}
			if r.cfg.TerminationGrace && pod != nil && pod.UID == e.uid && pod.DeletionTimestamp != nil {
				e.grace = gracePeriod(pod)
			}
			r.stopEntry(e, reason)
			e = nil
		}
	}
	if ip == "" {
		r.queue.Forget(key)
		return nil
	}
	if e != nil && e.alive() {
		return nil
	}
	if e != nil && e.restartAt.IsZero() {
		// The server exited although nobody stopped it: a crash. Restart it as a kubelet
		// would: at once the first time, with a growing delay while it keeps crashing.
		if time.Since(e.started) >= crashLoopReset {
			e.crashLoop = 0
		}
		delay := time.Duration(0)
		if e.crashLoop > 0 {
			delay = min(firstCrashDelay<<(e.crashLoop-1), maxCrashDelay)
		}
		e.crashLoop++
		e.restartAt = time.Now().Add(delay)
		r.logf("redis-server %s exited unexpectedly on %s (pid %d; log %s); restarting in %v",
			key, e.srv.Addr(), e.srv.Pid(), filepath.Join(e.dir, "redis.log"), delay)
	}
	if e != nil && !e.restartAt.IsZero() {
		if wait := time.Until(e.restartAt); wait > 0 {
			r.queue.AddAfter(key, wait)
			return nil
		}
	}

	addr := net.JoinHostPort(ip, strconv.Itoa(r.cfg.Port))
	if other := r.holder(key, ip); other != "" {
		// Another pod's server still holds the address (its pod was deleted and the IP reused,
		// and that pod's stop is queued or in progress). Retry once it is gone.
		return fmt.Errorf("%s is still used by the server of %s", addr, other)
	}
	dir, volume, err := r.dataDir(r.ctx, pod)
	if err != nil {
		return err
	}
	args := r.cfg.ExtraArgs
	if r.cfg.PodArgs != nil {
		args = append(slices.Clone(args), r.cfg.PodArgs(pod)...)
	}
	announce := ""
	if r.cfg.AnnounceIP != nil {
		announce = r.cfg.AnnounceIP(pod)
	}
	srv, err := redisserver.Start(r.ctx, redisserver.Config{
		Bin:         r.cfg.RedisServer,
		IP:          ip,
		AnnounceIP:  announce,
		Port:        r.cfg.Port,
		Dir:         dir,
		NodeTimeout: r.cfg.NodeTimeout,
		ExtraArgs:   args,
	})
	if err == nil {
		if err = waitPong(r.ctx, srv); err != nil {
			srv.Stop()
		}
	}
	if err != nil {
		if r.ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start on %s: %w", addr, err)
	}

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		srv.Stop()
		return nil
	}
	if e == nil {
		e = &entry{key: key, namespace: namespace, name: name, uid: uid, ip: ip, dir: dir, volume: volume}
		r.entries[key] = e
	} else {
		e.restarts++
	}
	e.srv, e.started, e.restartAt, e.exited = srv, time.Now(), time.Time{}, false
	restarts := e.restarts
	r.notifyLocked()
	r.watches.Go(func() {
		<-srv.Done()
		r.mu.Lock()
		if e.srv == srv && !e.stopping {
			e.exited = true // a crash; reconcile logs and restarts it
		}
		r.notifyLocked()
		r.mu.Unlock()
		r.queue.Add(key) // a no-op once the queue is shut down
	})
	r.mu.Unlock()

	r.queue.Forget(key)
	on := ""
	if volume != "" {
		on = ", volume " + volume
	}
	if restarts > 0 {
		r.logf("redis-server %s started on %s (pid %d%s, restart %d)", key, srv.Addr(), srv.Pid(), on, restarts)
	} else {
		r.logf("redis-server %s started on %s (pid %d%s)", key, srv.Addr(), srv.Pid(), on)
	}
	return nil
}

// dataDir returns the data directory of pod and the PersistentVolume it belongs to: its first
// claim's bound volume's directory, or, for a pod without a claim, the pod's own (volume "").
// A claim not bound yet is an error (the reconcile is retried).
func (r *Runtime) dataDir(ctx context.Context, pod *corev1.Pod) (dir, volume string, err error) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim, err := r.cfg.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil {
			return "", "", fmt.Errorf("claim %s: %w", v.PersistentVolumeClaim.ClaimName, err)
		}
		if claim.Spec.VolumeName == "" {
			return "", "", fmt.Errorf("claim %s is not bound yet", claim.Name)
		}
		return filepath.Join(r.cfg.DataRoot, "volumes", claim.Spec.VolumeName), claim.Spec.VolumeName, nil
	}
	return filepath.Join(r.cfg.DataRoot, pod.Namespace, pod.Name), "", nil
}

// waitPong waits until srv answers PING with PONG, or with NOAUTH when it requires a password
// (Config.ExtraArgs): a server that has just started accepts connections but answers LOADING
// while it replays its append-only file.
func waitPong(ctx context.Context, srv *redisserver.Server) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, pongTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-srv.Done():
			return false, errors.New("exited")
		default:
		}
		last = ping(ctx, srv.Addr())
		return last == "+PONG" || strings.HasPrefix(last, "-NOAUTH"), nil
	})
	if err != nil {
		return fmt.Errorf("%s does not answer PING (last answer %q): %w; log:\n%s", srv.Addr(), last, err, srv.LogTail())
	}
	return nil
}

// ping sends PING to addr and returns the reply line, or the error text.
func ping(ctx context.Context, addr string) string {
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err.Error()
	}
	return strings.TrimRight(line, "\r\n")
}

// stopEntry stops e's server, waits for it to exit and forgets e.
func (r *Runtime) stopEntry(e *entry, reason string) {
	r.mu.Lock()
	e.stopping = true
	r.mu.Unlock()
	alive := e.alive()
	r.unpause(e)
	if e.grace > 0 {
		e.srv.StopWithin(e.grace)
	} else {
		e.srv.Stop()
	}
	if alive {
		r.logf("redis-server %s stopped on %s (pid %d): %s", e.key, e.srv.Addr(), e.srv.Pid(), reason)
	}
	r.mu.Lock()
	if r.entries[e.key] == e {
		delete(r.entries, e.key)
	}
	r.notifyLocked()
	r.mu.Unlock()
}

// Pause stops the server of a pod with SIGSTOP, as a lost node: the process keeps its data and
// its connections but answers nothing, so Redis Cluster flags it pfail, then fail, after
// cluster-node-timeout. The runtime does not restart a paused server (it has not exited), and its
// pod stays as it is. Resume continues it. A paused server whose pod goes away, and every paused
// server when the runtime stops, is continued, then stopped. It fails when no server runs for the
// pod or it is already paused.
func (r *Runtime) Pause(namespace, pod string) (ServerInfo, error) {
	return r.signal(namespace, pod, true)
}

// Resume continues a server paused with Pause (SIGCONT): it answers again and rejoins its
// cluster with the data it had. It fails when no server runs for the pod or it is not paused.
func (r *Runtime) Resume(namespace, pod string) (ServerInfo, error) {
	return r.signal(namespace, pod, false)
}

// signal pauses (SIGSTOP) or resumes (SIGCONT) the server of a pod.
func (r *Runtime) signal(namespace, pod string, pause bool) (ServerInfo, error) {
	key := namespace + "/" + pod
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[key]
	switch {
	case e == nil || e.exited || e.stopping || !e.alive():
		return ServerInfo{}, fmt.Errorf("redisrt: no server runs for %s", key)
	case e.paused == pause:
		return ServerInfo{}, fmt.Errorf("redisrt: the server of %s is already %s", key, map[bool]string{true: "paused", false: "running"}[pause])
	}
	sig, verb := syscall.SIGCONT, "resumed (SIGCONT)"
	if pause {
		sig, verb = syscall.SIGSTOP, "paused (SIGSTOP)"
	}
	if err := syscall.Kill(e.srv.Pid(), sig); err != nil {
		return ServerInfo{}, fmt.Errorf("redisrt: %s the server of %s: %w", verb, key, err)
	}
	e.paused = pause
	r.notifyLocked()
	r.logf("redis-server %s %s on %s (pid %d)", key, verb, e.srv.Addr(), e.srv.Pid())
	for _, s := range r.serversLocked() {
		if s.Namespace == namespace && s.Name == pod {
			return s, nil
		}
	}
	return ServerInfo{}, fmt.Errorf("redisrt: no server listed for %s", key)
}

// unpause continues e's server if it is paused, so that it can be stopped (a stopped process
// does not act on SIGTERM).
func (r *Runtime) unpause(e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.paused {
		_ = syscall.Kill(e.srv.Pid(), syscall.SIGCONT)
		e.paused = false
	}
}

// holder returns the key of another pod whose server holds ip, or "".
func (r *Runtime) holder(key, ip string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.entries {
		if k != key && e.ip == ip && e.alive() {
			return k
		}
	}
	return ""
}

// gracePeriod returns how long the kubelet gives a terminating pod's containers between SIGTERM
// and SIGKILL: its deletionGracePeriodSeconds (what the deletion asked for), else its
// terminationGracePeriodSeconds, else Kubernetes' default, 30 s; at least a second.
func gracePeriod(pod *corev1.Pod) time.Duration {
	secs := int64(30)
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		secs = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		secs = *pod.Spec.TerminationGracePeriodSeconds
	}
	return max(time.Duration(secs)*time.Second, time.Second)
}
