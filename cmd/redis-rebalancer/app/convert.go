package app

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// The conversions of a defaulted, valid policy (policyOptions.load) into the plain config each
// engine package takes, one small function per package, written out field by field:
//
//	selection        observe.Selection   ← selection.namespaces, selection.labelSelector
//	rules            policies.Options    ← selection (cluster label, workload selector, shard
//	                                       source, role label, recreating owners), rules
//	                                       (ruleSettings: enabled, disabled, soft)
//	planBounds       plan.Options        ← plan
//	windowConfig     window.Config       ← windows
//	executorConfig   execute.Config      ← all of the above, limits, failover, timeouts
//	redisOptions     redisctl.Options    ← redis (redisClient adds the Secrets' values)
//
// The engine packages apply the policy's defaults to their own zero values (api/v1alpha1's
// Default… constants), so a config built without a policy behaves as the default policy does.

// selection returns the clusters the policy's selection picks. One included namespace limits the
// reads to it.
func selection(s *v1alpha1.Selection) (observe.Selection, error) {
	sel, err := metav1.LabelSelectorAsSelector(&s.LabelSelector)
	if err != nil {
		return observe.Selection{}, fmt.Errorf("selection.labelSelector: %w", err)
	}
	out := observe.Selection{Selector: sel, ExcludeNamespaces: s.Namespaces.Exclude, AllowEmpty: s.AllowEmpty}
	if len(s.Namespaces.Include) == 1 {
		out.Namespace = s.Namespaces.Include[0]
	} else {
		out.IncludeNamespaces = s.Namespaces.Include
	}
	return out, nil
}

// rules returns the model's and the rules' options.
func rules(p *policy) (policies.Options, error) {
	src, err := policies.ParseShardSource(p.Selection.ShardSource)
	if err != nil {
		return policies.Options{}, fmt.Errorf("selection.shardSource: %w", err)
	}
	workloads, err := metav1.LabelSelectorAsSelector(&p.Selection.WorkloadSelector)
	if err != nil {
		return policies.Options{}, fmt.Errorf("selection.workloadSelector: %w", err)
	}
	return policies.Options{
		ClusterLabel: p.Selection.ClusterLabel, ShardSource: src, RoleLabel: p.Selection.RoleLabel,
		RecreatingOwners: p.Selection.RecreatingOwners, WorkloadSelector: workloads,
		RelaxedLimits: p.Rules.RelaxedLimits, ReleaseReplicaClaims: p.Rules.ReleaseReplicaClaims,
		DrainTaints: p.Guard.DrainTaints, Rules: ruleSettings(&p.Rules),
	}, nil
}

// ruleSettings returns the setting of every registered rule under rules.enabled, rules.disabled
// and rules.soft: the registry's default (RuleInfo.DefaultSetting), not judged when disabled (by
// name, or as a default rule by "*"), judged when enabled, soft when listed in soft.
func ruleSettings(r *v1alpha1.Rules) map[policies.Rule]policies.RuleSetting {
	out := map[policies.Rule]policies.RuleSetting{}
	all := slices.Contains(r.Disabled, v1alpha1.AllRules)
	for _, info := range policies.Rules() {
		s := info.DefaultSetting()
		name := string(info.Name)
		switch {
		case slices.Contains(r.Enabled, name):
			s.Enabled = true
		case all, slices.Contains(r.Disabled, name):
			s.Enabled = false
		}
		if slices.Contains(r.Soft, name) {
			s.Soft = true
		}
		out[info.Name] = s
	}
	return out
}

// planBounds returns the planner's bounds and the searches the policy opts into.
func planBounds(p *policy) plan.Options {
	return plan.Options{
		MaxMoves: int(p.Plan.MaxMoves), MaxStates: int(p.Plan.MaxStates), AllowPendingSteps: p.Plan.AllowPendingSteps,
		SoftEvictions: int(p.Plan.SoftEvictions), BestEffort: p.Plan.BestEffort,
	}
}

// windowConfig returns the maintenance windows.
func windowConfig(w *v1alpha1.Windows) window.Config {
	cfg := window.Config{StepEstimate: w.StepEstimate}
	for _, win := range w.Windows {
		cfg.Windows = append(cfg.Windows, window.Window{Schedule: win.Schedule, Duration: win.Duration.Duration})
	}
	return cfg
}

// failoverModes maps the policy's failover modes to redisctl's.
var failoverModes = map[v1alpha1.FailoverMode]redisctl.FailoverMode{
	v1alpha1.FailoverDefault: redisctl.FailoverDefault, v1alpha1.FailoverForce: redisctl.FailoverForce, v1alpha1.FailoverTakeover: redisctl.FailoverTakeover,
}

// evictionLimit returns a maxNoOfPodsToEvict… limit as the descheduler's PodEvictor takes it: nil
// for 0 (no limit).
func evictionLimit(v int32) *uint {
	if v == 0 {
		return nil
	}
	u := uint(v)
	return &u
}

// executorConfig returns the executor's settings: selection, rules, plan bounds, limits,
// failover, timeouts and windows. The clients, the output, DryRun and IgnoreWindows are the
// caller's.
func executorConfig(p *policy) (execute.Config, error) {
	sel, err := selection(&p.Selection)
	if err != nil {
		return execute.Config{}, err
	}
	opts, err := rules(p)
	if err != nil {
		return execute.Config{}, err
	}
	return execute.Config{
		Selection: sel, Policy: opts, Plan: planBounds(p), Window: windowConfig(&p.Windows),
		MaxMoves:                   int(p.Limits.MaxMovesPerCluster),
		MaxParallelClusters:        int(p.Limits.MaxParallelClusters),
		MaxPodsToEvictPerNode:      evictionLimit(p.Limits.MaxNoOfPodsToEvictPerNode),
		MaxPodsToEvictPerNamespace: evictionLimit(p.Limits.MaxNoOfPodsToEvictPerNamespace),
		MaxPodsToEvictTotal:        evictionLimit(p.Limits.MaxNoOfPodsToEvictTotal),
		FailoverMode:               failoverModes[p.Failover.Mode],
		FailoverTimeout:            p.Failover.Timeout.Duration,
		DrainQuiet:                 p.Failover.DrainQuiet.Duration,
		DrainTimeout:               p.Failover.DrainTimeout.Duration,
		HealthTimeout:              p.Timeouts.HealthGate.Duration,
		RecreateTimeout:            p.Timeouts.Recreate.Duration,
		RejoinTimeout:              p.Timeouts.Rejoin.Duration,
		FullSyncTimeout:            p.Timeouts.FullSync.Duration,
		RequestTimeout:             p.Timeouts.Request.Duration,
	}, nil
}

// redisOptions returns the Redis client's options from the policy's redis section, but the
// credentials its Secret references name (redisClient reads those).
func redisOptions(r *v1alpha1.Redis) redisctl.Options {
	opts := redisctl.Options{
		Port:         int(r.Port),
		UsernameFile: r.UsernameFile, UsernameEnv: r.UsernameEnv,
		PasswordFile: r.PasswordFile, PasswordEnv: r.PasswordEnv,
		DialTimeout: r.DialTimeout.Duration, ReadTimeout: r.ReadTimeout.Duration, WriteTimeout: r.WriteTimeout.Duration,
		MaxLagBytes: r.MaxLagBytes, MaxLastIOSeconds: int(r.MaxLastIOSeconds),
	}
	if r.TLS.Enabled {
		opts.TLS = &redisctl.TLSOptions{
			CAFile: r.TLS.CAFile, CertFile: r.TLS.CertFile, KeyFile: r.TLS.KeyFile,
			ServerName: r.TLS.ServerName, InsecureSkipVerify: r.TLS.InsecureSkipVerify,
		}
	}
	return opts
}

// redisClient returns a Redis client set up by the policy's redis section (redisOptions). A user
// or password given by a Secret reference is read through kube (a GET of that one Secret; kube
// may be nil when the policy names no Secret).
func redisClient(ctx context.Context, kube kubernetes.Interface, r *v1alpha1.Redis) (*redisctl.Client, error) {
	opts := redisOptions(r)
	var err error
	if r.UsernameSecretRef.Name != "" {
		if opts.Username, err = secretValue(ctx, kube, r.UsernameSecretRef); err != nil {
			return nil, fmt.Errorf("redis.usernameSecretRef: %w", err)
		}
	}
	if r.PasswordSecretRef.Name != "" {
		if opts.Password, err = secretValue(ctx, kube, r.PasswordSecretRef); err != nil {
			return nil, fmt.Errorf("redis.passwordSecretRef: %w", err)
		}
	}
	return redisctl.New(opts)
}

// secretValue reads one key of one Secret (a GET of that Secret only, so that RBAC can grant it
// by resourceNames). The value is never part of an error.
func secretValue(ctx context.Context, kube kubernetes.Interface, ref v1alpha1.SecretKeyRef) (string, error) {
	if kube == nil {
		return "", fmt.Errorf("secret %s/%s: reading a Secret needs the API server (offline, give the credential as a file or an environment variable)", ref.Namespace, ref.Name)
	}
	s, err := kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("secret %s/%s has no key %q (keys: %s)", ref.Namespace, ref.Name, ref.Key, strings.Join(secretKeys(s), ", "))
	}
	return strings.TrimRight(string(v), "\r\n"), nil
}

func secretKeys(s *corev1.Secret) []string {
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
