package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestSelectionBesideHelmReleases runs redis-rebalancer with the default policy over all
// namespaces of a cluster that holds, beside a Redis Cluster installed as Bitnami's chart installs
// it (release redis-cluster, the README's drift), what a real cluster holds around it: two web
// pods and the chart's cluster-update Job pod in the same release (an umbrella chart: they carry
// the release's app.kubernetes.io/instance label, the Job's pod the chart's name label too; kwok
// completes it at once, as the Job does once the cluster is scaled), the
// project's own Helm chart installed with `helm install` (its Deployment's pods labelled with
// their release), and an unrelated Helm release (a web Deployment and a database StatefulSet,
// e2e/testdata/charts/unrelated). `check` judges exactly the Redis cluster, with its 10 pods;
// `run` exits 0 with it compliant, and neither mentions the other releases.
//
// It does not run in parallel: a run over all namespaces must see no other test's Redis
// clusters; its setup waits until the environments of the tests before it are gone
// (harness.Bed.Settle).
func TestSelectionBesideHelmReleases(t *testing.T) {
	b := bed(t)
	ctx := t.Context()
	sc := scenario.BitnamiPostScaleDown()
	sc.NoPersistence = true
	f := watch(t, b.SetupForTest(t, sc, harness.Options{RecordStops: true}))
	client := f.Client()
	tolerations := []corev1.Toleration{fixture.KwokToleration()}

	// The umbrella release's other pods, in the Redis cluster's namespace.
	release := map[string]string{scenario.BitnamiInstanceLabel: "redis-cluster"}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "redis-cluster-web", Namespace: f.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: withLabel(release, scenario.AppLabel, "web")},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: withLabel(release, scenario.AppLabel, "web")},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}, Tolerations: tolerations},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(f.Namespace).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The chart's scale-up Job: its pod carries the chart's labels (instance and name).
	update := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: sc.BitnamiFullname() + "-cluster-update", Namespace: f.Namespace},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: withLabel(release, scenario.AppLabel, scenario.BitnamiChartName)},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure, Tolerations: tolerations,
				Containers: []corev1.Container{{Name: "redis-cluster-update", Image: "bitnami/redis-cluster"}},
			},
		}},
	}
	if _, err := client.BatchV1().Jobs(f.Namespace).Create(ctx, update, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The project's chart and an unrelated release, with helm install.
	helm := tool(t, "helm", "HELM_BIN_DIR", helmVersion)
	kwokTolerations, err := json.Marshal(tolerations)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []struct{ name, namespace, chart string }{
		{"rr", "rr-helm", repoPath("deploy/helm/redis-rebalancer")},
		{"shop", "shop", repoPath("e2e/testdata/charts/unrelated")},
	} {
		args := []string{"install", rel.name, rel.chart, "--namespace", rel.namespace, "--create-namespace", "--kubeconfig", f.Kubeconfig(),
			"--set-json", "tolerations=" + string(kwokTolerations), "--wait", "--timeout", "2m"}
		if rel.name == "rr" { // serve's Deployment (two pods); Redis without a password here, in the test's namespace (the chart's Roles go there)
			args = append(args, "--set", "kind=deployment", "--set", "redisSecret.enabled=false", "--set", "redisNamespaces={"+f.Namespace+"}")
		}
		b.UseNamespace(t, rel.namespace) // its pods are this test's until it ends
		out, err := exec.CommandContext(ctx, helm, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("helm install %s (%s): done", rel.name, rel.chart)
		t.Cleanup(func() {
			out, err := exec.Command(helm, "uninstall", rel.name, "--namespace", rel.namespace, "--kubeconfig", f.Kubeconfig(), "--wait").CombinedOutput()
			if err != nil {
				t.Errorf("helm uninstall %s: %v\n%s", rel.name, err, out)
			}
		})
	}
	others := waitRunning(t, f.Env, map[string]int{f.Namespace: sc.N() + 3, "rr-helm": 2, "shop": 3})
	t.Logf("running beside the Redis cluster: %s", strings.Join(others, ", "))

	allNamespaces := func(command string, extra ...string) []string {
		return append([]string{command, "--policy", policyFile, "--kubeconfig", f.Kubeconfig(), "--redis-port", strconv.Itoa(f.Port), "--logging-format", "json"}, extra...)
	}
	// check: the Redis cluster alone, with its 10 pods.
	chk := startCLI(t, nil, allNamespaces("check", "-o", "json")...)
	if code := chk.wait(time.Minute); code != app.ExitViolations {
		t.Errorf("check exited %d (%s), want %d (the drift)", code, chk.errorLine(), app.ExitViolations)
	}
	var a report.Analysis
	if err := json.Unmarshal(chk.stdout.Bytes(), &a); err != nil {
		t.Fatalf("check output: %v\n%s", err, chk.stdout.String())
	}
	var judged []string
	for _, c := range a.Clusters {
		judged = append(judged, c.Namespace+"/"+c.Name)
		if c.Pods != sc.N() || c.N != sc.N() {
			t.Errorf("cluster %s/%s: %d pods, N %d; want %d and %d (the web and Job pods are no members)", c.Namespace, c.Name, c.Pods, c.N, sc.N(), sc.N())
		}
	}
	if want := []string{f.Namespace + "/redis-cluster"}; !slices.Equal(judged, want) {
		t.Errorf("check judged %v, want only %v", judged, want)
	}

	// run: exit 0, the Redis cluster compliant.
	run := startCLI(t, nil, allNamespaces("run")...)
	code := run.wait(4 * time.Minute)
	assertExit(t, code, app.ExitOK, run)
	cr := onlyCluster(t, run.report())
	if cr.Namespace != f.Namespace || cr.Name != "redis-cluster" || !cr.Compliant {
		t.Errorf("run judged %s/%s (compliant %v, stopped by %s: %s); want %s/redis-cluster compliant", cr.Namespace, cr.Name, cr.Compliant, cr.StoppedBy, cr.Stopped, f.Namespace)
	}
	for _, out := range []string{chk.stdout.String() + chk.stderr(), run.stdout.String() + run.stderr()} {
		for _, name := range append(others, "rr-helm", "shop") {
			if strings.Contains(out, name) {
				t.Errorf("the output mentions %q, which is not Redis:\n%s", name, out)
			}
		}
	}
	stats := f.finish(t)
	if stats.Failed > 0 {
		t.Errorf("%d writes failed", stats.Failed)
	}
	evictions, failovers := 0, 0
	for _, m := range cr.Moves {
		if m.Evicted {
			evictions++
		}
		if m.Failover != nil {
			failovers++
		}
	}
	t.Logf("judged only %s: %d evictions, %d failovers; writer %s", judged, evictions, failovers, stats)
}

// withLabel returns a copy of labels with key=value added.
func withLabel(labels map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// waitRunning waits until each namespace of want has at least that many pods Running or, for a
// Job's, Succeeded (kwok completes a Job's pod at once), and returns the names of those not in
// env's Redis cluster.
func waitRunning(t *testing.T, env *harness.Env, want map[string]int) []string {
	t.Helper()
	var names []string
	var short string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		names, short = names[:0], ""
		for ns, n := range want {
			pods, err := env.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
					continue
				}
				running++
				if ns != env.Namespace || env.ShardOf(p.Name) < 0 {
					names = append(names, p.Name)
				}
			}
			if running < n {
				short = ns
			}
		}
		return short == "", nil
	})
	if err != nil {
		t.Fatalf("namespace %s: fewer Running pods than %v after 2 minutes", short, want)
	}
	slices.Sort(names)
	return names
}
