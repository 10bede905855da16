package plan

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// The descheduler's own test table for its RemovePodsViolatingTopologySpreadConstraint plugin
// (sigs.k8s.io/descheduler v0.36.0,
// pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint/topologyspreadconstraint_test.go,
// TestTopologySpreadConstraint), restated as facts: each case's nodes (allocatable CPU in
// millicores and pods, labels, taints), its pods (how many on which node, labels, spread
// constraints, node selector or affinity, tolerations, no owner, terminating; every pod requests
// 100m CPU), the plugin's arguments that matter here (ScheduleAnyway constraints judged, a label
// selector on the pods balanced), and what the case expects: whether a DoNotSchedule constraint
// is broken (counted by hand: some eligible domain's count minus the global minimum above
// maxSkew) and how many pods the descheduler evicts. The pods form one Redis cluster, re-created
// by their ReplicaSet, judged with TopologySpread alone.

// dsNode is a node of a case.
type dsNode struct {
	name      string
	milliCPU  int64
	pods      int64
	labels    map[string]string
	taints    []corev1.Taint
	noHostKey bool // the case replaces the node's labels: no kubernetes.io/hostname=name
}

// dsPods is count pods on one node, alike.
type dsPods struct {
	count        int
	node         string
	labels       map[string]string
	constraints  []corev1.TopologySpreadConstraint
	nodeSelector map[string]string
	nodeAffinity *corev1.Affinity
	tolerations  []corev1.Toleration
	noOwners     bool
	terminating  bool
}

// dsCase is one case of the descheduler's table.
type dsCase struct {
	name  string
	nodes []dsNode
	pods  []dsPods
	// scheduleAnyway: the plugin's constraints argument lists ScheduleAnyway too.
	scheduleAnyway bool
	// selector is the plugin's labelSelector argument (nil: every pod).
	selector *metav1.LabelSelector
	// violated: a DoNotSchedule constraint's skew exceeds its maxSkew; softViolated: a
	// ScheduleAnyway one's does.
	violated, softViolated bool
	// evicted is the descheduler's expected eviction count.
	evicted int
}

// dsSpread returns the constraint the descheduler's getDefaultTopologyConstraints builds: zone,
// DoNotSchedule, foo=bar, maxSkew, changed by edits.
func dsSpread(maxSkew int32, edits ...func(*corev1.TopologySpreadConstraint)) []corev1.TopologySpreadConstraint {
	c := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"foo": "bar"}}}
	for _, e := range edits {
		e(&c)
	}
	return []corev1.TopologySpreadConstraint{c}
}

func onKey(key string) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.TopologyKey = key }
}

func anyway(c *corev1.TopologySpreadConstraint) { c.WhenUnsatisfiable = corev1.ScheduleAnyway }

// zones returns nodes n1, n2, … of 2000m CPU and 10 pods, labelled zone=z for each z.
func zones(zs ...string) []dsNode {
	var out []dsNode
	for i, z := range zs {
		out = append(out, dsNode{name: fmt.Sprintf("n%d", i+1), milliCPU: 2000, pods: 10, labels: map[string]string{"zone": z}})
	}
	return out
}

var fooBar = map[string]string{"foo": "bar"}

func dsCases() []dsCase {
	linWin := func(extra bool) []dsNode {
		var out []dsNode
		for i, n := range []string{"linNodeA", "linNodeB", "linNodeC", "winNodeA", "winNodeB", "winNodeC", "winNodeD"} {
			if i == 6 && !extra {
				break
			}
			os := "linux"
			if strings.HasPrefix(n, "win") {
				os = "windows"
			}
			out = append(out, dsNode{name: fmt.Sprintf("n%d", i+1), milliCPU: 2000, pods: 10, labels: map[string]string{"node": n, "os": os}})
		}
		return out
	}
	windows := map[string]string{"os": "windows"}
	taint := func(key, value string, effect corev1.TaintEffect) []corev1.Taint {
		return []corev1.Taint{{Key: key, Value: value, Effect: effect}}
	}
	affinityIn := func(key, op string, values ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOperator(op), Values: values}}}},
		}}}
	}
	hashed := func(v string) map[string]string { return map[string]string{"foo": "bar", "pod-template-hash": v} }
	matchHash := func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"pod-template-hash"} }
	tolerate := []corev1.Toleration{{Key: "taint-test", Value: "test", Operator: corev1.TolerationOpEqual, Effect: corev1.TaintEffectNoSchedule}}
	selector := func(op metav1.LabelSelectorOperator, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "foo", Operator: op, Values: []string{v}}}}
	}
	whoami := func(node string) dsPods {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "whoami"}}
		return dsPods{count: 1, node: node, labels: map[string]string{"app": "whoami"}, constraints: []corev1.TopologySpreadConstraint{
			{LabelSelector: sel, MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway},
			{LabelSelector: sel, MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule},
		}}
	}
	hostAndZone := func(name, zone string) dsNode {
		return dsNode{name: name, milliCPU: 2000, pods: 10, noHostKey: true, labels: map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelHostname: name}}
	}
	service := func(node string) dsPods {
		return dsPods{count: 2, node: node, labels: map[string]string{"app.kubernetes.io/name": "service"},
			constraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "service"}}}},
			nodeAffinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "app_service", Operator: corev1.NodeSelectorOpExists}}}},
			}}}}
	}
	zoned := func(name, zone string, milliCPU int64) dsNode {
		return dsNode{name: name, milliCPU: milliCPU, pods: 9, labels: map[string]string{"zone": zone}}
	}
	arm := func(name, zone string) dsNode {
		return dsNode{name: name, milliCPU: 1000, pods: 9, labels: map[string]string{"zone": zone, corev1.LabelArchStable: "arm64"}}
	}
	ignoreAffinity := func(c *corev1.TopologySpreadConstraint) {
		c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
	}
	return []dsCase{
		{name: "2 domains, sizes [2,1], maxSkew=1, move 0 pods", nodes: zones("zoneA", "zoneB"),
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "n1", labels: fooBar}, {count: 1, node: "n2", labels: fooBar}}},
		{name: "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2]", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 1,
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 2, node: "n1", labels: fooBar}, {count: 1, node: "n2", labels: fooBar}}},
		{name: "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (both constraints)", nodes: zones("zoneA", "zoneB"), scheduleAnyway: true, softViolated: true, evicted: 1,
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1, anyway)}, {count: 2, node: "n1", labels: fooBar}, {count: 1, node: "n2", labels: fooBar}}},
		{name: "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (soft constraints)", nodes: zones("zoneA", "zoneB"), scheduleAnyway: true, softViolated: true, evicted: 1,
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1, anyway)}, {count: 2, node: "n1", labels: fooBar}, {count: 1, node: "n2", labels: fooBar}}},
		{name: "2 domains, sizes [3,1], maxSkew=1, no pods eligible, move 0 pods", nodes: zones("zoneA", "zoneB"), violated: true,
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1), noOwners: true}, {count: 2, node: "n1", labels: fooBar, noOwners: true}, {count: 1, node: "n2", labels: fooBar, noOwners: true}}},
		{name: "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2], exclude kube-system namespace", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 1,
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 2, node: "n1", labels: fooBar}, {count: 1, node: "n2", labels: fooBar}}},
		{name: "2 domains, sizes [5,2], maxSkew=1, move 1 pod to achieve [4,3]", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 1,
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 4, node: "n1", labels: fooBar}, {count: 2, node: "n2", labels: fooBar}}},
		{name: "2 domains, sizes [4,0], maxSkew=1, move 2 pods to achieve [2,2]", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 2,
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 3, node: "n1", labels: fooBar}}},
		{name: "2 domains, sizes [4,0], maxSkew=1, only move 1 pod since pods with nodeSelector and nodeAffinity aren't evicted", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 1,
			pods: []dsPods{
				{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1), nodeSelector: map[string]string{"zone": "zoneA"}},
				{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1), nodeSelector: map[string]string{"zone": "zoneA"}},
				{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1), nodeAffinity: affinityIn("foo", "In", "bar")},
				{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)},
			}},
		{name: "6 domains, sizes [0,0,0,3,3,2], maxSkew=1, No pod is evicted since topology is balanced", nodes: linWin(false),
			pods: []dsPods{
				{count: 3, node: "n4", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
				{count: 3, node: "n5", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
				{count: 2, node: "n6", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
			}},
		{name: "7 domains, sizes [0,0,0,3,3,2], maxSkew=1, two pods are evicted and moved to new node added", nodes: linWin(true), violated: true, evicted: 2,
			pods: []dsPods{
				{count: 3, node: "n4", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
				{count: 3, node: "n5", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
				{count: 2, node: "n6", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
			}},
		{name: "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 1 pod is evicted from node 4", nodes: linWin(false), violated: true, evicted: 1,
			pods: []dsPods{
				{count: 4, node: "n4", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
				{count: 3, node: "n5", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
				{count: 1, node: "n6", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
			}},
		{name: "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 0 pod is evicted as pods of node:winNodeA can only be scheduled on this node and nodeFit is true ", nodes: linWin(false), violated: true,
			pods: []dsPods{
				{count: 4, node: "n4", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: map[string]string{"node": "winNodeA"}},
				{count: 3, node: "n5", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
				{count: 1, node: "n6", labels: fooBar, constraints: dsSpread(1, onKey("node")), nodeSelector: windows},
			}},
		{name: "2 domains, sizes [4,0], maxSkew=1, move 2 pods since selector matches multiple nodes", violated: true, evicted: 2,
			nodes: []dsNode{
				{name: "n1", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneA", "region": "boston"}},
				{name: "n2", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneB", "region": "boston"}},
			},
			pods: []dsPods{
				{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1), nodeSelector: map[string]string{"region": "boston"}},
				{count: 3, node: "n1", labels: fooBar, nodeSelector: map[string]string{"region": "boston"}},
			}},
		{name: "3 domains, sizes [0, 1, 100], maxSkew=1, move 66 pods to get [34, 33, 34]", nodes: zones("zoneA", "zoneB", "zoneC"), violated: true, evicted: 66,
			pods: []dsPods{{count: 1, node: "n2", labels: fooBar, constraints: dsSpread(1)}, {count: 100, node: "n3", labels: fooBar}}},
		{name: "4 domains, sizes [0, 1, 3, 5], should move 3 to get [2, 2, 3, 2]", nodes: zones("zoneA", "zoneB", "zoneC", "zoneD"), violated: true, evicted: 3,
			pods: []dsPods{{count: 1, node: "n2", labels: fooBar, constraints: dsSpread(1)}, {count: 3, node: "n3", labels: fooBar}, {count: 5, node: "n4", labels: fooBar}}},
		{name: "2 domains size [2 6], maxSkew=2, should move 1 to get [3 5]", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 1,
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(2)}, {count: 1, node: "n1", labels: fooBar}, {count: 6, node: "n2", labels: fooBar}}},
		{name: "2 domains size [2 6], maxSkew=2, can't move any because of node taints", violated: true,
			nodes: []dsNode{{name: "n1", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneA"}, taints: taint("hardware", "gpu", corev1.TaintEffectNoSchedule)}, {name: "n2", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneB"}}},
			pods:  []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(2)}, {count: 1, node: "n1", labels: fooBar}, {count: 6, node: "n2", labels: fooBar}}},
		{name: "2 domains size [2 6], maxSkew=2, can't move any because node1 does not have enough CPU", violated: true,
			nodes: []dsNode{{name: "n1", milliCPU: 200, pods: 10, labels: map[string]string{"zone": "zoneA"}}, {name: "n2", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneB"}}},
			pods:  []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(2)}, {count: 1, node: "n1", labels: fooBar}, {count: 6, node: "n2", labels: fooBar}}},
		{name: "Multiple constraints (6 nodes/2 zones, 4 pods)", scheduleAnyway: true, softViolated: true, evicted: 1,
			nodes: []dsNode{hostAndZone("n1", "zoneA"), hostAndZone("n2", "zoneA"), hostAndZone("n3", "zoneA"), hostAndZone("n4", "zoneB"), hostAndZone("n5", "zoneB"), hostAndZone("n6", "zoneB")},
			pods:  []dsPods{whoami("n1"), whoami("n2"), whoami("n3"), whoami("n4")}},
		{name: "3 domains size [8 7 0], maxSkew=1, should move 5 to get [5 5 5]", nodes: zones("zoneA", "zoneB", "zoneC"), violated: true, evicted: 5,
			pods: []dsPods{{count: 8, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 7, node: "n2", labels: fooBar, constraints: dsSpread(1)}}},
		{name: "3 domains size [5 5 5], maxSkew=1, should move 0 to retain [5 5 5]", nodes: zones("zoneA", "zoneB", "zoneC"),
			pods: []dsPods{{count: 5, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 5, node: "n2", labels: fooBar, constraints: dsSpread(1)}, {count: 5, node: "n3", labels: fooBar, constraints: dsSpread(1)}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 1 pod since pod tolerates the node with taint", violated: true, evicted: 1,
			nodes: []dsNode{{name: "n1", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneA"}}, {name: "n2", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneB"}, taints: taint("taint-test", "test", corev1.TaintEffectNoSchedule)}},
			pods:  []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1), tolerations: tolerate}, {count: 1, node: "n1", labels: fooBar, nodeSelector: map[string]string{"zone": "zoneA"}}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the tainted node", violated: true,
			nodes: []dsNode{{name: "n1", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneA"}}, {name: "n2", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneB"}, taints: taint("taint-test", "test", corev1.TaintEffectNoSchedule)}},
			pods:  []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "n1", labels: fooBar, nodeSelector: map[string]string{"zone": "zoneA"}}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the tainted node, and NodeFit is enabled", violated: true,
			nodes: []dsNode{{name: "n1", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneA"}}, {name: "n2", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneB"}, taints: taint("taint-test", "test", corev1.TaintEffectNoSchedule)}},
			pods:  []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "n1", labels: fooBar, nodeSelector: map[string]string{"zone": "zoneA"}}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with PreferNoSchedule Taint", violated: true, evicted: 1,
			nodes: []dsNode{{name: "n1", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneA"}}, {name: "n2", milliCPU: 2000, pods: 10, labels: map[string]string{"zone": "zoneB"}, taints: taint("taint-test", "test", corev1.TaintEffectPreferNoSchedule)}},
			pods:  []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "n1", labels: fooBar, nodeSelector: map[string]string{"zone": "zoneA"}}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 0 pod for node with unmatched label filtering", nodes: zones("zoneA", "zoneB"), violated: true, selector: selector(metav1.LabelSelectorOpIn, "baz"),
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "n1", labels: fooBar}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 1, selector: selector(metav1.LabelSelectorOpIn, "bar"),
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "n1", labels: fooBar}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering (NotIn op)", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 1, selector: selector(metav1.LabelSelectorOpNotIn, "baz"),
			pods: []dsPods{{count: 1, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "n1", labels: fooBar}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 1 pods given matchLabelKeys on same replicaset", nodes: zones("zoneA", "zoneB"), violated: true, evicted: 1, selector: selector(metav1.LabelSelectorOpNotIn, "baz"),
			pods: []dsPods{{count: 1, node: "n1", labels: hashed("foo"), constraints: dsSpread(1, matchHash)}, {count: 1, node: "n1", labels: hashed("foo"), constraints: dsSpread(1, matchHash)}}},
		{name: "2 domains, sizes [2,0], maxSkew=1, move 0 pods given matchLabelKeys on two different replicasets", nodes: zones("zoneA", "zoneB"), selector: selector(metav1.LabelSelectorOpNotIn, "baz"),
			pods: []dsPods{{count: 1, node: "n1", labels: hashed("foo"), constraints: dsSpread(1, matchHash)}, {count: 1, node: "n1", labels: hashed("bar"), constraints: dsSpread(1, matchHash)}}},
		{name: "2 domains, sizes [4,2], maxSkew=1, 2 pods in termination; nothing should be moved", nodes: zones("zoneA", "zoneB"), selector: selector(metav1.LabelSelectorOpIn, "bar"),
			pods: []dsPods{{count: 2, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 2, node: "n1", labels: fooBar, constraints: dsSpread(1), terminating: true}, {count: 2, node: "n2", labels: fooBar, constraints: dsSpread(1)}}},
		{name: "3 domains, sizes [2,3,4], maxSkew=1, NodeFit is enabled, and not enough cpu on zoneA; nothing should be moved", violated: true,
			nodes: []dsNode{zoned("n1", "zoneA", 250), zoned("n2", "zoneB", 1000), zoned("n3", "zoneC", 1000)},
			pods:  []dsPods{{count: 2, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 3, node: "n2", labels: fooBar, constraints: dsSpread(1)}, {count: 4, node: "n3", labels: fooBar, constraints: dsSpread(1)}}},
		{name: "3 domains, sizes [2,3,4], maxSkew=1, args.NodeFit is false, and not enough cpu on zoneA; 1 should be moved to force scale-up", violated: true, evicted: 1,
			nodes: []dsNode{zoned("n1", "zoneA", 250), zoned("n2", "zoneB", 1000), zoned("n3", "zoneC", 1000)},
			pods:  []dsPods{{count: 2, node: "n1", labels: fooBar, constraints: dsSpread(1)}, {count: 3, node: "n2", labels: fooBar, constraints: dsSpread(1)}, {count: 4, node: "n3", labels: fooBar, constraints: dsSpread(1)}}},
		{name: "3 domains, sizes [[1,0], [1,1], [2,1]], maxSkew=1, NodeFit is enabled, and not enough cpu on ZoneA; nothing should be moved", violated: true,
			nodes: []dsNode{zoned("A1", "zoneA", 150), zoned("B1", "zoneB", 1000), zoned("C1", "zoneC", 1000), zoned("A2", "zoneA", 50), zoned("B2", "zoneB", 1000), zoned("C2", "zoneC", 1000)},
			pods: []dsPods{{count: 1, node: "A1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "B1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "B2", labels: fooBar, constraints: dsSpread(1)},
				{count: 2, node: "C1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "C2", labels: fooBar, constraints: dsSpread(1)}}},
		{name: "2 domains, sizes [[1,4], [2,1]], maxSkew=1, NodeFit is enabled; should move 1", violated: true, evicted: 1,
			nodes: []dsNode{zoned("A1", "zoneA", 1000), zoned("A2", "zoneA", 1000), zoned("B1", "zoneB", 1000), zoned("B2", "zoneB", 1000)},
			pods: []dsPods{{count: 1, node: "A1", labels: fooBar, constraints: dsSpread(1)}, {count: 4, node: "A2", labels: fooBar, constraints: dsSpread(1)},
				{count: 2, node: "B1", labels: fooBar, constraints: dsSpread(1)}, {count: 1, node: "B2", labels: fooBar, constraints: dsSpread(1)}}},
		{name: "2 domains, sizes [3, 1], maxSkew=1, Tainted nodes; nothing should be moved",
			nodes: []dsNode{
				{name: "controlplane1", milliCPU: 2000, pods: 10, noHostKey: true, labels: map[string]string{"zone": "zoneA", corev1.LabelHostname: "cp-1"},
					taints: []corev1.Taint{{Effect: corev1.TaintEffectNoSchedule, Key: "node-role.kubernetes.io/controlplane", Value: "true"}, {Effect: corev1.TaintEffectNoSchedule, Key: "node-role.kubernetes.io/etcd", Value: "true"}}},
				{name: "infraservices1", milliCPU: 2000, pods: 10, noHostKey: true, labels: map[string]string{"zone": "zoneA", "infra_service": "true", corev1.LabelHostname: "infra-1"},
					taints: []corev1.Taint{{Effect: corev1.TaintEffectNoSchedule, Key: "infra_service"}}},
				{name: "app1", milliCPU: 2000, pods: 10, noHostKey: true, labels: map[string]string{"zone": "zoneA", "app_service": "true", corev1.LabelHostname: "app-1"}},
				{name: "app2", milliCPU: 2000, pods: 10, noHostKey: true, labels: map[string]string{"zone": "zoneB", "app_service": "true", corev1.LabelHostname: "app-2"}},
			},
			pods: []dsPods{service("app1"), service("app2")}},
		{name: "3 domains, sizes [2, 1, 0] with selectors, maxSkew=1, nodeTaintsPolicy=Ignore, should move 1 for [1, 1, 1]", violated: true, evicted: 1,
			nodes: []dsNode{arm("A1", "zoneA"), arm("B1", "zoneB"), arm("C1", "zoneC")},
			pods: []dsPods{
				{count: 1, node: "A1", labels: fooBar, constraints: dsSpread(1, ignoreAffinity), nodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}},
				{count: 1, node: "A1", labels: fooBar, constraints: dsSpread(1, ignoreAffinity), nodeSelector: map[string]string{"zone": "zoneA", corev1.LabelArchStable: "arm64"}},
				{count: 1, node: "B1", labels: fooBar, constraints: dsSpread(1, ignoreAffinity), nodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}},
			}},
	}
}

// snapshot builds a case's objects: its nodes, and its pods as members of Redis cluster "tsc"
// (the cluster label added), each requesting 100m CPU, controlled by ReplicaSet rs unless the
// case says they have no owner.
func (tc dsCase) snapshot() *policies.Snapshot {
	snap := &policies.Snapshot{}
	for _, n := range tc.nodes {
		opts := []fixture.NodeOption{fixture.Allocatable(fmt.Sprintf("%dm", n.milliCPU), "3000", n.pods)}
		if n.noHostKey {
			opts = append(opts, fixture.WithoutNodeLabel(corev1.LabelHostname))
		}
		for k, v := range n.labels {
			opts = append(opts, fixture.NodeLabel(k, v))
		}
		for _, t := range n.taints {
			opts = append(opts, fixture.Tainted(t.Key, t.Value, t.Effect))
		}
		snap.Nodes = append(snap.Nodes, fixture.Node(n.name, opts...))
	}
	for _, pl := range tc.pods {
		for range pl.count {
			lbl := maps.Clone(pl.labels)
			lbl[policies.DefaultClusterLabel] = "tsc"
			opts := []fixture.PodOption{fixture.On(pl.node), fixture.Requests("100m", "0"), func(p *corev1.Pod) {
				p.Labels = lbl
				p.Spec.TopologySpreadConstraints = pl.constraints
				p.Spec.NodeSelector = pl.nodeSelector
				p.Spec.Affinity = pl.nodeAffinity
				p.Spec.Tolerations = pl.tolerations
			}}
			if !pl.noOwners {
				opts = append(opts, fixture.ControlledBy("apps/v1", "ReplicaSet", "rs"))
			}
			if pl.terminating {
				opts = append(opts, fixture.Terminating())
			}
			snap.Pods = append(snap.Pods, fixture.Pod(fmt.Sprintf("pod-%d", len(snap.Pods)), opts...))
		}
	}
	return snap
}

// TestDeschedulerTopologySpreadCases replays the descheduler's TopologySpread cases with
// TopologySpread judged alone (and, where the case asks the plugin for ScheduleAnyway
// constraints, SoftTopologySpread with as many soft evictions as the descheduler makes): a
// DoNotSchedule violation is reported exactly when the case breaks one, the plan evicts no more
// pods than the descheduler (none when the plugin's label selector picks no pod: the policy's
// selection then picks no Redis cluster), and every plan reaches compliance; where none can,
// the reason is given (found by counting, before any search, in every such case), and a best-effort
// plan, where it moves pods, lowers the penalty.
func TestDeschedulerTopologySpreadCases(t *testing.T) {
	var rows []string
	equal, fewer := 0, 0
	for _, tc := range dsCases() {
		t.Run(tc.name, func(t *testing.T) {
			rules := settings(policies.TopologySpread)
			opts := Options{MaxStates: 50000}
			if tc.scheduleAnyway {
				rules = settings(policies.TopologySpread, policies.SoftTopologySpread)
				opts.SoftEvictions = tc.evicted
			}
			m, err := policies.Build(tc.snapshot(), policies.Options{RecreatingOwners: []string{"ReplicaSet"}, Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			vs := c.Evaluate(c.Current())
			hard, soft := false, false
			for _, v := range vs {
				hard = hard || v.Rule == policies.TopologySpread && !v.Soft
				soft = soft || v.Rule == policies.SoftTopologySpread
			}
			if hard != tc.violated || soft != tc.softViolated {
				t.Errorf("TopologySpread violated %v, SoftTopologySpread %v; the case: %v and %v (%+v)", hard, soft, tc.violated, tc.softViolated, vs)
			}
			selected := true
			if tc.selector != nil {
				sel, err := metav1.LabelSelectorAsSelector(tc.selector)
				if err != nil {
					t.Fatal(err)
				}
				selected = false
				for _, mem := range c.Members {
					selected = selected || sel.Matches(labels.Set(mem.Pod.Labels))
				}
			}
			got, effort, how := 0, -1, "nothing to do"
			if selected {
				p := Compute(c, opts)
				got = p.Evictions + p.SoftEvictions
				switch {
				case p.Infeasible != "":
					how = "no plan (" + p.LimitedBy + ")"
					if p.LimitedBy == LimitStatic && p.Searched != 0 {
						t.Errorf("a static reason after %d placements searched", p.Searched)
					}
					opts.BestEffort = true
					be := Compute(c, opts)
					effort = be.Evictions
					if be.BestEffort == nil || effort > 0 && !be.BestEffort.After.Less(be.BestEffort.Before) {
						t.Errorf("best effort: %+v after %d evictions: no lower penalty", be.BestEffort, effort)
					}
					t.Logf("no plan: %s; best effort: %d evictions, %s", p.Infeasible, effort, strings.TrimPrefix(fmt.Sprintf("%+v", be.BestEffort), "&"))
				case !p.CompliantAfter || len(policies.Hard(p.After)) > 0:
					t.Errorf("plan not compliant after: %+v", p.After)
				case tc.softViolated && (p.Soft == nil || p.Soft.After != 0):
					t.Errorf("soft fix %+v: the ScheduleAnyway constraint still broken", p.Soft)
				case got > 0:
					how = "plan, compliant after"
				}
			} else {
				how = "not selected"
			}
			if got > tc.evicted {
				t.Errorf("%d evictions, the descheduler %d", got, tc.evicted)
			}
			if got == tc.evicted {
				equal++
			} else {
				fewer++
			}
			be := "–"
			if effort >= 0 {
				be = fmt.Sprint(effort)
			}
			rows = append(rows, fmt.Sprintf("%-3d %-3d %-3s %-28s %s", tc.evicted, got, be, how, tc.name))
		})
	}
	t.Logf("descheduler, rebalancer, best effort: evictions\n%s\n%d cases: %d with as many evictions as the descheduler, %d with fewer", strings.Join(rows, "\n"), len(rows), equal, fewer)
}
