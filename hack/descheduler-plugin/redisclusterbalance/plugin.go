// Package redisclusterbalance is RedisClusterBalance, a balance plugin for the descheduler
// framework (sigs.k8s.io/descheduler v0.36) that fixes Redis Cluster pod placements as
// `redis-rebalancer run` does: at every descheduling cycle it observes the Redis clusters,
// judges them against redis-rebalancer's rules, plans the fewest evictions with its planner
// (rebalancer/plan), and makes each move through its executor's steps (rebalancer/execute: the
// health gate, a verified failover of a master to an in-sync replica before its pod is evicted,
// the role check, then the re-creation and rejoin), the eviction itself made by the profile's
// Evictor: the descheduler's PodEvictor, with the DeschedulerPolicy's limits, events and
// metrics. It holds the coordination.k8s.io Lease that redis-rebalancer's run and serve share
// (rebalancer/lease: one actor at a time) while it acts, and skips a cycle while another process
// holds it; under the descheduler's --dry-run it plans and logs only (no failover, no eviction,
// no Lease). A descheduler build registers it with Register (the descheduler has no run-time
// plugin loading): hack/descheduler-plugin.
//
//	apiVersion: descheduler/v1alpha2
//	kind: DeschedulerPolicy
//	profiles:
//	- name: redis
//	  pluginConfig:
//	  - name: DefaultEvictor
//	  - name: RedisClusterBalance
//	    args: {namespaces: {include: [redis]}, redisPort: 6379}
//	  plugins:
//	    balance: {enabled: [RedisClusterBalance]}
package redisclusterbalance

import (
	"context"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	fakeclientset "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"
	"sigs.k8s.io/descheduler/pkg/framework/pluginregistry"
	frameworktypes "sigs.k8s.io/descheduler/pkg/framework/types"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/lease"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// PluginName is the plugin's name in a DeschedulerPolicy.
const PluginName = "RedisClusterBalance"

// Options are what the descheduler's command line tells the plugin: main reads them from its
// flags and passes them to Register.
type Options struct {
	// DryRun is the descheduler's --dry-run: each cycle plans and logs only (no failover, no
	// eviction, no Lease taken). The descheduler (v0.36) does not tell a plugin: its
	// PodEvictor's dry-run flag is unexported and its Handle has none. New also recognises
	// what a dry run hands a plugin, a sandbox clientset (sandboxed), for builds that do not
	// pass the flag.
	DryRun bool
	// Kubeconfig is the descheduler's --kubeconfig: the Lease's namespace defaults to its
	// context's when the descheduler does not run in a pod, and a dry run reads the cluster
	// through it.
	Kubeconfig string
}

// RedisClusterBalance is the plugin: one per profile that enables it.
type RedisClusterBalance struct {
	handle frameworktypes.Handle
	args   *RedisClusterBalanceArgs
	redis  *redisctl.Client
	// dryRun: plan and log only. reader is the client a cycle reads the cluster through: the
	// handle's, or in a dry run one of the kubeconfig's own (the sandbox the descheduler hands
	// its plugins then mirrors no StatefulSet, so a plan made from it would differ from the real
	// one); the executor's dry run makes no write through it.
	dryRun bool
	reader kubernetes.Interface
	// lease is the Lease the plugin holds while it acts (nil: disabled, or a dry run).
	lease *lease.Config
}

var _ frameworktypes.BalancePlugin = &RedisClusterBalance{}

// Register adds RedisClusterBalance, its args, validator and defaulter to registry (the
// descheduler's pluginregistry.PluginRegistry, once descheduler.SetupPlugins has filled it), the
// plugin built with opts.
func Register(registry pluginregistry.Registry, opts Options) {
	build := func(ctx context.Context, args runtime.Object, handle frameworktypes.Handle) (frameworktypes.Plugin, error) {
		return New(ctx, args, handle, opts)
	}
	pluginregistry.Register(PluginName, build, &RedisClusterBalance{}, &RedisClusterBalanceArgs{}, Validate, SetDefaults, registry)
}

// New builds the plugin from its args (a *RedisClusterBalanceArgs, defaulted and validated by
// the descheduler), the profile's handle and the command line's opts. A dry run (opts.DryRun, or
// the handle's clientset a dry run's sandbox) takes no Lease and reads the cluster through a
// client of the kubeconfig's own (the sandbox when there is none); otherwise the Lease's
// namespace defaults to the descheduler's own in a pod, else to its kubeconfig context's. It
// fails on args of another type, a Redis client it cannot create, or a Lease namespace it cannot
// tell.
func New(_ context.Context, args runtime.Object, handle frameworktypes.Handle, opts Options) (frameworktypes.Plugin, error) {
	a, ok := args.(*RedisClusterBalanceArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RedisClusterBalanceArgs, got %T", PluginName, args)
	}
	rc, err := newRedis(a)
	if err != nil {
		return nil, err
	}
	p := &RedisClusterBalance{handle: handle, args: a, redis: rc, dryRun: opts.DryRun || sandboxed(handle.ClientSet()), reader: handle.ClientSet()}
	if p.dryRun {
		if p.reader, err = clusterReader(opts.Kubeconfig); err != nil {
			klog.InfoS("Dry run: the cluster is read from the descheduler's sandbox, which mirrors no StatefulSet: the plan may differ from a real cycle's", "plugin", PluginName, "err", err)
			p.reader = handle.ClientSet()
		}
	}
	if l := a.Lease; !p.dryRun && (l == nil || !l.Disabled) {
		if l == nil {
			l = &LeaseArgs{Name: lease.DefaultName}
		}
		cfg, err := leaseConfig(handle.ClientSet(), l, opts.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", PluginName, err)
		}
		p.lease = &cfg
	}
	return p, nil
}

// newRedis returns the Redis client of a's port.
func newRedis(a *RedisClusterBalanceArgs) (*redisctl.Client, error) {
	rc, err := redisctl.New(redisctl.Options{Port: int(a.RedisPort)})
	if err != nil {
		return nil, fmt.Errorf("%s: redis client: %w", PluginName, err)
	}
	return rc, nil
}

// clientConfig loads kubeconfig the descheduler's way (an explicit path, else $KUBECONFIG,
// ~/.kube/config, in a pod its ServiceAccount), as run's kubeconfig is loaded.
func clientConfig(kubeconfig string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
}

// clusterReader returns a client of the cluster kubeconfig names (clientConfig), which a dry
// run reads through.
func clusterReader(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientConfig(kubeconfig).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}

// sandboxed reports whether client is what the descheduler (v0.36) hands its plugins under
// --dry-run: a client-go fake clientset that mirrors the cluster's pods, nodes, namespaces,
// PriorityClasses, PodDisruptionBudgets and PersistentVolumeClaims, in which an eviction deletes
// the pod (pkg/descheduler/kubeclientsandbox.go). A plugin that reaches outside it (Redis) must
// change nothing.
func sandboxed(client kubernetes.Interface) bool {
	_, ok := client.(*fakeclientset.Clientset)
	return ok
}

// leaseConfig is the Lease l names, held through client by an identity of its own (the hostname
// and a random suffix, as run's and serve's), given up at once when another process holds it
// (a cycle skips; the next tries again). Its namespace, when l names none, is the descheduler's
// own in a pod, else its kubeconfig's context's ("default" when neither says), as run's.
func leaseConfig(client kubernetes.Interface, l *LeaseArgs, kubeconfig string) (lease.Config, error) {
	ns := l.Namespace
	if ns == "" {
		var err error
		if ns, _, err = clientConfig(kubeconfig).Namespace(); err != nil {
			return lease.Config{}, fmt.Errorf("lease.namespace: not set, and the kubeconfig does not say (%w): name the namespace of redis-rebalancer's Lease (serve's)", err)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		return lease.Config{}, fmt.Errorf("lease: identity: %w", err)
	}
	cfg := lease.Config{Client: client, LeaderElection: leaderElection(l, ns), Identity: host + "_" + string(uuid.NewUUID())}
	if err := cfg.Validate(); err != nil {
		return lease.Config{}, err
	}
	return cfg, nil
}

// Name returns PluginName.
func (p *RedisClusterBalance) Name() string { return PluginName }

// Balance is one descheduling cycle: redis-rebalancer's run over the selected Redis clusters
// (the nodes the descheduler passes are not used: the planner reads every node, since
// kube-scheduler may re-place an evicted pod on any). Evictions go through the profile's
// Evictor, after its Filter and PreEvictionFilter accept the pod. It holds redis-rebalancer's
// Lease while it acts and skips the cycle, with a log line, while another process (a run, serve's
// leader) holds it. In a dry run it plans and logs only: no failover, no eviction, no Lease. It
// returns the run's error, if any cluster's run aborted (the next cycle starts again from the
// health gate), or the Lease's.
func (p *RedisClusterBalance) Balance(ctx context.Context, _ []*corev1.Node) *frameworktypes.Status {
	logger := klog.FromContext(ctx).WithValues("plugin", PluginName)
	sel := observe.Selection{AllowEmpty: p.args.AllowEmpty}
	if ns := p.args.Namespaces; ns != nil {
		sel.IncludeNamespaces, sel.ExcludeNamespaces = ns.Include, ns.Exclude
		if len(ns.Include) == 1 {
			sel.Namespace = ns.Include[0]
		}
	}
	ev := p.handle.Evictor()
	ex, err := execute.New(execute.Config{
		Client:          p.reader,
		Redis:           p.redis,
		Selection:       sel,
		Policy:          policies.Options{ClusterLabel: p.args.ClusterLabel},
		MaxMoves:        int(p.args.MaxMovesPerCluster),
		HealthTimeout:   p.args.HealthGateTimeout.Duration,
		RecreateTimeout: p.args.RecreateTimeout.Duration,
		RejoinTimeout:   p.args.RejoinTimeout.Duration,
		DryRun:          p.dryRun,
		Out:             &logWriter{logger: logger},
		EvictPod: func(ctx context.Context, pod *corev1.Pod) error {
			if !ev.Filter(pod) || !ev.PreEvictionFilter(pod) {
				return fmt.Errorf("the profile's evictor filters pod %s/%s out (DefaultEvictor's args)", pod.Namespace, pod.Name)
			}
			return ev.Evict(ctx, pod, evictions.EvictOptions{StrategyName: PluginName})
		},
	})
	if err != nil {
		return &frameworktypes.Status{Err: fmt.Errorf("%s: %w", PluginName, err)}
	}
	var rep *report.Run
	act := func(ctx context.Context) error {
		var err error
		rep, err = ex.Run(ctx)
		return err
	}
	switch {
	case p.dryRun:
		logger.Info("Dry run: planning only (no failover, no eviction, no Lease taken)")
		err = act(ctx)
	case p.lease == nil:
		err = act(ctx)
	default:
		var he *lease.HeldError
		ref := p.lease.LeaderElection.ResourceNamespace + "/" + p.lease.LeaderElection.ResourceName
		_, err = lease.Hold(ctx, *p.lease, act)
		if errors.As(err, &he) {
			logger.Info("Skipping this cycle: another redis-rebalancer holds the Lease (a run, or serve's leader, acts)", "lease", ref, "holder", he.Holder)
			return nil
		}
	}
	if rep != nil {
		for _, c := range rep.Clusters {
			logger.Info("Redis cluster", "namespace", c.Namespace, "name", c.Name, "compliant", c.Compliant,
				"moves", len(c.Moves), "stoppedBy", c.StoppedBy, "stopped", c.Stopped)
		}
	}
	if err != nil {
		return &frameworktypes.Status{Err: fmt.Errorf("%s: %w", PluginName, err)}
	}
	return nil
}
