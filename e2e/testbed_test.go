package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
)

// Node lease timing of the test bed: the lease duration (kwok renews every quarter of it),
// kube-controller-manager's default node monitor period, and the bed's node monitor grace period
// (harness.BedNodeMonitorGracePeriod, not the default 50 s).
const (
	leaseDuration      = localcluster.DefaultNodeLeaseDuration
	nodeMonitorPeriod  = 5 * time.Second
	bedMustOutlastLoss = harness.BedNodeMonitorGracePeriod + 2*nodeMonitorPeriod
)

// TestBedStaysReady checks that the shared test bed still behaves like a cluster after the
// other tests ran on it, some for longer than the node monitor grace period, one with the API
// server down: every node has a Lease in kube-node-lease, held and renewed, every node is Ready
// without a not-ready or unreachable taint, and no running pod was marked NotReady — once the bed
// is older than the grace period and two monitor periods (waiting if it is younger), when a
// node without a renewed lease would have been marked NotReady. (localcluster's TestNodeLeases
// shows, on a cluster of its own, that without renewals nodes and pods do go NotReady.)
func TestBedStaysReady(t *testing.T) {
	b := bed(t)
	t.Parallel()
	ctx := t.Context()
	client := b.Cluster.Client()
	var names []string
	for _, z := range b.Zones {
		names = append(names, z.Nodes...)
	}
	// A node whose lease was not renewed for the grace period would be NotReady by now.
	if wait := bedMustOutlastLoss - time.Since(b.Started); wait > 0 {
		t.Logf("test bed %v old: waiting %v", time.Since(b.Started).Round(time.Second), wait.Round(time.Second))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	for _, n := range names {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease of node %s: %v", n, err)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
			t.Fatalf("lease of node %s: holder %v, renew time %v; want both", n, l.Spec.HolderIdentity, l.Spec.RenewTime)
		}
		if d := l.Spec.LeaseDurationSeconds; d == nil || time.Duration(*d)*time.Second != leaseDuration {
			t.Errorf("lease of node %s lasts %v s, want %v", n, d, leaseDuration)
		}
		// kwok renews every quarter of the duration; twice that is stale.
		if age := time.Since(l.Spec.RenewTime.Time); age > leaseDuration/2 {
			t.Errorf("lease of node %s renewed %v ago; kwok renews it every %v", n, age.Round(time.Second), leaseDuration/4)
		}
		if !l.Spec.RenewTime.After(b.Started) {
			t.Errorf("lease of node %s last renewed at %v, before the bed started", n, l.Spec.RenewTime)
		}
	}

	var problems []string
	nl, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nl.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				problems = append(problems, fmt.Sprintf("node %s Ready=%s (%s)", n.Name, c.Status, c.Reason))
			}
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady || taint.Key == corev1.TaintNodeUnreachable {
				problems = append(problems, fmt.Sprintf("node %s tainted %s", n.Name, taint.Key))
			}
		}
	}
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		running++
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				problems = append(problems, fmt.Sprintf("pod %s/%s Running but Ready=%s (%s)", p.Namespace, p.Name, c.Status, c.Reason))
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("test bed %v old:\n%s", time.Since(b.Started).Round(time.Second), strings.Join(problems, "\n"))
	}
	t.Logf("test bed %v old: %d nodes Ready with renewed leases, %d running pods all Ready", time.Since(b.Started).Round(time.Second), len(nl.Items), running)
}
