package app

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
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

// policy is the RebalancerPolicy every command runs with.
type policy = v1alpha1.RebalancerPolicy

// policyOptions hold the RebalancerPolicy a command runs with: the file --policy names (strictly
// decoded, validated and defaulted by v1alpha1.Load), or the defaults without one, and the flags
// that override its fields. Each such flag is bound to a field of a defaulted policy, so that its
// default, shown by --help, is the policy's (api/v1alpha1/defaults.go, the one place defaults are
// written); only the flags given on the command line are applied on top of the file.
type policyOptions struct {
	// file is --policy.
	file string
	// flags is the defaulted policy the flags write into.
	flags *policy
	// overrides are the flags bound to the policy, by flag name.
	overrides map[string]override
	// The flags whose value is not a field's as it is: --namespace, --selector, --window (with
	// --window-duration) and -o.
	namespace, selector, output string
	windows                     []string
	windowDuration              time.Duration
	// fs is the flag set --policy is bound to; the flags bound to the policy there carry
	// policyFieldAnnotation.
	fs *pflag.FlagSet
}

// policyFieldAnnotation marks a flag bound to a field of the policy (its value: the field's path).
// The policy's validation judges such a flag's value and names the field; validateFlags leaves it
// alone.
const policyFieldAnnotation = "rebalancer.redis.io/policy-field"

// override is a flag bound to a field of the policy.
type override struct {
	// path is the field's path in the policy ("limits.maxMovesPerCluster"); a validation error on
	// it names the flag too.
	path string
	// apply sets the field of p from the flag's value.
	apply func(p *policy) error
}

func newPolicyOptions() *policyOptions {
	return &policyOptions{flags: v1alpha1.Default(), overrides: map[string]override{}, windowDuration: v1alpha1.DefaultWindowDuration}
}

// policyFlag binds flag name (bind is a pflag XxxVar method) to the field of the policy that get
// returns: its default is the defaulted policy's, and when given it overrides the file.
func policyFlag[T any](o *policyOptions, bind func(p *T, name string, value T, usage string), name string, get func(*policy) *T, usage string) {
	v := get(o.flags)
	o.overrides[name] = override{path: o.pathOf(v), apply: func(p *policy) error {
		*get(p) = *get(o.flags)
		return nil
	}}
	bind(v, name, *v, usage)
	o.annotate(name)
}

// customFlag records a flag that sets the field at path with apply.
func (o *policyOptions) customFlag(name, path string, apply func(p *policy) error) {
	o.overrides[name] = override{path: path, apply: apply}
	o.annotate(name)
}

// annotate marks flag name, already bound on o.fs, with policyFieldAnnotation.
func (o *policyOptions) annotate(name string) {
	if o.fs != nil && o.fs.Lookup(name) != nil {
		_ = o.fs.SetAnnotation(name, policyFieldAnnotation, []string{o.overrides[name].path})
	}
}

// durationType is the policy's duration type; a flag binds its time.Duration.
var durationType = reflect.TypeFor[metav1.Duration]()

// pathOf returns the JSON path of the field of o.flags that ptr points to ("failover.timeout"
// for &o.flags.Failover.Timeout.Duration).
func (o *policyOptions) pathOf(ptr any) string {
	pv := reflect.ValueOf(ptr)
	addr, elem := pv.Pointer(), pv.Type().Elem()
	var find func(v reflect.Value, path string) string
	find = func(v reflect.Value, path string) string {
		for i := 0; i < v.NumField(); i++ {
			f, sf := v.Field(i), v.Type().Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			p := name
			if path != "" {
				p = path + "." + name
			}
			if f.Addr().Pointer() == addr && (f.Type() == elem || f.Type() == durationType && elem == durationType.Field(0).Type) {
				return p
			}
			if f.Kind() == reflect.Struct {
				if found := find(f, p); found != "" {
					return found
				}
			}
		}
		return ""
	}
	path := find(reflect.ValueOf(o.flags).Elem(), "")
	if path == "" {
		panic("cli: a policy flag is bound to no field of the policy")
	}
	return path
}

// addPolicyFlag binds --policy.
func (o *policyOptions) addPolicyFlag(fs *pflag.FlagSet) {
	o.fs = fs
	fs.StringVar(&o.file, "policy", o.file, "RebalancerPolicy `FILE` (YAML; `redis-rebalancer policy default` prints a complete one, docs/policy.md describes it; - for stdin): its fields replace the defaults below, and each flag given on the command line overrides its field")
}

// releaseReplicaClaimsUsage is --release-replica-claims' help in check, plan and lint (run
// refuses the flag).
const releaseReplicaClaimsUsage = "allow moving a replica away from a zonal PersistentVolume (its claim is released; it resyncs from its master)"

// addSelectionFlags binds the flags of selection and rules: which clusters, and how the rules
// judge them. releaseUsage is --release-replica-claims' help.
func (o *policyOptions) addSelectionFlags(fs *pflag.FlagSet, releaseUsage string) {
	fs.StringVarP(&o.namespace, "namespace", "n", o.namespace, "only this namespace (default: the policy's selection.namespaces, all namespaces when empty)")
	o.customFlag("namespace", "selection.namespaces", func(p *policy) error {
		p.Selection.Namespaces = v1alpha1.Namespaces{}
		if o.namespace != "" {
			p.Selection.Namespaces.Include = []string{o.namespace}
		}
		return nil
	})
	fs.StringVarP(&o.selector, "selector", "l", o.selector, "only Redis clusters with a pod matching this label selector, e.g. app.kubernetes.io/name=redis (default: the policy's selection.labelSelector, all when empty)")
	o.customFlag("selector", "selection.labelSelector", func(p *policy) error {
		sel, err := metav1.ParseToLabelSelector(o.selector)
		if err != nil {
			return fmt.Errorf("--selector: %w", err)
		}
		p.Selection.LabelSelector = *sel
		return nil
	})
	layout := (*string)(&o.flags.Selection.Layout)
	fs.StringVar(layout, "layout", *layout, "how the Redis clusters are deployed: seed, bitnami, ot, ucloud or kubeblocks; sets the defaults of --cluster-label, --shard-source, --role-label, --recreating-owners and the Redis Secret's keys (README: the layouts table); a flag given beside it wins")
	o.customFlag("layout", "selection.layout", func(p *policy) error {
		p.Selection.Layout = o.flags.Selection.Layout
		return nil
	})
	policyFlag(o, fs.StringVar, "cluster-label", func(p *policy) *string { return &p.Selection.ClusterLabel }, "pod label whose value names the Redis cluster (seed example: cloud.netease.com/cluster-name; default: the layout's, app.kubernetes.io/instance without one)")
	policyFlag(o, fs.StringVar, "shard-source", func(p *policy) *string { return &p.Selection.ShardSource }, "where a pod's shard comes from: owner (its controller), redis (CLUSTER NODES; offline: --redis-nodes), label:KEY, or auto (the owner unless Redis groups the pods otherwise); default: the layout's, auto without one")
	policyFlag(o, fs.StringVar, "role-label", func(p *policy) *string { return &p.Selection.RoleLabel }, "pod label giving the Redis role (master, replica/slave) when Redis is not read (offline without --redis-nodes, or --redis-roles=false); Redis's roles win when read (default: the layout's)")
	policyFlag(o, fs.StringSliceVar, "recreating-owners", func(p *policy) *[]string { return &p.Selection.RecreatingOwners }, "kinds of controller besides StatefulSet that re-create an evicted pod (e.g. InstanceSet); pods of other owners, or of none, are never evicted (default: the layout's)")
	policyFlag(o, fs.BoolVar, "relaxed-limits", func(p *policy) *bool { return &p.Rules.RelaxedLimits }, `seed 000 §四: allow "at most" N/3 pods per node and N/2 per zone instead of "fewer than"`)
	policyFlag(o, fs.BoolVar, "release-replica-claims", func(p *policy) *bool { return &p.Rules.ReleaseReplicaClaims }, releaseUsage)
}

// addRedisFlags binds the flags of the policy's redis section. The Secret references are the
// file's only.
func (o *policyOptions) addRedisFlags(fs *pflag.FlagSet) {
	policyFlag(o, fs.Int32Var, "redis-port", func(p *policy) *int32 { return &p.Redis.Port }, "Redis client port of the pods")
	policyFlag(o, fs.StringVar, "redis-username-file", func(p *policy) *string { return &p.Redis.UsernameFile }, "file holding the Redis ACL user (e.g. a mounted Secret)")
	policyFlag(o, fs.StringVar, "redis-username-env", func(p *policy) *string { return &p.Redis.UsernameEnv }, "environment variable holding the Redis ACL user")
	policyFlag(o, fs.StringVar, "redis-password-file", func(p *policy) *string { return &p.Redis.PasswordFile }, "file holding the Redis password (e.g. a mounted Secret); never logged")
	policyFlag(o, fs.StringVar, "redis-password-env", func(p *policy) *string { return &p.Redis.PasswordEnv }, "environment variable holding the Redis password; never logged")
	policyFlag(o, fs.BoolVar, "redis-tls", func(p *policy) *bool { return &p.Redis.TLS.Enabled }, "connect to Redis with TLS")
	policyFlag(o, fs.StringVar, "redis-tls-ca", func(p *policy) *string { return &p.Redis.TLS.CAFile }, "PEM CA bundle that signs the Redis certificates (default: system roots)")
	policyFlag(o, fs.StringVar, "redis-tls-cert", func(p *policy) *string { return &p.Redis.TLS.CertFile }, "PEM client certificate (for tls-auth-clients)")
	policyFlag(o, fs.StringVar, "redis-tls-key", func(p *policy) *string { return &p.Redis.TLS.KeyFile }, "PEM client key")
	policyFlag(o, fs.StringVar, "redis-tls-server-name", func(p *policy) *string { return &p.Redis.TLS.ServerName }, "name to verify in the Redis certificates (default: the pod IP)")
	policyFlag(o, fs.BoolVar, "redis-tls-insecure-skip-verify", func(p *policy) *bool { return &p.Redis.TLS.InsecureSkipVerify }, "do not verify Redis certificates (tests only)")
	policyFlag(o, fs.DurationVar, "redis-dial-timeout", func(p *policy) *time.Duration { return &p.Redis.DialTimeout.Duration }, "timeout to connect to a Redis node")
	policyFlag(o, fs.DurationVar, "redis-read-timeout", func(p *policy) *time.Duration { return &p.Redis.ReadTimeout.Duration }, "timeout for a Redis reply")
	policyFlag(o, fs.DurationVar, "redis-write-timeout", func(p *policy) *time.Duration { return &p.Redis.WriteTimeout.Duration }, "timeout to send a Redis command")
	policyFlag(o, fs.Int64Var, "max-lag-bytes", func(p *policy) *int64 { return &p.Redis.MaxLagBytes }, "largest replication offset lag (bytes) at which a replica counts as in sync")
	policyFlag(o, fs.Int32Var, "max-last-io-seconds", func(p *policy) *int32 { return &p.Redis.MaxLastIOSeconds }, "largest master_last_io_seconds_ago at which a replica counts as in sync")
}

// allowPendingStepsUsage is --allow-pending-steps' help.
const allowPendingStepsUsage = "plan through Pending pods: an evicted pod may wait Pending until a later move frees room, one pod per Redis cluster at a time (its shard runs without that replica meanwhile; the plan names the moves). Without it, each evicted pod must be placeable at once, and a cluster that only such a plan fixes says so"

// addPlanFlags binds the planner's bounds; pendingUsage is --allow-pending-steps' help.
func (o *policyOptions) addPlanFlags(fs *pflag.FlagSet, pendingUsage string) {
	policyFlag(o, fs.Int32Var, "max-plan-moves", func(p *policy) *int32 { return &p.Plan.MaxMoves }, fmt.Sprintf("longest plan considered (0: %d, or twice the lower bound on the moves needed when that is more)", plan.DefaultMaxMoves))
	policyFlag(o, fs.Int32Var, "max-plan-states", func(p *policy) *int32 { return &p.Plan.MaxStates }, "placements the planner may evaluate per cluster; when they run out, the best plan found so far is shown as not proven minimal")
	policyFlag(o, fs.BoolVar, "allow-pending-steps", func(p *policy) *bool { return &p.Plan.AllowPendingSteps }, pendingUsage)
}

// addExecuteFlags binds the flags of a pass that acts (run, serve): the limits, the failover,
// the timeouts and the maintenance windows.
func (o *policyOptions) addExecuteFlags(fs *pflag.FlagSet) {
	policyFlag(o, fs.Int32Var, "max-moves", func(p *policy) *int32 { return &p.Limits.MaxMovesPerCluster }, "most evictions per Redis cluster in one run")
	policyFlag(o, fs.Int32Var, "max-parallel-clusters", func(p *policy) *int32 { return &p.Limits.MaxParallelClusters }, "Redis clusters that progress at once (each with one disruption in flight at most)")
	policyFlag(o, fs.Int32Var, "max-pods-to-evict-per-node", func(p *policy) *int32 { return &p.Limits.MaxNoOfPodsToEvictPerNode }, "most evictions in one run from one node, over every cluster (the descheduler's maxNoOfPodsToEvictPerNode; 0: no limit)")
	policyFlag(o, fs.Int32Var, "max-pods-to-evict-per-namespace", func(p *policy) *int32 { return &p.Limits.MaxNoOfPodsToEvictPerNamespace }, "most evictions in one run in one namespace, over every cluster (maxNoOfPodsToEvictPerNamespace; 0: no limit)")
	policyFlag(o, fs.Int32Var, "max-pods-to-evict-total", func(p *policy) *int32 { return &p.Limits.MaxNoOfPodsToEvictTotal }, "most evictions in one run, over every cluster (maxNoOfPodsToEvictTotal; 0: no limit)")
	failoverMode := (*string)(&o.flags.Failover.Mode)
	fs.StringVar(failoverMode, "failover-mode", *failoverMode, "CLUSTER FAILOVER variant: default, force or takeover (force/takeover can lose writes)")
	o.customFlag("failover-mode", "failover.mode", func(p *policy) error {
		p.Failover.Mode = o.flags.Failover.Mode
		return nil
	})
	policyFlag(o, fs.DurationVar, "failover-timeout", func(p *policy) *time.Duration { return &p.Failover.Timeout.Duration }, "bound on a failover and its verification")
	policyFlag(o, fs.DurationVar, "health-timeout", func(p *policy) *time.Duration { return &p.Timeouts.HealthGate.Duration }, "how long to wait for a healthy cluster before a move, and after it")
	policyFlag(o, fs.DurationVar, "recreate-timeout", func(p *policy) *time.Duration { return &p.Timeouts.Recreate.Duration }, "how long to wait for an evicted pod to be re-created and Ready")
	policyFlag(o, fs.DurationVar, "rejoin-timeout", func(p *policy) *time.Duration { return &p.Timeouts.Rejoin.Duration }, "how long to wait for a re-created pod to be an in-sync replica again")
	policyFlag(o, fs.DurationVar, "request-timeout", func(p *policy) *time.Duration { return &p.Timeouts.Request.Duration }, "bound on each step without a wait of its own (placeability, PodDisruptionBudget dry run, role check, eviction, re-observation)")
	fs.StringArrayVar(&o.windows, "window", o.windows, `maintenance window "SCHEDULE" or "SCHEDULE|DURATION" (repeatable; replaces the policy's windows.windows): a cron expression (5 fields, @daily/@weekly/..., optional CRON_TZ=<zone> prefix; UTC without one), e.g. "CRON_TZ=Europe/Paris 0 2 * * *|2h"; without windows run acts at any time`)
	fs.DurationVar(&o.windowDuration, "window-duration", o.windowDuration, "how long a --window given without |DURATION stays open")
	o.customFlag("window", "windows.windows", func(p *policy) error {
		p.Windows.Windows = nil
		for _, v := range o.windows {
			w, err := window.ParseFlag(v, o.windowDuration)
			if err != nil {
				return fmt.Errorf("--window: %w", err)
			}
			p.Windows.Windows = append(p.Windows.Windows, v1alpha1.Window{Schedule: w.Schedule, Duration: metav1.Duration{Duration: w.Duration}})
		}
		return nil
	})
	estimate := (*string)(&o.flags.Windows.StepEstimate)
	fs.StringVar(estimate, "window-step-estimate", *estimate, "how long a move is expected to take when the time left in the window is judged: bound (its timeouts) or p95 (of the steps this run has measured; the bound until measured)")
	o.customFlag("window-step-estimate", "windows.stepEstimate", func(p *policy) error {
		p.Windows.StepEstimate = o.flags.Windows.StepEstimate
		return nil
	})
}

// addScheduleFlag binds --schedule (serve's).
func (o *policyOptions) addScheduleFlag(fs *pflag.FlagSet) {
	policyFlag(o, fs.StringVar, "schedule", func(p *policy) *string { return &p.Schedule }, `when passes start: a cron expression (5 fields, @hourly/@daily/..., @every DURATION, optional CRON_TZ=<zone> prefix; UTC without one); a pass still running at the next tick skips it`)
}

// addGuardFlags binds --guard and --guard-max-hold (serve's eviction guard).
func (o *policyOptions) addGuardFlags(fs *pflag.FlagSet) {
	policyFlag(o, fs.BoolVar, "guard", func(p *policy) *bool { return &p.Guard.Enabled }, "serve the eviction guard (a validating admission webhook on pod evictions, on --guard-listen-address) and hand the masters it holds, and those on nodes being emptied, off to replicas")
	policyFlag(o, fs.DurationVar, "guard-max-hold", func(p *policy) *time.Duration { return &p.Guard.MaxHold.Duration }, "the longest the guard holds one pod's eviction; later evictions of the pod are admitted with a Warning Event")
}

// addOutputFlag binds -o; usage is its help.
func (o *policyOptions) addOutputFlag(fs *pflag.FlagSet, usage string) {
	o.output = string(o.flags.Output)
	fs.StringVarP(&o.output, "output", "o", o.output, usage)
	o.customFlag("output", "output", func(p *policy) error {
		p.Output = v1alpha1.OutputFormat(o.output)
		return nil
	})
}

// outputUsage is -o's help; contract says what json prints.
func outputUsage(contract string) string {
	return "report format: text (or its other name, table) or json (" + contract + ")"
}

// load returns the policy the command runs with: --policy's file (v1alpha1.Load: strict,
// validated, defaulted) or the defaults, then the flags given on fs applied on top, validated
// again (each error on a field a flag set names the flag) and defaulted; last, the layout (the
// file's or --layout's) fills the fields it sets that neither the file nor a flag set
// (v1alpha1.ApplyLayout). It reads no cluster.
func (o *policyOptions) load(fs *pflag.FlagSet) (*policy, error) {
	p := v1alpha1.Default()
	if o.file != "" {
		var err error
		if p, err = v1alpha1.Load(o.file); err != nil {
			return nil, err
		}
	}
	var errs []error
	given := map[string]string{} // field path → flag
	fs.Visit(func(f *pflag.Flag) {
		ov, ok := o.overrides[f.Name]
		if !ok {
			return
		}
		given[ov.path] = f.Name
		if err := ov.apply(p); err != nil {
			errs = append(errs, err)
		}
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if fe := v1alpha1.ValidateRebalancerPolicy(p); len(fe) > 0 {
		for _, e := range fe {
			if name := flagOf(given, e.Field); name != "" {
				e.Field += " (--" + name + ")"
			}
		}
		return nil, fmt.Errorf("flags: %w", &v1alpha1.InvalidError{Errs: fe})
	}
	v1alpha1.SetDefaults(p)
	v1alpha1.ApplyLayout(p)
	return p, nil
}

// flagOf returns the flag that set the field at path or one of its parents ("" when none did).
func flagOf(given map[string]string, path string) string {
	for p, name := range given {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return name
		}
	}
	return ""
}

// flagsByField returns, for each policy field a flag of o overrides, the flags (sorted): the
// reference docs/policy.md lists them beside the fields.
func (o *policyOptions) flagsByField() map[string][]string {
	m := map[string][]string{}
	for name, ov := range o.overrides {
		m[ov.path] = append(m[ov.path], "--"+name)
	}
	for _, names := range m {
		sort.Strings(names)
	}
	return m
}

// PolicyFlags returns, for each field of the policy a flag overrides, the flags ("--max-moves"):
// hack/gendocs writes them into the policy reference. Every command binds its policy flags with
// the methods above, so one policyOptions with all of them bound knows them all.
func PolicyFlags() map[string][]string {
	o := newPolicyOptions()
	fs := pflag.NewFlagSet("policy", pflag.ContinueOnError)
	o.addSelectionFlags(fs, "")
	o.addRedisFlags(fs)
	o.addPlanFlags(fs, "")
	o.addExecuteFlags(fs)
	o.addScheduleFlag(fs)
	o.addGuardFlags(fs)
	o.addOutputFlag(fs, "")
	return o.flagsByField()
}

// selection returns the clusters the policy's selection picks. One included namespace limits the
// reads to it.
func selection(s *v1alpha1.Selection) (observe.Selection, error) {
	sel, err := metav1.LabelSelectorAsSelector(&s.LabelSelector)
	if err != nil {
		return observe.Selection{}, fmt.Errorf("selection.labelSelector: %w", err)
	}
	out := observe.Selection{Selector: sel, ExcludeNamespaces: s.Namespaces.Exclude}
	if len(s.Namespaces.Include) == 1 {
		out.Namespace = s.Namespaces.Include[0]
	} else {
		out.IncludeNamespaces = s.Namespaces.Include
	}
	return out, nil
}

// rules returns the model's and the rules' options from a defaulted, valid policy.
func rules(p *policy) policies.Options {
	src, _ := policies.ParseShardSource(p.Selection.ShardSource) // validated with the policy
	return policies.Options{
		ClusterLabel: p.Selection.ClusterLabel, ShardSource: src, RoleLabel: p.Selection.RoleLabel,
		RecreatingOwners: p.Selection.RecreatingOwners,
		RelaxedLimits:    p.Rules.RelaxedLimits, ReleaseReplicaClaims: p.Rules.ReleaseReplicaClaims,
	}
}

// planBounds returns the planner's bounds.
func planBounds(p *policy) plan.Options {
	return plan.Options{MaxMoves: int(p.Plan.MaxMoves), MaxStates: int(p.Plan.MaxStates), AllowPendingSteps: p.Plan.AllowPendingSteps}
}

// failoverModes maps the policy's failover modes to redisctl's.
var failoverModes = map[v1alpha1.FailoverMode]redisctl.FailoverMode{
	v1alpha1.FailoverDefault: redisctl.FailoverDefault, v1alpha1.FailoverForce: redisctl.FailoverForce, v1alpha1.FailoverTakeover: redisctl.FailoverTakeover,
}

// executorConfig returns the executor's settings from a defaulted policy: selection, rules, plan
// bounds, limits, failover, timeouts and windows. The clients, the output, DryRun and
// IgnoreWindows are the caller's.
func executorConfig(p *policy) (execute.Config, error) {
	sel, err := selection(&p.Selection)
	if err != nil {
		return execute.Config{}, err
	}
	limit := func(v int32) *uint {
		if v == 0 {
			return nil
		}
		u := uint(v)
		return &u
	}
	cfg := execute.Config{
		Selection: sel, Policy: rules(p), Plan: planBounds(p),
		Window:                     window.Config{StepEstimate: window.StepEstimate(p.Windows.StepEstimate)},
		MaxMoves:                   int(p.Limits.MaxMovesPerCluster),
		MaxParallelClusters:        int(p.Limits.MaxParallelClusters),
		MaxPodsToEvictPerNode:      limit(p.Limits.MaxNoOfPodsToEvictPerNode),
		MaxPodsToEvictPerNamespace: limit(p.Limits.MaxNoOfPodsToEvictPerNamespace),
		MaxPodsToEvictTotal:        limit(p.Limits.MaxNoOfPodsToEvictTotal),
		FailoverMode:               failoverModes[p.Failover.Mode],
		FailoverTimeout:            p.Failover.Timeout.Duration,
		DrainQuiet:                 p.Failover.DrainQuiet.Duration,
		DrainTimeout:               p.Failover.DrainTimeout.Duration,
		HealthTimeout:              p.Timeouts.HealthGate.Duration,
		RecreateTimeout:            p.Timeouts.Recreate.Duration,
		RejoinTimeout:              p.Timeouts.Rejoin.Duration,
		RequestTimeout:             p.Timeouts.Request.Duration,
	}
	for _, w := range p.Windows.Windows {
		cfg.Window.Windows = append(cfg.Window.Windows, window.Window{Schedule: w.Schedule, Duration: w.Duration.Duration})
	}
	return cfg, nil
}

// redisClient returns a Redis client set up by the policy's redis section. A user or password
// given by a Secret reference is read through kube (a GET of that one Secret; kube may be nil when
// the policy names no Secret).
func redisClient(ctx context.Context, kube kubernetes.Interface, r *v1alpha1.Redis) (*redisctl.Client, error) {
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
