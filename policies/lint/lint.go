// Package lint compares the scheduling constraints in a Redis cluster's StatefulSet templates with
// the constraints recommended for the cluster's size and zones (constraints.Generate), flags the
// templates that can deadlock (several zones, 3 shards, the strict limits and a zone
// anti-affinity inside each shard), the clusters whose shards and zones leave some node or zone
// loss unsurvivable whatever the placement (MasterQuorum), the PodDisruptionBudgets that let a
// drain take two pods of one shard (DisruptionBudget), and, for clusters that Bitnami's
// redis-cluster chart or OT's redis-operator wrote (ChartOf), a shard's pods kept off one node by
// nothing required that a value could require (SoftAntiAffinity, read from the rendered
// template), with the chart's values or the RedisCluster's fields that restore the recommended
// constraints (Finding.Values, nested under an umbrella chart's key with Options.ValuesPath).
// Each finding names the rule it serves (Finding.Rule): a rule the policy does not judge drops
// its findings. What the chart cannot express is a note (Report.Notes), not a finding, so that
// values that follow the advice lint clean; what no template can express, it says once
// (RolesNote).
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
	// DeadlockRisk: several zones and 3 shards with the strict limits and a required
	// anti-affinity on the zone: the hostname maxSkew can leave a shard's last pod only nodes in
	// zones its shard already holds, which its zone anti-affinity forbids, so it stays Pending.
	DeadlockRisk Kind = "DeadlockRisk"
	// MasterQuorum: with one master per shard, no placement survives the loss of some node or
	// zone (policies.Quorum's note: M ≤ 2, or ⌈M/Z⌉ ≥ M/2, or 2 zones); reported once per cluster,
	// with StatefulSet empty.
	MasterQuorum Kind = "MasterQuorum"
	// SoftAntiAffinity: a cluster written by a known chart (Bitnami, OT) where no required pod
	// anti-affinity keeps a shard's pods off one node, and a value of the chart would (Bitnami:
	// podAntiAffinityPreset: hard, with a node for every pod; OT: the role anti-affinity
	// annotation): the scheduler may re-create a replica beside its master. Reported once per
	// cluster, with the values that restore the recommended constraints as far as the chart can
	// express them; what it cannot (a shard's pods out of one zone) is a note.
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
		Namespace: c.Namespace, Cluster: c.Name, Kind: MasterQuorum, Rule: policies.MasterQuorum,
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
	// Rule is the HA rule the finding's setting serves (docs/rules.md): a policy that does not
	// judge it (--disable-rules, rules.disabled) has Lint leave the finding out. Empty for
	// DisruptionBudget, which no rule judges: PodDisruptionBudgets hold for every eviction.
	Rule policies.Rule `json:"rule,omitempty"`
	// Want and Got describe the recommended and the actual setting.
	Want string `json:"want,omitempty"`
	Got  string `json:"got,omitempty"`
	// Message says it in words, with the fix.
	Message string `json:"message"`
	// Values, for a cluster a known chart wrote, is the fix as YAML in the chart's terms: its
	// values (Bitnami: helm upgrade -f), the RedisCluster's fields (OT), or an object to create.
	Values string `json:"values,omitempty"`
}

// Options tunes Lint.
type Options struct {
	// Relaxed selects the relaxed recommendation ("at most" N/3 and N/2, which avoids the
	// 3-shard deadlock).
	Relaxed bool
	// ValuesPath nests the values printed for Bitnami's chart under these keys: the chart's key
	// in an umbrella chart (its name, or its alias), e.g. ["redis-cluster"]. Empty: at the top.
	ValuesPath []string
}

// Report is what Lint finds.
type Report struct {
	// Findings differ from the recommendation in a way the templates (or the chart's values)
	// can fix: the lint command exits 3 while there are any.
	Findings []Finding
	// Notes, one per cluster and cause, name what the chart cannot express ("<namespace>/<cluster>:
	// <kind>: <text>"): no value of Bitnami's chart or field of OT's RedisCluster names a shard,
	// so none keeps a shard's pods out of one zone, and Bitnami's only required anti-affinity
	// (podAntiAffinityPreset: hard) needs a node per pod. redis-rebalancer's rules judge and fix
	// what the notes name; they change no exit status.
	Notes []string
}

// Lint checks every StatefulSet of every cluster of m, and each cluster's MasterQuorum with one
// master per shard (Quorum). A finding whose rule m does not judge (m.Setting) is left out.
// Findings are sorted by namespace, cluster, StatefulSet (a cluster's own first).
func Lint(m *policies.Model, o Options) Report {
	var rep Report
	for _, c := range m.Clusters {
		var fs []Finding
		if f, ok := Quorum(c); ok {
			fs = append(fs, f)
		}
		chart := ChartOf(c)
		multiZone := c.Z() >= 2
		shards := Masters(c)
		shardOf := map[*appsv1.StatefulSet]*policies.Shard{} // one shard per StatefulSet
		for _, s := range c.Shards {
			if s.StatefulSet != nil {
				shardOf[s.StatefulSet] = s
			}
		}
		zoneRule := policies.MaxPodsPerZone
		if c.Z() == 2 {
			zoneRule = policies.ZoneEvenSplit
		}
		sets := slices.Clone(c.StatefulSets)
		sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
		for _, sts := range sets {
			add := func(k Kind, rule policies.Rule, want, got, format string, args ...any) {
				fs = append(fs, Finding{Namespace: c.Namespace, Cluster: c.Name, StatefulSet: sts.Name, Kind: k, Rule: rule, Want: want, Got: got, Message: fmt.Sprintf(format, args...)})
			}
			spec := sts.Spec.Template.Spec
			nodeSkew := constraints.NodeMaxSkew(c.N, o.Relaxed)
			checkSkew(spec, policies.LabelHostname, corev1.DoNotSchedule, nodeSkew, c.N, policies.MaxPodsPerNode, add)
			if multiZone {
				checkSkew(spec, c.ZoneKey, corev1.DoNotSchedule, constraints.ZoneMaxSkew(c.N, o.Relaxed), c.N, zoneRule, add)
				checkSkew(spec, c.ZoneKey, corev1.ScheduleAnyway, 1, c.N, policies.ZoneBalance, add)
			}
			checkSkew(spec, policies.LabelHostname, corev1.ScheduleAnyway, 1, c.N, policies.NodeSpread, add)
			if s := shardOf[sts]; s != nil && chart == ChartNone {
				checkAntiAffinity(c, s, spec, multiZone, add)
			}
			if multiZone && !c.ZoneList {
				add(NodeAffinity, policies.AllowedZones, "required node affinity: "+c.ZoneKey+" In ["+strings.Join(c.AllowedZones, " ")+"]", "none",
					"no required node affinity lists the allowed zones; the cluster may spread into any zone")
			}
			// The deadlock needs a required anti-affinity on the zone: a shard's last pod kept
			// out of its shard's zones, and the hostname maxSkew keeping it off the others.
			if multiZone && shards == 3 && !o.Relaxed && requiredOn(spec, c.ZoneKey) {
				if got, ok := hardSkew(spec, policies.LabelHostname); ok && int(got) == constraints.NodeMaxSkew(c.N, false) {
					add(DeadlockRisk, policies.MaxPodsPerNode, fmt.Sprintf("hostname maxSkew %d", constraints.NodeMaxSkew(c.N, true)), fmt.Sprintf("hostname maxSkew %d", got),
						"3 shards over %d zones with hostname maxSkew %d and a required anti-affinity on %s can deadlock (a shard's last pod can stay Pending for good); relax it to %d (\"at most N/3\": redis-rebalancer --relaxed-limits, constraints --relaxed-limits)",
						c.Z(), got, c.ZoneKey, constraints.NodeMaxSkew(c.N, true))
				}
			}
		}
		var note string
		if chart != ChartNone {
			var f Finding
			var ok bool
			f, note, ok = chartAntiAffinity(c, chart, o)
			if ok {
				fs = append(fs, f)
			}
		}
		fs = append(fs, disruptionBudgets(c, chart, o.ValuesPath)...)
		kept := fs[:0]
		for _, f := range fs {
			if f.Rule == "" || m.Setting(f.Rule).Enabled {
				kept = append(kept, f)
			}
		}
		if chart != ChartNone {
			attachValues(c, chart, o, kept)
			if note != "" && m.Setting(policies.ShardSeparation).Enabled {
				rep.Notes = append(rep.Notes, c.Namespace+"/"+c.Name+": "+string(SoftAntiAffinity)+": "+note)
			}
		}
		rep.Findings = append(rep.Findings, kept...)
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.StatefulSet < b.StatefulSet
	})
	return rep
}

// attachValues gives the first of a chart's cluster's template findings the chart's values that
// restore the recommended constraints (its fix, once, in the chart's terms), unless a
// SoftAntiAffinity finding already carries them.
func attachValues(c *policies.Cluster, chart Chart, o Options, fs []Finding) {
	for _, f := range fs {
		if f.Kind == SoftAntiAffinity {
			return
		}
	}
	for i, f := range fs {
		if f.StatefulSet == "" {
			continue // MasterQuorum, DisruptionBudget: the cluster's own
		}
		if v, err := chartValues(c, chart, o); err == nil {
			fs[i].Values = v
		}
		return
	}
}

// requiredOn reports whether spec has a required pod anti-affinity term on key.
func requiredOn(spec corev1.PodSpec, key string) bool {
	if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
		return false
	}
	for _, t := range spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey == key {
			return true
		}
	}
	return false
}

type addFunc func(k Kind, rule policies.Rule, want, got, format string, args ...any)

func hardSkew(spec corev1.PodSpec, key string) (int32, bool) {
	for _, t := range spec.TopologySpreadConstraints {
		if t.TopologyKey == key && t.WhenUnsatisfiable == corev1.DoNotSchedule {
			return t.MaxSkew, true
		}
	}
	return 0, false
}

// checkSkew wants a topology spread constraint on key with action and maxSkew want, for the
// rule it serves.
func checkSkew(spec corev1.PodSpec, key string, action corev1.UnsatisfiableConstraintAction, want, n int, rule policies.Rule, add addFunc) {
	for _, t := range spec.TopologySpreadConstraints {
		if t.TopologyKey != key || t.WhenUnsatisfiable != action {
			continue
		}
		if int(t.MaxSkew) != want {
			add(MaxSkew, rule, fmt.Sprintf("%s maxSkew %d", key, want), fmt.Sprintf("%s maxSkew %d", key, t.MaxSkew),
				"%s constraint on %s has maxSkew %d; for N=%d the recommendation is %d (a template not updated after a resize?)", action, key, t.MaxSkew, n, want)
		}
		return
	}
	add(MissingConstraint, rule, fmt.Sprintf("%s maxSkew %d %s", key, want, action), "none",
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
		add(AntiAffinity, policies.ShardSeparation, "anti-affinity on "+key+" selecting exactly the shard's pods", "selector "+sel.String(),
			"the required anti-affinity on %s does not select exactly the pods of shard %s", key, s.Name)
		return
	}
	add(AntiAffinity, policies.ShardSeparation, "required anti-affinity on "+key, "none",
		"no required pod anti-affinity on %s inside shard %s: two of its pods may share a %s (ShardSeparation)", key, s.Name, map[bool]string{true: "zone", false: "node"}[multiZone])
}
