// Package constraints generates the scheduling constraints recommended for a Redis cluster's
// StatefulSet templates, the ones an operator that runs one StatefulSet per shard writes: hard
// topology spread on hostname and zone with the maxSkew the HA rules imply (policies.NodeLimit,
// policies.ZoneLimit), soft spread, anti-affinity inside a shard and node affinity on the zones. It
// needs no model: the `constraints` command, lint and the test scenarios call it with a cluster's
// size and zones.
//
// It owns the generator and the maxSkew values. It imports policies (label keys and the rules'
// per-node and per-zone limits, which the maxSkew values are derived from); policies must not
// import it.
package constraints

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// DefaultShardLabel is the pod label naming the shard in the generated anti-affinity when the
// caller names none (the constraints command's --shard-label default).
const DefaultShardLabel = "redis.rebalancer.io/shard"

// NodeMaxSkew returns the hostname maxSkew the operator writes for a cluster of n pods: n/3
// (integer division), minus 1 when 3 divides n, at least 1. Relaxed (the "at most n/3" limit, which
// avoids the 3-shard deadlock) drops the "minus 1". It is the MaxPodsPerNode limit
// (policies.NodeLimit: the most pods a node may hold, "fewer than n/3", or "at most" when relaxed)
// raised to 1, the least maxSkew Kubernetes accepts: n/3 − [3 divides n] equals (n−1)/3 for every n
// ≥ 1.
func NodeMaxSkew(n int, relaxed bool) int {
	return max(policies.NodeLimit(n, relaxed), 1)
}

// ZoneMaxSkew returns the zone maxSkew the operator writes for n pods with Z≥2: n/2, minus 1
// when 2 divides n, at least 1. Relaxed drops the "minus 1". It is the
// MaxPodsPerZone limit (policies.ZoneLimit) raised to 1, as NodeMaxSkew is for nodes.
func ZoneMaxSkew(n int, relaxed bool) int {
	return max(policies.ZoneLimit(n, relaxed), 1)
}

// Input describes a Redis cluster for the generator.
type Input struct {
	// ClusterLabels select every pod of the cluster (e.g. {cluster-label: name}).
	ClusterLabels map[string]string
	// ShardLabels, added to ClusterLabels, select the pods of one shard.
	ShardLabels map[string]string
	// Shards and PodsPerShard give N = Shards × PodsPerShard.
	Shards, PodsPerShard int
	// Zones are the allowed zones (written as required node affinity); empty or one zone means
	// single-zone.
	Zones []string
	// ZoneKey is the zone topology key (policies.LabelZone when empty; older operators write
	// policies.LabelZoneLegacy).
	ZoneKey string
	// Relaxed applies the "at most" form of the limits (maxSkew without the "minus 1"), which
	// avoids the 3-shard deadlock.
	Relaxed bool
}

// Bounds of Input.
const (
	// MaxShards is the most shards of a Redis cluster: each master serves at least one of its
	// 16384 hash slots.
	MaxShards = 16384
	// MaxPodsPerShard is the most pods of one shard (a master and its replicas) Generate takes:
	// far more than any Redis deployment runs, and small enough that N = Shards × PodsPerShard
	// fits the int32 of a StatefulSet's replicas and a constraint's maxSkew.
	MaxPodsPerShard = 1024
)

// Generate returns what the operator writes into every StatefulSet template of the cluster: hard
// topology spread on hostname (NodeMaxSkew) and, with two or more zones, on the zone (ZoneMaxSkew);
// soft maxSkew 1 on the same keys; required pod anti-affinity inside the shard on hostname (one
// zone) or zone; and required node affinity on the zones when listed. It fails when Shards is not
// within 1…MaxShards, PodsPerShard not within 1…MaxPodsPerShard, a zone is empty or listed twice,
// or the cluster or shard labels are missing.
func Generate(in Input) ([]corev1.TopologySpreadConstraint, *corev1.Affinity, error) {
	if in.Shards < 1 || in.PodsPerShard < 1 {
		return nil, nil, fmt.Errorf("constraints: shards and pods per shard must be at least 1 (got %d, %d)", in.Shards, in.PodsPerShard)
	}
	if in.Shards > MaxShards {
		return nil, nil, fmt.Errorf("constraints: %d shards: a Redis cluster has at most %d (one hash slot per master)", in.Shards, MaxShards)
	}
	if in.PodsPerShard > MaxPodsPerShard {
		return nil, nil, fmt.Errorf("constraints: %d pods per shard: at most %d", in.PodsPerShard, MaxPodsPerShard)
	}
	seen := map[string]bool{}
	for _, z := range in.Zones {
		switch {
		case z == "":
			return nil, nil, fmt.Errorf("constraints: zones %q: an empty zone name", strings.Join(in.Zones, ","))
		case seen[z]:
			return nil, nil, fmt.Errorf("constraints: zone %s listed twice", z)
		}
		seen[z] = true
	}
	if len(in.ClusterLabels) == 0 || len(in.ShardLabels) == 0 {
		return nil, nil, fmt.Errorf("constraints: cluster labels and shard labels are required")
	}
	zoneKey := in.ZoneKey
	if zoneKey == "" {
		zoneKey = policies.LabelZone
	}
	n := in.Shards * in.PodsPerShard
	multiZone := len(in.Zones) >= 2
	cluster := &metav1.LabelSelector{MatchLabels: in.ClusterLabels}
	shardLabels := map[string]string{}
	for k, v := range in.ClusterLabels {
		shardLabels[k] = v
	}
	for k, v := range in.ShardLabels {
		shardLabels[k] = v
	}
	spread := []corev1.TopologySpreadConstraint{{
		MaxSkew: int32(NodeMaxSkew(n, in.Relaxed)), TopologyKey: policies.LabelHostname,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: cluster,
	}}
	if multiZone {
		spread = append(spread, corev1.TopologySpreadConstraint{
			MaxSkew: int32(ZoneMaxSkew(n, in.Relaxed)), TopologyKey: zoneKey,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: cluster,
		})
	}
	spread = append(spread, corev1.TopologySpreadConstraint{
		MaxSkew: 1, TopologyKey: policies.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: cluster,
	})
	if multiZone {
		spread = append(spread, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: zoneKey, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: cluster,
		})
	}
	antiKey := policies.LabelHostname
	if multiZone {
		antiKey = zoneKey
	}
	aff := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: shardLabels}, TopologyKey: antiKey,
		}},
	}}
	if len(in.Zones) > 0 {
		aff.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: zoneKey, Operator: corev1.NodeSelectorOpIn, Values: append([]string(nil), in.Zones...),
			}}}},
		}}
	}
	return spread, aff, nil
}
