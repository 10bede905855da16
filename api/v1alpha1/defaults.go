package v1alpha1

import (
	_ "embed" // CommentedDefault
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The defaults of the policy: the one place they are written. The command line's flags show
// them, and the engine packages that give their own zero values a default (policies, plan,
// execute, window, redisctl) take it from here.
const (
	// DefaultClusterLabel is selection.clusterLabel without a layout: the pod label whose value
	// names a pod's Redis cluster (the Helm release, for a chart).
	DefaultClusterLabel = "app.kubernetes.io/instance"
	// DefaultShardSource is selection.shardSource without a layout.
	DefaultShardSource = ShardSourceAuto
	// DefaultMaxStates is plan.maxStates: placements the planner evaluates per Redis cluster.
	DefaultMaxStates = 200000
	// DefaultMaxMovesPerCluster is limits.maxMovesPerCluster: evictions per Redis cluster in one
	// pass.
	DefaultMaxMovesPerCluster = 10
	// DefaultMaxParallelClusters is limits.maxParallelClusters.
	DefaultMaxParallelClusters = 1
	// DefaultFailoverMode is failover.mode.
	DefaultFailoverMode = FailoverDefault
	// DefaultUsernameKey and DefaultPasswordKey are redis.usernameSecretRef.key and
	// redis.passwordSecretRef.key (the key the Bitnami Redis Cluster chart uses for the password).
	DefaultUsernameKey = "redis-username"
	DefaultPasswordKey = "redis-password"
	// DefaultRedisPort is redis.port: the Redis client port of a pod.
	DefaultRedisPort = 6379
	// DefaultMaxLagBytes is redis.maxLagBytes: the largest replication offset lag, in bytes, at
	// which a replica is still in sync (its master's master_repl_offset minus its own
	// slave_repl_offset, both from INFO replication).
	DefaultMaxLagBytes int64 = 1 << 20
	// DefaultMaxLastIOSeconds is redis.maxLastIOSeconds: the largest master_last_io_seconds_ago
	// (INFO replication, on the replica) at which a replica is still in sync. A master with no
	// writes pings its replicas only every repl-ping-replica-period (10 s by default), so values
	// below about 11 need that setting lowered too.
	DefaultMaxLastIOSeconds = 15
	// DefaultStepEstimate is windows.stepEstimate.
	DefaultStepEstimate = StepEstimateBound
	// DefaultWindowDuration is a maintenance window's duration.
	DefaultWindowDuration = time.Hour
	// DefaultOutput is output.
	DefaultOutput = OutputText
	// DefaultSchedule is schedule: serve starts a pass every 10 minutes.
	DefaultSchedule = "*/10 * * * *"
	// DefaultGuardMaxHold is guard.maxHold: long enough for a health gate, a verified failover
	// and a client drain; short enough that a drain blocked by an unhealthy cluster goes on.
	DefaultGuardMaxHold = 5 * time.Minute
	// DefaultGuardFailurePolicy is guard.failurePolicy.
	DefaultGuardFailurePolicy = FailurePolicyIgnore
	// DefaultGuardTimeoutSeconds is guard.timeoutSeconds.
	DefaultGuardTimeoutSeconds = 5
	// MaxGuardTimeoutSeconds is the largest guard.timeoutSeconds: the guard answers well within
	// it, and an evictor waits at most this long when the guard is down with failurePolicy Ignore.
	MaxGuardTimeoutSeconds = 5
	// DefaultGuardWebhookConfigurationName is guard.webhookConfigurationName (the installs').
	DefaultGuardWebhookConfigurationName = "redis-rebalancer-guard"
)

// DefaultGuardDrainTaints are guard.drainTaints: the taints kubectl drain's cordon
// (node.kubernetes.io/unschedulable, set by the node lifecycle controller), cluster-autoscaler's
// scale-down and Karpenter's disruption put on a node before they evict its pods.
var DefaultGuardDrainTaints = []string{"node.kubernetes.io/unschedulable", "ToBeDeletedByClusterAutoscaler", "karpenter.sh/disrupted"}

// The rules a policy may name in rules.enabled, rules.disabled and rules.soft: the names of
// policies' rule registry (a test there checks that both list the same rules), and AllRules,
// which rules.disabled accepts for every default rule.
const (
	RuleShardSeparation       = "ShardSeparation"
	RuleMaxPodsPerNode        = "MaxPodsPerNode"
	RuleZoneEvenSplit         = "ZoneEvenSplit"
	RuleMaxPodsPerZone        = "MaxPodsPerZone"
	RuleAllowedZones          = "AllowedZones"
	RuleTopologySpread        = "TopologySpread"
	RuleUnschedulable         = "Unschedulable"
	RuleMasterQuorum          = "MasterQuorum"
	RuleNodeSpread            = "NodeSpread"
	RuleZoneBalance           = "ZoneBalance"
	RuleSoftTopologySpread    = "SoftTopologySpread"
	RulePreferredAntiAffinity = "PreferredAntiAffinity"
	AllRules                  = "*"
)

// RuleNames lists every rule a policy may name, in the registry's order.
var RuleNames = []string{
	RuleShardSeparation, RuleMaxPodsPerNode, RuleZoneEvenSplit, RuleMaxPodsPerZone, RuleAllowedZones,
	RuleTopologySpread, RuleUnschedulable, RuleMasterQuorum, RuleNodeSpread, RuleZoneBalance,
	RuleSoftTopologySpread, RulePreferredAntiAffinity,
}

// The durations the policy defaults: the waits of a move (failover and timeouts) and Redis's
// connection timeouts (redis).
const (
	// DefaultFailoverTimeout is failover.timeout.
	DefaultFailoverTimeout = 30 * time.Second
	// DefaultDrainQuiet and DefaultDrainTimeout are failover.drainQuiet and failover.drainTimeout.
	DefaultDrainQuiet   = time.Second
	DefaultDrainTimeout = 15 * time.Second
	// DefaultHealthTimeout is timeouts.healthGate.
	DefaultHealthTimeout = 2 * time.Minute
	// DefaultRecreateTimeout is timeouts.recreate.
	DefaultRecreateTimeout = 5 * time.Minute
	// DefaultRejoinTimeout is timeouts.rejoin.
	DefaultRejoinTimeout = 5 * time.Minute
	// DefaultFullSyncTimeout is timeouts.fullSync.
	DefaultFullSyncTimeout = 30 * time.Minute
	// DefaultRequestTimeout is timeouts.request.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultDialTimeout is redis.dialTimeout: opening one TCP (and TLS) connection to a node.
	DefaultDialTimeout = 2 * time.Second
	// DefaultReadTimeout is redis.readTimeout: waiting for one reply.
	DefaultReadTimeout = 3 * time.Second
	// DefaultWriteTimeout is redis.writeTimeout: writing one command.
	DefaultWriteTimeout = 3 * time.Second
	// DefaultRolesInterval is watch.rolesInterval: how often serve reads every Redis cluster's
	// roles between passes.
	DefaultRolesInterval = 5 * time.Second
	// DefaultQuorumPassInterval is watch.quorumPassInterval: the least time between two passes a
	// broken MasterQuorum starts off the schedule.
	DefaultQuorumPassInterval = time.Minute
)

// SetDefaults fills every field of p left at its zero value that has a default (the Default…
// constants above). Fields whose zero value means something stay as they are: plan.maxMoves
// (the planner's own bound), the three maxNoOfPodsToEvict… limits (no limit), the namespaces and
// the label selector (all), the credentials' sources, and the fields a layout sets
// (clusterLabel, shardSource, roleLabel, recreatingOwners, the Secret references' keys: "" means
// the layout's, which ApplyLayout fills). It sets apiVersion and kind. It is applied after
// validation, and again after flags override the file.
func SetDefaults(p *RebalancerPolicy) {
	p.APIVersion, p.Kind = SchemeGroupVersion.String(), Kind
	setInt32(&p.Plan.MaxStates, DefaultMaxStates)
	setInt32(&p.Limits.MaxMovesPerCluster, DefaultMaxMovesPerCluster)
	setInt32(&p.Limits.MaxParallelClusters, DefaultMaxParallelClusters)

	if p.Failover.Mode == "" {
		p.Failover.Mode = DefaultFailoverMode
	}
	setDuration(&p.Failover.Timeout, DefaultFailoverTimeout)
	setDuration(&p.Failover.DrainQuiet, DefaultDrainQuiet)
	setDuration(&p.Failover.DrainTimeout, DefaultDrainTimeout)

	setDuration(&p.Timeouts.HealthGate, DefaultHealthTimeout)
	setDuration(&p.Timeouts.Recreate, DefaultRecreateTimeout)
	setDuration(&p.Timeouts.Rejoin, DefaultRejoinTimeout)
	setDuration(&p.Timeouts.FullSync, DefaultFullSyncTimeout)
	setDuration(&p.Timeouts.Request, DefaultRequestTimeout)

	r := &p.Redis
	setInt32(&r.Port, DefaultRedisPort)
	setDuration(&r.DialTimeout, DefaultDialTimeout)
	setDuration(&r.ReadTimeout, DefaultReadTimeout)
	setDuration(&r.WriteTimeout, DefaultWriteTimeout)
	if r.MaxLagBytes == 0 {
		r.MaxLagBytes = DefaultMaxLagBytes
	}
	setInt32(&r.MaxLastIOSeconds, DefaultMaxLastIOSeconds)

	if p.Windows.StepEstimate == "" {
		p.Windows.StepEstimate = DefaultStepEstimate
	}
	for i := range p.Windows.Windows {
		setDuration(&p.Windows.Windows[i].Duration, DefaultWindowDuration)
	}
	setString(&p.Schedule, DefaultSchedule)
	if p.Output == "" {
		p.Output = DefaultOutput
	}
	setDuration(&p.Watch.RolesInterval, DefaultRolesInterval)
	setDuration(&p.Watch.QuorumPassInterval, DefaultQuorumPassInterval)

	g := &p.Guard
	setDuration(&g.MaxHold, DefaultGuardMaxHold)
	if g.FailurePolicy == "" {
		g.FailurePolicy = DefaultGuardFailurePolicy
	}
	setInt32(&g.TimeoutSeconds, DefaultGuardTimeoutSeconds)
	setString(&g.WebhookConfigurationName, DefaultGuardWebhookConfigurationName)
	if len(g.DrainTaints) == 0 {
		g.DrainTaints = append([]string(nil), DefaultGuardDrainTaints...)
	}
}

// ApplyLayout fills the fields a layout sets that p leaves empty: first with selection.layout's
// values (DefaultsOf), then with the defaults that apply without a layout (DefaultClusterLabel,
// DefaultShardSource, DefaultUsernameKey, DefaultPasswordKey; roleLabel and recreatingOwners stay
// empty). A field the file or a flag set is kept. The command line applies it once the flags
// have overridden the file; the policy it runs with has every such field set.
func ApplyLayout(p *RebalancerPolicy) {
	l := DefaultsOf(p.Selection.Layout)
	sel := &p.Selection
	setString(&sel.ClusterLabel, l.ClusterLabel)
	setString(&sel.ClusterLabel, DefaultClusterLabel)
	setString(&sel.ShardSource, l.ShardSource)
	setString(&sel.ShardSource, DefaultShardSource)
	setString(&sel.RoleLabel, l.RoleLabel)
	if w := &sel.WorkloadSelector; len(w.MatchLabels) == 0 && len(w.MatchExpressions) == 0 && len(l.WorkloadLabels) > 0 {
		w.MatchLabels = maps.Clone(l.WorkloadLabels)
	}
	if len(sel.RecreatingOwners) == 0 && len(l.RecreatingOwners) > 0 {
		sel.RecreatingOwners = append([]string(nil), l.RecreatingOwners...)
	}
	r := &p.Redis
	setString(&r.UsernameSecretRef.Key, l.UsernameKey)
	setString(&r.UsernameSecretRef.Key, DefaultUsernameKey)
	setString(&r.PasswordSecretRef.Key, l.PasswordKey)
	setString(&r.PasswordSecretRef.Key, DefaultPasswordKey)
}

// Default returns a policy with every default set: what an empty policy file means.
func Default() *RebalancerPolicy {
	p := &RebalancerPolicy{}
	SetDefaults(p)
	return p
}

func setString(v *string, def string) {
	if *v == "" {
		*v = def
	}
}

func setInt32(v *int32, def int32) {
	if *v == 0 {
		*v = def
	}
}

func setDuration(v *metav1.Duration, def time.Duration) {
	if v.Duration == 0 {
		v.Duration = def
	}
}

// commentedDefault is the complete default policy with every field's documentation as YAML
// comments, written by hack/gendocs from this package's doc comments and defaults.
//
//go:embed zz_generated.default.yaml
var commentedDefault []byte

// CommentedDefault returns the complete default policy, every field with its documentation as a
// YAML comment: what `redis-rebalancer policy default` prints. It decodes to Default().
func CommentedDefault() []byte { return append([]byte(nil), commentedDefault...) }
