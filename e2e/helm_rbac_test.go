package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// guardReviews is the number of answers serve's eviction guard counted
// (redis_rebalancer_guard_reviews_total, every label).
func guardReviews(t *testing.T, addr string) float64 {
	t.Helper()
	var n float64
	if mf := scrape(t, addr)["redis_rebalancer_guard_reviews_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// TestHelmLeastPrivilege installs the chart as shipped (kind deployment, the eviction guard with a
// self-issued certificate) with one Redis namespace list naming the scenario's namespace, and
// proves with its ServiceAccount's token what that list grants: in the listed namespace the
// Redis Secret is read and pods are evicted; outside it no Secret is read, no pod evicted, and no
// claim deleted anywhere until policy.rules.releaseReplicaClaims is on, then in the listed
// namespace only. Then serve runs as that ServiceAccount: its certificate rotator works with the
// Secret and the webhook configuration granted by name only (list and watch by resourceNames),
// the guard holds a master's eviction in the listed namespace (429), and an eviction outside the
// list never reaches it (the webhook's namespaceSelector: its review count does not move).
func TestHelmLeastPrivilege(t *testing.T) {
	f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{}, false)
	ctx := t.Context()
	admin := f.Client()
	release, ns, outside := "lp", "lp-"+f.Namespace, "lp-out-"+f.Namespace
	name := release + "-redis-rebalancer"
	env := helmEnv(t, f.Cluster.Kubeconfig())
	helm := func(args ...string) {
		t.Helper()
		if _, err := helmRun(t, env, args...); err != nil {
			t.Fatal(err)
		}
	}
	// The pods are kept off the nodes (a node selector no node has): serve runs in the test, as
	// the ServiceAccount, where it can reach the bed's Redis.
	values := []string{"--set", "kind=deployment", "--set", "redisNamespaces={" + f.Namespace + "}",
		"--set", "guard.enabled=true", "--set", "guard.certificate=selfSigned", "--set", "networkPolicy.apiServer[0].ipBlock.cidr=127.0.0.1/32",
		"--set", "nodeSelector.e2e-no-such-node=x"}
	// The release's namespace and one outside the list are this test's, their pods with them,
	// until it ends.
	for _, n := range []string{ns, outside} {
		f.Bed.UseNamespace(t, n)
	}
	t.Cleanup(func() {
		if _, err := helmRun(t, env, "uninstall", release, "-n", ns, "--wait"); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	helm(append([]string{"install", release, chartPath, "-n", ns, "--create-namespace"}, values...)...)

	// In each namespace, the listed one and one outside: the Redis password's Secret, a claim
	// and a pod that no node runs.
	for _, n := range []string{f.Namespace, outside} {
		objs := []func() error{
			func() error {
				_, err := admin.CoreV1().Secrets(n).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-password"}, StringData: map[string]string{"redis-password": "x"}}, metav1.CreateOptions{})
				return err
			},
			func() error {
				_, err := admin.CoreV1().PersistentVolumeClaims(n).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "lp-claim"}, Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				}}, metav1.CreateOptions{})
				return err
			},
			func() error {
				_, err := admin.CoreV1().Pods(n).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lp-pod"}, Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"e2e-no-such-node": "x"},
					Containers:   []corev1.Container{{Name: "c", Image: "registry.example.com/none"}},
				}}, metav1.CreateOptions{})
				return err
			},
		}
		for _, create := range objs {
			if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}

	kubeconfig, sa := serviceAccountKubeconfig(t, f.Env, ns, name)
	dryRun := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	deleteClaim := func(n string) error {
		return sa.CoreV1().PersistentVolumeClaims(n).Delete(ctx, "lp-claim", dryRun)
	}
	for _, c := range []struct {
		what    string
		do      func() error
		allowed bool
	}{
		{"get the Redis Secret in the listed namespace", func() error {
			_, err := sa.CoreV1().Secrets(f.Namespace).Get(ctx, "redis-password", metav1.GetOptions{})
			return err
		}, true},
		{"get a Secret of the same name outside the list", func() error {
			_, err := sa.CoreV1().Secrets(outside).Get(ctx, "redis-password", metav1.GetOptions{})
			return err
		}, false},
		{"list the Secrets of the listed namespace", func() error {
			_, err := sa.CoreV1().Secrets(f.Namespace).List(ctx, metav1.ListOptions{})
			return err
		}, false},
		{"list the Secrets of the release's namespace (the certificate's Secret is granted by name)", func() error {
			_, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		}, false},
		{"evict a pod in the listed namespace (dry run)", func() error { return harness.DryRunEvict(ctx, sa, f.Namespace, "lp-pod") }, true},
		{"evict a pod outside the list (dry run)", func() error { return harness.DryRunEvict(ctx, sa, outside, "lp-pod") }, false},
		{"delete a claim in the listed namespace, claim release off (dry run)", func() error { return deleteClaim(f.Namespace) }, false},
		{"delete a claim outside the list (dry run)", func() error { return deleteClaim(outside) }, false},
	} {
		err := c.do()
		if c.allowed && err != nil || !c.allowed && !apierrors.IsForbidden(err) {
			t.Errorf("%s as the ServiceAccount: %v, want allowed %v (else Forbidden)", c.what, err, c.allowed)
		}
	}

	// Claim release on: claims delete in the listed namespace, still nowhere else.
	helm(append([]string{"upgrade", release, chartPath, "-n", ns}, append(values, "--set", "policy.rules.releaseReplicaClaims=true")...)...)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return deleteClaim(f.Namespace) == nil, nil
	}); err != nil {
		t.Errorf("delete a claim in the listed namespace with claim release on (dry run): %v", deleteClaim(f.Namespace))
	}
	if err := deleteClaim(outside); !apierrors.IsForbidden(err) {
		t.Errorf("delete a claim outside the list with claim release on (dry run): %v, want Forbidden", err)
	}

	// serve as the ServiceAccount, with the Deployment's arguments and policy. The webhook
	// configuration is the chart's, its clientConfig pointed at serve's port here (the bed routes
	// no Service to a process).
	port := freePort(t)
	vwc, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name+"-guard", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vwc.Webhooks[0].ClientConfig.Service = nil
	vwc.Webhooks[0].ClientConfig.URL = ptr.To(fmt.Sprintf("https://localhost:%d%s", port, guard.Path))
	if _, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, vwc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := chartPolicy(t, admin, ns, name+"-policy")
	dep, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if !strings.HasPrefix(a, "--policy") {
			args = append(args, a)
		}
	}
	certs := t.TempDir()
	srv := startCLI(t, nil, append(args, "--policy", policy, "--kubeconfig", kubeconfig, "--redis-port", fmt.Sprint(f.Env.Port),
		"--listen-address", "127.0.0.1:0", "--pass-on-start=false", "--schedule", "@yearly",
		"--guard-listen-address", fmt.Sprintf("127.0.0.1:%d", port), "--guard-cert-dir", certs, "--guard-extra-dns-names", "localhost")...)
	projected := projectSecret(ctx, admin, ns, name+"-guard-tls", certs)
	srv.waitLine(`"msg":"Guard certificate issued"`, 2*time.Minute)
	if err := <-projected; err != nil {
		t.Fatal(err)
	}
	srv.waitLine(`"msg":"Serving the eviction guard"`, time.Minute)
	addr := serveAddr(t, srv)

	byNode, _ := masterPlaces(t, f)
	if err := harness.WaitDryRunEviction(ctx, admin, f.Namespace, byNode["n1"][0], time.Minute, guardHeld(guard.ReasonMaster)); err != nil {
		t.Errorf("a master's eviction in the listed namespace: %v, want the guard's 429", err)
	}
	before := guardReviews(t, addr)
	if before < 1 {
		t.Errorf("the guard counted %v reviews after holding a master's eviction", before)
	}
	if err := harness.DryRunEvict(ctx, admin, outside, "lp-pod"); err != nil {
		t.Errorf("an eviction outside the list (dry run): %v, want it admitted", err)
	}
	if after := guardReviews(t, addr); after != before {
		t.Errorf("the guard counted %v reviews after an eviction outside the list, %v before: the webhook sent it", after, before)
	}
	if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := srv.wait(time.Minute); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}
	f.finish(t)
}

// chartPolicy writes the policy of the chart's ConfigMap ns/name to a file of the test and returns
// its path, without redis.passwordSecretRef: the bed's Redis has no password (the Secret's RBAC is
// what the test checks).
func chartPolicy(t *testing.T, client kubernetes.Interface, ns, name string) string {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["policy.yaml"]), &p); err != nil {
		t.Fatal(err)
	}
	if r, ok := p["redis"].(map[string]any); ok {
		delete(r, "passwordSecretRef")
	}
	data, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// projectSecret does the kubelet's part for a Secret volume: once the Secret ns/name holds a
// certificate, its keys are written into dir. The channel gets the outcome.
func projectSecret(ctx context.Context, client kubernetes.Interface, ns, name, dir string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			s, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(s.Data[corev1.TLSCertKey]) == 0 {
				return false, nil
			}
			for k, v := range s.Data {
				if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
					return false, err
				}
			}
			return true, nil
		})
	}()
	return done
}
