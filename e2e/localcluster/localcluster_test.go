package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

const testTimeout = 30 * time.Second

func TestCluster(t *testing.T) {
	ctx := t.Context()
	began := time.Now()
	c := StartForTest(t, Config{})
	t.Logf("cluster start took %v (Start: %v)", time.Since(began).Round(time.Millisecond), c.StartupTime().Round(time.Millisecond))
	pids := c.Pids()
	if len(pids) != 5 {
		t.Fatalf("Pids() = %v, want 5 components", pids)
	}
	client := c.Client()

	nodes := []NodeSpec{{Name: "node-a1", Zone: "zone-a"}, {Name: "node-b1", Zone: "zone-b"}, {Name: "node-a2", Zone: "zone-a", CPU: "4", Memory: "8Gi", Pods: 20}}
	for i, spec := range nodes {
		added := time.Now()
		n, err := c.AddNode(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("node %s Ready in %v", n.Name, time.Since(added).Round(time.Millisecond))
		wantCIDR := fmt.Sprintf("%s.%d.0/24", c.PodNetwork(), i+1)
		if n.Spec.PodCIDR != wantCIDR || n.Labels[LabelZone] != spec.Zone || n.Labels[LabelHostname] != spec.Name {
			t.Errorf("node %s: podCIDR %q, labels %v; want podCIDR %q, zone %q", n.Name, n.Spec.PodCIDR, n.Labels, wantCIDR, spec.Zone)
		}
	}
	if n, err := client.CoreV1().Nodes().Get(ctx, "node-a2", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if got := n.Status.Allocatable[corev1.ResourcePods]; got.Value() != 20 {
		t.Errorf("node-a2 allocatable pods = %v, want 20", got.String())
	}

	const ns = "e2e"
	if _, err := c.Namespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](2),
			ServiceName:         "web",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Tolerations: []corev1.Toleration{fixture.KwokToleration()},
					Containers:  []corev1.Container{{Name: "web", Image: "fake"}},
				},
			},
		},
	}
	if _, err := client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web0 := waitRunning(t, client, ns, "web-0", "")
	waitRunning(t, client, ns, "web-1", "")

	// A PDB that allows no disruption: the Eviction API answers 429.
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The disruption controller works: the PDB's status counts both pods.
	poll(t, "PDB status", func(ctx context.Context) (bool, error) {
		p, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 2 && p.Status.CurrentHealthy == 2, nil
	})
	err := evict(ctx, client, ns, "web-0")
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction of web-0 with a PDB maxUnavailable=0: got %v, want 429 TooManyRequests", err)
	}
	t.Logf("eviction refused as expected: %v", err)

	// Without the PDB the eviction succeeds and the StatefulSet recreates the pod.
	if err := client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict(ctx, client, ns, "web-0"); err != nil {
		t.Fatalf("eviction of web-0 without a PDB: %v", err)
	}
	web0 = waitRunning(t, client, ns, "web-0", web0.UID)

	// A deleted node's pods are recreated elsewhere.
	web1, err := client.CoreV1().Pods(ns).Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteNode(ctx, web1.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	if moved := waitRunning(t, client, ns, "web-1", web1.UID); moved.Spec.NodeName == web1.Spec.NodeName {
		t.Errorf("web-1 recreated on deleted node %s", web1.Spec.NodeName)
	}

	// The delay annotations keep a pod Pending, then Terminating, for that long.
	const delay = 2 * time.Second
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: ns, Annotations: map[string]string{
			PodReadyDelayAnnotation:  delay.String(),
			PodDeleteDelayAnnotation: delay.String(),
		}},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{fixture.KwokToleration()},
			Containers:  []corev1.Container{{Name: "slow", Image: "fake"}},
		},
	}
	created := time.Now()
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, client, ns, "slow", "")
	if took := time.Since(created); took < delay {
		t.Errorf("pod with %s=%v Running after %v, want at least %v", PodReadyDelayAnnotation, delay, took, delay)
	}
	deleted := time.Now()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "slow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "pod slow gone", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "slow", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if took := time.Since(deleted); took < delay {
		t.Errorf("pod with %s=%v gone %v after its deletion, want at least %v", PodDeleteDelayAnnotation, delay, took, delay)
	}

	// kube-apiserver stops and starts again on the same etcd, certificates and port: the same
	// client reconnects, the objects are still there, and the controllers work again.
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("get with kube-apiserver stopped: got %v, want connection refused", err)
	}
	if err := c.StopAPIServer(); err == nil {
		t.Error("StopAPIServer twice: no error")
	}
	restarted := time.Now()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver back in %v", time.Since(restarted).Round(time.Millisecond))
	if c.Pids()["kube-apiserver"] == pids["kube-apiserver"] {
		t.Errorf("kube-apiserver pid %d unchanged after a restart", pids["kube-apiserver"])
	}
	if err := evict(ctx, client, ns, "web-0"); err != nil {
		t.Fatalf("eviction of web-0 after the restart: %v", err)
	}
	web0 = waitRunning(t, client, ns, "web-0", web0.UID)

	// A component that exits is restarted, as the kubelet restarts a static pod: with
	// kube-scheduler killed, an evicted pod is still placed.
	if err := syscall.Kill(c.Pids()["kube-scheduler"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll(t, "kube-scheduler restarted", func(context.Context) (bool, error) {
		return c.Pids()["kube-scheduler"] != pids["kube-scheduler"], nil
	})
	if err := evict(ctx, client, ns, "web-0"); err != nil {
		t.Fatalf("eviction of web-0 after the scheduler's restart: %v", err)
	}
	waitRunning(t, client, ns, "web-0", web0.UID)
	pids = c.Pids()

	stopBegan := time.Now()
	c.Stop()
	t.Logf("stop took %v", time.Since(stopBegan).Round(time.Millisecond))
	c.Stop() // idempotent
	assertGone(t, pids)
	if _, err := os.Stat(c.WorkDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir %s not removed: %v", c.WorkDir(), err)
	}
}

// TestNodeLeases checks that kwok keeps a Lease per node in kube-node-lease, renewed as the
// kubelet renews it, so that the node lifecycle controller keeps nodes and pods Ready past its
// grace period; and, as the control, that without the renewals (kwok stopped) it marks them
// NotReady. The grace period is lowered to a few seconds so that the check is quick; the
// controller's lease path is the one a default cluster uses.
func TestNodeLeases(t *testing.T) {
	ctx := t.Context()
	const (
		leaseDuration = 4 * time.Second // renewed every second
		grace         = 5 * time.Second
		period        = time.Second
	)
	c := StartForTest(t, Config{NodeLeaseDuration: leaseDuration, NodeMonitorGracePeriod: grace, NodeMonitorPeriod: period})
	client := c.Client()
	for _, spec := range []NodeSpec{{Name: "node-a", Zone: "zone-a"}, {Name: "node-b", Zone: "zone-b"}} {
		if _, err := c.AddNode(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	const ns = "leases"
	if _, err := c.Namespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{fixture.KwokToleration()},
			Containers:  []corev1.Container{{Name: "c", Image: "fake"}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, client, ns, "p", "")

	// Every node has a Lease held by kwok with the configured duration, and kwok renews it.
	renewed := map[string]time.Time{}
	leasesOK := func(ctx context.Context) error {
		for _, node := range []string{"node-a", "node-b"} {
			l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("lease of %s: %w", node, err)
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil ||
				l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != int32(leaseDuration/time.Second) {
				return fmt.Errorf("lease of %s: holder %v, renew time %v, duration %v; want a holder, a renew time and %v",
					node, l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds, leaseDuration)
			}
			if first, ok := renewed[node]; !ok {
				renewed[node] = l.Spec.RenewTime.Time
			} else if !l.Spec.RenewTime.After(first) {
				return fmt.Errorf("lease of %s not renewed since %v", node, first)
			}
		}
		return nil
	}
	if err := leasesOK(ctx); err != nil {
		t.Fatal(err)
	}
	// Nodes and the pod stay Ready for two grace periods.
	deadline := time.Now().Add(2 * grace)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, testTimeout, true, func(ctx context.Context) (bool, error) {
		if why := notReady(ctx, client, ns, "p"); why != "" {
			return false, errors.New(why)
		}
		return time.Now().After(deadline), nil
	})
	if err != nil {
		t.Fatalf("%v after %v with leases of %v and a grace period of %v", err, 2*grace-time.Until(deadline), leaseDuration, grace)
	}
	if err := leasesOK(ctx); err != nil {
		t.Fatal(err)
	}

	// The control: with kwok stopped, the leases expire and the controller marks the nodes and
	// the pod NotReady within the grace period and a few monitor periods.
	c.mu.Lock()
	kwok, err := c.componentLocked("kwok")
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	kwok.down = true
	stopped := time.Now()
	kwok.proc.Stop(kwok.grace)
	var why string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, grace+10*period+5*time.Second, true, func(ctx context.Context) (bool, error) {
		why = notReady(ctx, client, ns, "p")
		return strings.Contains(why, "pod p") && strings.Contains(why, "node-a") && strings.Contains(why, "node-b"), nil
	})
	if err != nil {
		t.Fatalf("kwok stopped %v ago, nodes and pod still Ready (%q): the leases are not what keeps them Ready", time.Since(stopped).Round(time.Millisecond), why)
	}
	t.Logf("without lease renewals, after %v: %s", time.Since(stopped).Round(time.Millisecond), why)
}

// notReady returns why a node or pod ns/pod is not Ready ("" when all are).
func notReady(ctx context.Context, client kubernetes.Interface, ns, pod string) string {
	var why []string
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
				why = append(why, fmt.Sprintf("node %s Ready=%s", n.Name, cond.Status))
			}
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable || taint.Key == corev1.TaintNodeNotReady {
				why = append(why, fmt.Sprintf("node %s tainted %s", n.Name, taint.Key))
			}
		}
	}
	p, err := client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status != corev1.ConditionTrue {
			why = append(why, fmt.Sprintf("pod %s Ready=%s", pod, cond.Status))
		}
	}
	return strings.Join(why, "; ")
}

func TestConfigLeaseValidation(t *testing.T) {
	b, err := DefaultBinaries()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"lease of 1.5s → whole seconds", Config{NodeLeaseDuration: 1500 * time.Millisecond}, "whole seconds"},
		{"grace within two renewals → flapping", Config{NodeLeaseDuration: 40 * time.Second, NodeMonitorGracePeriod: 20 * time.Second}, "flap"},
		{"default grace with a 100s lease → flapping", Config{NodeLeaseDuration: 100 * time.Second}, "flap"},
		{"period not below grace → refused", Config{NodeLeaseDuration: 4 * time.Second, NodeMonitorGracePeriod: 5 * time.Second, NodeMonitorPeriod: 5 * time.Second}, "shorter than"},
		{"defaults → valid", Config{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Binaries = b
			got, err := tc.cfg.withDefaults()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("withDefaults: %v", err)
			case tc.want == "" && got.NodeLeaseDuration != DefaultNodeLeaseDuration:
				t.Errorf("NodeLeaseDuration = %v, want %v", got.NodeLeaseDuration, DefaultNodeLeaseDuration)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("withDefaults: got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestStartFailsCleanly starts a cluster whose etcd exits at once: Start must fail, say why and
// where the logs are, and leave no process behind.
func TestStartFailsCleanly(t *testing.T) {
	b, err := DefaultBinaries()
	if err != nil {
		t.Fatal(err)
	}
	b.Etcd = "/bin/false"
	dir := t.TempDir()
	c, err := Start(t.Context(), Config{Binaries: b, WorkDir: dir, StartTimeout: 10 * time.Second})
	if err == nil {
		c.Stop()
		t.Fatal("Start with a failing etcd succeeded")
	}
	t.Logf("Start error: %v", err)
	for _, want := range []string{"etcd exited early", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error %q does not contain %q", err, want)
		}
	}
}

func TestNetworkLock(t *testing.T) {
	n1, l1, err := lockFreeNetwork()
	if err != nil {
		t.Fatal(err)
	}
	defer l1.unlock()
	n2, l2, err := lockFreeNetwork()
	if err != nil {
		t.Fatal(err)
	}
	defer l2.unlock()
	if n1 == n2 {
		t.Fatalf("lockFreeNetwork returned %s twice", n1)
	}
	if _, err := lockNetwork(n1); !errors.Is(err, errNetworkInUse) {
		t.Fatalf("lockNetwork(%s) while locked: got %v, want errNetworkInUse", n1, err)
	}
	l1.unlock()
	l3, err := lockNetwork(n1)
	if err != nil {
		t.Fatalf("lockNetwork(%s) after unlock: %v", n1, err)
	}
	l3.unlock()
}

func TestClusterPorts(t *testing.T) {
	// 127.251 is above the automatic range, so no cluster uses its ports. Its first port is
	// busy (if something else has it already, so much the better).
	if busy, err := net.Listen("tcp", "127.0.0.1:22510"); err == nil {
		defer busy.Close()
	}
	ports, err := clusterPorts("127.251", 7)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{22510: true}
	for k, p := range ports {
		if seen[p] {
			t.Errorf("port %d chosen twice or busy: %v", p, ports)
		}
		seen[p] = true
		if p >= ephemeralPortStart() {
			t.Errorf("port %d in the ephemeral range", p)
		}
		if k > 0 && p != 22510+k {
			t.Errorf("port %d = %d, want %d (the cluster's block)", k, p, 22510+k)
		}
	}
}

func TestDefaultBinariesMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvK8sBinDir, filepath.Join(dir, "k8s"))
	t.Setenv(EnvEtcdBinDir, filepath.Join(dir, "etcd"))
	t.Setenv(EnvKwokBinDir, filepath.Join(dir, "kwok"))
	_, err := DefaultBinaries()
	if err == nil {
		t.Fatal("DefaultBinaries with empty dirs: no error")
	}
	for _, want := range []string{"kube-apiserver", "etcd", "kwok", "pod/fast/pod-ready.yaml", "make tools"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func evict(ctx context.Context, client kubernetes.Interface, ns, name string) error {
	return client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
}

// waitRunning waits until pod ns/name, with a UID other than oldUID, is Running with an IP from
// its node's pod CIDR, and returns it.
func waitRunning(t *testing.T, client kubernetes.Interface, ns, name string, oldUID types.UID) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	defer func() {
		if t.Failed() && pod != nil {
			t.Logf("pod %s last seen: uid %s, node %q, phase %s, deletion %v, conditions %+v", name, pod.UID, pod.Spec.NodeName, pod.Status.Phase, pod.DeletionTimestamp, pod.Status.Conditions)
		}
	}()
	poll(t, "pod "+name+" Running", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		pod = p
		return p.UID != oldUID && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil, nil
	})
	node, err := client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, cidr, err := net.ParseCIDR(node.Spec.PodCIDR)
	if err != nil {
		t.Fatalf("node %s podCIDR: %v", node.Name, err)
	}
	if !cidr.Contains(net.ParseIP(pod.Status.PodIP)) {
		t.Errorf("pod %s IP %s not in node %s pod CIDR %s", name, pod.Status.PodIP, node.Name, cidr)
	}
	t.Logf("pod %s Running on %s with IP %s", name, node.Name, pod.Status.PodIP)
	return pod
}

func poll(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, testTimeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// assertGone checks that no process of the given ids, nor any process of their process groups,
// is left.
func assertGone(t *testing.T, pids map[string]int) {
	t.Helper()
	for name, pid := range pids {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (process group %d) still running after Stop (kill -0: %v)", name, pid, err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still running after Stop (kill -0: %v)", name, pid, err)
		}
	}
}
