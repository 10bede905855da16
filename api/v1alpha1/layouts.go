package v1alpha1

// Layout names a way Redis clusters are deployed on Kubernetes (selection.layout). It sets the
// defaults of the fields that tell such a deployment's pods apart (LayoutDefaults).
type Layout string

// The layouts.
const (
	// LayoutNone sets nothing: the fields keep the policy's own defaults.
	LayoutNone Layout = ""
	// LayoutSeed is the operator the HA rules were first written for: one StatefulSet per shard,
	// pods labelled cloud.netease.com/cluster-name.
	LayoutSeed Layout = "seed"
	// LayoutBitnami is the Bitnami redis-cluster chart: one StatefulSet holds every node of the
	// cluster (shards only Redis knows), pods labelled app.kubernetes.io/instance=<release> and
	// app.kubernetes.io/name=redis-cluster, the password in Secret <fullname> under
	// redis-password.
	LayoutBitnami Layout = "bitnami"
	// LayoutOT is OT-CONTAINER-KIT's redis-operator: StatefulSets <name>-leader and
	// <name>-follower (shards only Redis knows), pods labelled cluster=<name> and
	// redis_setup_type=cluster, redis-role kept in
	// step with Redis, Redis 7 announcing hostnames; the password in the Secret the RedisCluster
	// names (its key, usually password).
	LayoutOT Layout = "ot"
	// LayoutUcloud is ucloud's redis-cluster-operator: one StatefulSet per shard
	// (drc-<name>-<i>), pods labelled redis.kun/name=<name>, the password under key password.
	LayoutUcloud Layout = "ucloud"
	// LayoutKubeBlocks is KubeBlocks: one component per shard, its pods owned by an InstanceSet
	// (which re-creates them), labelled app.kubernetes.io/instance=<cluster> and
	// kubeblocks.io/role; the account Secret's keys are username and password.
	LayoutKubeBlocks Layout = "kubeblocks"
)

// Layouts lists every layout but LayoutNone, in the README table's order.
var Layouts = []Layout{LayoutSeed, LayoutBitnami, LayoutOT, LayoutUcloud, LayoutKubeBlocks}

// LayoutDefaults are the values a layout gives the fields left empty: SetDefaults applies them,
// then the policy's own defaults to what is still empty.
//
// +k8s:deepcopy-gen=false
type LayoutDefaults struct {
	// ClusterLabel, ShardSource and RoleLabel are selection's fields ("": the policy's default).
	ClusterLabel, ShardSource, RoleLabel string
	// WorkloadLabels are selection.workloadSelector's matchLabels (nil: none).
	WorkloadLabels map[string]string
	// RecreatingOwners is selection.recreatingOwners.
	RecreatingOwners []string
	// UsernameKey and PasswordKey are the keys of redis.usernameSecretRef and
	// redis.passwordSecretRef.
	UsernameKey, PasswordKey string
}

// DefaultsOf returns layout l's defaults (LayoutNone's are empty: the policy's own apply).
func DefaultsOf(l Layout) LayoutDefaults {
	switch l {
	case LayoutSeed:
		return LayoutDefaults{ClusterLabel: "cloud.netease.com/cluster-name", ShardSource: ShardSourceOwner}
	case LayoutBitnami:
		return LayoutDefaults{
			ClusterLabel: "app.kubernetes.io/instance", ShardSource: ShardSourceRedis, PasswordKey: "redis-password",
			WorkloadLabels: map[string]string{"app.kubernetes.io/name": "redis-cluster"},
		}
	case LayoutOT:
		return LayoutDefaults{
			ClusterLabel: "cluster", ShardSource: ShardSourceRedis, RoleLabel: "redis-role", PasswordKey: "password",
			WorkloadLabels: map[string]string{"redis_setup_type": "cluster"},
		}
	case LayoutUcloud:
		return LayoutDefaults{ClusterLabel: "redis.kun/name", ShardSource: ShardSourceOwner, PasswordKey: "password"}
	case LayoutKubeBlocks:
		return LayoutDefaults{
			ClusterLabel: "app.kubernetes.io/instance", ShardSource: ShardSourceAuto, RoleLabel: "kubeblocks.io/role",
			RecreatingOwners: []string{"InstanceSet"}, UsernameKey: "username", PasswordKey: "password",
		}
	}
	return LayoutDefaults{}
}
