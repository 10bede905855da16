// Package harness sets up a complete test environment for the end-to-end tests and the demo: a
// local Kubernetes control plane with kwok nodes (e2e/localcluster), a real redis-server per
// Redis pod (e2e/redisrt), a scenario's StatefulSets and PodDisruptionBudgets with pods bound to
// the nodes the scenario names, a Redis Cluster formed over them (pod -0 of each shard the master;
// redistest.FormCluster), an operator stand-in that adds new members as replicas
// (redistest.AddReplica), and a rate-limited write load (Writer).
//
// It may import e2e/localcluster, e2e/redisrt, the test-support layer (internal/fixture,
// internal/scenario, redisctl/redistest), redisctl and client-go; never rebalancer or
// internal/cli (the tests drive those).
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/internal/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl/redistest"
)

// ManualScheduler is the scheduler name the scenario's pods are first created with: no scheduler
// serves it, so the harness binds them itself (pods/binding) to the scenario's nodes.
const ManualScheduler = "harness-manual"

// Options tune Setup.
type Options struct {
	// Log receives progress lines (discarded when nil).
	Log io.Writer
	// WorkDir holds the Redis data dirs and the cluster's files (a temp dir when empty, removed on
	// Stop).
	WorkDir string
	// Timeout bounds the whole setup (3 min when 0).
	Timeout time.Duration
	// Cluster configures the local cluster (WorkDir and Log are filled in).
	Cluster localcluster.Config
	// BeforeStop is passed to the Redis runtime: called with a pod and its server's address just
	// before the server is stopped because the pod is going away.
	BeforeStop func(pod *corev1.Pod, addr string)
}

// Env is a running environment. Stop tears everything down.
type Env struct {
	Cluster  *localcluster.Cluster
	Runtime  *redisrt.Runtime
	Redis    *redisctl.Client
	Scenario scenario.Scenario
	// Namespace is the scenario's namespace.
	Namespace string

	log      io.Writer
	workDir  string
	ownsDir  bool
	stopOnce sync.Once
	cancel   context.CancelFunc
	opDone   chan struct{}
}

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "[harness] "+format+"\n", args...)
}

// Client returns the admin Kubernetes client.
func (e *Env) Client() kubernetes.Interface { return e.Cluster.Client() }

// Kubeconfig returns the admin kubeconfig's path.
func (e *Env) Kubeconfig() string { return e.Cluster.Kubeconfig() }

// Setup starts the environment and lays out sc. On error everything already started is stopped.
func Setup(ctx context.Context, sc scenario.Scenario, opts Options) (_ *Env, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	e := &Env{Scenario: sc, log: opts.Log, workDir: opts.WorkDir}
	if e.workDir == "" {
		if e.workDir, err = os.MkdirTemp("", "rebalancer-e2e-"); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		e.ownsDir = true
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	sc.Tolerations = append(sc.Tolerations, fixture.KwokToleration())
	sc.SchedulerName = ManualScheduler
	e.Scenario = sc
	pods, err := sc.Pods()
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	e.Namespace = pods[0].Namespace

	ccfg := opts.Cluster
	ccfg.Log = opts.Log
	if ccfg.WorkDir == "" {
		ccfg.WorkDir = filepath.Join(e.workDir, "cluster")
	}
	start := time.Now()
	if e.Cluster, err = localcluster.Start(ctx, ccfg); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	e.logf("local cluster up in %s", time.Since(start).Round(10*time.Millisecond))
	client := e.Cluster.Client()
	if _, err := e.Cluster.Namespace(ctx, e.Namespace); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	for _, z := range sc.Zones {
		for _, n := range z.Nodes {
			if _, err := e.Cluster.AddNode(ctx, localcluster.NodeSpec{Name: n, Zone: z.Name}); err != nil {
				return nil, fmt.Errorf("harness: %w", err)
			}
		}
	}
	e.logf("%d nodes in %d zones", len(sc.NodeNames()), len(sc.Zones))
	sel, err := labels.Parse(sc.Selector())
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	// The runtime lives until Stop: it must not get the setup's deadline.
	if e.Runtime, err = redisrt.Start(context.WithoutCancel(ctx), redisrt.Config{
		Client: client, Namespace: e.Namespace, Selector: sel,
		DataRoot: filepath.Join(e.workDir, "redis"), Log: prefixWriter{opts.Log, "[redisrt] "},
		BeforeStop: opts.BeforeStop,
	}); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if e.Redis, err = redisctl.New(redisctl.Options{}); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if err := e.layOut(ctx); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	opCtx, opCancel := context.WithCancel(context.Background())
	e.cancel = opCancel
	e.opDone = make(chan struct{})
	go e.operate(opCtx)
	e.logf("scenario %s ready in %s", sc.Name, time.Since(start).Round(10*time.Millisecond))
	return e, nil
}

// SetupForTest is Setup for tests: it fails the test on error and stops the environment on
// cleanup.
func SetupForTest(t testing.TB, sc scenario.Scenario, opts Options) *Env {
	t.Helper()
	if opts.Log == nil {
		opts.Log = fixture.LogWriter(t)
	}
	e, err := Setup(context.Background(), sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (w prefixWriter) Write(p []byte) (int, error) {
	if _, err := w.w.Write(append([]byte(w.prefix), p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Stop stops the operator stand-in, every redis-server, and the local cluster, and removes the
// work dir it created. Safe to call more than once.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		if e.cancel != nil {
			e.cancel()
			<-e.opDone
		}
		if e.Redis != nil {
			e.Redis.Close()
		}
		if e.Runtime != nil {
			e.Runtime.Stop()
		}
		if e.Cluster != nil {
			e.Cluster.Stop()
		}
		if e.ownsDir {
			os.RemoveAll(e.workDir)
		}
	})
}

// layOut creates the scenario's objects, binds its pods, forms the Redis Cluster and hands the
// StatefulSets over to the default scheduler.
func (e *Env) layOut(ctx context.Context) error {
	sc := e.Scenario
	client := e.Cluster.Client()
	for _, pdb := range sc.PodDisruptionBudgets() {
		if _, err := client.PolicyV1().PodDisruptionBudgets(e.Namespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pdb %s: %w", pdb.Name, err)
		}
	}
	stss, err := sc.StatefulSets()
	if err != nil {
		return err
	}
	for _, s := range stss {
		s.UID = ""
		if _, err := client.AppsV1().StatefulSets(e.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create statefulset %s: %w", s.Name, err)
		}
	}
	// Bind the pods the scenario places, as it says.
	want := sc.Placement
	bound := map[string]bool{}
	err = poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sc.Selector()})
		if err != nil {
			return false, nil
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			node, ok := want[p.Name]
			if !ok || bound[p.Name] || p.Spec.NodeName != "" {
				if p.Spec.NodeName != "" {
					bound[p.Name] = true
				}
				continue
			}
			err := client.CoreV1().Pods(e.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsConflict(err) {
				return false, fmt.Errorf("bind %s to %s: %w", p.Name, node, err)
			}
			bound[p.Name] = true
		}
		return len(bound) == len(want), nil
	})
	if err != nil {
		return fmt.Errorf("bind pods (%d of %d bound): %w", len(bound), len(want), err)
	}
	// Wait for every bound pod's redis-server.
	addrs := map[string]string{}
	for name := range want {
		if err := poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
			a, ok := e.Runtime.Addr(e.Namespace, name)
			addrs[name] = a
			return ok, nil
		}); err != nil {
			return fmt.Errorf("redis-server of pod %s: %w", name, err)
		}
	}
	var shards [][]string
	for i := 0; i < sc.Shards; i++ {
		var shard []string
		for o := 0; o < sc.PodsPerShard; o++ {
			if a, ok := addrs[sc.PodName(i, o)]; ok {
				shard = append(shard, a)
			}
		}
		if len(shard) == 0 || shard[0] != addrs[sc.PodName(i, 0)] {
			return fmt.Errorf("shard %d: pod -0 must be placed (it becomes the master)", i)
		}
		shards = append(shards, shard)
	}
	t0 := time.Now()
	if _, err := redistest.FormCluster(ctx, e.Redis, shards, 90*time.Second); err != nil {
		return fmt.Errorf("form redis cluster: %w", err)
	}
	e.logf("redis cluster formed over %d pods in %s", len(addrs), time.Since(t0).Round(10*time.Millisecond))
	// Hand over to kube-scheduler: templates use the default scheduler from now on; updateStrategy
	// OnDelete keeps the running pods as they are.
	for _, s := range stss {
		if err := retryUpdate(ctx, func() error {
			cur, err := client.AppsV1().StatefulSets(e.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Template.Spec.SchedulerName = corev1.DefaultSchedulerName
			_, err = client.AppsV1().StatefulSets(e.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("hand statefulset %s to the default scheduler: %w", s.Name, err)
		}
	}
	// Pods the scenario leaves unplaced are re-created for the default scheduler (and stay
	// Pending where it cannot place them).
	pods, err := sc.Pods()
	if err != nil {
		return err
	}
	for _, p := range pods {
		if _, placed := want[p.Name]; placed {
			continue
		}
		if err := client.CoreV1().Pods(e.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("re-create pending pod %s: %w", p.Name, err)
		}
	}
	return nil
}

func retryUpdate(ctx context.Context, f func() error) error {
	var last error
	err := poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		last = f()
		if last == nil {
			return true, nil
		}
		if apierrors.IsConflict(last) {
			return false, nil
		}
		return false, last
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

func poll(ctx context.Context, interval, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, interval, timeout, true, cond)
}

// operate is the operator stand-in: every 500 ms it adds each Redis node that is alone (a new pod
// with an empty data dir) to the cluster as a replica of its shard's master.
func (e *Env) operate(ctx context.Context) {
	defer close(e.opDone)
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, false, func(ctx context.Context) (bool, error) {
		if err := e.addNewMembers(ctx); err != nil && ctx.Err() == nil {
			e.logf("operator: %v", err)
		}
		return false, nil
	})
}

func (e *Env) addNewMembers(ctx context.Context) error {
	servers := e.Runtime.Servers()
	sort.Slice(servers, func(a, b int) bool { return servers[a].Name < servers[b].Name })
	var lonely []redisrt.ServerInfo
	var members []string
	for _, s := range servers {
		info, err := e.Redis.ClusterInfo(ctx, s.Addr)
		if err != nil {
			continue
		}
		if info.Int("cluster_known_nodes", 0) <= 1 && info.Int("cluster_slots_assigned", 0) == 0 {
			lonely = append(lonely, s)
		} else {
			members = append(members, s.Addr)
		}
	}
	if len(lonely) == 0 || len(members) == 0 {
		return nil
	}
	topo, err := e.Redis.Topology(ctx, members)
	if err != nil {
		return err
	}
	pods, err := e.Cluster.Client().CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
	if err != nil {
		return err
	}
	shardOf := map[string]string{} // pod IP → shard
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			shardOf[p.Status.PodIP] = p.Labels[scenario.ShardLabel]
		}
	}
	var errs []error
	for _, s := range lonely {
		shard := shardOf[s.IP]
		masterID := ""
		for _, n := range topo.Nodes {
			if n.IsMaster() && !n.IsFailing() && shardOf[n.IP] == shard && shard != "" {
				masterID = n.ID
			}
		}
		if masterID == "" {
			errs = append(errs, fmt.Errorf("new member %s (%s): no master for shard %q", s.Name, s.Addr, shard))
			continue
		}
		if err := redistest.AddReplica(ctx, e.Redis, s.Addr, members[0], masterID, 30*time.Second); err != nil {
			errs = append(errs, err)
			continue
		}
		e.logf("operator: added %s (%s) as a replica in shard %s", s.Name, s.Addr, shard)
	}
	return errors.Join(errs...)
}
