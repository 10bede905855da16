// Package redisclusterbalance is RedisClusterBalance, a balance plugin for the descheduler
// framework (sigs.k8s.io/descheduler v0.36) that fixes Redis Cluster pod placements as
// `redis-rebalancer run` does: at every descheduling cycle it observes the Redis clusters,
// judges them against redis-rebalancer's rules, plans the fewest evictions with its planner
// (rebalancer/plan), and makes each move through its executor's steps (rebalancer/execute: the
// health gate, a verified failover of a master to an in-sync replica before its pod is evicted,
// the role check, then the re-creation and rejoin), the eviction itself made by the profile's
// Evictor: the descheduler's PodEvictor, with the DeschedulerPolicy's limits, events and
// metrics. A descheduler build registers it with Register (the descheduler has no run-time
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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"
	"sigs.k8s.io/descheduler/pkg/framework/pluginregistry"
	frameworktypes "sigs.k8s.io/descheduler/pkg/framework/types"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// PluginName is the plugin's name in a DeschedulerPolicy.
const PluginName = "RedisClusterBalance"

// RedisClusterBalance is the plugin: one per profile that enables it.
type RedisClusterBalance struct {
	handle frameworktypes.Handle
	args   *RedisClusterBalanceArgs
	redis  *redisctl.Client
}

var _ frameworktypes.BalancePlugin = &RedisClusterBalance{}

// Register adds RedisClusterBalance, its args, validator and defaulter to registry (the
// descheduler's pluginregistry.PluginRegistry, once descheduler.SetupPlugins has filled it).
func Register(registry pluginregistry.Registry) {
	pluginregistry.Register(PluginName, New, &RedisClusterBalance{}, &RedisClusterBalanceArgs{}, Validate, SetDefaults, registry)
}

// New builds the plugin from its args (a *RedisClusterBalanceArgs, defaulted and validated by
// the descheduler) and the profile's handle (pluginregistry.PluginBuilder). It fails on args of
// another type or a Redis client it cannot create.
func New(_ context.Context, args runtime.Object, handle frameworktypes.Handle) (frameworktypes.Plugin, error) {
	a, ok := args.(*RedisClusterBalanceArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RedisClusterBalanceArgs, got %T", PluginName, args)
	}
	rc, err := redisctl.New(redisctl.Options{Port: int(a.RedisPort)})
	if err != nil {
		return nil, fmt.Errorf("%s: redis client: %w", PluginName, err)
	}
	return &RedisClusterBalance{handle: handle, args: a, redis: rc}, nil
}

// Name returns PluginName.
func (p *RedisClusterBalance) Name() string { return PluginName }

// Balance is one descheduling cycle: redis-rebalancer's run over the selected Redis clusters
// (the nodes the descheduler passes are not used: the planner reads every node, since
// kube-scheduler may re-place an evicted pod on any). Evictions go through the profile's
// Evictor, after its Filter and PreEvictionFilter accept the pod. It returns the run's error,
// if any cluster's run aborted (the next cycle starts again from the health gate).
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
		Client:          p.handle.ClientSet(),
		Redis:           p.redis,
		Selection:       sel,
		Policy:          policies.Options{ClusterLabel: p.args.ClusterLabel},
		MaxMoves:        int(p.args.MaxMovesPerCluster),
		HealthTimeout:   p.args.HealthGateTimeout.Duration,
		RecreateTimeout: p.args.RecreateTimeout.Duration,
		RejoinTimeout:   p.args.RejoinTimeout.Duration,
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
	rep, err := ex.Run(ctx)
	for _, c := range rep.Clusters {
		logger.Info("Redis cluster", "namespace", c.Namespace, "name", c.Name, "compliant", c.Compliant,
			"moves", len(c.Moves), "stoppedBy", c.StoppedBy, "stopped", c.Stopped)
	}
	if err != nil {
		return &frameworktypes.Status{Err: fmt.Errorf("%s: %w", PluginName, err)}
	}
	return nil
}
