package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// A checked bed: what every test may expect of the shared bed when it starts (Bed.Settle), the
// namespaces that running tests use (the others' pods are an earlier test's leftovers), and
// putting the nodes back as StartBed made them (Bed.RestoreNodes).

// SettleTimeout bounds Bed.Settle when its context has no earlier deadline: an earlier test's
// namespace takes a few seconds to go; a bed that is still not settled after this is broken.
const SettleTimeout = 2 * time.Minute

// settleNamespace holds Settle's scheduler probes: pods that no node can take, never bound.
const settleNamespace = "bed-settle"

// settleProbeLabel is a node label no node has: a probe selecting it fits no node.
const settleProbeLabel = "e2e.redis-rebalancer.io/settle-probe"

// settleInterval is the time between two of Settle's checks.
const settleInterval = 100 * time.Millisecond

// markLive records that a running test uses namespace: its pods are not an earlier test's.
func (b *Bed) markLive(namespace string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live == nil {
		b.live = map[string]int{}
	}
	b.live[namespace]++
}

// unmarkLive undoes one markLive.
func (b *Bed) unmarkLive(namespace string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live[namespace]--; b.live[namespace] <= 0 {
		delete(b.live, namespace)
	}
}

func (b *Bed) isLive(namespace string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live[namespace] > 0 || namespace == settleNamespace
}

// UseNamespace creates namespace (an existing one is fine) for a test that puts objects there
// beside its environment (a Helm release, the deploy/ manifests): until the test ends its pods
// are the test's, not an earlier test's leftovers, for Settle. When the test ends the namespace
// is deleted with its pods (removeNamespace).
func (b *Bed) UseNamespace(t testing.TB, namespace string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.markLive(namespace)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.removeNamespace(ctx, namespace); err != nil {
			t.Error(err)
		}
		b.unmarkLive(namespace)
	})
	if _, err := b.Cluster.Namespace(ctx, namespace); err != nil {
		t.Fatalf("harness: %v", err)
	}
}

// removeNamespace deletes namespace, then its pods at once (grace period 0): the namespace's
// deletion makes the API server refuse new pods there, and the pods, whose servers are stopped
// already, go without waiting for the namespace controller and kwok's graceful deletion. The
// namespace itself goes in the background.
func (b *Bed) removeNamespace(ctx context.Context, namespace string) error {
	client := b.Cluster.Client()
	err := client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("harness: delete namespace %s: %w", namespace, err)
	}
	err = client.CoreV1().Pods(namespace).DeleteCollection(ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("harness: delete the pods of namespace %s: %w", namespace, err)
	}
	return nil
}

// SettleForTest is Settle for a test: it fails the test when the bed does not settle.
func (b *Bed) SettleForTest(t testing.TB) {
	t.Helper()
	start := time.Now()
	if err := b.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("test bed settled in %v", d.Round(10*time.Millisecond))
	}
}

// Settle waits until the bed is as a test may expect it when it starts, and returns an error
// naming what is not when ctx ends or SettleTimeout passes:
//   - the nodes: exactly the bed's nodes, each Ready, schedulable, with kwok's taint only, and
//     the labels and allocatable resources StartBed gave it;
//   - the pods: none of an earlier test left, terminating included: every pod is in a namespace a
//     running test uses (an environment's, or one given to UseNamespace);
//   - kube-scheduler's view caught up: a probe pod, created once the API shows the above, that no
//     node can take (its node selector matches none) is reported unschedulable with "0/N nodes
//     are available: N node(s) didn't match Pod's node affinity/selector." kube-scheduler has then
//     handled every pod event before the probe's creation (one informer delivers pod events in
//     order, so the pods that went are gone from its cache as well), and its node cache holds the
//     N nodes, none cordoned and none with a taint the probe does not tolerate (those filters
//     come before node affinity and would be named instead).
//
// Tests running in parallel keep their pods: only a namespace nobody uses any more is waited
// for.
func (b *Bed) Settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, SettleTimeout)
	defer cancel()
	var last []string
	err := poll(ctx, settleInterval, SettleTimeout, func(ctx context.Context) (bool, error) {
		last = b.apiProblems(ctx)
		if len(last) > 0 {
			return false, nil
		}
		msg, err := b.probeScheduler(ctx)
		if err != nil {
			last = []string{err.Error()}
			return false, nil
		}
		if want := b.settledMessage(); !strings.HasPrefix(msg, want) {
			last = []string{fmt.Sprintf("kube-scheduler's probe pod: %q, want %q…", msg, want)}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("harness: test bed not settled: %s: %w", strings.Join(last, "; "), err)
	}
	return nil
}

// nodeNames returns the bed's node names, zone after zone.
func (b *Bed) nodeNames() []string {
	var names []string
	for _, z := range b.Zones {
		names = append(names, z.Nodes...)
	}
	return names
}

// settledMessage is the start of kube-scheduler's reason for the probe pod on a settled bed.
func (b *Bed) settledMessage() string {
	n := len(b.nodeNames())
	return fmt.Sprintf("0/%d nodes are available: %d node(s) didn't match Pod's node affinity/selector.", n, n)
}

// apiProblems returns what the API server shows that a settled bed would not: node problems
// (nodeProblems) and pods of namespaces no running test uses.
func (b *Bed) apiProblems(ctx context.Context) []string {
	client := b.Cluster.Client()
	var out []string
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"list nodes: " + err.Error()}
	}
	out = append(out, b.nodeProblems(nodes.Items)...)
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return append(out, "list pods: "+err.Error())
	}
	var left []string
	for _, p := range pods.Items {
		if b.isLive(p.Namespace) {
			continue
		}
		s := fmt.Sprintf("%s/%s (%s", p.Namespace, p.Name, p.Status.Phase)
		if p.Spec.NodeName != "" {
			s += " on " + p.Spec.NodeName
		}
		if p.DeletionTimestamp != nil {
			s += fmt.Sprintf(", terminating for %v", time.Since(p.DeletionTimestamp.Time).Round(time.Second))
		}
		left = append(left, s+")")
	}
	if len(left) > 0 {
		if len(left) > 10 {
			left = append(left[:10], fmt.Sprintf("… (%d in all)", len(left)))
		}
		out = append(out, "pods of no running test: "+strings.Join(left, ", "))
	}
	return out
}

// nodeProblems compares nodes (as the API server shows them) with the bed's nodes as StartBed
// made them, and returns every difference that matters to a scheduler.
func (b *Bed) nodeProblems(nodes []corev1.Node) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Name] = true
		want, ok := b.declared[n.Name]
		if !ok {
			out = append(out, "node "+n.Name+" is not one of the bed's")
			continue
		}
		if p := nodeDiff(&n, want); p != "" {
			out = append(out, "node "+n.Name+" "+p)
		}
	}
	for _, name := range b.nodeNames() {
		if !seen[name] {
			out = append(out, "node "+name+" is missing")
		}
	}
	return out
}

// nodeDiff returns how n differs from the node StartBed made (want), "" when it does not: not
// Ready, cordoned, a taint other than kwok's, a label or an allocatable resource changed.
func nodeDiff(n, want *corev1.Node) string {
	var out []string
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		out = append(out, "not Ready")
	}
	if n.Spec.Unschedulable {
		out = append(out, "cordoned")
	}
	if !slices.EqualFunc(n.Spec.Taints, want.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
		var ts []string
		for _, t := range n.Spec.Taints {
			ts = append(ts, t.ToString())
		}
		out = append(out, "tainted "+strings.Join(ts, ","))
	}
	for k, v := range want.Labels {
		if n.Labels[k] != v {
			out = append(out, fmt.Sprintf("label %s=%q, want %q", k, n.Labels[k], v))
		}
	}
	for r, q := range want.Status.Allocatable {
		if got, ok := n.Status.Allocatable[r]; !ok || got.Cmp(q) != 0 {
			out = append(out, fmt.Sprintf("allocatable %s %s, want %s", r, got.String(), q.String()))
		}
	}
	for r := range n.Status.Allocatable {
		if _, ok := want.Status.Allocatable[r]; !ok {
			out = append(out, fmt.Sprintf("allocatable %s added", r))
		}
	}
	return strings.Join(out, ", ")
}

// probeScheduler creates a pod no node can take, waits until kube-scheduler reports it
// unschedulable, deletes it, and returns kube-scheduler's reason.
func (b *Bed) probeScheduler(ctx context.Context) (string, error) {
	client := b.Cluster.Client()
	b.mu.Lock()
	b.probes++
	name := fmt.Sprintf("probe-%d", b.probes)
	b.mu.Unlock()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: settleNamespace},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{settleProbeLabel: "none"},
			Tolerations:                   []corev1.Toleration{fixture.KwokToleration()},
			Containers:                    []corev1.Container{{Name: "probe", Image: "probe"}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := client.CoreV1().Pods(settleNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create kube-scheduler's probe pod: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.CoreV1().Pods(settleNamespace).Delete(ctx, name, *metav1.NewDeleteOptions(0))
	}()
	var msg string
	err := poll(ctx, 20*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(settleNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient; retried until the deadline
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return true, nil
			}
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("kube-scheduler's probe pod was bound to %s, which must have label %s", p.Spec.NodeName, settleProbeLabel)
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("kube-scheduler's probe pod: not reported unschedulable: %w", err)
	}
	return msg, nil
}

// RestoreNodes puts the bed's nodes back as StartBed made them, for a test that changed them
// (cordons, taints, a deleted or an added node): a missing node is added again, a cordoned one
// uncordoned, taints other than kwok's removed, a node that is not one of the bed's deleted with
// its pods (localcluster.Cluster.DeleteNode). It then waits until the API server shows every node as
// StartBed made it (Ready, schedulable, kwok's taint only: the node lifecycle controller removes
// the taint it added to a cordoned node once it is uncordoned) and returns an error naming what
// is not.
func (b *Bed) RestoreNodes(ctx context.Context) error {
	client := b.Cluster.Client()
	var errs []error
	for _, z := range b.Zones {
		for _, name := range z.Nodes {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					_, err = b.Cluster.AddNode(ctx, localcluster.NodeSpec{Name: name, Zone: z.Name})
					return err
				}
				if err != nil {
					return err
				}
				want := b.declared[name]
				if !n.Spec.Unschedulable && slices.EqualFunc(n.Spec.Taints, want.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
					return nil
				}
				n.Spec.Unschedulable = false
				n.Spec.Taints = want.Spec.Taints
				_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", name, err))
			}
		}
	}
	all, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, fmt.Errorf("list nodes: %w", err))
	} else {
		for _, n := range all.Items {
			if _, ok := b.declared[n.Name]; !ok {
				if err := b.Cluster.DeleteNode(ctx, n.Name); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("harness: restore nodes: %w", err)
	}
	var last []string
	err = poll(ctx, settleInterval, time.Minute, func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = []string{err.Error()}
			return false, nil
		}
		last = b.nodeProblems(nodes.Items)
		return len(last) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("harness: restore nodes: %s: %w", strings.Join(last, "; "), err)
	}
	return nil
}

// RestoreNodesOnCleanup makes the test put the bed's nodes back (RestoreNodes) when it ends,
// whatever happened: a test that changes nodes calls it before it changes any.
func (b *Bed) RestoreNodesOnCleanup(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := b.RestoreNodes(ctx); err != nil {
			t.Error(err)
		}
	})
}
