package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

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
	if err := c.makeWorkDir(); err != nil {
		return nil, err
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
	if err := c.makeClient(serverURL); err != nil {
		return nil, err
	}
	if err := c.startControlPlane(ctx, pt); err != nil {
		return nil, err
	}
	// Pods cannot be created in a namespace before its default ServiceAccount exists.
	saStart := time.Now()
	if err := c.waitServiceAccount(ctx, metav1.NamespaceDefault); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "localcluster: default ServiceAccount ready in %v\n", roundDuration(time.Since(saStart)))
	c.superviseAll()
	c.startupTime = time.Since(began)
	fmt.Fprintf(cfg.Log, "localcluster: cluster ready in %v (apiserver %s, pod network %s.0.0/16, work dir %s)\n",
		roundDuration(c.startupTime), serverURL, c.cfg.PodNetwork, c.workDir)
	return c, nil
}

// makeWorkDir makes the cluster's work dir: a new temporary one when Config.WorkDir is empty,
// otherwise Config.WorkDir, which must be empty or missing.
func (c *Cluster) makeWorkDir() error {
	if c.workDir == "" {
		var err error
		if c.workDir, err = os.MkdirTemp("", "localcluster-"); err != nil {
			return fmt.Errorf("localcluster: work dir: %w", err)
		}
		c.removeDir = true
		return nil
	}
	if err := os.MkdirAll(c.workDir, 0o755); err != nil {
		return fmt.Errorf("localcluster: work dir: %w", err)
	}
	entries, err := os.ReadDir(c.workDir)
	if err != nil {
		return fmt.Errorf("localcluster: work dir: %w", err)
	}
	if len(entries) > 0 {
		// An old etcd data dir would bring back objects signed by an old CA.
		return fmt.Errorf("localcluster: work dir %s is not empty: a cluster needs a fresh one", c.workDir)
	}
	return nil
}

// makeClient writes the cluster's certificates and kubeconfigs for the API server at serverURL
// and makes the admin client (QPS 200, burst 400).
func (c *Cluster) makeClient(serverURL string) error {
	var err error
	if c.pki, err = writePKI(filepath.Join(c.workDir, "pki"), serverURL); err != nil {
		return fmt.Errorf("localcluster: pki: %w", err)
	}
	if c.restConfig, err = clientcmd.BuildConfigFromFlags("", c.pki.adminKubeconfig); err != nil {
		return fmt.Errorf("localcluster: admin kubeconfig: %w", err)
	}
	c.restConfig.QPS, c.restConfig.Burst = 200, 400
	c.restConfig.UserAgent = "localcluster"
	if c.client, err = kubernetes.NewForConfig(c.restConfig); err != nil {
		return fmt.Errorf("localcluster: client: %w", err)
	}
	return nil
}

// startControlPlane starts etcd, then the apiserver, then the rest at once (they only need the
// apiserver), each waited for until healthy.
func (c *Cluster) startControlPlane(ctx context.Context, pt ports) error {
	etcd, err := c.startEtcd(pt)
	if err != nil {
		return err
	}
	if err := c.waitHealthy(ctx, etcd, httpProbe(fmt.Sprintf("http://127.0.0.1:%d/health", pt.etcdClient), `"health":"true"`)); err != nil {
		return err
	}
	apiserver, err := c.startAPIServer(pt)
	if err != nil {
		return err
	}
	if err := c.waitHealthy(ctx, apiserver, c.apiserverReady); err != nil {
		return err
	}
	kcm, err := c.startControllerManager(pt)
	if err != nil {
		return err
	}
	scheduler, err := c.startScheduler(pt)
	if err != nil {
		return err
	}
	kwok, err := c.startKwok(pt)
	if err != nil {
		return err
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
			return err
		}
	}
	return nil
}

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
