package app

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
)

// policy is the RebalancerPolicy every command runs with.
type policy = v1alpha1.RebalancerPolicy

// policyOptions hold the RebalancerPolicy a command runs with: the file --policy names (strictly
// decoded, validated and defaulted by v1alpha1.Load), or the defaults without one, and the flags
// that override its fields (policyFlagTable). Each such flag is bound to a field of a defaulted
// policy, so that its default, shown by --help, is the policy's (api/v1alpha1/defaults.go, the
// one place defaults are written); only the flags given on the command line are applied on top
// of the file.
type policyOptions struct {
	// file is --policy.
	file string
	// flags is the defaulted policy the flags write into.
	flags *policy
	// bound are the rows of policyFlagTable bound to a flag set, by flag name.
	bound map[string]policyFlag
	// The flags whose value is parsed into their field: --namespace, --selector,
	// --workload-selector, and --window (with --window-duration, which is no field).
	namespace, selector, workloadSelector string
	windows                               []string
	windowDuration                        time.Duration
}

// policyFieldAnnotation marks a flag bound to a field of the policy (its value: the field's path).
// The policy's validation judges such a flag's value and names the field; validateFlags leaves it
// alone.
const policyFieldAnnotation = "rebalancer.redis.io/policy-field"

func newPolicyOptions() *policyOptions {
	return &policyOptions{flags: v1alpha1.Default(), bound: map[string]policyFlag{}, windowDuration: v1alpha1.DefaultWindowDuration}
}

// flagGroup names the commands that bind a policy flag: each group has its add…Flags method.
type flagGroup int

// The groups of policy flags.
const (
	// selectionGroup: which Redis clusters and how the rules judge them (every command that
	// reads clusters: run, serve, check, plan, lint).
	selectionGroup flagGroup = iota
	// redisGroup: how Redis is reached (the same commands).
	redisGroup
	// planGroup: the planner's bounds (plan, run, serve).
	planGroup
	// executeGroup: limits, failover, timeouts and maintenance windows of a pass that acts (run,
	// serve).
	executeGroup
	// scheduleGroup: serve's schedule and watch.
	scheduleGroup
	// guardGroup: serve's eviction guard.
	guardGroup
	// outputGroup: -o.
	outputGroup
)

// policyFlag is a row of policyFlagTable: a flag bound to a field of the policy.
type policyFlag struct {
	group flagGroup
	// name and shorthand are the flag's.
	name, shorthand string
	// path is the field's path in the policy file ("limits.maxMovesPerCluster"): a validation
	// error on the field names the flag too, and docs/policy.md lists the flag beside the field.
	path string
	// usage is the flag's help (the add…Flags methods may give another).
	usage string
	// field returns the field at path in p, the one the flag sets (a duration's time.Duration, an
	// enumeration's string: what the flag is bound to).
	field func(p *policy) any
	// bind binds the flag on fs, its default the field's value in o.flags.
	bind func(o *policyOptions, fs *pflag.FlagSet, f policyFlag, usage string)
	// apply sets the field of p from the flag given on the command line.
	apply func(o *policyOptions, p *policy) error
}

// valueFlag returns a row whose flag is bound to its field of o.flags, and copies it into the
// policy loaded when given. get returns the field; bind is the pflag …VarP method of its type.
func valueFlag[T any](group flagGroup, name, shorthand, path string, get func(*policy) *T, bind func(fs *pflag.FlagSet, p *T, name, shorthand string, value T, usage string), usage string) policyFlag {
	return policyFlag{
		group: group, name: name, shorthand: shorthand, path: path, usage: usage,
		field: func(p *policy) any { return get(p) },
		bind: func(o *policyOptions, fs *pflag.FlagSet, f policyFlag, usage string) {
			v := get(o.flags)
			bind(fs, v, f.name, f.shorthand, *v, usage)
		},
		apply: func(o *policyOptions, p *policy) error {
			*get(p) = *get(o.flags)
			return nil
		},
	}
}

// The pflag methods each type of field is bound with.
var (
	stringFlag   = (*pflag.FlagSet).StringVarP
	stringsFlag  = (*pflag.FlagSet).StringSliceVarP
	boolFlag     = (*pflag.FlagSet).BoolVarP
	int32Flag    = (*pflag.FlagSet).Int32VarP
	int64Flag    = (*pflag.FlagSet).Int64VarP
	durationFlag = (*pflag.FlagSet).DurationVarP
)

// policyFlagTable lists every flag bound to a field of the policy: its group, name, the field's
// path and the field itself, and its help. It is the one place a flag is tied to a field; a test
// checks each path against its field, and that every field of the policy has a flag or is
// listed as the file's only.
var policyFlagTable = []policyFlag{
	{
		group: selectionGroup, name: "namespace", shorthand: "n", path: "selection.namespaces",
		usage: "only this namespace (default: the policy's selection.namespaces, all namespaces when empty)",
		field: func(p *policy) any { return &p.Selection.Namespaces },
		bind: func(o *policyOptions, fs *pflag.FlagSet, f policyFlag, usage string) {
			fs.StringVarP(&o.namespace, f.name, f.shorthand, o.namespace, usage)
		},
		apply: func(o *policyOptions, p *policy) error {
			p.Selection.Namespaces = v1alpha1.Namespaces{}
			if o.namespace != "" {
				p.Selection.Namespaces.Include = []string{o.namespace}
			}
			return nil
		},
	},
	{
		group: selectionGroup, name: "selector", shorthand: "l", path: "selection.labelSelector",
		usage: "only Redis clusters with a pod matching this label selector, e.g. app.kubernetes.io/name=redis (default: the policy's selection.labelSelector, all when empty)",
		field: func(p *policy) any { return &p.Selection.LabelSelector },
		bind: func(o *policyOptions, fs *pflag.FlagSet, f policyFlag, usage string) {
			fs.StringVarP(&o.selector, f.name, f.shorthand, o.selector, usage)
		},
		apply: func(o *policyOptions, p *policy) error {
			sel, err := metav1.ParseToLabelSelector(o.selector)
			if err != nil {
				return fmt.Errorf("--selector: %w", err)
			}
			p.Selection.LabelSelector = *sel
			return nil
		},
	},
	valueFlag(selectionGroup, "layout", "", "selection.layout", func(p *policy) *string { return (*string)(&p.Selection.Layout) }, stringFlag, "how the Redis clusters are deployed: seed, bitnami, ot, ucloud or kubeblocks; sets the defaults of --cluster-label, --shard-source, --role-label, --recreating-owners and the Redis Secret's keys (README: the layouts table); a flag given beside it wins"),
	valueFlag(selectionGroup, "cluster-label", "", "selection.clusterLabel", func(p *policy) *string { return &p.Selection.ClusterLabel }, stringFlag, "pod label whose value names the Redis cluster (the seed layout's: cloud.netease.com/cluster-name; default: the layout's, app.kubernetes.io/instance without one)"),
	{
		group: selectionGroup, name: "workload-selector", path: "selection.workloadSelector",
		usage: "only StatefulSets whose pod template matches this label selector are Redis workloads, e.g. app.kubernetes.io/name=redis-cluster (default: the layout's; without one, every StatefulSet whose template carries the cluster label)",
		field: func(p *policy) any { return &p.Selection.WorkloadSelector },
		bind: func(o *policyOptions, fs *pflag.FlagSet, f policyFlag, usage string) {
			fs.StringVar(&o.workloadSelector, f.name, o.workloadSelector, usage)
		},
		apply: func(o *policyOptions, p *policy) error {
			sel, err := metav1.ParseToLabelSelector(o.workloadSelector)
			if err != nil {
				return fmt.Errorf("--workload-selector: %w", err)
			}
			p.Selection.WorkloadSelector = *sel
			return nil
		},
	},
	valueFlag(selectionGroup, "shard-source", "", "selection.shardSource", func(p *policy) *string { return &p.Selection.ShardSource }, stringFlag, "where a pod's shard comes from: owner (its controller), redis (CLUSTER NODES; offline: --redis-nodes), label:KEY, or auto (the owner unless Redis groups the pods otherwise); default: the layout's, auto without one"),
	valueFlag(selectionGroup, "role-label", "", "selection.roleLabel", func(p *policy) *string { return &p.Selection.RoleLabel }, stringFlag, "pod label giving the Redis role (master, replica/slave) when Redis is not read (offline without --redis-nodes, or --redis-roles=false); Redis's roles win when read (default: the layout's)"),
	valueFlag(selectionGroup, "recreating-owners", "", "selection.recreatingOwners", func(p *policy) *[]string { return &p.Selection.RecreatingOwners }, stringsFlag, "kinds of controller besides StatefulSet that re-create an evicted pod (e.g. InstanceSet); pods of other owners, or of none, are never evicted (default: the layout's)"),
	valueFlag(selectionGroup, "allow-empty", "", "selection.allowEmpty", func(p *policy) *bool { return &p.Selection.AllowEmpty }, boolFlag, "a selection that matches no Redis cluster is no error (exit 0; without it: exit 1 saying what matched nothing)"),
	valueFlag(selectionGroup, "relaxed-limits", "", "rules.relaxedLimits", func(p *policy) *bool { return &p.Rules.RelaxedLimits }, boolFlag, `allow "at most" N/3 pods per node and N/2 per zone instead of "fewer than" (the strict limits can deadlock scheduling a three-shard cluster over several zones)`),
	valueFlag(selectionGroup, "release-replica-claims", "", "rules.releaseReplicaClaims", func(p *policy) *bool { return &p.Rules.ReleaseReplicaClaims }, boolFlag, releaseReplicaClaimsUsage),
	valueFlag(selectionGroup, "enable-rules", "", "rules.enabled", func(p *policy) *[]string { return &p.Rules.Enabled }, stringsFlag, "rules judged besides the default ones (comma-separated): SoftTopologySpread (ScheduleAnyway topology spread constraints) and PreferredAntiAffinity are judged only when listed (docs/rules.md lists the rules)"),
	valueFlag(selectionGroup, "disable-rules", "", "rules.disabled", func(p *policy) *[]string { return &p.Rules.Disabled }, stringsFlag, `rules neither judged nor reported (comma-separated); "*" disables every default rule, so that --enable-rules lists the only ones judged (--disable-rules='*' --enable-rules=TopologySpread)`),
	valueFlag(selectionGroup, "soft-rules", "", "rules.soft", func(p *policy) *[]string { return &p.Rules.Soft }, stringsFlag, "hard rules judged as soft (comma-separated): reported, never deciding compliance; plans act on them only with --soft-evictions"),

	valueFlag(redisGroup, "redis-port", "", "redis.port", func(p *policy) *int32 { return &p.Redis.Port }, int32Flag, "Redis client port of the pods"),
	valueFlag(redisGroup, "redis-username-file", "", "redis.usernameFile", func(p *policy) *string { return &p.Redis.UsernameFile }, stringFlag, "file holding the Redis ACL user (e.g. a mounted Secret)"),
	valueFlag(redisGroup, "redis-username-env", "", "redis.usernameEnv", func(p *policy) *string { return &p.Redis.UsernameEnv }, stringFlag, "environment variable holding the Redis ACL user"),
	valueFlag(redisGroup, "redis-password-file", "", "redis.passwordFile", func(p *policy) *string { return &p.Redis.PasswordFile }, stringFlag, "file holding the Redis password (e.g. a mounted Secret); never logged"),
	valueFlag(redisGroup, "redis-password-env", "", "redis.passwordEnv", func(p *policy) *string { return &p.Redis.PasswordEnv }, stringFlag, "environment variable holding the Redis password; never logged"),
	valueFlag(redisGroup, "redis-tls", "", "redis.tls.enabled", func(p *policy) *bool { return &p.Redis.TLS.Enabled }, boolFlag, "connect to Redis with TLS"),
	valueFlag(redisGroup, "redis-tls-ca", "", "redis.tls.caFile", func(p *policy) *string { return &p.Redis.TLS.CAFile }, stringFlag, "PEM CA bundle that signs the Redis certificates (default: system roots)"),
	valueFlag(redisGroup, "redis-tls-cert", "", "redis.tls.certFile", func(p *policy) *string { return &p.Redis.TLS.CertFile }, stringFlag, "PEM client certificate (for tls-auth-clients)"),
	valueFlag(redisGroup, "redis-tls-key", "", "redis.tls.keyFile", func(p *policy) *string { return &p.Redis.TLS.KeyFile }, stringFlag, "PEM client key"),
	valueFlag(redisGroup, "redis-tls-server-name", "", "redis.tls.serverName", func(p *policy) *string { return &p.Redis.TLS.ServerName }, stringFlag, "name to verify in the Redis certificates (default: the pod IP)"),
	valueFlag(redisGroup, "redis-tls-insecure-skip-verify", "", "redis.tls.insecureSkipVerify", func(p *policy) *bool { return &p.Redis.TLS.InsecureSkipVerify }, boolFlag, "do not verify Redis certificates (tests only)"),
	valueFlag(redisGroup, "redis-dial-timeout", "", "redis.dialTimeout", func(p *policy) *time.Duration { return &p.Redis.DialTimeout.Duration }, durationFlag, "timeout to connect to a Redis node"),
	valueFlag(redisGroup, "redis-read-timeout", "", "redis.readTimeout", func(p *policy) *time.Duration { return &p.Redis.ReadTimeout.Duration }, durationFlag, "timeout for a Redis reply"),
	valueFlag(redisGroup, "redis-write-timeout", "", "redis.writeTimeout", func(p *policy) *time.Duration { return &p.Redis.WriteTimeout.Duration }, durationFlag, "timeout to send a Redis command"),
	valueFlag(redisGroup, "max-lag-bytes", "", "redis.maxLagBytes", func(p *policy) *int64 { return &p.Redis.MaxLagBytes }, int64Flag, "largest replication offset lag (bytes) at which a replica counts as in sync"),
	valueFlag(redisGroup, "max-last-io-seconds", "", "redis.maxLastIOSeconds", func(p *policy) *int32 { return &p.Redis.MaxLastIOSeconds }, int32Flag, "largest master_last_io_seconds_ago at which a replica counts as in sync"),

	valueFlag(planGroup, "max-plan-moves", "", "plan.maxMoves", func(p *policy) *int32 { return &p.Plan.MaxMoves }, int32Flag, fmt.Sprintf("longest plan considered (0: %d, or twice the lower bound on the moves needed when that is more)", plan.DefaultMaxMoves)),
	valueFlag(planGroup, "max-plan-states", "", "plan.maxStates", func(p *policy) *int32 { return &p.Plan.MaxStates }, int32Flag, "placements the planner may evaluate per cluster; when they run out, the best plan found so far is shown as not proven minimal"),
	valueFlag(planGroup, "allow-pending-steps", "", "plan.allowPendingSteps", func(p *policy) *bool { return &p.Plan.AllowPendingSteps }, boolFlag, allowPendingStepsUsage),
	valueFlag(planGroup, "soft-evictions", "", "plan.softEvictions", func(p *policy) *int32 { return &p.Plan.SoftEvictions }, int32Flag, "most evictions a plan may add, once every hard rule holds, to lower the soft violations; each keeps every hard rule (0: soft rules are only reported)"),
	valueFlag(planGroup, "best-effort", "", "plan.bestEffort", func(p *policy) *bool { return &p.Plan.BestEffort }, boolFlag, "where no placement satisfies every hard rule, plan the fewest evictions to the placement with the fewest violations (first the fewest pods left without a node, then the least excess over the limits), labelled best effort"),

	valueFlag(executeGroup, "max-moves", "", "limits.maxMovesPerCluster", func(p *policy) *int32 { return &p.Limits.MaxMovesPerCluster }, int32Flag, "most evictions per Redis cluster in one run"),
	valueFlag(executeGroup, "max-parallel-clusters", "", "limits.maxParallelClusters", func(p *policy) *int32 { return &p.Limits.MaxParallelClusters }, int32Flag, "Redis clusters that progress at once (each with one disruption in flight at most)"),
	valueFlag(executeGroup, "max-pods-to-evict-per-node", "", "limits.maxNoOfPodsToEvictPerNode", func(p *policy) *int32 { return &p.Limits.MaxNoOfPodsToEvictPerNode }, int32Flag, "most evictions in one run from one node, over every cluster (the descheduler's maxNoOfPodsToEvictPerNode; 0: no limit)"),
	valueFlag(executeGroup, "max-pods-to-evict-per-namespace", "", "limits.maxNoOfPodsToEvictPerNamespace", func(p *policy) *int32 { return &p.Limits.MaxNoOfPodsToEvictPerNamespace }, int32Flag, "most evictions in one run in one namespace, over every cluster (maxNoOfPodsToEvictPerNamespace; 0: no limit)"),
	valueFlag(executeGroup, "max-pods-to-evict-total", "", "limits.maxNoOfPodsToEvictTotal", func(p *policy) *int32 { return &p.Limits.MaxNoOfPodsToEvictTotal }, int32Flag, "most evictions in one run, over every cluster (maxNoOfPodsToEvictTotal; 0: no limit)"),
	valueFlag(executeGroup, "failover-mode", "", "failover.mode", func(p *policy) *string { return (*string)(&p.Failover.Mode) }, stringFlag, "CLUSTER FAILOVER variant: default, force or takeover (force/takeover can lose writes)"),
	valueFlag(executeGroup, "failover-timeout", "", "failover.timeout", func(p *policy) *time.Duration { return &p.Failover.Timeout.Duration }, durationFlag, "bound on a failover and its verification"),
	valueFlag(executeGroup, "health-timeout", "", "timeouts.healthGate", func(p *policy) *time.Duration { return &p.Timeouts.HealthGate.Duration }, durationFlag, "how long to wait for a healthy cluster before a move, and after it"),
	valueFlag(executeGroup, "recreate-timeout", "", "timeouts.recreate", func(p *policy) *time.Duration { return &p.Timeouts.Recreate.Duration }, durationFlag, "how long to wait for an evicted pod to be re-created and Ready"),
	valueFlag(executeGroup, "rejoin-timeout", "", "timeouts.rejoin", func(p *policy) *time.Duration { return &p.Timeouts.Rejoin.Duration }, durationFlag, "how long to wait for a re-created pod to be an in-sync replica again"),
	valueFlag(executeGroup, "full-sync-timeout", "", "timeouts.fullSync", func(p *policy) *time.Duration { return &p.Timeouts.FullSync.Duration }, durationFlag, "how long to wait for a pod whose claims were released (--release-replica-claims) to be an in-sync replica again: a full resync of its master's dataset"),
	valueFlag(executeGroup, "request-timeout", "", "timeouts.request", func(p *policy) *time.Duration { return &p.Timeouts.Request.Duration }, durationFlag, "bound on each step without a wait of its own (placeability, PodDisruptionBudget dry run, role check, eviction, re-observation)"),
	{
		group: executeGroup, name: "window", path: "windows.windows",
		usage: `maintenance window "SCHEDULE" or "SCHEDULE|DURATION" (repeatable; replaces the policy's windows.windows): a cron expression (5 fields, @daily/@weekly/..., optional CRON_TZ=<zone> prefix; UTC without one), e.g. "CRON_TZ=Europe/Paris 0 2 * * *|2h"; without windows run acts at any time`,
		field: func(p *policy) any { return &p.Windows.Windows },
		bind: func(o *policyOptions, fs *pflag.FlagSet, f policyFlag, usage string) {
			fs.StringArrayVarP(&o.windows, f.name, f.shorthand, o.windows, usage)
			fs.DurationVar(&o.windowDuration, "window-duration", o.windowDuration, "how long a --window given without |DURATION stays open")
		},
		apply: func(o *policyOptions, p *policy) error {
			p.Windows.Windows = nil
			for _, v := range o.windows {
				w, err := window.ParseFlag(v, o.windowDuration)
				if err != nil {
					return fmt.Errorf("--window: %w", err)
				}
				p.Windows.Windows = append(p.Windows.Windows, v1alpha1.Window{Schedule: w.Schedule, Duration: metav1.Duration{Duration: w.Duration}})
			}
			return nil
		},
	},
	valueFlag(executeGroup, "window-step-estimate", "", "windows.stepEstimate", func(p *policy) *string { return (*string)(&p.Windows.StepEstimate) }, stringFlag, "how long a move is expected to take when the time left in the window is judged: bound (its timeouts) or p95 (of what each step took in this Redis cluster before, kept in --window-history-configmap, and in this run; a rejoin scaled to the pod's dataset; the bound until measured)"),
	valueFlag(executeGroup, "window-history-configmap", "", "windows.historyConfigMap", func(p *policy) *string { return &p.Windows.HistoryConfigMap }, stringFlag, "the ConfigMap, in the rebalancer's namespace (the pod's, or the kubeconfig context's), where the steps' durations are kept per Redis cluster for the p95 estimate"),

	valueFlag(scheduleGroup, "schedule", "", "schedule", func(p *policy) *string { return &p.Schedule }, stringFlag, `when passes start: a cron expression (5 fields, @hourly/@daily/..., @every DURATION of 1s or more, optional CRON_TZ=<zone> prefix; UTC without one); a pass still running at the next tick skips it; one that never fires within 4 years is refused`),

	valueFlag(scheduleGroup, "roles-interval", "", "watch.rolesInterval", func(p *policy) *time.Duration { return &p.Watch.RolesInterval.Duration }, durationFlag, "how often every selected Redis cluster's roles are read between passes (a role change that breaks MasterQuorum starts a pass off the schedule)"),
	valueFlag(scheduleGroup, "quorum-pass-interval", "", "watch.quorumPassInterval", func(p *policy) *time.Duration { return &p.Watch.QuorumPassInterval.Duration }, durationFlag, "least time between two passes a broken MasterQuorum starts off the schedule"),

	valueFlag(guardGroup, "guard", "", "guard.enabled", func(p *policy) *bool { return &p.Guard.Enabled }, boolFlag, "serve the eviction guard (a validating admission webhook on pod evictions, on --guard-listen-address) and hand the masters it holds, and those on nodes being emptied, off to replicas"),
	valueFlag(guardGroup, "guard-max-hold", "", "guard.maxHold", func(p *policy) *time.Duration { return &p.Guard.MaxHold.Duration }, durationFlag, "the longest the guard holds one pod's eviction; later evictions of the pod are admitted with a Warning Event"),

	valueFlag(outputGroup, "output", "o", "output", func(p *policy) *string { return (*string)(&p.Output) }, stringFlag, contractUsage),
}

// bindGroup binds the flags of group on fs; usages replace the help of the flags they name.
// Each flag is marked with policyFieldAnnotation.
func (o *policyOptions) bindGroup(fs *pflag.FlagSet, group flagGroup, usages map[string]string) {
	for _, f := range policyFlagTable {
		if f.group != group {
			continue
		}
		usage, ok := usages[f.name]
		if !ok {
			usage = f.usage
		}
		f.bind(o, fs, f, usage)
		_ = fs.SetAnnotation(f.name, policyFieldAnnotation, []string{f.path})
		o.bound[f.name] = f
	}
}

// addPolicyFlag binds --policy.
func (o *policyOptions) addPolicyFlag(fs *pflag.FlagSet) {
	fs.StringVar(&o.file, "policy", o.file, "RebalancerPolicy `FILE` (one YAML document of at most 1 MiB; `redis-rebalancer policy default` prints a complete one, docs/policy.md describes it; - for stdin): its fields replace the defaults below, and each flag given on the command line overrides its field")
}

// releaseReplicaClaimsUsage is --release-replica-claims' help.
const releaseReplicaClaimsUsage = "allow moving a pod away from its zonal PersistentVolumes: a master is failed over first, and after the eviction its claims are deleted; the StatefulSet re-creates them empty and the pod resyncs in full from its master"

// addSelectionFlags binds the flags of selection and rules: which clusters, and how the rules
// judge them. releaseUsage is --release-replica-claims' help.
func (o *policyOptions) addSelectionFlags(fs *pflag.FlagSet, releaseUsage string) {
	o.bindGroup(fs, selectionGroup, map[string]string{"release-replica-claims": releaseUsage})
}

// addRedisFlags binds the flags of the policy's redis section. The Secret references are the
// file's only.
func (o *policyOptions) addRedisFlags(fs *pflag.FlagSet) {
	o.bindGroup(fs, redisGroup, nil)
}

// allowPendingStepsUsage is --allow-pending-steps' help.
const allowPendingStepsUsage = "plan through Pending pods: an evicted pod may wait Pending until a later move frees room, one pod per Redis cluster at a time (its shard runs without that replica meanwhile; the plan names the moves). Without it, each evicted pod must be placeable at once, and a cluster that only such a plan fixes says so"

// addPlanFlags binds the planner's bounds; pendingUsage is --allow-pending-steps' help.
func (o *policyOptions) addPlanFlags(fs *pflag.FlagSet, pendingUsage string) {
	o.bindGroup(fs, planGroup, map[string]string{"allow-pending-steps": pendingUsage})
}

// addExecuteFlags binds the flags of a pass that acts (run, serve): the limits, the failover,
// the timeouts and the maintenance windows (with --window-duration, the duration of a --window
// given without one).
func (o *policyOptions) addExecuteFlags(fs *pflag.FlagSet) {
	o.bindGroup(fs, executeGroup, nil)
}

// addScheduleFlag binds --schedule and the watch's flags (serve's).
func (o *policyOptions) addScheduleFlag(fs *pflag.FlagSet) {
	o.bindGroup(fs, scheduleGroup, nil)
}

// addGuardFlags binds --guard and --guard-max-hold (serve's eviction guard); the webhook's
// failure policy, timeout and name and the drain taints are the file's only.
func (o *policyOptions) addGuardFlags(fs *pflag.FlagSet) {
	o.bindGroup(fs, guardGroup, nil)
}

// addOutputFlag binds -o; usage is its help.
func (o *policyOptions) addOutputFlag(fs *pflag.FlagSet, usage string) {
	o.bindGroup(fs, outputGroup, map[string]string{"output": usage})
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
	var zeros field.ErrorList    // fields of v1alpha1.PositiveFields a flag gave as 0
	given := map[string]string{} // field path → flag
	fs.Visit(func(f *pflag.Flag) {
		pf, ok := o.bound[f.Name]
		if !ok {
			return
		}
		given[pf.path] = f.Name
		if err := pf.apply(o, p); err != nil {
			errs = append(errs, err)
		}
		if v1alpha1.IsPositiveField(pf.path) && isZeroValue(pf.field(p)) {
			zeros = append(zeros, field.Invalid(field.NewPath(pf.path), f.Value.String(), v1alpha1.PositiveMessage+" (leave the flag out for its default)"))
		}
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if fe := append(zeros, v1alpha1.ValidateRebalancerPolicy(p)...); len(fe) > 0 {
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

// isZeroValue reports whether a policy field a flag is bound to (what policyFlag.field returns)
// holds a zero count or duration.
func isZeroValue(v any) bool {
	switch x := v.(type) {
	case *int32:
		return *x == 0
	case *int64:
		return *x == 0
	case *time.Duration:
		return *x == 0
	}
	return false
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

// PolicyFlags returns, for each field of the policy a flag overrides, the flags ("--max-moves",
// sorted): hack/gendocs writes them into the policy reference (policyFlagTable).
func PolicyFlags() map[string][]string {
	m := map[string][]string{}
	for _, f := range policyFlagTable {
		m[f.path] = append(m[f.path], "--"+f.name)
	}
	for _, names := range m {
		sort.Strings(names)
	}
	return m
}
