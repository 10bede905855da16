// Package lint compares the scheduling constraints in a Redis cluster's StatefulSet templates with
// the constraints recommended for the cluster's size and zones (constraints.Generate), flags the
// templates that can deadlock (several zones and 3 shards with the strict limits), the clusters
// whose shards and zones leave some node or zone loss unsurvivable whatever the placement
// (MasterQuorum), the PodDisruptionBudgets that let a drain take two pods of one shard
// (DisruptionBudget), and, for clusters that Bitnami's redis-cluster chart or OT's redis-operator
// wrote (ChartOf), a shard's pods kept apart by nothing required (SoftAntiAffinity), with the
// chart's values or the RedisCluster's fields that restore the recommended constraints
// (Finding.Values). What templates cannot express, it says once (RolesNote).
package lint

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
)

// Kind classifies a finding.
type Kind string

// Finding kinds.
const (
	// MaxSkew: a hard spread constraint's maxSkew differs from the recommendation for N.
	MaxSkew Kind = "MaxSkew"
	// MissingConstraint: a recommended spread constraint is absent.
	MissingConstraint Kind = "MissingConstraint"
	// AntiAffinity: the required anti-affinity inside the shard is absent, on the wrong key, or
	// does not select exactly the shard's pods.
	AntiAffinity Kind = "AntiAffinity"
	// NodeAffinity: several zones but no required node affinity listing them.
	NodeAffinity Kind = "NodeAffinity"
	// DeadlockRisk: several zones and 3 shards with the strict limits: the hostname maxSkew can
	// leave a shard's last pod only nodes in zones its shard already holds, which its zone
	// anti-affinity forbids, so it stays Pending.
	DeadlockRisk Kind = "DeadlockRisk"
	// MasterQuorum: with one master per shard, no placement survives the loss of some node or
	// zone (policies.Quorum's note: M ≤ 2, or ⌈M/Z⌉ ≥ M/2, or 2 zones); reported once per cluster,
	// with StatefulSet empty.
	MasterQuorum Kind = "MasterQuorum"
	// SoftAntiAffinity: a cluster written by a known chart (Bitnami, OT) where no required pod
	// anti-affinity keeps a shard's pods off one node (one zone) or zone (several): the scheduler
	// may re-create a replica beside its master. Reported once per cluster, with the values that
	// restore the recommended constraints as far as the chart can express them.
	SoftAntiAffinity Kind = "SoftAntiAffinity"
	// DisruptionBudget: the PodDisruptionBudgets let a drain take two pods of one shard at once
	// (none selects them, a budget per role splits them, or a budget over both allows more than
	// one disruption). Reported once per cluster and cause.
	DisruptionBudget Kind = "DisruptionBudget"
)

// RolesNote is what lint says once about roles: the templates place pods, and nothing in them
// keeps masters apart.
const RolesNote = "scheduling constraints place pods, not roles: kube-scheduler knows no Redis role, so no constraint can keep the masters of a cluster apart (Redis promotes a replica only when a majority of the masters vote), and the operator's convention that pod -0 is the master drifts after every failover; redis-rebalancer's MasterQuorum rule checks where the masters are (check, plan: from Redis live, --role-label offline) and moves them with failovers (run)"

// Quorum returns the MasterQuorum finding of cluster c when, with one master per shard
// (Masters), some loss cannot be survived whatever the placement (false otherwise).
func Quorum(c *policies.Cluster) (Finding, bool) {
	shards := Masters(c)
	q := c.QuorumOf(shards)
	if !q.Applies || q.Note == "" {
		return Finding{}, false
	}
	return Finding{
		Namespace: c.Namespace, Cluster: c.Name, Kind: MasterQuorum,
		Got:     fmt.Sprintf("%s (one master each) over %s", policies.Plural(shards, "shard"), policies.Plural(c.Z(), "zone")),
		Message: fmt.Sprintf("%s, one master each: %s", policies.Plural(shards, "shard"), q.Note),
	}, true
}

// Masters returns the number of shards of c, one master each: the shards that are one
// StatefulSet each (the seed layout), else the shards whose pods' shard is known (from a
// label, or from Redis: Bitnami's and OT's layouts); 0 when none is known (Redis not read).
func Masters(c *policies.Cluster) int {
	perSet, known := 0, 0
	for _, s := range c.Shards {
		if s.StatefulSet != nil {
			perSet++
		}
		if len(s.Members) > 0 && c.Members[s.Members[0]].ShardKnown() && (len(s.Members) > 1 || c.ShardSource.Kind != policies.ShardOwner) {
			known++
		}
	}
	if perSet > 0 {
		return perSet
	}
	return known
}

// Finding is one difference between a StatefulSet template and the recommendation.
type Finding struct {
	// Namespace and Cluster name the Redis cluster (JSON namespace and name, as in check's,
	// plan's and run's reports).
	Namespace   string `json:"namespace"`
	Cluster     string `json:"name"`
	StatefulSet string `json:"statefulSet"`
	Kind        Kind   `json:"kind"`
	// Want and Got describe the recommended and the actual setting.
	Want string `json:"want,omitempty"`
	Got  string `json:"got,omitempty"`
	// Message says it in words, with the fix.
	Message string `json:"message"`
	// Values, for a cluster a known chart wrote, is the fix as YAML in the chart's terms: its
	// values (Bitnami: helm upgrade -f), the RedisCluster's fields (OT), or an object to create.
	Values string `json:"values,omitempty"`
}

// Lint checks every StatefulSet of every cluster of m, and each cluster's MasterQuorum with one
// master per shard (Quorum). relaxed selects the relaxed recommendation ("at most" N/3 and N/2,
// which avoids the 3-shard deadlock). Findings are sorted by namespace, cluster, StatefulSet (a
// cluster's own first).
func Lint(m *policies.Model, relaxed bool) []Finding {
	var out []Finding
	for _, c := range m.Clusters {
		if f, ok := Quorum(c); ok {
			out = append(out, f)
		}
		chart := ChartOf(c)
		first := len(out)
		multiZone := c.Z() >= 2
		shards := Masters(c)
		shardOf := map[*appsv1.StatefulSet]*policies.Shard{} // one shard per StatefulSet
		for _, s := range c.Shards {
			if s.StatefulSet != nil {
				shardOf[s.StatefulSet] = s
			}
		}
		sets := slices.Clone(c.StatefulSets)
		sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
		for _, sts := range sets {
			add := func(k Kind, want, got, format string, args ...any) {
				out = append(out, Finding{Namespace: c.Namespace, Cluster: c.Name, StatefulSet: sts.Name, Kind: k, Want: want, Got: got, Message: fmt.Sprintf(format, args...)})
			}
			spec := sts.Spec.Template.Spec
			nodeSkew := constraints.NodeMaxSkew(c.N, relaxed)
			checkSkew(spec, policies.LabelHostname, corev1.DoNotSchedule, nodeSkew, c.N, add)
			if multiZone {
				checkSkew(spec, c.ZoneKey, corev1.DoNotSchedule, constraints.ZoneMaxSkew(c.N, relaxed), c.N, add)
				checkSkew(spec, c.ZoneKey, corev1.ScheduleAnyway, 1, c.N, add)
			}
			checkSkew(spec, policies.LabelHostname, corev1.ScheduleAnyway, 1, c.N, add)
			if s := shardOf[sts]; s != nil && chart == ChartNone {
				checkAntiAffinity(c, s, spec, multiZone, add)
			}
			if multiZone && !c.ZoneList {
				add(NodeAffinity, "required node affinity: "+c.ZoneKey+" In ["+strings.Join(c.AllowedZones, " ")+"]", "none",
					"no required node affinity lists the allowed zones; the cluster may spread into any zone")
			}
			if multiZone && shards == 3 && !relaxed {
				if got, ok := hardSkew(spec, policies.LabelHostname); ok && int(got) == constraints.NodeMaxSkew(c.N, false) {
					add(DeadlockRisk, fmt.Sprintf("hostname maxSkew %d", constraints.NodeMaxSkew(c.N, true)), fmt.Sprintf("hostname maxSkew %d", got),
						"3 shards over %d zones with hostname maxSkew %d can deadlock (a shard's last pod can stay Pending for good); relax it to %d (\"at most N/3\": redis-rebalancer --relaxed-limits, constraints --relaxed-limits)",
						c.Z(), got, constraints.NodeMaxSkew(c.N, true))
				}
			}
		}
		if chart != ChartNone {
			if f, ok := softAntiAffinity(c, chart, relaxed); ok {
				out = append(out, f)
			} else if len(out) > first {
				// The templates differ from the recommended constraints: their fix, once, in the
				// chart's terms.
				if v, err := chartValues(c, chart, relaxed); err == nil {
					out[first].Values = v
				}
			}
		}
		out = append(out, disruptionBudgets(c, chart)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.StatefulSet < b.StatefulSet
	})
	return out
}

type addFunc func(k Kind, want, got, format string, args ...any)

func hardSkew(spec corev1.PodSpec, key string) (int32, bool) {
	for _, t := range spec.TopologySpreadConstraints {
		if t.TopologyKey == key && t.WhenUnsatisfiable == corev1.DoNotSchedule {
			return t.MaxSkew, true
		}
	}
	return 0, false
}

func checkSkew(spec corev1.PodSpec, key string, action corev1.UnsatisfiableConstraintAction, want, n int, add addFunc) {
	for _, t := range spec.TopologySpreadConstraints {
		if t.TopologyKey != key || t.WhenUnsatisfiable != action {
			continue
		}
		if int(t.MaxSkew) != want {
			add(MaxSkew, fmt.Sprintf("%s maxSkew %d", key, want), fmt.Sprintf("%s maxSkew %d", key, t.MaxSkew),
				"%s constraint on %s has maxSkew %d; for N=%d the recommendation is %d (a template not updated after a resize?)", action, key, t.MaxSkew, n, want)
		}
		return
	}
	add(MissingConstraint, fmt.Sprintf("%s maxSkew %d %s", key, want, action), "none",
		"no %s topology spread constraint on %s; add maxSkew %d", action, key, want)
}

// checkAntiAffinity wants a required pod anti-affinity term on the shard's domain key whose
// selector matches every pod of the shard and no pod of the other shards.
func checkAntiAffinity(c *policies.Cluster, s *policies.Shard, spec corev1.PodSpec, multiZone bool, add addFunc) {
	key := policies.LabelHostname
	if multiZone {
		key = c.ZoneKey
	}
	var terms []corev1.PodAffinityTerm
	if spec.Affinity != nil && spec.Affinity.PodAntiAffinity != nil {
		terms = spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	inShard := map[int]bool{}
	for _, i := range s.Members {
		inShard[i] = true
	}
	for _, t := range terms {
		if t.TopologyKey != key {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil || t.LabelSelector == nil {
			continue
		}
		ok := true
		for i, m := range c.Members {
			if sel.Matches(labels.Set(m.Pod.Labels)) != inShard[i] {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		add(AntiAffinity, "anti-affinity on "+key+" selecting exactly the shard's pods", "selector "+sel.String(),
			"the required anti-affinity on %s does not select exactly the pods of shard %s", key, s.Name)
		return
	}
	add(AntiAffinity, "required anti-affinity on "+key, "none",
		"no required pod anti-affinity on %s inside shard %s: two of its pods may share a %s (ShardSeparation)", key, s.Name, map[bool]string{true: "zone", false: "node"}[multiZone])
}
