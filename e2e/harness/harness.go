// Package harness sets up complete test environments for the end-to-end tests, the demo and
// make compare. A test bed (Bed) is a local Kubernetes control plane with kwok nodes
// (e2e/localcluster); an environment (Env) is a scenario laid out on a bed in a namespace of its
// own: a real redis-server per Redis pod (e2e/redisrt), the scenario's StatefulSets and
// PodDisruptionBudgets (in the scenario's layout: one StatefulSet per shard, Bitnami's chart or
// OT's operator) with pods bound to the nodes the scenario names, a Redis Cluster formed over
// them with the shards the scenario says (its first pod the master; redistest.FormCluster), an
// operator stand-in that adds new members as replicas of their shard (redistest.AddReplica) and,
// in OT's layout, keeps the redis-role labels in step with Redis, and a rate-limited write load
// (Writer).
// Several environments share one bed without seeing each other (see Bed); Setup gives an
// environment a bed of its own.
//
// It may import e2e/localcluster, e2e/redisrt, the test-support layer (test/fixture,
// test/scenario, test/redistest), redisctl and client-go; never rebalancer or
// cmd/redis-rebalancer/app (the tests drive those).
package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// ManualScheduler is the scheduler name the scenario's pods are first created with: no scheduler
// serves it, so the harness binds them itself (pods/binding) to the scenario's nodes.
const ManualScheduler = "harness-manual"

// Options tune Setup and Bed.Setup.
type Options struct {
	// Log receives progress lines (discarded when nil).
	Log io.Writer
	// WorkDir holds the Redis data dirs, and with Setup the cluster's files (a temp dir when
	// empty: removed by Stop with Setup, under the bed's work dir with Bed.Setup).
	WorkDir string
	// Timeout bounds the whole setup (3 min when 0).
	Timeout time.Duration
	// Cluster configures the local cluster of Setup (WorkDir and Log are filled in); Bed.Setup
	// ignores it.
	Cluster localcluster.Config
	// Namespace is the namespace the scenario is laid out in. When empty: the scenario's
	// namespace with Setup; with Bed.Setup, the scenario's namespace followed by "-<i>" for the
	// bed's i-th environment.
	Namespace string
	// RedisArgs are appended to every redis-server command line (for example "--requirepass",
	// "secret", "--masterauth", "secret").
	RedisArgs []string
	// Redis is how the harness, its operator stand-in and its writer talk to Redis (a password
	// matching RedisArgs, say); its Port is set to the environment's port.
	Redis redisctl.Options
	// PodAnnotations are added to the scenario's pod templates, for example
	// localcluster.PodReadyDelayAnnotation to make every (re-)created pod slow to start.
	PodAnnotations map[string]string
	// RunningPods, when set, changes the template the scenario's pods are created from; the
	// StatefulSets get the scenario's template back when the harness hands them to the default
	// scheduler (updateStrategy OnDelete keeps the pods as they are). It lays out pods that
	// differ from their templates, as after an operator changed the templates.
	RunningPods func(*corev1.PodTemplateSpec)
	// Templates, when set, changes the scenario's pod templates, for the pods laid out and for the
	// StatefulSets that re-create them: requests, ports, volumes.
	Templates func(*corev1.PodTemplateSpec)
	// RecordStops makes the environment ask each pod's Redis node for its ROLE just before the
	// runtime stops its server because the pod is going away (Env.Stops).
	RecordStops bool
	// AnnounceHostnames makes each redis-server announce its pod's FQDN
	// (--cluster-announce-hostname <pod>.<subdomain>.<namespace>.svc.cluster.local, Redis 7),
	// as OT's operator and KubeBlocks set Redis up: CLUSTER NODES then lists the hostname beside
	// the IP. Clients are still sent to IPs (cluster-preferred-endpoint-type ip).
	AnnounceHostnames bool
}

// announceHostname returns the redis-server arguments that announce pod's FQDN: its hostname
// and subdomain as the StatefulSet controller sets them (the pod's name and the StatefulSet's
// serviceName).
func announceHostname(pod *corev1.Pod) []string {
	host := cmp.Or(pod.Spec.Hostname, pod.Name)
	fqdn := host + "." + pod.Namespace + ".svc.cluster.local"
	if pod.Spec.Subdomain != "" {
		fqdn = host + "." + pod.Spec.Subdomain + "." + pod.Namespace + ".svc.cluster.local"
	}
	return []string{"--cluster-announce-hostname", fqdn}
}

// Env is a scenario laid out on a test bed: its namespace, its Redis pods' servers, the Redis
// Cluster formed over them and an operator stand-in that adds new members. Stop tears it down.
type Env struct {
	// Bed is the test bed the environment runs on; Cluster is its local cluster.
	Bed     *Bed
	Cluster *localcluster.Cluster
	Runtime *redisrt.Runtime
	// Redis talks to the environment's Redis nodes with RedisOptions.
	Redis        *redisctl.Client
	RedisOptions redisctl.Options
	// Scenario is the scenario as laid out (its namespace, tolerations and scheduler set).
	Scenario scenario.Scenario
	// Namespace is the scenario's namespace.
	Namespace string
	// Port is the Redis client port of the environment's pods (`run --redis-port`).
	Port int

	log      io.Writer
	stops    *stopRecorder // with Options.RecordStops
	ownsBed  bool
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

// Setup starts a test bed of its own with the scenario's nodes and lays out sc on it (Bed.Setup):
// for a program (the demo, make compare) or a test that needs the control plane to itself. Stop
// stops the bed too. On error everything already started is stopped.
func Setup(ctx context.Context, sc scenario.Scenario, opts Options) (*Env, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	bed, err := StartBed(ctx, BedOptions{Log: opts.Log, WorkDir: opts.WorkDir, Zones: sc.Zones, Cluster: opts.Cluster, Timeout: opts.Timeout})
	if err != nil {
		return nil, err
	}
	ns := cmp.Or(opts.Namespace, sc.Namespace, defaultNamespace)
	e, err := bed.setup(ctx, sc, opts, ns, true)
	if err != nil {
		bed.Stop()
		return nil, err
	}
	e.ownsBed = true
	return e, nil
}

// SetupForTest is Setup for tests: it fails the test on error and stops the environment and its
// bed on cleanup.
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

// Setup lays out sc on the bed in a namespace of its own: its PodDisruptionBudgets and
// StatefulSets (and, in Bitnami's layout with a password in opts.Redis, the chart's password
// Secret), its pods bound to the nodes it names, a redis-server per pod (on the environment's own
// port), the Redis Cluster formed over them (the shards sc.ShardPods says, the first pod of each
// the master), and an operator stand-in. sc must name exactly the bed's zones and nodes. On
// error everything the environment started is stopped.
func (b *Bed) Setup(ctx context.Context, sc scenario.Scenario, opts Options) (*Env, error) {
	if opts.Namespace != "" {
		return b.setup(ctx, sc, opts, opts.Namespace, true)
	}
	return b.setup(ctx, sc, opts, cmp.Or(sc.Namespace, defaultNamespace), false)
}

// SetupForTest is Bed.Setup for tests: the namespace is named after the test (unless
// opts.Namespace says otherwise), progress goes to the test's log, the test fails on error, and
// the environment is stopped on cleanup.
func (b *Bed) SetupForTest(t testing.TB, sc scenario.Scenario, opts Options) *Env {
	t.Helper()
	if opts.Log == nil {
		opts.Log = fixture.LogWriter(t)
	}
	ns, exact := opts.Namespace, true
	if ns == "" {
		ns, exact = namespaceFor(t.Name()), false
	}
	e, err := b.setup(context.Background(), sc, opts, ns, exact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// defaultNamespace is a scenario's namespace when it names none (scenario.Scenario's default).
const defaultNamespace = "redis"

// namespaceFor turns a test name into a namespace name prefix: lower case, runs of other
// characters than letters and digits as one "-", at most 50 characters.
func namespaceFor(test string) string {
	var out []rune
	for _, r := range strings.ToLower(test) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			out = append(out, r)
		} else if len(out) > 0 && out[len(out)-1] != '-' {
			out = append(out, '-')
		}
	}
	s := strings.Trim(string(out), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	return cmp.Or(s, "e2e")
}

func (b *Bed) setup(ctx context.Context, sc scenario.Scenario, opts Options, ns string, exact bool) (_ *Env, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	if err := b.fits(sc); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	start := time.Now()
	ns, port := b.claim(ns, exact)
	e := &Env{Bed: b, Cluster: b.Cluster, Namespace: ns, Port: port, log: opts.Log}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	sc.Namespace = ns
	sc.Tolerations = append(sc.Tolerations, fixture.KwokToleration())
	sc.SchedulerName = ManualScheduler
	e.Scenario = sc
	workDir := opts.WorkDir
	if workDir == "" {
		workDir = filepath.Join(b.workDir, "envs", ns)
	}
	if _, err := e.Cluster.Namespace(ctx, ns); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	sel, err := labels.Parse(sc.Selector())
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	e.RedisOptions = opts.Redis
	e.RedisOptions.Port = port
	if e.Redis, err = redisctl.New(e.RedisOptions); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	var podArgs func(*corev1.Pod) []string
	if opts.AnnounceHostnames {
		podArgs = announceHostname
	}
	var beforeStop func(*corev1.Pod, string)
	if opts.RecordStops {
		e.stops = &stopRecorder{redis: e.Redis}
		beforeStop = e.stops.beforeStop
	}
	// The runtime lives until Stop: it must not get the setup's deadline.
	if e.Runtime, err = redisrt.Start(context.WithoutCancel(ctx), redisrt.Config{
		Client: e.Cluster.Client(), Namespace: ns, Selector: sel, Port: port, ExtraArgs: opts.RedisArgs,
		DataRoot: filepath.Join(workDir, "redis"), Log: prefixWriter{opts.Log, "[redisrt] "},
		BeforeStop: beforeStop, PodArgs: podArgs,
	}); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if sc.Layout == scenario.LayoutBitnami && e.RedisOptions.Password != "" {
		if _, err := e.Client().CoreV1().Secrets(ns).Create(ctx, sc.BitnamiSecret(e.RedisOptions.Password), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
	}
	if err := e.layOut(ctx, opts.PodAnnotations, opts.Templates, opts.RunningPods); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	opCtx, opCancel := context.WithCancel(context.Background())
	e.cancel = opCancel
	e.opDone = make(chan struct{})
	go e.operate(opCtx)
	e.logf("scenario %s ready in namespace %s (Redis port %d) in %s", sc.Name, ns, port, time.Since(start).Round(10*time.Millisecond))
	return e, nil
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

// Stop stops the operator stand-in and every redis-server of the environment, deletes its
// namespace (without waiting for it to go), and, for Setup's environment, stops the test bed.
// Safe to call more than once.
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
		if e.ownsBed {
			e.Bed.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Client().CoreV1().Namespaces().Delete(ctx, e.Namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.logf("delete namespace %s: %v", e.Namespace, err)
		}
	})
}

// Addrs returns the addresses of the environment's running redis-servers.
func (e *Env) Addrs() []string {
	var addrs []string
	for _, s := range e.Runtime.Servers() {
		addrs = append(addrs, s.Addr)
	}
	return addrs
}

// StartWriter starts a Writer on the environment's Redis Cluster (seeded with every running
// server, with the environment's Redis options) at rate writes per second.
func (e *Env) StartWriter(rate int) (*Writer, error) {
	return StartWriterWith(e.RedisOptions, e.Addrs(), rate)
}

// WaitHealthy waits up to timeout until the Redis Cluster over every running server passes the
// full health gate (cluster_state ok, every slot served, every master with an in-sync replica).
func (e *Env) WaitHealthy(ctx context.Context, timeout time.Duration) (*redisctl.Health, error) {
	return redistest.WaitFormed(ctx, e.Redis, e.Addrs(), timeout)
}

// layOut creates the scenario's objects, binds its pods, forms the Redis Cluster and hands the
// StatefulSets over to the default scheduler.
func (e *Env) layOut(ctx context.Context, annotations map[string]string, tmpl, runningPods func(*corev1.PodTemplateSpec)) error {
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
	templates := map[string]*corev1.PodTemplateSpec{} // the scenario's, by StatefulSet
	for _, s := range stss {
		s.UID = ""
		for k, v := range annotations {
			metav1.SetMetaDataAnnotation(&s.Spec.Template.ObjectMeta, k, v)
		}
		if tmpl != nil {
			tmpl(&s.Spec.Template)
		}
		templates[s.Name] = s.Spec.Template.DeepCopy()
		templates[s.Name].Spec.SchedulerName = corev1.DefaultSchedulerName
		if runningPods != nil {
			runningPods(&s.Spec.Template)
		}
		if _, err := client.AppsV1().StatefulSets(e.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create statefulset %s: %w", s.Name, err)
		}
	}
	// Bind the pods the scenario places, as it says.
	want := sc.Placement
	bound := map[string]bool{}
	var listErr error // the last failed list, the cause when the poll times out
	err = poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sc.Selector()})
		if listErr = err; err != nil {
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
		if listErr != nil {
			err = fmt.Errorf("%w (list pods: %w)", err, listErr)
		}
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
		for _, pod := range sc.ShardPods(i) {
			if a, ok := addrs[pod]; ok {
				shard = append(shard, a)
			}
		}
		if len(shard) == 0 || shard[0] != addrs[sc.PodName(i, 0)] {
			return fmt.Errorf("shard %d: pod %s must be placed (it becomes the master)", i, sc.PodName(i, 0))
		}
		shards = append(shards, shard)
	}
	t0 := time.Now()
	if _, err := redistest.FormCluster(ctx, e.Redis, shards, 90*time.Second); err != nil {
		return fmt.Errorf("form redis cluster: %w", err)
	}
	e.logf("redis cluster formed over %d pods in %s", len(addrs), time.Since(t0).Round(10*time.Millisecond))
	// Hand over to kube-scheduler: templates use the default scheduler (and are the scenario's)
	// from now on; updateStrategy OnDelete keeps the running pods as they are.
	for _, s := range stss {
		if err := retryUpdate(ctx, func() error {
			cur, err := client.AppsV1().StatefulSets(e.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Template = *templates[s.Name]
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
// with an empty data dir) to the cluster as a replica of its shard's master, and in OT's layout
// sets each pod's redis-role label to its Redis role (OT's UpdatePodRoleLabel).
func (e *Env) operate(ctx context.Context) {
	defer close(e.opDone)
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, false, func(ctx context.Context) (bool, error) {
		if err := e.addNewMembers(ctx); err != nil && ctx.Err() == nil {
			e.logf("operator: %v", err)
		}
		if e.Scenario.Layout == scenario.LayoutOT {
			if err := e.syncRoleLabels(ctx); err != nil && ctx.Err() == nil {
				e.logf("operator: %v", err)
			}
		}
		return false, nil
	})
}

// syncRoleLabels sets the OT redis-role label (master or slave) of every pod whose Redis node
// answers to the role that node reports, as OT's operator does on each reconcile.
func (e *Env) syncRoleLabels(ctx context.Context) error {
	pods, err := e.Cluster.Client().CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods.Items {
		addr, ok := e.Runtime.Addr(e.Namespace, p.Name)
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		role, err := redisRole(ctx, e.Redis, addr)
		if err != nil {
			continue // not answering yet: the next round
		}
		if (role != "master" && role != "slave") || p.Labels[scenario.OTRedisRoleLabel] == role {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, scenario.OTRedisRoleLabel, role)
		if _, err := e.Cluster.Client().CoreV1().Pods(e.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("label %s %s=%s: %w", p.Name, scenario.OTRedisRoleLabel, role, err))
		}
	}
	return errors.Join(errs...)
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
	shardOf := map[string]int{} // pod IP → the scenario's shard
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			shardOf[p.Status.PodIP] = e.Scenario.ShardOf(p.Name)
		}
	}
	var errs []error
	for _, s := range lonely {
		shard, known := shardOf[s.IP]
		masterID := ""
		for _, n := range topo.Nodes {
			if sh, ok := shardOf[n.IP]; ok && known && shard >= 0 && sh == shard && n.IsMaster() && !n.IsFailing() {
				masterID = n.ID
			}
		}
		if masterID == "" {
			errs = append(errs, fmt.Errorf("new member %s (%s): no master for shard %d", s.Name, s.Addr, shard))
			continue
		}
		if err := redistest.AddReplica(ctx, e.Redis, s.Addr, members[0], masterID, 30*time.Second); err != nil {
			errs = append(errs, err)
			continue
		}
		e.logf("operator: added %s (%s) as a replica in shard %d", s.Name, s.Addr, shard)
	}
	return errors.Join(errs...)
}

// PauseNode stops (redisrt.Runtime.Pause) the redis-server of every environment pod bound to
// node, as when the node is lost, and returns them. The pods stay as they are.
func (e *Env) PauseNode(ctx context.Context, node string) ([]redisrt.ServerInfo, error) {
	pods, err := e.Client().CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
	if err != nil {
		return nil, fmt.Errorf("harness: pause node %s: %w", node, err)
	}
	var paused []redisrt.ServerInfo
	for _, p := range pods.Items {
		if p.Spec.NodeName != node {
			continue
		}
		s, err := e.Runtime.Pause(e.Namespace, p.Name)
		if err != nil {
			return paused, fmt.Errorf("harness: pause node %s: %w", node, err)
		}
		paused = append(paused, s)
	}
	return paused, nil
}

// ResumeNode resumes the servers PauseNode paused.
func (e *Env) ResumeNode(paused []redisrt.ServerInfo) error {
	var errs []error
	for _, s := range paused {
		if _, err := e.Runtime.Resume(s.Namespace, s.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WaitUnschedulable waits up to timeout until kube-scheduler has tried and failed to place the
// environment's pod (PodScheduled False, reason Unschedulable).
func (e *Env) WaitUnschedulable(ctx context.Context, pod string, timeout time.Duration) error {
	var getErr error // the last failed get, the cause when the poll times out
	err := poll(ctx, 100*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		p, err := e.Client().CoreV1().Pods(e.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if getErr = err; err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		if getErr != nil {
			err = fmt.Errorf("%w (get pod: %w)", err, getErr)
		}
		return fmt.Errorf("harness: pod %s not found Unschedulable within %v: %w", pod, timeout, err)
	}
	return nil
}
