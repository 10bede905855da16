package policies_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// This file is a literal port of the kube-scheduler v1.36.3 filter plugins the feasibility filter
// mirrors (k8s.io/kubernetes/pkg/scheduler/framework/plugins: nodeunschedulable, tainttoleration,
// nodeaffinity, podtopologyspread/{common,filtering}.go, interpodaffinity/filtering.go and
// k8s.io/kube-scheduler/framework/types.go's AffinityTerm), kept close to the upstream code so
// that it can be compared line by line. k8s.io/kubernetes is not a dependency of this module, so
// the plugins cannot be called directly. TestFilterMatchesKubeScheduler runs both on random
// snapshots.
//
// The oracle runs the plugins in the default profile's order and stops at the first failure,
// as the framework's RunFilterPlugins does. Resources and volumes are left out (the random
// snapshots never exhaust a node, and carry no volumes).

// kubeSpreadConstraint is podtopologyspread's topologySpreadConstraint.
type kubeSpreadConstraint struct {
	MaxSkew            int32
	TopologyKey        string
	Selector           labels.Selector
	MinDomains         int32
	NodeAffinityPolicy corev1.NodeInclusionPolicy
	NodeTaintsPolicy   corev1.NodeInclusionPolicy
}

// filterTopologySpreadConstraints (common.go), with MatchLabelKeysInPodTopologySpread and
// NodeInclusionPolicyInPodTopologySpread enabled (their v1.36 defaults).
func kubeFilterTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, podLabels map[string]string, action corev1.UnsatisfiableConstraintAction) []kubeSpreadConstraint {
	var result []kubeSpreadConstraint
	for _, c := range constraints {
		if c.WhenUnsatisfiable == action {
			selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
			if err != nil {
				panic(err)
			}
			if len(c.MatchLabelKeys) > 0 {
				matchLabels := make(labels.Set)
				for _, labelKey := range c.MatchLabelKeys {
					if value, ok := podLabels[labelKey]; ok {
						matchLabels[labelKey] = value
					}
				}
				if len(matchLabels) > 0 {
					selector = kubeMergeLabelSetWithSelector(matchLabels, selector)
				}
			}
			tsc := kubeSpreadConstraint{
				MaxSkew: c.MaxSkew, TopologyKey: c.TopologyKey, Selector: selector,
				MinDomains:         ptr.Deref(c.MinDomains, 1),
				NodeAffinityPolicy: corev1.NodeInclusionPolicyHonor,
				NodeTaintsPolicy:   corev1.NodeInclusionPolicyIgnore,
			}
			if c.NodeAffinityPolicy != nil {
				tsc.NodeAffinityPolicy = *c.NodeAffinityPolicy
			}
			if c.NodeTaintsPolicy != nil {
				tsc.NodeTaintsPolicy = *c.NodeTaintsPolicy
			}
			result = append(result, tsc)
		}
	}
	return result
}

func kubeMergeLabelSetWithSelector(matchLabels labels.Set, s labels.Selector) labels.Selector {
	mergedSelector := labels.SelectorFromSet(matchLabels)
	requirements, ok := s.Requirements()
	if !ok {
		return s
	}
	for _, r := range requirements {
		mergedSelector = mergedSelector.Add(r)
	}
	return mergedSelector
}

func kubeNodeLabelsMatchSpreadConstraints(nodeLabels map[string]string, constraints []kubeSpreadConstraint) bool {
	for _, c := range constraints {
		if _, ok := nodeLabels[c.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

func kubeDoNotScheduleTaints(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

func (tsc *kubeSpreadConstraint) matchNodeInclusionPolicies(pod *corev1.Pod, node *corev1.Node, require nodeaffinity.RequiredNodeAffinity) bool {
	if tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
		if match, _ := require.Match(node); !match {
			return false
		}
	}
	if tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
		if _, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, kubeDoNotScheduleTaints, false); untolerated {
			return false
		}
	}
	return true
}

func kubeCountPodsMatchSelector(pods []*corev1.Pod, selector labels.Selector, ns string) int {
	if selector.Empty() {
		return 0
	}
	count := 0
	for _, p := range pods {
		// Bypass terminating Pod (see #87621).
		if p.DeletionTimestamp != nil || p.Namespace != ns {
			continue
		}
		if selector.Matches(labels.Set(p.Labels)) {
			count++
		}
	}
	return count
}

// kubeSpreadFilter is calPreFilterState plus Filter (filtering.go) for every node.
func kubeSpreadFilter(nodes []*corev1.Node, podsOn map[string][]*corev1.Pod, pod *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	constraints := kubeFilterTopologySpreadConstraints(pod.Spec.TopologySpreadConstraints, pod.Labels, corev1.DoNotSchedule)
	if len(constraints) == 0 {
		for _, n := range nodes {
			out[n.Name] = true
		}
		return out
	}
	tpValueToMatchNum := make([]map[string]int, len(constraints))
	for i := range constraints {
		tpValueToMatchNum[i] = map[string]int{}
	}
	requiredNodeAffinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, node := range nodes {
		if !kubeNodeLabelsMatchSpreadConstraints(node.Labels, constraints) {
			continue
		}
		for i, c := range constraints {
			if !c.matchNodeInclusionPolicies(pod, node, requiredNodeAffinity) {
				continue
			}
			value := node.Labels[c.TopologyKey]
			tpValueToMatchNum[i][value] += kubeCountPodsMatchSelector(podsOn[node.Name], c.Selector, pod.Namespace)
		}
	}
	minMatch := make([]int, len(constraints))
	for i := range constraints {
		minMatch[i] = math.MaxInt32 // criticalPaths[0].MatchNum
		for _, num := range tpValueToMatchNum[i] {
			minMatch[i] = min(minMatch[i], num)
		}
	}
	podLabelSet := labels.Set(pod.Labels)
	for _, node := range nodes {
		ok := true
		for i, c := range constraints {
			tpVal, has := node.Labels[c.TopologyKey]
			if !has {
				ok = false
				break
			}
			minMatchNum := minMatch[i]
			if len(tpValueToMatchNum[i]) < int(c.MinDomains) {
				minMatchNum = 0
			}
			selfMatchNum := 0
			if c.Selector.Matches(podLabelSet) {
				selfMatchNum = 1
			}
			matchNum := tpValueToMatchNum[i][tpVal]
			if skew := matchNum + selfMatchNum - minMatchNum; skew > int(c.MaxSkew) {
				ok = false
				break
			}
		}
		out[node.Name] = ok
	}
	return out
}

// kubeAffinityTerm is framework.AffinityTerm.
type kubeAffinityTerm struct {
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector
}

func kubeNewAffinityTerm(pod *corev1.Pod, term *corev1.PodAffinityTerm) kubeAffinityTerm {
	selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		panic(err)
	}
	namespaces := sets.Set[string]{}
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		namespaces.Insert(pod.Namespace)
	} else {
		namespaces.Insert(term.Namespaces...)
	}
	nsSelector, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	if err != nil {
		panic(err)
	}
	return kubeAffinityTerm{Namespaces: namespaces, Selector: selector, TopologyKey: term.TopologyKey, NamespaceSelector: nsSelector}
}

func (at *kubeAffinityTerm) Matches(pod *corev1.Pod, nsLabels labels.Set) bool {
	if at.Namespaces.Has(pod.Namespace) || at.NamespaceSelector.Matches(nsLabels) {
		return at.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

func kubeTerms(pod *corev1.Pod, anti bool) []kubeAffinityTerm {
	a := pod.Spec.Affinity
	var terms []corev1.PodAffinityTerm
	if a != nil && anti && a.PodAntiAffinity != nil {
		terms = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if a != nil && !anti && a.PodAffinity != nil {
		terms = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	var out []kubeAffinityTerm
	for i := range terms {
		out = append(out, kubeNewAffinityTerm(pod, &terms[i]))
	}
	return out
}

type kubeTopologyPair struct{ key, value string }

func kubePodMatchesAllAffinityTerms(terms []kubeAffinityTerm, pod *corev1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		if !t.Matches(pod, nil) {
			return false
		}
	}
	return true
}

// kubeInterPodAffinityFilter is PreFilter plus Filter (interpodaffinity/filtering.go) for every
// node. The incoming pod's namespaceSelector is merged into its namespaces as
// mergeAffinityTermNamespacesIfNotEmpty does, with nsLabels giving each namespace's labels.
func kubeInterPodAffinityFilter(nodes []*corev1.Node, podsOn map[string][]*corev1.Pod, pod *corev1.Pod, nsLabels func(string) labels.Set, allNamespaces []string) map[string]bool {
	affinityTerms, antiTerms := kubeTerms(pod, false), kubeTerms(pod, true)
	merge := func(terms []kubeAffinityTerm) {
		for i := range terms {
			t := &terms[i]
			if t.NamespaceSelector.Empty() {
				continue
			}
			for _, ns := range allNamespaces {
				if t.NamespaceSelector.Matches(nsLabels(ns)) {
					t.Namespaces.Insert(ns)
				}
			}
			t.NamespaceSelector = labels.Nothing()
		}
	}
	merge(affinityTerms)
	merge(antiTerms)
	existingAnti := map[kubeTopologyPair]int{}
	affinityCounts := map[kubeTopologyPair]int{}
	antiCounts := map[kubeTopologyPair]int{}
	update := func(m map[kubeTopologyPair]int, node *corev1.Node, tk string) {
		if tv, ok := node.Labels[tk]; ok {
			m[kubeTopologyPair{tk, tv}]++
		}
	}
	for _, node := range nodes {
		for _, existing := range podsOn[node.Name] {
			for _, t := range kubeTerms(existing, true) {
				if t.Matches(pod, nsLabels(pod.Namespace)) {
					update(existingAnti, node, t.TopologyKey)
				}
			}
			if kubePodMatchesAllAffinityTerms(affinityTerms, existing) {
				for _, t := range affinityTerms {
					update(affinityCounts, node, t.TopologyKey)
				}
			}
			for _, t := range antiTerms {
				if t.Matches(existing, nil) {
					update(antiCounts, node, t.TopologyKey)
				}
			}
		}
	}
	out := map[string]bool{}
	for _, node := range nodes {
		// satisfyPodAffinity
		ok := true
		podsExist := true
		for _, t := range affinityTerms {
			if tv, has := node.Labels[t.TopologyKey]; has {
				if affinityCounts[kubeTopologyPair{t.TopologyKey, tv}] <= 0 {
					podsExist = false
				}
			} else {
				ok = false
			}
		}
		if ok && !podsExist {
			ok = len(affinityCounts) == 0 && kubePodMatchesAllAffinityTerms(affinityTerms, pod)
		}
		// satisfyPodAntiAffinity
		for _, t := range antiTerms {
			if tv, has := node.Labels[t.TopologyKey]; ok && has && antiCounts[kubeTopologyPair{t.TopologyKey, tv}] > 0 {
				ok = false
			}
		}
		// satisfyExistingPodsAntiAffinity
		for k, v := range node.Labels {
			if ok && existingAnti[kubeTopologyPair{k, v}] > 0 {
				ok = false
			}
		}
		out[node.Name] = ok
	}
	return out
}

// kubeFilter returns the nodes where pod passes NodeUnschedulable, TaintToleration, NodeAffinity,
// PodTopologySpread and InterPodAffinity, given the other pods (bound, unfinished).
func kubeFilter(nodes []*corev1.Node, pods []*corev1.Pod, pod *corev1.Pod) []string {
	podsOn := map[string][]*corev1.Pod{}
	nsSet := sets.New[string]()
	for _, p := range pods {
		podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
		nsSet.Insert(p.Namespace)
	}
	nsSet.Insert(pod.Namespace)
	nsLabels := func(ns string) labels.Set { return labels.Set{corev1.LabelMetadataName: ns} }
	spread := kubeSpreadFilter(nodes, podsOn, pod)
	inter := kubeInterPodAffinityFilter(nodes, podsOn, pod, nsLabels, sets.List(nsSet))
	req := nodeaffinity.GetRequiredNodeAffinity(pod)
	out := []string{}
	for _, node := range nodes {
		if node.Spec.Unschedulable && !v1helper.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations,
			&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false) {
			continue
		}
		if _, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, kubeDoNotScheduleTaints, false); untolerated {
			continue
		}
		if match, _ := req.Match(node); !match {
			continue
		}
		if !spread[node.Name] || !inter[node.Name] {
			continue
		}
		out = append(out, node.Name)
	}
	sort.Strings(out)
	return out
}

// randomCase builds a small random snapshot around a Pending member "in" of cluster c1.
// Terminating pods never carry the labels the (anti-)affinity terms select (tier, shard): the
// model leaves terminating pods out of inter-pod affinity (documented), kube-scheduler does not.
func randomCase(r *rand.Rand) (*policies.Snapshot, *corev1.Pod, string) {
	var desc strings.Builder
	zoneKey, hostKey := corev1.LabelTopologyZone, corev1.LabelHostname
	zones := []string{"zone-a", "zone-b", "zone-c", "zone-d"}
	pick := func(p float64) bool { return r.Float64() < p }
	var nodes []*corev1.Node
	for i := 0; i < 3+r.IntN(5); i++ {
		n := fixture.Node(fmt.Sprintf("n%d", i+1))
		if pick(0.1) {
			delete(n.Labels, hostKey)
		}
		if pick(0.85) {
			n.Labels[zoneKey] = zones[r.IntN(len(zones))]
		}
		if pick(0.3) {
			n.Labels["disk"] = "ssd"
		}
		if pick(0.2) {
			fixture.Tainted("t", "x", []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule}[r.IntN(3)])(n)
		}
		if pick(0.1) {
			fixture.Cordoned()(n)
		}
		nodes = append(nodes, n)
		fmt.Fprintf(&desc, "%s %v taints=%v unsched=%v\n", n.Name, n.Labels, n.Spec.Taints, n.Spec.Unschedulable)
	}
	selectors := []map[string]string{
		{scenario.AppLabel: "redis"}, {scenario.AppLabel: "redis"}, {scenario.AppLabel: "redis", scenario.ShardLabel: "x"}, {policies.DefaultClusterLabel: "c1"},
	}
	randomSpread := func() []corev1.TopologySpreadConstraint {
		var out []corev1.TopologySpreadConstraint
		for k := 0; k < 1+r.IntN(2); k++ {
			c := corev1.TopologySpreadConstraint{
				MaxSkew: int32(1 + r.IntN(2)), TopologyKey: []string{zoneKey, hostKey}[r.IntN(2)],
				WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector:     &metav1.LabelSelector{MatchLabels: selectors[r.IntN(len(selectors))]},
			}
			switch r.IntN(20) {
			case 0:
				c.LabelSelector = &metav1.LabelSelector{}
			case 1:
				c.LabelSelector = nil
			case 2:
				c.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: scenario.AppLabel, Operator: metav1.LabelSelectorOpExists}}}
			}
			if pick(0.25) {
				c.MatchLabelKeys = []string{scenario.ShardLabel}
			}
			if pick(0.25) {
				c.MinDomains = ptr.To(int32(1 + r.IntN(5)))
			}
			if pick(0.4) {
				c.NodeAffinityPolicy = ptr.To([]corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}[r.IntN(2)])
			}
			if pick(0.4) {
				c.NodeTaintsPolicy = ptr.To([]corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}[r.IntN(2)])
			}
			if pick(0.1) {
				c.WhenUnsatisfiable = corev1.ScheduleAnyway
			}
			out = append(out, c)
		}
		return out
	}
	shards := []string{"x", "y"}
	in := incoming(shards[r.IntN(2)])
	in.Spec.TopologySpreadConstraints = randomSpread()
	if pick(0.3) {
		var zs []string
		for _, z := range zones {
			if pick(0.6) {
				zs = append(zs, z)
			}
		}
		if len(zs) > 0 {
			fixture.RequiredIn(zoneKey, zs...)(in)
		}
	}
	if pick(0.15) {
		fixture.NodeSelector("disk", "ssd")(in)
	}
	if pick(0.3) {
		fixture.Tolerates("t", "")(in)
	}
	if pick(0.15) {
		fixture.Tolerates(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)(in)
	}
	if pick(0.3) {
		fixture.AntiAffinity([]string{zoneKey, hostKey}[r.IntN(2)], []map[string]string{{scenario.ShardLabel: in.Labels[scenario.ShardLabel]}, {"tier": "web"}}[r.IntN(2)])(in)
	}
	if pick(0.2) {
		sel := []map[string]string{{"tier": "cache"}, {"tier": "cache"}, {scenario.ShardLabel: "y"}}[r.IntN(3)]
		fixture.PodAffinity([]string{zoneKey, hostKey}[r.IntN(2)], sel)(in)
		if pick(0.3) {
			in.Labels["tier"] = "cache"
		}
		if pick(0.2) {
			fixture.PodAffinity(hostKey, map[string]string{"tier": "cache"})(in)
		}
	}
	fmt.Fprintf(&desc, "in %v spread=%+v affinity=%+v tolerations=%v\n", in.Labels, in.Spec.TopologySpreadConstraints, in.Spec.Affinity, in.Spec.Tolerations)
	objs := []any{in}
	var others []*corev1.Pod
	for k := 0; k < r.IntN(12); k++ {
		p := fixture.Pod(fmt.Sprintf("p%d", k), fixture.On(nodes[r.IntN(len(nodes))].Name))
		switch r.IntN(6) {
		case 0, 1, 2: // a member of c1
			fixture.WithLabels(scenario.AppLabel, "redis", policies.DefaultClusterLabel, "c1", scenario.ShardLabel, shards[r.IntN(2)])(p)
			if pick(0.5) {
				p.Spec.TopologySpreadConstraints = randomSpread()
			}
			if pick(0.3) {
				fixture.AntiAffinity([]string{zoneKey, hostKey}[r.IntN(2)], map[string]string{scenario.ShardLabel: p.Labels[scenario.ShardLabel]})(p)
			}
		case 3: // another app's pod matching the spread selectors
			fixture.WithLabels(scenario.AppLabel, "redis")(p)
			if pick(0.3) {
				p.Labels["tier"] = "cache"
			}
		case 4: // unrelated
			fixture.WithLabels(scenario.AppLabel, "web", "tier", []string{"web", "cache"}[r.IntN(2)])(p)
			if pick(0.4) {
				fixture.AntiAffinity([]string{zoneKey, hostKey}[r.IntN(2)], map[string]string{scenario.AppLabel: "redis"})(p)
			}
		case 5: // another namespace
			fixture.WithLabels(scenario.AppLabel, "redis", "tier", "cache")(p)
			fixture.InNamespace("other")(p)
			if pick(0.4) {
				fixture.AntiAffinity(zoneKey, map[string]string{scenario.AppLabel: "redis"}, fixture.TermNamespaces(fixture.Namespace))(p)
			}
		}
		if pick(0.1) && p.Labels["tier"] == "" && p.Labels[scenario.ShardLabel] == "" && p.Spec.Affinity == nil {
			fixture.Terminating()(p)
		}
		others = append(others, p)
		objs = append(objs, p)
		fmt.Fprintf(&desc, "%s/%s on %s %v term=%v spread=%d anti=%v\n", p.Namespace, p.Name, p.Spec.NodeName, p.Labels, p.DeletionTimestamp != nil, len(p.Spec.TopologySpreadConstraints), p.Spec.Affinity != nil)
	}
	snap := snapshotOf(nodes, nil, objs...)
	return snap, in, desc.String()
}

// TestFilterMatchesKubeScheduler compares Candidates with the port of kube-scheduler's filter
// plugins on random snapshots.
func TestFilterMatchesKubeScheduler(t *testing.T) {
	r := rand.New(rand.NewPCG(20261122, 3))
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	failures := 0
	for it := 0; it < iterations && failures < 5; it++ {
		snap, in, desc := randomCase(r)
		m, err := policies.Build(snap, policies.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := clusterNamed(m, "c1")
		i := memberIndex(c, "in")
		got := nodeNames(m, c.Candidates(c.Current(), i))
		var others []*corev1.Pod
		for _, p := range snap.Pods {
			if p != in && p.Spec.NodeName != "" {
				others = append(others, p)
			}
		}
		want := kubeFilter(snap.Nodes, others, in)
		if diff := cmp.Diff(want, got); diff != "" {
			failures++
			t.Errorf("case %d: Candidates differ from kube-scheduler (-kube +ours):\n%s\n%s\n%s", it, diff, desc, c.Explain(c.Current(), i).Summary())
		}
	}
}
