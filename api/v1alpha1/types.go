package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The field comments below are the policy reference: hack/gendocs copies them into
// docs/policy.md and, as YAML comments, into the complete policy `redis-rebalancer policy
// default` prints. Each starts with the field's name in the file, says what it does, its unit,
// and what 0 or "" means; the default value is added by the generator (defaults.go).

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RebalancerPolicy configures redis-rebalancer: which Redis clusters it looks at, how the HA
// rules judge them, how far the planner searches, how many pods one pass may evict, how a master
// is failed over and how long each wait lasts, how Redis is reached, when the pass may act, and
// what it prints. Every command (run, serve, check, plan, lint) reads it with --policy FILE;
// a flag given on the command line overrides the file's field.
type RebalancerPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// selection picks the Redis clusters redis-rebalancer looks at.
	Selection Selection `json:"selection"`
	// rules tunes the HA rules that judge a placement.
	Rules Rules `json:"rules"`
	// plan bounds the planner's search for the fewest evictions.
	Plan Plan `json:"plan"`
	// limits bound the evictions of one pass (the descheduler's limits, and the rebalancer's own).
	Limits Limits `json:"limits"`
	// failover says how a master is failed over to a replica before its pod is evicted.
	Failover Failover `json:"failover"`
	// timeouts bound the waits of a move.
	Timeouts Timeouts `json:"timeouts"`
	// redis says how to reach and authenticate to the Redis nodes (at their pod IPs).
	Redis Redis `json:"redis"`
	// windows are the maintenance windows: when a pass may disrupt pods.
	Windows Windows `json:"windows"`
	// schedule is when serve starts a pass: a cron expression (robfig/cron/v3's standard parser:
	// five fields, descriptors such as @hourly or @every 30m, an optional CRON_TZ=<zone> prefix;
	// UTC without one); a pass still running at the next activation skips it. Refused: empty, a
	// CRON_TZ= naming no zone, an @every under 1s or not in whole seconds, and a schedule that
	// never fires (no activation within 4 years: "0 0 30 2 *"). Used by serve only; run, check
	// and plan ignore it.
	Schedule string `json:"schedule"`
	// output is the report's format: text (human-readable; table is the same) or json (the JSON
	// contract of the README).
	Output OutputFormat `json:"output"`
	// watch tunes what serve watches between its passes. Used by serve only.
	Watch Watch `json:"watch"`
	// guard configures the eviction guard that serve runs: a validating admission webhook on pod
	// evictions that holds the eviction of a Redis master until it is failed over. Used by serve
	// only.
	Guard Guard `json:"guard"`
}

// Watch tunes serve's watched view between its passes: informers keep the objects the rules read
// (a pass lists nothing), and every Redis cluster's roles are read again on an interval, so that
// a role change that breaks MasterQuorum (Redis's own promotions after a node loss) starts a pass
// without waiting for the schedule.
type Watch struct {
	// rolesInterval is how often serve reads every selected Redis cluster's roles (CLUSTER
	// NODES) between passes.
	RolesInterval metav1.Duration `json:"rolesInterval"`
	// quorumPassInterval is the least time between two passes that a broken MasterQuorum starts
	// off the schedule (each waits at its health gate for Redis to settle, and respects the
	// maintenance windows, as every pass does).
	QuorumPassInterval metav1.Duration `json:"quorumPassInterval"`
}

// Selection picks Redis clusters: those of the selected namespaces that have a pod the label
// selector matches. A Redis cluster is the set of pods that share the value of clusterLabel.
type Selection struct {
	// namespaces limits the Redis clusters to these namespaces (the descheduler's Namespaces:
	// include or exclude, not both). Empty: every namespace.
	Namespaces Namespaces `json:"namespaces"`
	// labelSelector keeps the Redis clusters with at least one pod it matches (a Kubernetes
	// label selector: matchLabels, matchExpressions). Empty: every cluster.
	LabelSelector metav1.LabelSelector `json:"labelSelector"`
	// layout names how the Redis clusters are deployed, and sets for it the defaults of
	// clusterLabel, shardSource, roleLabel, recreatingOwners and the keys of redis's Secret
	// references: seed (the operator the HA rules were first written for: one StatefulSet per
	// shard, pods labelled cloud.netease.com/cluster-name), bitnami (the Bitnami
	// redis-cluster chart: one StatefulSet for the whole cluster), ot (OT-CONTAINER-KIT's
	// redis-operator: a leader and a follower StatefulSet), ucloud (ucloud's
	// redis-cluster-operator: one StatefulSet per shard), kubeblocks (KubeBlocks: one InstanceSet
	// per shard). A field set in the file or by its flag overrides the layout's. "": none (the
	// defaults below); the README's table lists what each layout sets and needs.
	Layout Layout `json:"layout"`
	// clusterLabel is the pod label whose value names the Redis cluster (the seed layout's:
	// cloud.netease.com/cluster-name). Pods without it are not Redis pods. "": the layout's
	// (app.kubernetes.io/instance without one). A Redis cluster's members are the pods its
	// workloads own among those sharing the label's value: the StatefulSets whose template
	// carries it (and workloadSelector matches) and the controllers of recreatingOwners; a pod of
	// another owner (another app of the same Helm release, the rebalancer itself) or of a Job is
	// never a member.
	ClusterLabel string `json:"clusterLabel"`
	// workloadSelector keeps as Redis workloads only the StatefulSets whose pod template labels
	// it matches (a Kubernetes label selector), so that another StatefulSet of the same Helm
	// release is not taken for Redis (Bitnami's layout: app.kubernetes.io/name=redis-cluster; OT's:
	// redis_setup_type=cluster). Empty: the layout's (without one, every StatefulSet whose template
	// carries clusterLabel; live, a workload none of whose pods answers as a Redis Cluster node is
	// then left out as not Redis).
	WorkloadSelector metav1.LabelSelector `json:"workloadSelector"`
	// shardSource says where a pod's shard comes from: owner (its controller: one StatefulSet
	// per shard), redis (CLUSTER NODES: a master serving slots and the replicas whose master it
	// is, Redis nodes matched to pods by pod IP, announced hostname or the address of the
	// Service that exposes the pod alone; offline, from --redis-nodes), label:KEY (a pod label),
	// or auto (the owner, unless Redis groups the pods otherwise: Bitnami's one StatefulSet, OT's
	// leader and follower). A pod whose shard Redis does not know is reported and never evicted.
	// "": the layout's (auto without one).
	ShardSource string `json:"shardSource"`
	// roleLabel is the pod label giving a pod's Redis role (master or primary; replica, slave
	// or secondary) when Redis is not read: offline without --redis-nodes, or with
	// --redis-roles=false. Redis's roles replace it whenever Redis is read. "": the layout's
	// (without one, roles are unknown until Redis is read).
	RoleLabel string `json:"roleLabel"`
	// recreatingOwners are the kinds of controller other than StatefulSet that re-create an
	// evicted pod (KubeBlocks' InstanceSet, an operator's custom resource): such a pod may be
	// evicted, and is taken to come back with its own spec. A pod owned by another kind, or by
	// no controller, is reported and never evicted. Empty: the layout's (without one,
	// StatefulSets only).
	RecreatingOwners []string `json:"recreatingOwners"`
	// allowEmpty makes a selection that matches no Redis cluster no error, for namespaces that
	// may legitimately have none yet. Without it, every command that reads clusters fails
	// (exit 1) when the selection matches none, saying what matched nothing (a namespace, the
	// cluster label or the label selector): a typo is not taken for compliance.
	AllowEmpty bool `json:"allowEmpty"`
}

// The shard sources selection.shardSource names. Its text form is one of them, or label:KEY for
// ShardSourceLabel (ParseShardSource).
const (
	// ShardSourceAuto is the pod's controller, unless Redis, once read, groups the pods otherwise
	// than their controllers do (Bitnami's one StatefulSet for the whole cluster, OT's leader and
	// follower StatefulSets): then Redis.
	ShardSourceAuto = "auto"
	// ShardSourceRedis is Redis's CLUSTER NODES: a master and the replicas whose master it is.
	// Until Redis is read, every pod's shard is unknown.
	ShardSourceRedis = "redis"
	// ShardSourceOwner is the pod's controller (one StatefulSet per shard; KubeBlocks' one
	// InstanceSet per shard); a pod without one is a shard of its own.
	ShardSourceOwner = "owner"
	// ShardSourceLabel is the value of the pod label KEY (label:KEY); a pod without it falls back
	// to its controller.
	ShardSourceLabel = "label"
)

// Namespaces lists the namespaces to include or to exclude (the descheduler's Namespaces).
type Namespaces struct {
	// include lists the only namespaces looked at. Empty: all but those excluded.
	Include []string `json:"include"`
	// exclude lists namespaces never looked at. Empty: none.
	Exclude []string `json:"exclude"`
}

// Rules tunes the HA rules that judge a placement. Like the plugins of a kube-scheduler or
// descheduler profile, each rule is enabled or disabled, hard or soft: the rules judged are the
// default ones (every rule but SoftTopologySpread and PreferredAntiAffinity) minus disabled plus
// enabled; check, plan and run report only the rules judged, and plan and run act only on the
// hard ones (and on the soft ones with plan.softEvictions). docs/rules.md lists the rules.
type Rules struct {
	// enabled lists rules judged besides the default ones: SoftTopologySpread (ScheduleAnyway
	// topology spread constraints) and PreferredAntiAffinity (preferred pod anti-affinity) are
	// judged only when listed here; a rule listed in both enabled and disabled is refused. Empty:
	// the default rules.
	Enabled []string `json:"enabled"`
	// disabled lists rules that are neither judged nor reported; "*" disables every default rule,
	// so that enabled lists the only ones judged (disabled: ["*"], enabled: [TopologySpread]
	// judges the pods' topology spread constraints alone). Empty: none.
	Disabled []string `json:"disabled"`
	// soft lists hard rules judged as soft: their violations are reported ("soft": true) and no
	// longer decide compliance, and plans act on them only with plan.softEvictions. A soft rule
	// cannot be made hard. Empty: the rules keep their kind.
	Soft []string `json:"soft"`
	// relaxedLimits allows at most N/3 pods of a cluster per node and N/2 per zone, instead of
	// fewer than N/3 and N/2 (MaxPodsPerNode, MaxPodsPerZone): for a three-shard cluster over
	// several zones, the strict limits can deadlock scheduling (a pod left Pending for good).
	RelaxedLimits bool `json:"relaxedLimits"`
	// releaseReplicaClaims lets a move take a pod away from the zonal PersistentVolumes its claims
	// are bound to: a master is failed over first, the pod is evicted, then its claims (from its
	// StatefulSet's volumeClaimTemplates) are deleted; the StatefulSet re-creates them empty in
	// the zone the scheduler picks, and the pod, a replica, resyncs in full from its shard's
	// master. Only while that master is healthy, one released claim per shard at a time. Off by
	// default: a pod on a zonal volume stays in its zone.
	ReleaseReplicaClaims bool `json:"releaseReplicaClaims"`
}

// Plan bounds the planner's search for the shortest list of evictions.
type Plan struct {
	// maxMoves is the longest plan considered. 0: 12, or twice the lower bound on the moves
	// needed when that is more.
	MaxMoves int32 `json:"maxMoves"`
	// maxStates bounds the placements the planner evaluates per Redis cluster; when they run
	// out, the best plan found so far is used, marked not proven minimal.
	MaxStates int32 `json:"maxStates"`
	// allowPendingSteps lets a plan go through Pending pods: an evicted pod may wait Pending until
	// a later move frees room, one pod per Redis cluster at a time (its shard runs without that
	// replica meanwhile). Without it each evicted pod must be placeable at once. run and serve
	// carry such a plan out: the health gate accepts exactly the planned Pending pod meanwhile.
	AllowPendingSteps bool `json:"allowPendingSteps"`
	// softEvictions is the most evictions a plan may add, once every hard rule holds, to lower
	// the soft violations (every soft rule judged: NodeSpread, ZoneBalance, the rules of
	// rules.soft, and SoftTopologySpread and PreferredAntiAffinity when enabled): each such
	// eviction keeps every hard rule, and they come after the plan's other moves; run counts
	// them against the same limit over a pass. 0: soft rules are only reported.
	SoftEvictions int32 `json:"softEvictions"`
	// bestEffort plans, where no placement satisfies every hard rule (too little capacity, pods
	// that cannot leave their domain, a search that finds no plan), the fewest evictions to the
	// placement with the fewest violations the search reaches: first the fewest pods left without
	// a node, then the least excess over the hard rules' limits. Such a plan is labelled best
	// effort (text and JSON), and run carries it out. Off: such a cluster gets no plan.
	BestEffort bool `json:"bestEffort"`
}

// Limits bound the evictions of one pass. The three maxNoOfPodsToEvict… limits are the
// descheduler's (DeschedulerPolicy's fields of the same names, enforced by its PodEvictor) and
// count over every Redis cluster of the pass.
type Limits struct {
	// maxNoOfPodsToEvictPerNode is the most evictions of one pass from one node. 0: no limit.
	MaxNoOfPodsToEvictPerNode int32 `json:"maxNoOfPodsToEvictPerNode"`
	// maxNoOfPodsToEvictPerNamespace is the most evictions of one pass in one namespace. 0: no
	// limit.
	MaxNoOfPodsToEvictPerNamespace int32 `json:"maxNoOfPodsToEvictPerNamespace"`
	// maxNoOfPodsToEvictTotal is the most evictions of one pass. 0: no limit.
	MaxNoOfPodsToEvictTotal int32 `json:"maxNoOfPodsToEvictTotal"`
	// maxMovesPerCluster is the most evictions of one pass in one Redis cluster; the next pass
	// continues.
	MaxMovesPerCluster int32 `json:"maxMovesPerCluster"`
	// maxParallelClusters is how many Redis clusters progress at once, each with one
	// disruption in flight at most.
	MaxParallelClusters int32 `json:"maxParallelClusters"`
}

// FailoverMode is a CLUSTER FAILOVER variant (https://redis.io/commands/cluster-failover/).
type FailoverMode string

// The failover modes.
const (
	// FailoverDefault is plain CLUSTER FAILOVER: the replica catches up with its master before
	// it takes over; no acknowledged write is lost.
	FailoverDefault FailoverMode = "default"
	// FailoverForce is CLUSTER FAILOVER FORCE: no handshake with the master; writes the replica
	// has not received are lost.
	FailoverForce FailoverMode = "force"
	// FailoverTakeover is CLUSTER FAILOVER TAKEOVER: no handshake and no election; writes can be
	// lost and config epochs can collide.
	FailoverTakeover FailoverMode = "takeover"
)

// Failover says how a master is failed over to an in-sync replica before its pod is evicted, so
// that the pod leaves as a replica and its shard keeps a master.
type Failover struct {
	// mode is the CLUSTER FAILOVER variant: default (loses no acknowledged write), force or
	// takeover (both can lose writes).
	Mode FailoverMode `json:"mode"`
	// timeout bounds a failover and its verification (every node agrees on the new master).
	Timeout metav1.Duration `json:"timeout"`
	// drainQuiet: after a failover, the old master's clients count as gone once none has run a
	// keyspace command for this long.
	DrainQuiet metav1.Duration `json:"drainQuiet"`
	// drainTimeout bounds the wait for the old master's clients to go quiet; busy clients
	// reconnect after the eviction.
	DrainTimeout metav1.Duration `json:"drainTimeout"`
}

// Timeouts bound the waits of a move.
type Timeouts struct {
	// healthGate bounds the wait for a healthy cluster before a move (every pod Ready, Redis
	// cluster_state ok, every master with an in-sync replica), and again after it.
	HealthGate metav1.Duration `json:"healthGate"`
	// recreate bounds the wait for an evicted pod to be re-created, scheduled and Ready.
	Recreate metav1.Duration `json:"recreate"`
	// rejoin bounds the wait for a re-created pod to be a connected, in-sync replica again.
	Rejoin metav1.Duration `json:"rejoin"`
	// fullSync bounds the same wait for a pod whose claims the move released
	// (rules.releaseReplicaClaims): it comes back empty and copies its master's whole dataset (a
	// full resync: the master's snapshot, its transfer, its loading), which takes longer than the
	// partial resync of a replica that kept its data.
	FullSync metav1.Duration `json:"fullSync"`
	// request bounds each step without a wait of its own: the placeability check, the
	// PodDisruptionBudget dry run, the role check, the eviction request, the re-observation.
	Request metav1.Duration `json:"request"`
}

// Redis says how to reach and authenticate to the Redis nodes. The user and the password each
// come from one place at most: a Secret read through the API server, a file, or an environment
// variable.
type Redis struct {
	// port is the Redis client port of the pods.
	Port int32 `json:"port"`
	// usernameSecretRef names the Secret key holding the Redis ACL user, read through the API
	// server (a GET of that one Secret: RBAC by resourceNames). No name: not used.
	UsernameSecretRef SecretKeyRef `json:"usernameSecretRef"`
	// passwordSecretRef names the Secret key holding the Redis password, read through the API
	// server (a GET of that one Secret: RBAC by resourceNames). No name: not used. The password
	// is never logged.
	PasswordSecretRef SecretKeyRef `json:"passwordSecretRef"`
	// usernameFile is a file holding the Redis ACL user (a mounted Secret, for instance).
	UsernameFile string `json:"usernameFile"`
	// usernameEnv is an environment variable holding the Redis ACL user.
	UsernameEnv string `json:"usernameEnv"`
	// passwordFile is a file holding the Redis password (a mounted Secret, for instance).
	PasswordFile string `json:"passwordFile"`
	// passwordEnv is an environment variable holding the Redis password.
	PasswordEnv string `json:"passwordEnv"`
	// tls configures TLS to the Redis nodes (their tls-port).
	TLS RedisTLS `json:"tls"`
	// dialTimeout bounds opening a connection to a node (TCP connect and TLS handshake).
	DialTimeout metav1.Duration `json:"dialTimeout"`
	// readTimeout bounds waiting for a reply.
	ReadTimeout metav1.Duration `json:"readTimeout"`
	// writeTimeout bounds sending a command.
	WriteTimeout metav1.Duration `json:"writeTimeout"`
	// maxLagBytes is the largest replication lag, in bytes (master_repl_offset minus the
	// replica's slave_repl_offset), at which a replica counts as in sync.
	MaxLagBytes int64 `json:"maxLagBytes"`
	// maxLastIOSeconds is the largest master_last_io_seconds_ago at which a replica counts as
	// in sync. A master without writes pings its replicas every repl-ping-replica-period (10 s
	// by default): values below about 11 need that lowered too.
	MaxLastIOSeconds int32 `json:"maxLastIOSeconds"`
}

// SecretKeyRef names one key of one Secret.
type SecretKeyRef struct {
	// namespace is the Secret's namespace.
	Namespace string `json:"namespace"`
	// name is the Secret's name. "": no Secret is read.
	Name string `json:"name"`
	// key is the key of the Secret's data that holds the value. "": the layout's (without one,
	// redis-username for the user, redis-password for the password: Bitnami's chart's).
	Key string `json:"key"`
}

// RedisTLS configures TLS to the Redis nodes.
type RedisTLS struct {
	// enabled makes every connection to Redis use TLS.
	Enabled bool `json:"enabled"`
	// caFile is a PEM bundle of the CAs that sign the Redis certificates. "": the system roots.
	CAFile string `json:"caFile"`
	// certFile is a PEM client certificate (Redis tls-auth-clients); with keyFile.
	CertFile string `json:"certFile"`
	// keyFile is the PEM key of certFile.
	KeyFile string `json:"keyFile"`
	// serverName is the name checked in the Redis certificates. "": each node's pod IP (the
	// certificates then need IP SANs).
	ServerName string `json:"serverName"`
	// insecureSkipVerify turns certificate verification off. Tests only.
	InsecureSkipVerify bool `json:"insecureSkipVerify"`
}

// StepEstimate says how long a move is expected to take when the time left in a maintenance
// window is judged.
type StepEstimate string

// The step estimates (rebalancer/window judges a window's time left with them).
const (
	// StepEstimateBound expects each step to take as long as its timeouts allow: a move starts
	// only when it cannot outlast the window, even if every wait runs to its timeout.
	StepEstimateBound StepEstimate = "bound"
	// StepEstimateP95 expects each step to take the 95th percentile (nearest rank) of the
	// durations measured for that step in this Redis cluster by earlier passes (the step history,
	// windows.historyConfigMap) and this one, and in this pass's other clusters, at most its
	// bound; a rejoin's durations are scaled to the dataset of the pod that moves (used_memory)
	// at the sync rate they showed. A step never measured counts its bound.
	StepEstimateP95 StepEstimate = "p95"
)

// Windows are the maintenance windows: when a pass may disrupt pods. Outside every window a
// pass only observes, plans and reports; inside one, a move starts only when its expected
// duration ends before the window closes.
type Windows struct {
	// stepEstimate is how a move's expected duration is judged: bound (the sum of its steps'
	// timeouts) or p95 (the 95th percentile of each step's durations measured in this Redis
	// cluster by earlier passes and this one, a rejoin scaled to the pod's dataset; the bound
	// for a step never measured).
	StepEstimate StepEstimate `json:"stepEstimate"`
	// historyConfigMap names the ConfigMap, in the rebalancer's own namespace (the pod's; from
	// a workstation, the kubeconfig context's), where each pass that acts keeps the durations of
	// the steps it measured, one key per Redis cluster (the newest 20 per step; each rejoin with
	// the dataset it synced). Read and written with stepEstimate p95 only; a pass that may not
	// (RBAC: get and update on it, create on configmaps) logs it and judges with its own
	// measures.
	HistoryConfigMap string `json:"historyConfigMap"`
	// windows are the maintenance windows; a pass may act while any is open. Empty: at any
	// time.
	Windows []Window `json:"windows"`
}

// Window is one maintenance window: it opens at each activation of its schedule and stays open
// for its duration.
type Window struct {
	// schedule is a cron expression: five fields or a descriptor (@daily, @weekly, ...), with an
	// optional CRON_TZ=<IANA zone> prefix (UTC without one), e.g.
	// "CRON_TZ=Europe/Paris 0 2 * * 1-5". @every is refused: it opens no window at a fixed time;
	// so are a CRON_TZ= naming no zone and a schedule that never fires (no activation within 4
	// years: "0 0 30 2 *").
	Schedule string `json:"schedule"`
	// duration is how long the window stays open after each activation.
	Duration metav1.Duration `json:"duration"`
}

// OutputFormat is the format of a command's report.
type OutputFormat string

// The output formats.
const (
	// OutputText is the human-readable report: maps, steps, violations.
	OutputText OutputFormat = "text"
	// OutputTable is OutputText under the name check, plan and lint used first.
	OutputTable OutputFormat = "table"
	// OutputJSON is the JSON contract (README "JSON output").
	OutputJSON OutputFormat = "json"
)

// FailurePolicy is what kube-apiserver does with an eviction when the eviction guard cannot be
// reached or does not answer in time (admissionregistration.k8s.io/v1 FailurePolicyType).
type FailurePolicy string

// The failure policies.
const (
	// FailurePolicyIgnore lets the eviction through when the guard does not answer: a drain never
	// waits on the guard, and a master may then be evicted without a failover.
	FailurePolicyIgnore FailurePolicy = "Ignore"
	// FailurePolicyFail refuses the eviction (500) when the guard does not answer: no master is
	// evicted blindly, and every eviction in the selected namespaces waits for the guard
	// (kubectl drain does not retry a 500; it fails).
	FailurePolicyFail FailurePolicy = "Fail"
)

// Guard configures the eviction guard (serve only): every replica of serve answers kube-apiserver's
// AdmissionReviews for CREATE pods/eviction in the selected namespaces on a TLS port, from its
// watched cache and one bounded Redis read; it denies with 429 (TooManyRequests, which kubectl
// drain, cluster-autoscaler, Karpenter and the descheduler retry) the eviction of a master serving
// slots and of a pod whose shard would be left without a serving master or an in-sync replica,
// and the leader fails each held master, and every master on a node being emptied, over to an
// in-sync replica on a node that stays. The guard itself never evicts.
type Guard struct {
	// enabled makes serve answer the eviction webhook (--guard-listen-address) and hand masters
	// off. The ValidatingWebhookConfiguration is installed apart (deploy/overlays/guard, the
	// Helm chart's guard.enabled).
	Enabled bool `json:"enabled"`
	// maxHold is the longest the guard holds one pod's eviction, from the first 429 this replica
	// answered for it; a later eviction of the pod is admitted with a Warning Event
	// (RedisEvictionHoldExpired) and counted, so that a drain never hangs forever.
	MaxHold metav1.Duration `json:"maxHold"`
	// failurePolicy is the webhook configuration's failurePolicy: Ignore (an eviction goes
	// through when the guard does not answer) or Fail (it is refused). The installs write it
	// into the ValidatingWebhookConfiguration; serve warns at start when the live configuration
	// (webhookConfigurationName) says otherwise.
	FailurePolicy FailurePolicy `json:"failurePolicy"`
	// timeoutSeconds is the webhook configuration's timeoutSeconds (1 to 5): how long
	// kube-apiserver waits for the guard's answer before the failure policy applies. The guard
	// bounds its Redis read to half of it.
	TimeoutSeconds int32 `json:"timeoutSeconds"`
	// webhookConfigurationName is the name of the ValidatingWebhookConfiguration the installs
	// create: serve reads it at start (a GET of that one object) and, with a self-issued
	// certificate (serve --guard-self-signed), writes the CA bundle into it.
	WebhookConfigurationName string `json:"webhookConfigurationName"`
	// drainTaints are the taint keys that mark a node as being emptied, beside a cordon
	// (spec.unschedulable): the leader fails the masters on such a node over before any
	// eviction arrives, and no failover (run's, serve's, the hand-off's) promotes a replica on
	// such a node: the drain would evict it next. Empty: node.kubernetes.io/unschedulable,
	// ToBeDeletedByClusterAutoscaler (cluster-autoscaler) and karpenter.sh/disrupted (Karpenter).
	DrainTaints []string `json:"drainTaints"`
}
