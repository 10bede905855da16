package scheduleroracle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// Size of the test: cases are placements, each on nodes of its own (nodes are deleted after
// their case: the local cluster hands out at most 254 pod CIDRs).
const (
	cases         = 32
	podNetwork    = "127.61"
	labelApp      = "app"
	taintKey      = "dedicated"
	decisionWait  = 30 * time.Second
	pollInterval  = 50 * time.Millisecond
	unscheduledBy = "no-scheduler" // a scheduler name nothing serves: the pod stays Pending
	widget        = "example.com/widget"
	csiDriver     = "csi.example.com"
	claimsPerCase = 5 // CSI claims per case; the last is ReadWriteOncePod
)

// TestFilterAgreesWithKubeScheduler runs the random placements (see the package doc).
func TestFilterAgreesWithKubeScheduler(t *testing.T) {
	c := localcluster.StartForTest(t, localcluster.Config{PodNetwork: podNetwork})
	// 32 cases take about a minute on v1.36 and v1.37, and up to 16 minutes on v1.35 (make
	// test-compat), whose cases take 15 or 30 s each: multiples of kube-controller-manager's
	// PersistentVolume binder resync (--pvclaimbinder-sync-period, 15 s), most likely the wait
	// for each case's claims to be bound.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	var bound, pending int
	seen := map[string]int{} // reason → nodes the filter rejected for it, over every verdict
	for i := range cases {
		b, p := runCase(ctx, t, c, i, seen)
		bound += b
		pending += p
	}
	t.Logf("%d placements, %d pods: %d bound by kube-scheduler on a node the filter allows, %d left Pending with the filter's reasons and counts", cases, bound+pending, bound, pending)
	t.Logf("nodes rejected, by reason: %v", seen)
	if bound == 0 || pending == 0 {
		t.Errorf("the placements gave %d bound and %d Pending pods; both outcomes must be checked", bound, pending)
	}
	for _, reason := range mustSee {
		if seen[reason] == 0 {
			t.Errorf("no verdict rejected a node for %q: the placements do not exercise it", reason)
		}
	}
}

// mustSee are the reasons the placements must make the filter give at least once, so that the
// plugins behind them are checked against the scheduler.
var mustSee = []string{
	"Insufficient cpu", "Insufficient ephemeral-storage", "Insufficient " + widget,
	"node(s) didn't have free ports for the requested pod ports",
	"node(s) exceed max volume count",
	"node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod",
	"node(s) had untolerated taint(s)", "node(s) were unschedulable",
}

// runCase builds placement i (seeded by i), asks kube-scheduler to place its incoming pods one
// by one, checks each outcome against the filter, and deletes the case's nodes. It returns how
// many pods the scheduler bound and how many it left Pending, and adds the filter's rejections to
// seen.
func runCase(ctx context.Context, t *testing.T, c *localcluster.Cluster, i int, seen map[string]int) (bound, pending int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(i), 12))
	ns := fmt.Sprintf("case-%02d", i)
	cluster := ns // the Redis cluster label's value: every pod of the case is a member
	if _, err := c.Namespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Nodes: 3–6, 1–3 zones (sometimes a node without a zone), some tainted, some cordoned,
	// 1–4 CPUs, 100Mi–1Gi of ephemeral storage, 0–2 widgets (an extended resource), and a CSINode
	// without a limit, with an attach limit of 1–3 volumes, or none.
	zones := 1 + rng.IntN(3)
	nodes := make([]string, 3+rng.IntN(4))
	var desc []string
	for k := range nodes {
		spec := localcluster.NodeSpec{Name: fmt.Sprintf("c%02d-n%d", i, k), CPU: strconv.Itoa(1 + rng.IntN(4))}
		if rng.IntN(8) > 0 {
			spec.Zone = fmt.Sprintf("zone-%c", 'a'+rng.IntN(zones))
		}
		if rng.IntN(5) == 0 {
			spec.Taints = []corev1.Taint{{Key: taintKey, Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}
		spec.Unschedulable = rng.IntN(7) == 0
		eph := []string{"100Mi", "200Mi", "1Gi"}[rng.IntN(3)]
		spec.Resources = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(eph)}
		widgets := rng.IntN(3)
		if widgets > 0 {
			spec.Resources[widget] = *resource.NewQuantity(int64(widgets), resource.DecimalSI)
		}
		if _, err := c.AddNode(ctx, spec); err != nil {
			t.Fatal(err)
		}
		csi := "none"
		var err error
		switch rng.IntN(4) {
		case 0:
		case 1:
			csi = "no limit"
			err = createCSINode(ctx, c, fixture.CSINode(spec.Name, csiDriver))
		default:
			limit := 1 + rng.IntN(3)
			csi = fmt.Sprintf("limit %d", limit)
			err = createCSINode(ctx, c, fixture.CSINode(spec.Name, fmt.Sprintf("%s=%d", csiDriver, limit)))
		}
		if err != nil {
			t.Fatal(err)
		}
		nodes[k] = spec.Name
		desc = append(desc, fmt.Sprintf("%s(zone %q, cpu %s, ephemeral %s, widgets %d, CSINode %s, tainted %t, cordoned %t)",
			spec.Name, spec.Zone, spec.CPU, eph, widgets, csi, len(spec.Taints) > 0, spec.Unschedulable))
	}
	t.Logf("case %d: nodes %s", i, strings.Join(desc, ", "))
	defer func() {
		for _, n := range nodes {
			if err := c.DeleteNode(context.WithoutCancel(ctx), n); err != nil {
				t.Error(err)
			}
		}
	}()
	client := c.Client().CoreV1().Pods(ns)
	if err := createClaims(ctx, c, ns, fmt.Sprintf("c%02d", i)); err != nil {
		t.Fatal(err)
	}
	// Existing pods: bound by name to random nodes (as a controller's earlier placement), some
	// with anti-affinity of their own; and a Pending one no scheduler serves.
	for k := range rng.IntN(7) {
		p := randomPod(rng, ns, fmt.Sprintf("old-%d", k), cluster)
		p.Spec.NodeName = nodes[rng.IntN(len(nodes))]
		p.Spec.TopologySpreadConstraints = nil // only checked when a pod is scheduled
		if _, err := client.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if rng.IntN(2) == 0 {
		p := randomPod(rng, ns, "waiting", cluster)
		p.Spec.SchedulerName = unscheduledBy
		if _, err := client.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitRunning(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	// Incoming pods, one at a time: the filter's verdict on the state the scheduler sees, then
	// the scheduler's decision.
	for k := range 2 + rng.IntN(3) {
		p := randomPod(rng, ns, fmt.Sprintf("new-%d", k), cluster)
		want := verdict(ctx, t, c, p)
		for reason, nodes := range want.Rejected {
			seen[reason] += len(nodes)
		}
		if _, err := client.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		node, msg, err := decision(ctx, c, ns, p.Name)
		if err != nil {
			t.Fatalf("case %d pod %s: %v", i, p.Name, err)
		}
		switch {
		case node != "":
			bound++
			if !slices.Contains(want.Fits, node) {
				t.Errorf("case %d pod %s (%s): kube-scheduler bound it to %s, the filter allows only %v (rejects %v)", i, p.Name, describe(p), node, want.Fits, want.Rejected)
			}
		default:
			pending++
			got, total, err := parseFailedScheduling(msg)
			if err != nil {
				t.Errorf("case %d pod %s: %v", i, p.Name, err)
				break
			}
			wantCounts := map[string]int{}
			for reason, ns := range want.Rejected {
				wantCounts[reason] = len(ns)
			}
			if diff := cmp.Diff(wantCounts, got); diff != "" || total != want.Nodes || len(want.Fits) > 0 {
				t.Errorf("case %d pod %s (%s): kube-scheduler left it Pending: %q\nthe filter: %s\nreason counts (-filter +scheduler):\n%s", i, p.Name, describe(p), msg, want.Summary(), diff)
			}
			// Out of the way: a Pending pod the scheduler retries must not change the next
			// pod's state.
			if err := client.Delete(ctx, p.Name, *metav1.NewDeleteOptions(0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bound, pending
}

// randomPod returns a pod of the case's Redis cluster tolerating kwok's taint, with random
// labels (app a or b), CPU, ephemeral-storage and widget requests, a host port, claims of the
// case, toleration of the case taint, zone affinity, spread constraints and (anti-)affinity.
func randomPod(rng *rand.Rand, ns, name, cluster string) *corev1.Pod {
	app := []string{"a", "b"}[rng.IntN(2)]
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{labelApp: "a"}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			policies.DefaultClusterLabel: cluster, labelApp: app,
		}},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{fixture.KwokToleration()},
			Containers:  []corev1.Container{{Name: "c", Image: "fake"}},
		},
	}
	var reqs []string
	if cpu := []string{"", "", "500m", "1", "1500m"}[rng.IntN(5)]; cpu != "" {
		reqs = append(reqs, "cpu="+cpu)
	}
	if eph := []string{"", "", "50Mi", "150Mi"}[rng.IntN(4)]; eph != "" {
		reqs = append(reqs, "ephemeral-storage="+eph)
	}
	if rng.IntN(4) == 0 {
		reqs = append(reqs, widget+"=1")
	}
	p.Spec.Containers[0].Resources = fixture.ResourceRequirements(reqs...)
	switch rng.IntN(6) {
	case 0:
		fixture.HostPort(8080, "", "")(p)
	case 1:
		fixture.HostPort(8080, "127.0.0.1", "")(p)
	case 2:
		fixture.HostPort(8080, "", corev1.ProtocolUDP)(p)
	}
	for k := range rng.IntN(3) {
		fixture.WithNamedClaim(fmt.Sprintf("v%d", k), fmt.Sprintf("data-%d", rng.IntN(claimsPerCase)))(p)
	}
	if rng.IntN(3) == 0 {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: taintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	aff := &corev1.Affinity{}
	if rng.IntN(4) == 0 {
		aff.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", []string{"zone-b", "zone-c"}[rng.IntN(2)]},
			}}}},
		}}
	}
	keys := []string{corev1.LabelHostname, corev1.LabelTopologyZone}
	switch rng.IntN(4) {
	case 0:
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: sel, TopologyKey: keys[rng.IntN(2)],
		}}}
	case 1:
		aff.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelApp: "b"}}, TopologyKey: keys[rng.IntN(2)],
		}}}
	}
	if aff.NodeAffinity != nil || aff.PodAffinity != nil || aff.PodAntiAffinity != nil {
		p.Spec.Affinity = aff
	}
	if rng.IntN(2) == 0 {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: int32(1 + rng.IntN(2)), TopologyKey: keys[rng.IntN(2)], WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
		}}
	}
	return p
}

// describe summarises a pod's scheduling constraints for failure messages.
func describe(p *corev1.Pod) string {
	var parts []string
	parts = append(parts, "app="+p.Labels[labelApp])
	for name, q := range p.Spec.Containers[0].Resources.Requests {
		parts = append(parts, fmt.Sprintf("%s %s", name, q.String()))
	}
	for _, cp := range p.Spec.Containers[0].Ports {
		parts = append(parts, fmt.Sprintf("host port %s/%s/%d", cp.Protocol, cp.HostIP, cp.HostPort))
	}
	for _, v := range p.Spec.Volumes {
		parts = append(parts, "claim "+v.PersistentVolumeClaim.ClaimName)
	}
	if len(p.Spec.Tolerations) > 1 {
		parts = append(parts, "tolerates "+taintKey)
	}
	if a := p.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil {
			parts = append(parts, fmt.Sprintf("zones %v", a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values))
		}
		if a.PodAntiAffinity != nil {
			parts = append(parts, "anti-affinity app=a on "+a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey)
		}
		if a.PodAffinity != nil {
			parts = append(parts, "affinity app=b on "+a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey)
		}
	}
	for _, s := range p.Spec.TopologySpreadConstraints {
		parts = append(parts, fmt.Sprintf("spread app=a on %s maxSkew %d", s.TopologyKey, s.MaxSkew))
	}
	return strings.Join(parts, ", ")
}

// verdict reads the cluster as the scheduler sees it (observe.ReadSnapshot: every node and pod),
// adds p as a Pending pod, and returns the filter's report for p.
func verdict(ctx context.Context, t *testing.T, c *localcluster.Cluster, p *corev1.Pod) policies.FitReport {
	t.Helper()
	snap, err := observe.ReadSnapshot(ctx, c.Client(), "")
	if err != nil {
		t.Fatal(err)
	}
	pending := p.DeepCopy()
	pending.Status.Phase = corev1.PodPending
	snap.Pods = append(snap.Pods, pending)
	m, err := policies.Build(snap, policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range m.Clusters {
		if cl.Namespace != p.Namespace {
			continue
		}
		for k, mem := range cl.Members {
			if mem.Pod.Name == p.Name {
				return cl.Explain(cl.Current(), k)
			}
		}
	}
	t.Fatalf("pod %s/%s is no member of the model's clusters", p.Namespace, p.Name)
	return policies.FitReport{}
}

// createCSINode creates a CSINode, as the kubelet of a node with a CSI driver registers it.
func createCSINode(ctx context.Context, c *localcluster.Cluster, n *storagev1.CSINode) error {
	n.TypeMeta = metav1.TypeMeta{}
	_, err := c.Client().StorageV1().CSINodes().Create(ctx, n, metav1.CreateOptions{})
	return err
}

// createClaims creates the case's claims data-0 … data-<claimsPerCase-1> in ns, each bound to a
// CSI PersistentVolume "<prefix>-pv-<k>" of csiDriver (the last ReadWriteOncePod, the others
// ReadWriteOnce), and waits until kube-controller-manager has bound them.
func createClaims(ctx context.Context, c *localcluster.Cluster, ns, prefix string) error {
	for k := range claimsPerCase {
		mode := corev1.ReadWriteOnce
		if k == claimsPerCase-1 {
			mode = corev1.ReadWriteOncePod
		}
		pvc, pv := fixture.CSIClaim(ns, fmt.Sprintf("data-%d", k), fmt.Sprintf("%s-pv-%d", prefix, k), csiDriver, mode)
		pvc.TypeMeta, pv.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		pvc.Status, pv.Status = corev1.PersistentVolumeClaimStatus{}, corev1.PersistentVolumeStatus{}
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		if _, err := c.Client().CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := c.Client().CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, pollInterval, decisionWait, true, func(ctx context.Context) (bool, error) {
		pvcs, err := c.Client().CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, pvc := range pvcs.Items {
			if pvc.Status.Phase != corev1.ClaimBound {
				return false, nil
			}
		}
		return len(pvcs.Items) == claimsPerCase, nil
	})
}

// decision waits until kube-scheduler has bound the pod (its node) or marked it unschedulable
// (its PodScheduled condition's message).
func decision(ctx context.Context, c *localcluster.Cluster, ns, name string) (node, msg string, err error) {
	err = wait.PollUntilContextTimeout(ctx, pollInterval, decisionWait, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			node = p.Spec.NodeName
			return true, nil
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				msg = cond.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", "", fmt.Errorf("no scheduling decision after %v: %w", decisionWait, err)
	}
	return node, msg, nil
}

// waitRunning waits until every bound pod of ns is Running (kwok has started it), so that the
// scheduler's cache holds them before the next pod is scheduled.
func waitRunning(ctx context.Context, c *localcluster.Cluster, ns string) error {
	return wait.PollUntilContextTimeout(ctx, pollInterval, decisionWait, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
}

// failedScheduling matches kube-scheduler's FailedScheduling message up to the end of its filter
// part: "0/6 nodes are available: 1 node(s) had untolerated taint(s), 5 node(s) ... . " (the
// notes of other plugins and of preemption follow).
var failedScheduling = regexp.MustCompile(`^0/(\d+) nodes are available: (.*?)\.(?: |$)`)

// parseFailedScheduling returns the node count per reason of a FailedScheduling message, and the
// number of nodes it speaks of.
func parseFailedScheduling(msg string) (map[string]int, int, error) {
	m := failedScheduling.FindStringSubmatch(msg)
	if m == nil {
		return nil, 0, fmt.Errorf("unexpected FailedScheduling message %q", msg)
	}
	total, _ := strconv.Atoi(m[1])
	out := map[string]int{}
	for _, part := range strings.Split(m[2], ", ") {
		n, reason, ok := strings.Cut(part, " ")
		count, err := strconv.Atoi(n)
		if !ok || err != nil {
			return nil, 0, fmt.Errorf("FailedScheduling message %q: cannot read %q", msg, part)
		}
		out[reason] += count
	}
	return out, total, nil
}
