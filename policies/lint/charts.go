package lint

import (
	"fmt"
	"maps"
	"sort"
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
	// ChartBitnami: Bitnami's redis-cluster Helm chart (policies.BitnamiRedisCluster: template
	// label helm.sh/chart "redis-cluster-<version>", or an alias's): one StatefulSet for the whole
	// cluster.
	ChartBitnami Chart = "bitnami"
	// ChartOT: OT-CONTAINER-KIT's redis-operator (template labels redis_setup_type=cluster and
	// role=leader|follower): a leader and a follower StatefulSet per RedisCluster.
	ChartOT Chart = "ot"
)

// Labels and annotations the charts write (bitnami/charts bitnami/redis-cluster and
// bitnami/common; OT-CONTAINER-KIT/redis-operator internal/controller/common/labels.go and
// internal/webhook/pod_webhook.go).
const (
	// BitnamiNameLabel is the label Bitnami's chart selects its pods by with the release's
	// app.kubernetes.io/instance: the chart's name (redis-cluster), or its nameOverride, or its
	// alias in an umbrella chart.
	BitnamiNameLabel = policies.LabelAppName
	bitnamiChartName = policies.BitnamiChartName
	otSetupTypeLabel = "redis_setup_type"
	otRoleLabel      = "role"
	otClusterLabel   = "cluster"
	// OTAntiAffinityAnnotation, "true" on a RedisCluster, makes OT's webhook add to every pod a
	// required anti-affinity on kubernetes.io/hostname against its partner (leader-i ↔
	// follower-i, by the statefulset.kubernetes.io/pod-name label).
	OTAntiAffinityAnnotation = "redisclusters.redis.redis.opstreelabs.in/role-anti-affinity"
)

// ChartOf tells which tool wrote the cluster's StatefulSets from their templates (ChartNone when
// none is recognised): Bitnami's chart as policies.BitnamiRedisCluster tells it (alone, with a
// nameOverride, or under an alias), OT's operator by its labels.
func ChartOf(c *policies.Cluster) Chart {
	for _, s := range c.StatefulSets {
		l := s.Spec.Template.Labels
		switch {
		case policies.BitnamiRedisCluster(l, &s.Spec.Template.Spec):
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
			specs := []*corev1.Pod{mem.Template()}
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
		if !has(m.Template()) && !(fromPod && has(m.Pod)) {
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

// chartAntiAffinity judges the anti-affinity of a cluster a chart wrote by what the chart can
// express: a required anti-affinity that keeps a shard's pods off one node (Bitnami's
// podAntiAffinityPreset: hard, over the whole release; OT's role anti-affinity annotation, leader-i
// against follower-i), read from the StatefulSet's rendered template (and, for OT, from the pods,
// where its webhook adds the term). It returns the SoftAntiAffinity finding, with the values that
// set it and the other recommended constraints, when a value would keep them apart and none
// does; else a note ("" when none is due) for what the chart cannot express: a shard's pods out
// of one zone (no value names a shard), or, for Bitnami with more pods than nodes, any required
// anti-affinity at all.
func chartAntiAffinity(c *policies.Cluster, chart Chart, o Options) (f Finding, note string, found bool) {
	host := policies.LabelHostname
	bad, shards := separated(c, host, chart == ChartOT)
	multiZone := c.Z() >= 2
	rendered := renderedAntiAffinity(c, chart)
	risk := "kube-scheduler may put a re-created pod on the node of its shard's other pod (ShardSeparation: redis-rebalancer's plans mark such choices off-track, run re-plans after each move)"
	zoneRisk := "kube-scheduler may put a re-created pod in the zone of its shard's other pod, and redis-rebalancer's ShardSeparation rule finds and moves it"
	if bad == nil && (shards || anyTerm(c, host, chart == ChartOT)) {
		// Kept off one node: what the chart can do. Out of one zone, nothing can.
		if !multiZone {
			return Finding{}, "", false
		}
		kept := rendered
		if chart == ChartOT {
			kept = "the pods carry a required anti-affinity on " + host + " against their partner (the webhook's, for the RedisCluster's " + OTAntiAffinityAnnotation + " annotation)"
		}
		return Finding{}, fmt.Sprintf("%s, which keeps a shard's pods off one node; no %s names a shard, so none keeps a shard's pods out of one zone: %s", kept, chartTerm(chart), zoneRisk), false
	}
	got := "none"
	if bad != nil {
		got = "none (shard " + bad.Name + ")"
	}
	f = Finding{Namespace: c.Namespace, Cluster: c.Name, Kind: SoftAntiAffinity, Rule: policies.ShardSeparation,
		Want: "required anti-affinity inside each shard on " + host, Got: got}
	switch chart {
	case ChartBitnami:
		nodes := allowedNodes(c)
		if c.N > nodes {
			return Finding{}, fmt.Sprintf("%s: nothing required keeps a shard's pods off one node, and %s. The chart cannot name a shard (its pods carry no shard label); its one required anti-affinity, %s, keeps every pod of the release on a node of its own, which %d pods on %d nodes cannot have (%d would stay Pending), so no value helps: ShardSeparation is redis-rebalancer's to keep",
				rendered, risk, valuesKey(o.ValuesPath, "redis.podAntiAffinityPreset: hard"), c.N, nodes, c.N-nodes), false
		}
		hard := fmt.Sprintf("%s keeps every pod of the release on a node of its own (N=%d, %d nodes)", valuesKey(o.ValuesPath, "redis.podAntiAffinityPreset: hard"), c.N, nodes)
		if multiZone {
			hard += ", which keeps a shard's pods off one node, not out of one zone"
		}
		f.Message = fmt.Sprintf("%s: nothing required keeps a shard's pods off one node, and %s. The chart cannot name a shard (its pods carry no shard label), so no value keeps exactly a shard's pods apart; %s. These values set it and the other recommended constraints (spread over nodes and zones, the allowed zones)", rendered, risk, hard)
	case ChartOT:
		apart := "keeps leader-i and follower-i off one node"
		if multiZone {
			apart += "; no RedisCluster field keeps them out of one zone"
		}
		f.Message = fmt.Sprintf("%s: nothing required keeps a leader and its follower apart, and %s. The annotation %s: \"true\" on the RedisCluster (its webhook enabled) %s. These RedisCluster fields restore the recommended spread over nodes and zones and the allowed zones", rendered, risk, OTAntiAffinityAnnotation, apart)
	}
	values, err := chartValues(c, chart, o)
	if err != nil {
		values = "# " + err.Error()
	}
	f.Values = values
	return f, "", true
}

// chartTerm names what a chart is told its settings with.
func chartTerm(chart Chart) string {
	if chart == ChartOT {
		return "RedisCluster field"
	}
	return "value of the chart"
}

// valuesKey writes a chart value's key (and setting) under the values path: "redis-cluster.pdb.maxUnavailable: 1".
func valuesKey(path []string, key string) string {
	if len(path) == 0 {
		return key
	}
	return strings.Join(path, ".") + "." + key
}

// renderedAntiAffinity says what pod anti-affinity the cluster's StatefulSet renders (Bitnami:
// "StatefulSet redis-cluster renders only a preferred pod anti-affinity on kubernetes.io/hostname
// over the release's pods (weight 1: podAntiAffinityPreset: soft, the chart's default)"), naming
// the preset when the terms are exactly the preset's; for OT, the terms its webhook put into the
// pods count too.
func renderedAntiAffinity(c *policies.Cluster, chart Chart) string {
	if len(c.StatefulSets) == 0 {
		return "no StatefulSet"
	}
	var names []string
	for _, s := range c.StatefulSets {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	sts := c.StatefulSets[0]
	for _, s := range c.StatefulSets {
		if s.Name == names[0] {
			sts = s
		}
	}
	who := "StatefulSet " + strings.Join(names, " and ") + " render"
	if len(names) == 1 {
		who += "s"
	}
	var req []corev1.PodAffinityTerm
	var pref []corev1.WeightedPodAffinityTerm
	if a := sts.Spec.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		req, pref = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	release := chartSelector(c, chart)
	overRelease := func(t corev1.PodAffinityTerm) bool {
		return t.TopologyKey == policies.LabelHostname && t.LabelSelector != nil && len(t.LabelSelector.MatchExpressions) == 0 &&
			maps.Equal(t.LabelSelector.MatchLabels, release)
	}
	switch {
	case len(req) == 0 && len(pref) == 0:
		if chart == ChartBitnami {
			return who + " no pod anti-affinity (podAntiAffinityPreset \"\", or a redis.affinity without one)"
		}
		return who + " no pod anti-affinity"
	case chart == ChartBitnami && len(req) == 0 && len(pref) == 1 && pref[0].Weight == 1 && overRelease(pref[0].PodAffinityTerm):
		return who + " only a preferred pod anti-affinity on " + policies.LabelHostname + " over the release's pods (weight 1: podAntiAffinityPreset: soft, the chart's default)"
	case chart == ChartBitnami && len(req) == 1 && len(pref) == 0 && overRelease(req[0]):
		return who + " a required pod anti-affinity on " + policies.LabelHostname + " over the release's pods (podAntiAffinityPreset: hard)"
	}
	var terms []string
	for _, t := range req {
		terms = append(terms, "required on "+t.TopologyKey+" over "+selectorText(t.LabelSelector))
	}
	for _, t := range pref {
		terms = append(terms, fmt.Sprintf("preferred (weight %d) on %s over %s", t.Weight, t.PodAffinityTerm.TopologyKey, selectorText(t.PodAffinityTerm.LabelSelector)))
	}
	out := who + " the pod anti-affinity " + strings.Join(terms, "; ")
	if chart == ChartBitnami {
		out += " (redis.affinity)"
	}
	return out
}

// selectorText writes a label selector as kubectl does ("a=b,c in (d)"); "nothing" for none.
func selectorText(s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if s == nil || err != nil {
		return "nothing"
	}
	return sel.String()
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

// chartValues returns, as YAML, the chart's values (Bitnami, under o.ValuesPath) or the
// RedisCluster's fields (OT) that set the recommended constraints for c (ChartValues for its N
// pods, allowed nodes, zones and zone key, on the pods the chart selects).
func chartValues(c *policies.Cluster, chart Chart, o Options) (string, error) {
	var zones []string
	if c.Z() >= 2 || c.ZoneList {
		zones = c.AllowedZones
	}
	in := ChartInput{Chart: chart, Selector: chartSelector(c, chart), N: c.N, Nodes: allowedNodes(c),
		Zones: zones, ZoneKey: c.ZoneKey, Relaxed: o.Relaxed}
	if chart == ChartBitnami {
		in.ValuesPath = o.ValuesPath
	}
	return ChartValues(in)
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
	// ValuesPath nests Bitnami's values under these keys (an umbrella chart's key for the
	// subchart, e.g. ["redis-cluster"]); it is refused for OT, whose fields are no Helm values.
	ValuesPath []string
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
	v, err := ChartValueTree(in)
	if err != nil {
		return "", err
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("lint: values: %w", err)
	}
	return string(out), nil
}

// ChartValueTree returns what ChartValues writes, as the object it marshals (for JSON: helm
// takes a JSON values file, kubectl patch --type merge a RedisCluster's fields).
func ChartValueTree(in ChartInput) (map[string]any, error) {
	spread, aff, err := constraints.Generate(constraints.Input{
		ClusterLabels: in.Selector, ShardLabels: in.Selector, // the shard's anti-affinity is not used
		Shards: in.N, PodsPerShard: 1, Zones: in.Zones, ZoneKey: in.ZoneKey, Relaxed: in.Relaxed,
	})
	if err != nil {
		return nil, fmt.Errorf("lint: values: %w", err)
	}
	var v map[string]any
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
		return nil, fmt.Errorf("lint: values: no chart")
	}
	if len(in.ValuesPath) > 0 {
		if in.Chart != ChartBitnami {
			return nil, fmt.Errorf("lint: values: a values path nests Helm values (Bitnami's chart); %s's are a RedisCluster's fields", in.Chart)
		}
		for i := len(in.ValuesPath) - 1; i >= 0; i-- {
			v = map[string]any{in.ValuesPath[i]: v}
		}
	}
	return v, nil
}

// ParseValuesPath splits a dotted values path ("redis-cluster", "backend.cache") into its keys;
// "" gives none. It fails on an empty key ("a..b", ".a").
func ParseValuesPath(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	keys := strings.Split(path, ".")
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("values path %q: an empty key (keys are separated by single dots)", path)
		}
	}
	return keys, nil
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
		return map[string]string{BitnamiNameLabel: bitnamiChartName, "app.kubernetes.io/instance": name}
	case ChartOT:
		return map[string]string{otClusterLabel: name}
	}
	return nil
}
