package harness

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/provisioner"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// DefaultBedTimeout bounds StartBed when BedOptions.Timeout is 0.
const DefaultBedTimeout = 2 * time.Minute

// BedOptions configure StartBed.
type BedOptions struct {
	// Log receives progress lines (discarded when nil).
	Log io.Writer
	// WorkDir holds the cluster's files and every environment's Redis data (a temporary
	// directory, removed by Stop, when empty).
	WorkDir string
	// Zones are the bed's nodes, by zone (scenario.ThreeZones() when nil). Every scenario laid
	// out on the bed must name exactly these nodes and zones.
	Zones []scenario.Zone
	// Cluster configures the local cluster (WorkDir and Log are filled in).
	Cluster localcluster.Config
	// Timeout bounds StartBed (DefaultBedTimeout when 0).
	Timeout time.Duration
	// Realistic, when set, gives the bed the realistic profile (realistic.go): pods, Redis and
	// node losses as slow as on a cloud. When nil, RealisticEnv may set it.
	Realistic *Realistic
}

// Bed is a test bed: one local cluster with a fixed set of zoned kwok nodes, on which several
// environments (Env, one per test) lay out their scenarios side by side. Each environment has its
// own namespace, its own Redis pod runtime, its own Redis client port (so that a pod IP reused by
// another environment never reaches the wrong Redis Cluster) and its own writer, so environments
// do not see each other: kube-scheduler counts topology spread constraints and pod anti-affinity
// within a namespace, and the rules count the pods of one Redis cluster. What they share is the
// nodes and the control plane: a test that changes a node (cordon, taint, delete) or stops the
// API server must not run while another environment runs.
type Bed struct {
	// Cluster is the local cluster.
	Cluster *localcluster.Cluster
	// Zones are the bed's nodes, by zone.
	Zones []scenario.Zone
	// Started is when the bed's nodes were all Ready.
	Started time.Time
	// Provisioner provisions the claims of StorageClass provisioner.StorageClass (zonal
	// PersistentVolumes, WaitForFirstConsumer) for every environment.
	Provisioner *provisioner.Provisioner
	// Realistic is the bed's realistic profile, its defaults filled (nil without one).
	Realistic *Realistic
	// kubelet is the realistic profile's kubelet stand-in.
	kubelet *kubelet

	log      io.Writer
	workDir  string
	ownsDir  bool
	stopOnce sync.Once

	// declared are the nodes as StartBed made them, by name: what Settle and RestoreNodes
	// compare with.
	declared map[string]*corev1.Node

	mu     sync.Mutex
	envs   int            // environments set up so far
	live   map[string]int // namespaces running tests use (markLive)
	probes int            // Settle's probe pods so far
}

// BedNodeMonitorGracePeriod is a bed's kube-controller-manager --node-monitor-grace-period unless
// BedOptions.Cluster sets one. Tests that stop kube-apiserver leave the node lifecycle controller
// without lease renewals for the outage plus its informers' relist backoff (up to 30 s); with the
// default 50 s it may then mark every node NotReady, and with it every pod, and kwok never marks a
// Running pod Ready again (its pod-ready stage matches Pending pods only; a kubelet would). A
// bed's outages are bounded (about a minute), so 3 minutes keeps the nodes Ready through them.
const BedNodeMonitorGracePeriod = 3 * time.Minute

// StartBed starts a local cluster and adds the nodes of opts.Zones. On error everything already
// started is stopped. Call Stop.
func StartBed(ctx context.Context, opts BedOptions) (_ *Bed, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Zones == nil {
		opts.Zones = scenario.ThreeZones()
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultBedTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	b := &Bed{Zones: opts.Zones, log: opts.Log, workDir: opts.WorkDir}
	if b.workDir == "" {
		if b.workDir, err = os.MkdirTemp("", "rebalancer-e2e-"); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		b.ownsDir = true
	}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	if opts.Realistic == nil {
		if opts.Realistic, err = RealisticFromEnv(); err != nil {
			return nil, err
		}
	}
	ccfg := opts.Cluster
	ccfg.Log = opts.Log
	if opts.Realistic != nil {
		r := opts.Realistic.withDefaults()
		b.Realistic = &r
		ccfg.NodeMonitorGracePeriod = cmp.Or(ccfg.NodeMonitorGracePeriod, r.NodeMonitorGracePeriod)
	}
	if ccfg.NodeMonitorGracePeriod == 0 {
		ccfg.NodeMonitorGracePeriod = BedNodeMonitorGracePeriod
	}
	if ccfg.WorkDir == "" {
		ccfg.WorkDir = filepath.Join(b.workDir, "cluster")
	}
	start := time.Now()
	if b.Cluster, err = localcluster.Start(ctx, ccfg); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	b.declared = map[string]*corev1.Node{}
	for _, z := range b.Zones {
		for _, n := range z.Nodes {
			node, err := b.Cluster.AddNode(ctx, localcluster.NodeSpec{Name: n, Zone: z.Name})
			if err != nil {
				return nil, fmt.Errorf("harness: %w", err)
			}
			b.declared[n] = node
		}
	}
	if _, err := b.Cluster.Namespace(ctx, settleNamespace); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if b.Provisioner, err = provisioner.Start(ctx, provisioner.Config{Client: b.Cluster.Client(), Log: opts.Log}); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if b.Realistic != nil {
		if b.kubelet, err = startKubelet(ctx, b.Cluster.Client(), *b.Realistic, opts.Log); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
	}
	b.Started = time.Now()
	fmt.Fprintf(b.log, "[harness] test bed up in %s: %d nodes in %d zones, StorageClass %s (zonal volumes)\n", time.Since(start).Round(10*time.Millisecond), len(b.declared), len(b.Zones), provisioner.StorageClass)
	return b, nil
}

// Stop stops the local cluster and removes the work dir it created. Environments must be
// stopped first. Safe to call more than once.
func (b *Bed) Stop() {
	b.stopOnce.Do(func() {
		if b.Provisioner != nil {
			b.Provisioner.Stop()
		}
		if b.kubelet != nil {
			b.kubelet.stop()
		}
		if b.Cluster != nil {
			b.Cluster.Stop()
		}
		if b.ownsDir {
			os.RemoveAll(b.workDir)
		}
	})
}

// fits returns an error unless sc names exactly the bed's zones and nodes: other nodes would
// change what the scheduler and the rules see.
func (b *Bed) fits(sc scenario.Scenario) error {
	if !slices.EqualFunc(sc.Zones, b.Zones, func(a, b scenario.Zone) bool { return a.Name == b.Name && slices.Equal(a.Nodes, b.Nodes) }) {
		return fmt.Errorf("scenario %s needs zones %v, the test bed has %v: give it a bed of its own", sc.Name, sc.Zones, b.Zones)
	}
	return nil
}

// claim returns the next environment's namespace and Redis client port, and marks the namespace
// used by a running test (markLive) until Env.Stop: the namespace is namespace itself when exact,
// else namespace-<i> for the bed's i-th environment; the port is redisrt.DefaultPort for the
// first environment, then one more for each.
func (b *Bed) claim(namespace string, exact bool) (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.envs++
	if !exact {
		namespace = fmt.Sprintf("%s-%d", namespace, b.envs)
	}
	if b.live == nil {
		b.live = map[string]int{}
	}
	b.live[namespace]++ // until Env.Stop
	return namespace, redisrt.DefaultPort + b.envs - 1
}
