package harness

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	// NoMemberAdds keeps the operator stand-in from adding nodes that start empty to the
	// cluster (Bitnami's chart adds nodes only in its cluster-update Job, on helm upgrade): a
	// pod back with an empty volume stays out of the cluster unless the rebalancer re-introduces
	// it (a replica whose claims it released).
	NoMemberAdds bool
	// AnnounceHostnames makes each redis-server announce its pod's FQDN
	// (--cluster-announce-hostname <pod>.<subdomain>.<namespace>.svc.cluster.local, Redis 7),
	// as OT's operator and KubeBlocks set Redis up: CLUSTER NODES then lists the hostname beside
	// the IP. Clients are still sent to IPs (cluster-preferred-endpoint-type ip).
	AnnounceHostnames bool
	// ExternalAccess installs Bitnami's chart with cluster.externalAccess (externalaccess.go):
	// a LoadBalancer Service per pod, each pod's Redis node announcing its LoadBalancer's IP
	// (Env.LoadBalancerIP), the cluster formed over those IPs. Bitnami's layout only.
	ExternalAccess bool
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

	log    io.Writer
	stops  *stopRecorder // with Options.RecordStops
	noAdds bool          // Options.NoMemberAdds
	// externalAccess is Options.ExternalAccess.
	externalAccess bool
	ownsBed        bool
	stopOnce       sync.Once
	cancel         context.CancelFunc
	opDone         chan struct{}
	// formed is, in Bitnami's and OT's layouts, each pod's shard index as Redis was formed
	// (ShardOf).
	formed map[string]int
	// datasets is what a realistic bed filled the masters with (Datasets).
	datasets []Dataset
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
// port), the Redis Cluster formed over them, and an operator stand-in. In the seed layout the
// harness forms the cluster itself (the shards sc.ShardPods says, the first pod of each the
// master); in Bitnami's and OT's the real redis-cli forms it as the chart's init and the
// operator do (chart.go), and Env.ShardOf tells the shards it made. sc must name exactly the
// bed's zones and nodes. On error everything the environment started is stopped.
func (b *Bed) Setup(ctx context.Context, sc scenario.Scenario, opts Options) (*Env, error) {
	if opts.Namespace != "" {
		return b.setup(ctx, sc, opts, opts.Namespace, true)
	}
	return b.setup(ctx, sc, opts, cmp.Or(sc.Namespace, defaultNamespace), false)
}

// SetupForTest is Bed.Setup for tests: it first waits until the bed is settled (Settle: no
// earlier test's pod left, the nodes as StartBed made them, kube-scheduler caught up), the
// namespace is named after the test (unless opts.Namespace says otherwise), progress goes to the
// test's log, the test fails on error, and the environment is stopped on cleanup.
func (b *Bed) SetupForTest(t testing.TB, sc scenario.Scenario, opts Options) *Env {
	t.Helper()
	if opts.Log == nil {
		opts.Log = fixture.LogWriter(t)
	}
	ns, exact := opts.Namespace, true
	if ns == "" {
		ns, exact = namespaceFor(t.Name()), false
	}
	b.SettleForTest(t)
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
	opts = b.realisticOptions(opts)
	if err := b.fits(sc); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	start := time.Now()
	ns, port := b.claim(ns, exact)
	e := &Env{Bed: b, Cluster: b.Cluster, Namespace: ns, Port: port, log: opts.Log, noAdds: opts.NoMemberAdds, externalAccess: opts.ExternalAccess}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	sc.Namespace = ns
	sc.Tolerations = append(sc.Tolerations, fixture.KwokToleration())
	lay := e.layOutChart // Bitnami's chart, OT's operator: installed as they install it
	if sc.Layout == scenario.LayoutSeed {
		sc.SchedulerName = ManualScheduler
		lay = e.layOut
	}
	e.Scenario = sc
	if err := e.startRedis(ctx, opts); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if err := lay(ctx, opts); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if b.Realistic != nil {
		if err := e.fillDataset(ctx); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
	}
	e.startOperator()
	e.logf("scenario %s ready in namespace %s (Redis port %d) in %s", sc.Name, ns, port, time.Since(start).Round(10*time.Millisecond))
	return e, nil
}

// startRedis creates the environment's namespace, its Redis client (opts.Redis on the
// environment's port) and the Redis pod runtime that runs a redis-server for each of its pods,
// with its data dirs under opts.WorkDir (the bed's work dir when empty).
func (e *Env) startRedis(ctx context.Context, opts Options) error {
	workDir := opts.WorkDir
	if workDir == "" {
		workDir = filepath.Join(e.Bed.workDir, "envs", e.Namespace)
	}
	if _, err := e.Cluster.Namespace(ctx, e.Namespace); err != nil {
		return err
	}
	// A Job's pod with the cluster's labels (Bitnami's cluster-update Job) runs no redis-server.
	sel, err := labels.Parse(e.Scenario.Selector() + ",!" + batchv1.JobNameLabel)
	if err != nil {
		return err
	}
	e.RedisOptions = opts.Redis
	e.RedisOptions.Port = e.Port
	if e.Redis, err = redisctl.New(e.RedisOptions); err != nil {
		return err
	}
	var podArgs func(*corev1.Pod) []string
	if opts.AnnounceHostnames {
		podArgs = announceHostname
	}
	var beforeStop func(*corev1.Pod, string, bool)
	if opts.RecordStops {
		e.stops = &stopRecorder{redis: e.Redis}
		beforeStop = e.stops.beforeStop
	}
	// The runtime lives until Stop: it must not get the setup's deadline.
	e.Runtime, err = redisrt.Start(context.WithoutCancel(ctx), redisrt.Config{
		Client: e.Cluster.Client(), Namespace: e.Namespace, Selector: sel, Port: e.Port, ExtraArgs: opts.RedisArgs,
		DataRoot: filepath.Join(workDir, "redis"), Log: prefixWriter{opts.Log, "[redisrt] "},
		BeforeStop: beforeStop, PodArgs: podArgs,
		AnnounceIP: func(pod *corev1.Pod) string { return e.LoadBalancerIP(pod.Name) },
		// The realistic profile (realistic.go): the kubelet's grace period, lost nodes.
		TerminationGrace: e.Bed.kubelet != nil, Unreachable: e.Bed.unreachable(),
	})
	if err == nil && e.Bed.kubelet != nil {
		e.Bed.kubelet.register(e.Runtime)
	}
	return err
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
// namespace and its pods (Bed.removeNamespace; the namespace goes in the background), and, for
// Setup's environment, stops the test bed. Safe to call more than once.
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
			if e.Bed.kubelet != nil {
				e.Bed.kubelet.unregister(e.Runtime)
			}
			e.Runtime.Stop()
		}
		if e.ownsBed {
			e.Bed.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Bed.removeNamespace(ctx, e.Namespace); err != nil {
			e.logf("%v", err)
		}
		e.Bed.unmarkLive(e.Namespace)
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

func poll(ctx context.Context, interval, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, interval, timeout, true, cond)
}
