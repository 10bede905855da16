// Package localcluster runs a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) on loopback with kwok simulating the nodes and their
// pods, for end-to-end tests and the demo.
//
// Binaries come from hack/build-tools.sh (`make tools`); see DefaultBinaries. A cluster starts
// in 5 to 10 seconds. Each cluster on a machine claims its own pod network 127.x.0.0/16
// (Config.PodNetwork) and its control plane listens on 127.0.0.1, on ports 20000+10*x and up
// (below the ephemeral range; a busy one is replaced by a random free one), so several clusters
// can run at once, in one process or several.
//
// kwok holds a Lease per node in kube-node-lease and renews it as the kubelet does
// (Config.NodeLeaseDuration), so nodes and pods stay Ready for as long as the cluster runs.
// StopAPIServer and StartAPIServer take the API server down and bring it back (same etcd,
// certificates and port), for fault tests. Once started, a component that exits is restarted,
// as the kubelet restarts a control plane's static pods (kube-scheduler exits when its cache is
// inconsistent, which an API server restart can cause).
//
// Nodes are added with AddNode. They carry kwok's NoSchedule taint (fixture.KwokTaint), so pods
// must tolerate it (fixture.KwokToleration). Pods become Running and Ready as soon as they are scheduled and
// get an IP from their node's pod CIDR (PodNetwork.<i>.0/24), a loopback address that a test can
// bind a real server (redis-server) to. Pod annotations PodReadyDelayAnnotation and
// PodDeleteDelayAnnotation slow starts and terminations down.
//
// No Service should select loopback pod IPs: EndpointSlices reject them. A StatefulSet's
// serviceName only has to be set.
//
// It may import test/fixture (kwok's taint, the test log writer), test/pki (the cluster's
// certificates), test/proc, client-go and sigs.k8s.io/yaml; nothing of the product.
package localcluster

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/test/proc"
)

const (
	// DefaultPodNetwork is the first pod network tried when Config.PodNetwork is empty.
	DefaultPodNetwork = "127.10"
	// DefaultStartTimeout is the default Config.StartTimeout.
	DefaultStartTimeout = 60 * time.Second
	// DefaultNodeLeaseDuration is the default Config.NodeLeaseDuration: the kubelet's default
	// nodeLeaseDurationSeconds.
	DefaultNodeLeaseDuration = 40 * time.Second

	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1" // the kubernetes Service, first address of serviceCIDR

	pollInterval = 100 * time.Millisecond
	probeTimeout = 2 * time.Second
	logTailBytes = 3000
)

// Config describes a local cluster. The zero value is a valid configuration.
type Config struct {
	// Binaries locates the executables; DefaultBinaries() when zero.
	Binaries Binaries
	// WorkDir holds the certificates, kubeconfigs, etcd's data and each component's log
	// (<component>.log). A new temporary directory when empty, removed by Stop unless
	// KeepWorkDir is set. A given WorkDir must be empty or missing; it is created if needed
	// and never removed.
	WorkDir string
	// KeepWorkDir keeps a temporary WorkDir after Stop, for inspecting the logs. A temporary
	// WorkDir is also kept when Start fails.
	KeepWorkDir bool
	// PodNetwork is the first two octets of the loopback range of pod IPs, such as "127.10":
	// the i-th node added gets the pod CIDR <PodNetwork>.<i>.0/24 and the InternalIP
	// <PodNetwork>.0.<i>. Clusters running at once on a machine need different ranges, so a
	// cluster claims its range for its lifetime with a lock file in os.TempDir(); Start fails
	// if another cluster holds the range given here. When empty, the first free range from
	// DefaultPodNetwork (127.10, 127.11, ...) is used; see Cluster.PodNetwork.
	PodNetwork string
	// Log receives a progress line per component ("localcluster: etcd ready in 1.2s");
	// discarded when nil.
	Log io.Writer
	// StartTimeout bounds Start (DefaultStartTimeout when 0).
	StartTimeout time.Duration
	// NodeLeaseDuration is the duration of the Lease in kube-node-lease that kwok holds for every
	// node and renews every quarter of it, as the kubelet does (kwok's
	// --node-lease-duration-seconds, whole seconds; DefaultNodeLeaseDuration when 0). Without
	// node leases the node lifecycle controller marks every node NotReady, and every pod on it,
	// NodeMonitorGracePeriod after the node was created.
	NodeLeaseDuration time.Duration
	// NodeMonitorGracePeriod is how long a node may go without a renewed lease before the node
	// lifecycle controller marks it NotReady (kube-controller-manager's
	// --node-monitor-grace-period; its default, 50 s, when 0). It must exceed twice the lease's
	// renew interval (NodeLeaseDuration/4), or healthy nodes flap. Tests lower it to see a lost
	// lease quickly; the lease path is the same.
	NodeMonitorGracePeriod time.Duration
	// NodeMonitorPeriod is how often the node lifecycle controller checks the leases
	// (kube-controller-manager's --node-monitor-period; its default, 5 s, when 0).
	NodeMonitorPeriod time.Duration
}

// kube-controller-manager's defaults of the node lifecycle controller's periods, for validation.
const (
	kcmNodeMonitorGracePeriod = 50 * time.Second
	kcmNodeMonitorPeriod      = 5 * time.Second
)

// withDefaults returns cfg with defaults filled in, or an error if it is invalid.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Binaries.isZero() {
		b, err := DefaultBinaries()
		if err != nil {
			return cfg, err
		}
		cfg.Binaries = b
	} else if err := cfg.Binaries.Validate(); err != nil {
		return cfg, err
	}
	// 127.0 holds 127.0.0.1, where the control plane listens.
	if ip := net.ParseIP(cfg.PodNetwork + ".0.0").To4(); cfg.PodNetwork != "" && (ip == nil || ip[0] != 127 || ip[1] == 0) {
		return cfg, fmt.Errorf("localcluster: PodNetwork %q: want the first two octets of a 127.x.0.0/16 range (x > 0), such as %q", cfg.PodNetwork, DefaultPodNetwork)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StartTimeout < 0 {
		return cfg, fmt.Errorf("localcluster: negative StartTimeout %v", cfg.StartTimeout)
	}
	if cfg.NodeLeaseDuration == 0 {
		cfg.NodeLeaseDuration = DefaultNodeLeaseDuration
	}
	if cfg.NodeLeaseDuration < time.Second || cfg.NodeLeaseDuration%time.Second != 0 {
		return cfg, fmt.Errorf("localcluster: NodeLeaseDuration %v: want whole seconds, at least 1s", cfg.NodeLeaseDuration)
	}
	if cfg.NodeMonitorGracePeriod < 0 || cfg.NodeMonitorPeriod < 0 {
		return cfg, fmt.Errorf("localcluster: negative NodeMonitorGracePeriod %v or NodeMonitorPeriod %v", cfg.NodeMonitorGracePeriod, cfg.NodeMonitorPeriod)
	}
	grace := cmp.Or(cfg.NodeMonitorGracePeriod, kcmNodeMonitorGracePeriod)
	if renew := cfg.NodeLeaseDuration / 4; grace <= 2*renew {
		return cfg, fmt.Errorf("localcluster: NodeMonitorGracePeriod %v must exceed twice the lease renew interval %v (NodeLeaseDuration/4), or healthy nodes flap", grace, renew)
	}
	if period := cmp.Or(cfg.NodeMonitorPeriod, kcmNodeMonitorPeriod); period >= grace {
		return cfg, fmt.Errorf("localcluster: NodeMonitorPeriod %v must be shorter than NodeMonitorGracePeriod %v", period, grace)
	}
	return cfg, nil
}

// component is a started control-plane process. proc, started, down, supervised and ran change
// when the component is (re)started or stopped, under Cluster.mu.
type component struct {
	name    string
	path    string
	args    []string
	logPath string
	proc    *proc.Process
	grace   time.Duration // how long Stop waits after SIGTERM
	started time.Time
	down    bool // stopped on purpose (StopAPIServer); not restarted until StartAPIServer
	// supervised: the cluster has started, and an exit restarts the process (supervise).
	supervised bool
	ran        chan struct{} // closed and replaced whenever proc is replaced
}

// Cluster is a running local cluster. Its methods are safe for concurrent use.
type Cluster struct {
	cfg         Config
	workDir     string
	removeDir   bool // the work dir is a temporary one
	pki         *clusterPKI
	netLock     *networkLock
	restConfig  *rest.Config
	client      kubernetes.Interface
	components  []*component // in start order
	startupTime time.Duration

	mu       sync.Mutex
	nextNode int // index of the next node, from 1
	stopped  bool

	stopCh      chan struct{} // closed by Stop
	supervisors sync.WaitGroup
}

// ports are the loopback ports of a cluster's listeners.
type ports struct {
	etcdClient, etcdPeer, etcdMetrics, apiserver, kcm, scheduler, kwok int
}

// Start starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, and waits
// until all are healthy and the default ServiceAccount exists, so that pods can be created. It
// has no nodes yet (see AddNode). On error, everything already started is stopped, and the error
// says where the logs are. Callers must call Stop (t.Cleanup(c.Stop), or StartForTest).
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	began := time.Now()
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, workDir: cfg.WorkDir, nextNode: 1, stopCh: make(chan struct{})}
	if c.workDir == "" {
		if c.workDir, err = os.MkdirTemp("", "localcluster-"); err != nil {
			return nil, fmt.Errorf("localcluster: work dir: %w", err)
		}
		c.removeDir = true
	} else if err := os.MkdirAll(c.workDir, 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: work dir: %w", err)
	} else if entries, err := os.ReadDir(c.workDir); err != nil {
		return nil, fmt.Errorf("localcluster: work dir: %w", err)
	} else if len(entries) > 0 {
		// An old etcd data dir would bring back objects signed by an old CA.
		return nil, fmt.Errorf("localcluster: work dir %s is not empty: a cluster needs a fresh one", c.workDir)
	}
	defer func() {
		if err != nil {
			c.stop(true)
			err = fmt.Errorf("%w (logs in %s)", err, c.workDir)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	if c.cfg.PodNetwork == "" {
		c.cfg.PodNetwork, c.netLock, err = lockFreeNetwork()
	} else {
		c.netLock, err = lockNetwork(c.cfg.PodNetwork)
	}
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}

	p, err := clusterPorts(c.cfg.PodNetwork, 7)
	if err != nil {
		return nil, fmt.Errorf("localcluster: ports: %w", err)
	}
	pt := ports{p[0], p[1], p[2], p[3], p[4], p[5], p[6]}
	serverURL := "https://127.0.0.1:" + strconv.Itoa(pt.apiserver)
	if c.pki, err = writePKI(filepath.Join(c.workDir, "pki"), serverURL); err != nil {
		return nil, fmt.Errorf("localcluster: pki: %w", err)
	}
	if c.restConfig, err = clientcmd.BuildConfigFromFlags("", c.pki.adminKubeconfig); err != nil {
		return nil, fmt.Errorf("localcluster: admin kubeconfig: %w", err)
	}
	c.restConfig.QPS, c.restConfig.Burst = 200, 400
	c.restConfig.UserAgent = "localcluster"
	if c.client, err = kubernetes.NewForConfig(c.restConfig); err != nil {
		return nil, fmt.Errorf("localcluster: client: %w", err)
	}

	// etcd, then the apiserver, then the rest at once: they only need the apiserver.
	etcd, err := c.startEtcd(pt)
	if err != nil {
		return nil, err
	}
	if err := c.waitHealthy(ctx, etcd, httpProbe(fmt.Sprintf("http://127.0.0.1:%d/health", pt.etcdClient), `"health":"true"`)); err != nil {
		return nil, err
	}
	apiserver, err := c.startAPIServer(pt)
	if err != nil {
		return nil, err
	}
	if err := c.waitHealthy(ctx, apiserver, c.apiserverReady); err != nil {
		return nil, err
	}
	kcm, err := c.startControllerManager(pt)
	if err != nil {
		return nil, err
	}
	scheduler, err := c.startScheduler(pt)
	if err != nil {
		return nil, err
	}
	kwok, err := c.startKwok(pt)
	if err != nil {
		return nil, err
	}
	for _, w := range []struct {
		comp  *component
		probe func(context.Context) error
	}{
		{kcm, httpProbe(fmt.Sprintf("https://127.0.0.1:%d/healthz", pt.kcm), "ok")},
		{scheduler, httpProbe(fmt.Sprintf("https://127.0.0.1:%d/healthz", pt.scheduler), "ok")},
		{kwok, httpProbe(fmt.Sprintf("http://127.0.0.1:%d/healthz", pt.kwok), "")},
	} {
		if err := c.waitHealthy(ctx, w.comp, w.probe); err != nil {
			return nil, err
		}
	}
	// Pods cannot be created in a namespace before its default ServiceAccount exists.
	saStart := time.Now()
	if err := c.waitServiceAccount(ctx, metav1.NamespaceDefault); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "localcluster: default ServiceAccount ready in %v\n", roundDuration(time.Since(saStart)))
	c.mu.Lock()
	for _, comp := range c.components {
		comp.supervised = true
		c.supervisors.Go(func() { c.supervise(comp) })
	}
	c.mu.Unlock()
	c.startupTime = time.Since(began)
	fmt.Fprintf(cfg.Log, "localcluster: cluster ready in %v (apiserver %s, pod network %s.0.0/16, work dir %s)\n",
		roundDuration(c.startupTime), serverURL, c.cfg.PodNetwork, c.workDir)
	return c, nil
}

// start starts a component whose output goes to <WorkDir>/<name>.log.
func (c *Cluster) start(name, path string, grace time.Duration, args ...string) (*component, error) {
	comp := &component{name: name, path: path, args: args, logPath: c.logPath(name), grace: grace, ran: make(chan struct{})}
	if err := c.run(comp); err != nil {
		return nil, err
	}
	c.components = append(c.components, comp)
	return comp, nil
}

// run starts comp's process (again, after a stop); its output is appended to its log.
func (c *Cluster) run(comp *component) error {
	p, err := proc.Start(proc.Spec{Name: comp.name, Path: comp.path, Args: comp.args, Dir: c.workDir, LogPath: comp.logPath})
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	comp.proc, comp.started, comp.down = p, time.Now(), false
	close(comp.ran)
	comp.ran = make(chan struct{})
	return nil
}

// Supervision: once the cluster has started, a component whose process exits is started again,
// as the kubelet restarts a control plane's static pods. kube-scheduler, for one, exits on purpose
// when its cache is inconsistent, which an API server that restarts can cause.
const (
	// restartDelay is the first delay before a restart; it doubles, up to maxRestartDelay, while
	// the component keeps exiting within stableRun of its start.
	restartDelay    = 500 * time.Millisecond
	maxRestartDelay = 10 * time.Second
	stableRun       = 30 * time.Second
)

// supervise restarts comp whenever its process exits, until the cluster stops. A component
// stopped on purpose (StopAPIServer) is left down until it is started again.
func (c *Cluster) supervise(comp *component) {
	delay := restartDelay
	for {
		c.mu.Lock()
		p, ran := comp.proc, comp.ran
		c.mu.Unlock()
		select {
		case <-p.Done():
		case <-ran: // replaced (StartAPIServer): watch the new process
			continue
		case <-c.stopCh:
			return
		}
		c.mu.Lock()
		stopped, down, replaced, started := c.stopped, comp.down, comp.proc != p, comp.started
		c.mu.Unlock()
		if stopped {
			return
		}
		if down || replaced {
			select {
			case <-ran:
				continue
			case <-c.stopCh:
				return
			}
		}
		_, err := p.Exited()
		if time.Since(started) > stableRun {
			delay = restartDelay
		}
		fmt.Fprintf(c.cfg.Log, "localcluster: %s exited (%v); restarting it in %v; end of %s:\n%s\n",
			comp.name, err, delay, comp.logPath, p.LogTail(logTailBytes))
		select {
		case <-time.After(delay):
		case <-c.stopCh:
			return
		}
		delay = min(2*delay, maxRestartDelay)
		c.mu.Lock()
		if !c.stopped && !comp.down && comp.proc == p {
			if err := c.run(comp); err != nil {
				fmt.Fprintf(c.cfg.Log, "localcluster: restart %s: %v\n", comp.name, err)
			}
		}
		c.mu.Unlock()
	}
}

func (c *Cluster) startEtcd(pt ports) (*component, error) {
	peer := fmt.Sprintf("http://127.0.0.1:%d", pt.etcdPeer)
	client := fmt.Sprintf("http://127.0.0.1:%d", pt.etcdClient)
	return c.start("etcd", c.cfg.Binaries.Etcd, 10*time.Second,
		"--name=localcluster",
		"--data-dir="+filepath.Join(c.workDir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=localcluster="+peer,
		fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", pt.etcdMetrics),
		"--unsafe-no-fsync", // test data only
		"--log-level=warn",
	)
}

func (c *Cluster) startAPIServer(pt ports) (*component, error) {
	p := c.pki
	return c.start("kube-apiserver", c.cfg.Binaries.APIServer, 10*time.Second,
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", pt.etcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", pt.apiserver),
		"--cert-dir="+filepath.Join(c.workDir, "kube-apiserver"),
		"--tls-cert-file="+p.serverCert,
		"--tls-private-key-file="+p.serverKey,
		"--client-ca-file="+p.caCert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.saPub,
		"--service-account-signing-key-file="+p.saKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--requestheader-client-ca-file="+p.frontProxyCACert,
		"--requestheader-allowed-names="+frontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+p.proxyCert,
		"--proxy-client-key-file="+p.proxyKey,
		// Nothing can reach 127.0.0.1 through the kubernetes Service's endpoints.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
	)
}

func (c *Cluster) startControllerManager(pt ports) (*component, error) {
	p := c.pki
	args := []string{
		"--kubeconfig=" + p.kcmKubeconfig,
		"--authentication-kubeconfig=" + p.kcmKubeconfig,
		"--authorization-kubeconfig=" + p.kcmKubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", pt.kcm),
		"--cert-dir=" + filepath.Join(c.workDir, "kube-controller-manager"),
		// Every default controller, among them statefulset, disruption (PDB status, which the
		// Eviction API reads), garbage collector, serviceaccount, node lifecycle and pod GC.
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		// ServiceAccount tokens and the kube-root-ca.crt ConfigMaps.
		"--root-ca-file=" + p.caCert,
		"--service-account-private-key-file=" + p.saKey,
		"--cluster-signing-cert-file=" + p.caCert,
		"--cluster-signing-key-file=" + p.caKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allocate-node-cidrs=false", // AddNode sets each node's pod CIDR
		// Faster reactions than the defaults, for tests.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--concurrent-statefulset-syncs=10",
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		"--concurrent-gc-syncs=30",
		"--profiling=false",
	}
	if d := c.cfg.NodeMonitorGracePeriod; d > 0 {
		args = append(args, "--node-monitor-grace-period="+d.String())
	}
	if d := c.cfg.NodeMonitorPeriod; d > 0 {
		args = append(args, "--node-monitor-period="+d.String())
	}
	return c.start("kube-controller-manager", c.cfg.Binaries.ControllerManager, 5*time.Second, args...)
}

func (c *Cluster) startScheduler(pt ports) (*component, error) {
	p := c.pki
	config := map[string]any{
		"apiVersion": "kubescheduler.config.k8s.io/v1",
		"kind":       "KubeSchedulerConfiguration",
		"clientConnection": map[string]any{
			"kubeconfig": p.schedulerKubeconfig,
			"qps":        200,
			"burst":      400,
		},
		"leaderElection": map[string]any{"leaderElect": false},
		// Retry unschedulable pods sooner than the defaults (1 s, 10 s), for tests.
		"podInitialBackoffSeconds": 1,
		"podMaxBackoffSeconds":     2,
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("localcluster: kube-scheduler config: %w", err)
	}
	configPath := filepath.Join(c.workDir, "kube-scheduler.yaml")
	if err := os.WriteFile(configPath, data, 0o644); err != nil {
		return nil, fmt.Errorf("localcluster: kube-scheduler config: %w", err)
	}
	return c.start("kube-scheduler", c.cfg.Binaries.Scheduler, 5*time.Second,
		"--config="+configPath,
		"--authentication-kubeconfig="+p.schedulerKubeconfig,
		"--authorization-kubeconfig="+p.schedulerKubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", pt.scheduler),
		"--cert-dir="+filepath.Join(c.workDir, "kube-scheduler"),
	)
}

func (c *Cluster) startKwok(pt ports) (*component, error) {
	configPath := filepath.Join(c.workDir, "kwok.yaml")
	if err := writeKwokConfig(configPath, c.cfg.Binaries.KwokStages); err != nil {
		return nil, fmt.Errorf("localcluster: kwok config: %w", err)
	}
	return c.start("kwok", c.cfg.Binaries.Kwok, 5*time.Second,
		"--kubeconfig="+c.pki.adminKubeconfig,
		"--config="+configPath,
		"--manage-all-nodes=true",
		"--cidr="+c.cfg.PodNetwork+".0.0/16",
		fmt.Sprintf("--server-address=127.0.0.1:%d", pt.kwok),
		// A Lease per node, renewed every quarter of its duration, keeps the node lifecycle
		// controller from marking nodes and their pods NotReady.
		fmt.Sprintf("--node-lease-duration-seconds=%d", int(c.cfg.NodeLeaseDuration/time.Second)),
	)
}

// waitHealthy polls probe until it succeeds, the component exits, or ctx ends, and prints how
// long the component took to become healthy since it started.
func (c *Cluster) waitHealthy(ctx context.Context, comp *component, probe func(context.Context) error) error {
	var last error
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		last = probe(pctx)
		return last == nil, nil
	})
	var exited *exitError
	switch {
	case errors.As(err, &exited):
		return err
	case err != nil:
		return fmt.Errorf("localcluster: %s: not healthy after %v: %w (last probe: %v); end of %s:\n%s",
			comp.name, roundDuration(time.Since(comp.started)), err, last, comp.logPath, comp.proc.LogTail(logTailBytes))
	}
	fmt.Fprintf(c.cfg.Log, "localcluster: %s ready in %v\n", comp.name, roundDuration(time.Since(comp.started)))
	return nil
}

// poll runs cond every pollInterval until it returns true or an error, a component exits, or
// ctx ends.
func (c *Cluster) poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	timeout := DefaultStartTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	return wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
}

// exitError reports a component that exited while the cluster was starting or waiting.
type exitError struct{ msg string }

func (e *exitError) Error() string { return e.msg }

// exited returns an *exitError, with the end of the component's log, if a component has exited
// while the cluster starts (one stopped on purpose, or supervised and so restarted, does not
// count).
func (c *Cluster) exited() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.components {
		if comp.down || comp.supervised {
			continue
		}
		if done, err := comp.proc.Exited(); done {
			return &exitError{fmt.Sprintf("localcluster: %s exited early (%v); end of %s:\n%s",
				comp.name, err, comp.logPath, comp.proc.LogTail(logTailBytes))}
		}
	}
	return nil
}

// apiserverReady probes the apiserver's /readyz with the admin credentials.
func (c *Cluster) apiserverReady(ctx context.Context) error {
	body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %w: %s", err, body)
	}
	return nil
}

// waitServiceAccount waits until the default ServiceAccount of namespace exists.
func (c *Cluster) waitServiceAccount(ctx context.Context, namespace string) error {
	began := time.Now()
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		default:
			return false, nil // transient; retried until the deadline
		}
	})
	if err != nil {
		return fmt.Errorf("localcluster: namespace %s: no default ServiceAccount after %v (kube-controller-manager log: %s): %w",
			namespace, roundDuration(time.Since(began)), c.logPath("kube-controller-manager"), err)
	}
	return nil
}

// httpProbe returns a probe that GETs url (TLS without verification: health endpoints only) and
// wants status 200 and, when want is not empty, a body containing want.
func httpProbe(url, want string) func(context.Context) error {
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
		DisableKeepAlives: true,
	}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}

// roundDuration rounds d for progress lines.
func roundDuration(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

// Kubeconfig returns the path of a kubeconfig file with admin (system:masters) credentials;
// certificates are embedded, so the file can be copied. It is removed by Stop unless the work
// dir is kept.
func (c *Cluster) Kubeconfig() string { return c.pki.adminKubeconfig }

// RESTConfig returns a copy of the admin client configuration (QPS 200, burst 400).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client returns a clientset with admin credentials.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// WorkDir returns the directory holding the cluster's certificates, kubeconfigs, data and
// component logs (<component>.log).
func (c *Cluster) WorkDir() string { return c.workDir }

// StartupTime returns how long Start took.
func (c *Cluster) StartupTime() time.Duration { return c.startupTime }

// PodNetwork returns the first two octets of the cluster's pod IP range, such as "127.10"
// (Config.PodNetwork, or the free range Start chose).
func (c *Cluster) PodNetwork() string { return c.cfg.PodNetwork }

// Pids returns the process id of each component by name ("etcd", "kube-apiserver",
// "kube-controller-manager", "kube-scheduler", "kwok"), for checking that none is left behind.
func (c *Cluster) Pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make(map[string]int, len(c.components))
	for _, comp := range c.components {
		pids[comp.name] = comp.proc.Pid()
	}
	return pids
}

// StopAPIServer kills kube-apiserver (SIGKILL: it goes away at once, as in a crash; its graceful
// shutdown takes 10 s) and leaves etcd and the other components running: they, and every client, see the API server down (connection
// refused) until StartAPIServer. Keep the outage well under NodeMonitorGracePeriod: once the API
// server is back, kube-controller-manager must see the renewed node leases before the grace
// period ends, or it marks the nodes and their pods NotReady.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	comp, err := c.componentLocked("kube-apiserver")
	if err != nil {
		return err
	}
	if comp.down {
		return errors.New("localcluster: kube-apiserver is already stopped")
	}
	began := time.Now()
	comp.down = true
	comp.proc.Kill()
	fmt.Fprintf(c.cfg.Log, "localcluster: kube-apiserver stopped in %v\n", roundDuration(time.Since(began)))
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the same flags (the same
// etcd, certificates and port, so clients reconnect with what they have), and waits until
// /readyz answers or ctx ends.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	comp, err := c.componentLocked("kube-apiserver")
	switch {
	case err != nil:
	case !comp.down:
		err = errors.New("localcluster: kube-apiserver is running")
	default:
		err = c.run(comp)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	return c.waitHealthy(ctx, comp, c.apiserverReady)
}

// componentLocked returns the component named name; c.mu must be held.
func (c *Cluster) componentLocked(name string) (*component, error) {
	if c.stopped {
		return nil, errors.New("localcluster: cluster stopped")
	}
	for _, comp := range c.components {
		if comp.name == name {
			return comp, nil
		}
	}
	return nil, fmt.Errorf("localcluster: no component %s", name)
}

// Stop stops kwok, kube-scheduler, kube-controller-manager, kube-apiserver and etcd, in that
// order (SIGTERM, then SIGKILL after a few seconds), and removes a temporary work dir unless
// Config.KeepWorkDir is set. It is idempotent.
func (c *Cluster) Stop() { c.stop(c.cfg.KeepWorkDir) }

// stop stops the components and removes a temporary work dir unless keep is set.
func (c *Cluster) stop(keep bool) {
	defer c.supervisors.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	close(c.stopCh)
	began := time.Now()
	// The components that only talk to the apiserver stop at once, then the apiserver, then etcd.
	var wg sync.WaitGroup
	for i := len(c.components) - 1; i >= 0; i-- {
		comp := c.components[i]
		if comp.name == "kube-apiserver" || comp.name == "etcd" {
			continue
		}
		wg.Go(func() { comp.proc.Stop(comp.grace) })
	}
	wg.Wait()
	for i := len(c.components) - 1; i >= 0; i-- {
		c.components[i].proc.Stop(c.components[i].grace)
	}
	c.netLock.unlock()
	if c.removeDir && !keep {
		_ = os.RemoveAll(c.workDir)
	}
	fmt.Fprintf(c.cfg.Log, "localcluster: stopped in %v\n", roundDuration(time.Since(began)))
}

// logPath returns the path of a component's log file.
func (c *Cluster) logPath(component string) string {
	return filepath.Join(c.workDir, component+".log")
}
