package lint

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
)

// Chart is the tool that wrote a cluster's StatefulSets, told by their template labels: what the
// fix of a finding is written in (the chart's values, the operator's custom resource).
type Chart string

// Charts lint knows.
const (
	// ChartNone: StatefulSets written by some other tool (an operator with one StatefulSet per
	// shard, such as ucloud's); fixes
	// are pod template fields.
	ChartNone Chart = ""
	// ChartBitnami: Bitnami's redis-cluster Helm chart (template label helm.sh/chart
	// "redis-cluster-<version>"): one StatefulSet for the whole cluster.
	ChartBitnami Chart = "bitnami"
	// ChartOT: OT-CONTAINER-KIT's redis-operator (template labels redis_setup_type=cluster and
	// role=leader|follower): a leader and a follower StatefulSet per RedisCluster.
	ChartOT Chart = "ot"
)

// Labels and annotations the charts write (bitnami/charts bitnami/redis-cluster and
// bitnami/common; OT-CONTAINER-KIT/redis-operator internal/controller/common/labels.go and
// internal/webhook/pod_webhook.go).
const (
	bitnamiChartLabel = "helm.sh/chart"
	bitnamiChartName  = "redis-cluster"
	otSetupTypeLabel  = "redis_setup_type"
	otRoleLabel       = "role"
	otClusterLabel    = "cluster"
	// OTAntiAffinityAnnotation, "true" on a RedisCluster, makes OT's webhook add to every pod a
	// required anti-affinity on kubernetes.io/hostname against its partner (leader-i ↔
	// follower-i, by the statefulset.kubernetes.io/pod-name label).
	OTAntiAffinityAnnotation = "redisclusters.redis.redis.opstreelabs.in/role-anti-affinity"
)

// ChartOf tells which tool wrote the cluster's StatefulSets from their templates' labels
// (ChartNone when none is recognised).
func ChartOf(c *policies.Cluster) Chart {
	for _, s := range c.StatefulSets {
		l := s.Spec.Template.Labels
		switch {
		case strings.HasPrefix(l[bitnamiChartLabel], bitnamiChartName+"-"):
			return ChartBitnami
		case l[otSetupTypeLabel] == "cluster" && (l[otRoleLabel] == "leader" || l[otRoleLabel] == "follower"):
			return ChartOT
		}
	}
	return ChartNone
}

// separated reports whether every pod of every shard of c with two or more members is kept off
// the domain (key) of the shard's other pods by a required pod anti-affinity term: in the
// template the pod is re-created from, or, for OT, in the pod itself (its webhook adds the term
// at admission, so the StatefulSet's template never shows it). It returns the first shard that
// is not, and whether any shard has two members at all.
func separated(c *policies.Cluster, key string, fromPod bool) (bad *policies.Shard, shards bool) {
	for _, s := range c.Shards {
		if len(s.Members) < 2 {
			continue
		}
		shards = true
		for _, i := range s.Members {
			mem := c.Members[i]
			specs := []*corev1.Pod{mem.Template}
			if fromPod {
				specs = append(specs, mem.Pod)
			}
			kept := false
			for _, p := range specs {
				if p != nil && keepsApart(p, key, c, s, i) {
					kept = true
					break
				}
			}
			if !kept {
				return s, true
			}
		}
	}
	return nil, shards
}

// anyTerm reports whether every member of c has some required pod anti-affinity term on key in
// its template (or, with fromPod, in the pod itself).
func anyTerm(c *policies.Cluster, key string, fromPod bool) bool {
	has := func(p *corev1.Pod) bool {
		if p == nil || p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
			return false
		}
		for _, t := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == key {
				return true
			}
		}
		return false
	}
	for _, m := range c.Members {
		if !has(m.Template) && !(fromPod && has(m.Pod)) {
			return false
		}
	}
	return len(c.Members) > 0
}

// keepsApart reports whether p has a required anti-affinity term on key whose selector matches
// every member of shard s but member self.
func keepsApart(p *corev1.Pod, key string, c *policies.Cluster, s *policies.Shard, self int) bool {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return false
	}
	for _, t := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey != key || t.LabelSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			continue
		}
		all := true
		for _, j := range s.Members {
			if j != self && !sel.Matches(labels.Set(c.Members[j].Pod.Labels)) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// softAntiAffinity returns the SoftAntiAffinity finding of a cluster written by chart when
// nothing required keeps a shard's pods off one domain (the node with one zone, the zone with
// more), with the values that restore what the chart can express of the recommended constraints.
func softAntiAffinity(c *policies.Cluster, chart Chart, relaxed bool) (Finding, bool) {
	key := policies.LabelHostname
	if c.Z() >= 2 {
		key = c.ZoneKey
	}
	bad, shards := separated(c, key, chart == ChartOT)
	got := ""
	switch {
	case bad != nil:
		got = "none (shard " + bad.Name + ")"
	case !shards && !anyTerm(c, key, chart == ChartOT):
		// The shards are unknown (Redis not read): a required term on the domain could keep
		// them apart; with none at all, nothing does.
		got = "none"
	default:
		return Finding{}, false
	}
	values, err := chartValues(c, chart, relaxed)
	if err != nil {
		values = "# " + err.Error()
	}
	f := Finding{Namespace: c.Namespace, Cluster: c.Name, Kind: SoftAntiAffinity,
		Want: "required anti-affinity inside each shard on " + key, Got: got, Values: values}
	domain := map[bool]string{true: "zone", false: "node"}[c.Z() >= 2]
	risk := fmt.Sprintf("kube-scheduler may put a re-created pod in the %s of its shard's other pod (ShardSeparation: redis-rebalancer's plans mark such choices off-track, run re-plans after each move)", domain)
	switch chart {
	case ChartBitnami:
		nodes := allowedNodes(c)
		hard := fmt.Sprintf("podAntiAffinityPreset: hard keeps every pod of the release on a node of its own: with N=%d pods and %d nodes it would leave %d Pending, so it is not in the values", c.N, nodes, c.N-nodes)
		if c.N <= nodes {
			hard = fmt.Sprintf("podAntiAffinityPreset: hard keeps every pod of the release on a node of its own (N=%d, %d nodes)", c.N, nodes)
			if c.Z() >= 2 {
				hard += ", which keeps a shard's pods off one node, not off one zone"
			}
		}
		f.Message = fmt.Sprintf("the chart's redis.podAntiAffinityPreset is soft and nothing required keeps a shard's pods apart: %s. The chart cannot name a shard (its pods carry no shard label), so no value keeps exactly a shard's pods apart; %s. These values restore the other guarantees of the recommended constraints (spread over nodes and zones, the allowed zones)", risk, hard)
	case ChartOT:
		apart := "keeps leader-i and follower-i off one node"
		if c.Z() >= 2 {
			apart += "; with several zones the recommended constraints keep a shard's pods in different zones, which no RedisCluster field expresses"
		}
		f.Message = fmt.Sprintf("nothing required keeps a leader and its follower apart: %s. The annotation %s: \"true\" on the RedisCluster (its webhook enabled) %s. These RedisCluster fields restore the recommended spread over nodes and zones and the allowed zones", risk, OTAntiAffinityAnnotation, apart)
	}
	return f, true
}

// allowedNodes counts the model's nodes in c's allowed zones.
func allowedNodes(c *policies.Cluster) int {
	allowed := map[string]bool{}
	for _, z := range c.AllowedZones {
		allowed[z] = true
	}
	n := 0
	for _, node := range c.Model().Nodes {
		if len(allowed) == 0 || allowed[node.Zone] {
			n++
		}
	}
	return n
}

// chartValues returns, as YAML, the chart's values (Bitnami) or the RedisCluster's fields (OT)
// that set the recommended constraints for c (ChartValues for its N pods, allowed nodes, zones
// and zone key, on the pods the chart selects).
func chartValues(c *policies.Cluster, chart Chart, relaxed bool) (string, error) {
	var zones []string
	if c.Z() >= 2 || c.ZoneList {
		zones = c.AllowedZones
	}
	return ChartValues(ChartInput{Chart: chart, Selector: chartSelector(c, chart), N: c.N, Nodes: allowedNodes(c),
		Zones: zones, ZoneKey: c.ZoneKey, Relaxed: relaxed})
}

// ChartInput is what ChartValues writes values for.
type ChartInput struct {
	// Chart is ChartBitnami or ChartOT.
	Chart Chart
	// Selector labels select every pod of the cluster as the chart's own selectors do
	// (Bitnami: app.kubernetes.io/name and app.kubernetes.io/instance; OT: cluster=<name>).
	Selector map[string]string
	// N is the number of pods of the cluster; Nodes the number of nodes in its allowed zones
	// (0: unknown, then Bitnami's podAntiAffinityPreset hard is not written).
	N, Nodes int
	// Zones are the allowed zones (none or one: the single-zone rules); ZoneKey their node label.
	Zones   []string
	ZoneKey string
	// Relaxed drops the "minus 1" of the hard maxSkews (constraints.Input.Relaxed).
	Relaxed bool
}

// ChartValues returns, as YAML, the chart's values (Bitnami's redis-cluster chart: redis.*) or
// the RedisCluster's fields (OT's redis-operator: the role anti-affinity annotation and
// spec.redisLeader/redisFollower) that set the recommended constraints (constraints.Generate for
// in.N pods in in.Zones): the spread constraints on the pods the chart selects, the required
// node affinity on the allowed zones, and what the chart has of the anti-affinity inside a shard
// (Bitnami: podAntiAffinityPreset hard when every pod can have a node of its own; OT: the
// annotation). Neither can name a shard, so no per-shard term is written. It fails for another
// chart.
func ChartValues(in ChartInput) (string, error) {
	spread, aff, err := constraints.Generate(constraints.Input{
		ClusterLabels: in.Selector, ShardLabels: in.Selector, // the shard's anti-affinity is not used
		Shards: in.N, PodsPerShard: 1, Zones: in.Zones, ZoneKey: in.ZoneKey, Relaxed: in.Relaxed,
	})
	if err != nil {
		return "", fmt.Errorf("lint: values: %w", err)
	}
	var v any
	switch in.Chart {
	case ChartBitnami:
		redis := map[string]any{"topologySpreadConstraints": spread}
		if len(in.Zones) > 0 {
			redis["nodeAffinityPreset"] = map[string]any{"type": "hard", "key": in.ZoneKey, "values": in.Zones}
		}
		if in.Nodes > 0 && in.N <= in.Nodes {
			redis["podAntiAffinityPreset"] = "hard"
		}
		v = map[string]any{"redis": redis}
	case ChartOT:
		role := map[string]any{"topologySpreadConstraints": spread}
		if aff.NodeAffinity != nil {
			role["affinity"] = map[string]any{"nodeAffinity": aff.NodeAffinity}
		}
		v = map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{OTAntiAffinityAnnotation: "true"}},
			"spec":     map[string]any{"redisLeader": role, "redisFollower": role},
		}
	default:
		return "", fmt.Errorf("lint: values: no chart")
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("lint: values: %w", err)
	}
	return string(out), nil
}

// chartSelector returns the labels that select every pod of c as the chart's own selectors do:
// Bitnami's matchLabels (app.kubernetes.io/name, app.kubernetes.io/instance: its StatefulSet's
// selector), OT's cluster=<name>.
func chartSelector(c *policies.Cluster, chart Chart) map[string]string {
	for _, s := range c.StatefulSets {
		l := s.Spec.Template.Labels
		switch chart {
		case ChartBitnami:
			if s.Spec.Selector != nil && len(s.Spec.Selector.MatchLabels) > 0 {
				return s.Spec.Selector.MatchLabels
			}
		case ChartOT:
			if l[otClusterLabel] != "" {
				return map[string]string{otClusterLabel: l[otClusterLabel]}
			}
		}
	}
	return map[string]string{policies.DefaultClusterLabel: c.Name}
}

// SelectorOf returns the labels chart's own selectors select the pods of the cluster name with:
// Bitnami's StatefulSet selector for release name (app.kubernetes.io/name: redis-cluster,
// app.kubernetes.io/instance: name), OT's cluster=name; nil for another chart.
func SelectorOf(chart Chart, name string) map[string]string {
	switch chart {
	case ChartBitnami:
		return map[string]string{"app.kubernetes.io/name": bitnamiChartName, "app.kubernetes.io/instance": name}
	case ChartOT:
		return map[string]string{otClusterLabel: name}
	}
	return nil
}
