package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// deploy/'s end-to-end tests: the kustomize base and overlays and the Helm chart (default values)
// are rendered with the real tools (built by hack/build-tools.sh into the tool cache), checked for
// least privilege and the container's hardening, applied with server-side apply and read back;
// then the ServiceAccount they create, through a kubeconfig holding a token from the TokenRequest
// API, runs the post-scale-down scenario to compliance and is refused what it must not do.

// Versions and locations of the rendering tools (hack/build-tools.sh builds them; the Makefile
// exports the directories).
const (
	kustomizeVersion = "v5.8.1"
	helmVersion      = "v3.22.0"
)

// tool returns the path of a rendering tool (harness.ToolPath); it fails the test, naming the
// command that builds it, when it is missing.
func tool(t *testing.T, name, env, version string) string {
	t.Helper()
	p, err := harness.ToolPath(name, env, version)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// repoPath returns a path relative to the repository root (the e2e package is one level down).
func repoPath(rel string) string { return filepath.Join("..", filepath.FromSlash(rel)) }

// render runs a rendering tool and decodes its multi-document YAML output (harness.Render).
func render(t *testing.T, bin string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := harness.Render(bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// rendering is one thing deploy/ offers, rendered.
type rendering struct {
	name string
	objs []*unstructured.Unstructured
}

func (r rendering) kinds() []string {
	var ks []string
	for _, o := range r.objs {
		ks = append(ks, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(ks)
	return ks
}

// kustomizeOverlay renders deploy/<dir> through an overlay of the test that sets the settings as
// deploy/README.md documents (a configMapGenerator merge and the redis-namespace component):
// redisNamespace, and apiServerCIDR (the guard overlays refuse to apply without it); and the
// policy's Redis Secret namespace alike (harness.Overlay).
// extra are more components (deploy/components/<name>), before redis-namespace.
func kustomizeOverlay(t *testing.T, dir, redisNamespace string, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := harness.Overlay{Repo: "..", Dir: dir, RedisNamespace: redisNamespace, Components: extra}.
		Build(tool(t, "kustomize", "KUSTOMIZE_BIN_DIR", kustomizeVersion), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// kustomizeDirs are deploy/'s kustomizations: the base and every overlay.
var kustomizeDirs = []string{"base", "overlays/cronjob", "overlays/job", "overlays/deployment", "overlays/guard", "overlays/guard-self-signed"}

// renderAll renders the kustomize base and each overlay with the Redis namespace redisNamespace
// (kustomizeOverlay), and the Helm chart with its default values (release helmRelease in
// helmNamespace; the guard's renderings name the API server's addresses, which it requires).
func renderAll(t *testing.T, helmRelease, helmNamespace, redisNamespace string) []rendering {
	helm := tool(t, "helm", "HELM_BIN_DIR", helmVersion)
	var rs []rendering
	for _, k := range kustomizeDirs {
		rs = append(rs, rendering{name: "kustomize " + k, objs: kustomizeOverlay(t, k, redisNamespace)})
	}
	chart := []string{"template", helmRelease, repoPath("deploy/helm/redis-rebalancer"), "--namespace", helmNamespace}
	rs = append(rs, rendering{name: "helm (defaults)", objs: render(t, helm, chart...)})
	for _, c := range []string{"certManager", "selfSigned"} {
		rs = append(rs, rendering{name: "helm (deployment, guard " + c + ")", objs: render(t, helm, append(chart, "--set", "kind=deployment", "--set", "guard.enabled=true",
			"--set", "guard.certificate="+c, "--set", "networkPolicy.apiServer[0].ipBlock.cidr=127.0.0.1/32")...)})
	}
	return rs
}

// wantGuardRules are the eviction guard's ClusterRole's rules (webhook its configuration's name):
// core Events list/watch, its webhook configuration get by name; with a self-issued certificate,
// update, list and watch by name too (the certificate rotator's cache lists it by name).
func wantGuardRules(webhook string, selfSigned bool) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{webhook}, Verbs: []string{"get"}},
	}
	if selfSigned {
		rules[1].Verbs = append(rules[1].Verbs, "update", "list", "watch")
	}
	return rules
}

// renderHelmKinds renders the Helm chart with its default values in kind job and deployment
// (renderAll renders the default kind, cronjob), for checkRendering.
func renderHelmKinds(t *testing.T, helmRelease, helmNamespace string) []rendering {
	helm := tool(t, "helm", "HELM_BIN_DIR", helmVersion)
	var rs []rendering
	for _, kind := range []string{"job", "deployment"} {
		rs = append(rs, rendering{name: "helm kind=" + kind, objs: render(t, helm, "template", helmRelease, repoPath("deploy/helm/redis-rebalancer"), "--namespace", helmNamespace, "--set", "kind="+kind)})
	}
	return rs
}

// wantClusterRules are the ClusterRole's rules: reads only (every write is granted by a Role in
// the Redis namespaces).
var wantClusterRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"nodes", "persistentvolumeclaims", "persistentvolumes"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"csinodes"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch"}},
}

// wantRedisNamespaceRules are the rules of the Role in each Redis namespace: evictions and Events
// (and, with claim release, claims delete: wantClaimsRule).
var wantRedisNamespaceRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

// wantClaimsRule is claim release's one grant (rules.releaseReplicaClaims).
var wantClaimsRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"delete"}}

func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &v); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return &v
}

// wantPodFailurePolicy is every Job's (and CronJob's Job's) podFailurePolicy: an error or a
// cluster that needs attention fails the Job at once, the rebalancer's own pod disrupted is run
// again (docs/operations.md).
var wantPodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
	{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}},
	{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
		ContainerName: ptr.To("redis-rebalancer"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{app.ExitError, app.ExitViolations},
	}},
}}

// checkRendering checks one rendering's RBAC and workloads: the ClusterRole's rules are exactly
// wantClusterRules (reads only); every Role grants either wantRedisNamespaceRules (with
// wantClaimsRule when claim release is on), claims delete alone (kustomize's
// release-replica-claims component), a Secret by name (get only; the guard's self-issued
// certificate: get, update, list and watch by name), the Lease, or the step history's ConfigMap
// (create; get and update by name), and every rendering has the Lease's Role (run and serve hold
// the same Lease); every pod runs as non-root with a read-only root filesystem, no capabilities,
// seccomp RuntimeDefault; the CronJob never runs two passes at once; every Job has
// wantPodFailurePolicy and backoffLimit 0; every PodDisruptionBudget is maxUnavailable 1.
func checkRendering(t *testing.T, r rendering) {
	t.Helper()
	leaseRole := false
	for _, o := range r.objs {
		switch o.GetKind() {
		case "ClusterRole":
			cr := convert[rbacv1.ClusterRole](t, o)
			want := wantClusterRules
			switch {
			case strings.HasSuffix(cr.Name, "-guard-cert"):
				// kustomize guard-self-signed: the rotator's part, apart.
				want = []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{"redis-rebalancer-guard"}, Verbs: []string{"update", "list", "watch"}}}
			case strings.HasSuffix(cr.Name, "-guard"):
				want = wantGuardRules(cr.Name, strings.Contains(r.name, "selfSigned"))
			}
			if diff := cmp.Diff(want, cr.Rules); diff != "" {
				t.Errorf("%s: ClusterRole %s rules (-want +got):\n%s", r.name, cr.Name, diff)
			}
		case "Role":
			role := convert[rbacv1.Role](t, o)
			switch {
			case slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "pods/eviction") }):
				want := wantRedisNamespaceRules
				if strings.Contains(r.name, "releaseReplicaClaims") {
					want = append(slices.Clone(want), wantClaimsRule)
				}
				if diff := cmp.Diff(want, role.Rules); diff != "" {
					t.Errorf("%s: Role %s/%s rules (-want +got):\n%s", r.name, role.Namespace, role.Name, diff)
				}
				continue
			case strings.HasSuffix(role.Name, "-release-claims"):
				if diff := cmp.Diff([]rbacv1.PolicyRule{wantClaimsRule}, role.Rules); diff != "" {
					t.Errorf("%s: Role %s/%s rules (-want +got):\n%s", r.name, role.Namespace, role.Name, diff)
				}
				continue
			}
			for _, rule := range role.Rules {
				switch {
				case strings.HasSuffix(role.Name, "-guard-cert") && slices.Equal(rule.Resources, []string{"secrets"}):
					// The guard's self-issued certificate: its Secret by name only, the rotator's
					// cache's list and watch too.
					if len(rule.ResourceNames) != 1 || !slices.Equal(rule.Verbs, []string{"get", "update", "list", "watch"}) {
						t.Errorf("%s: Role %s: the certificate's Secret must be get/update/list/watch by name, got %+v", r.name, role.Name, rule)
					}
				case slices.Equal(rule.Resources, []string{"secrets"}):
					if len(rule.ResourceNames) != 1 || !slices.Equal(rule.Verbs, []string{"get"}) {
						t.Errorf("%s: Role %s: secrets must be get by one resourceName, got %+v", r.name, role.Name, rule)
					}
				case slices.Equal(rule.Resources, []string{"configmaps"}) && slices.Equal(rule.APIGroups, []string{""}):
					// The step history: create, or get/update of the one ConfigMap by name.
					if !slices.Equal(rule.Verbs, []string{"create"}) && (len(rule.ResourceNames) != 1 || !slices.Equal(rule.Verbs, []string{"get", "update"})) {
						t.Errorf("%s: Role %s: configmaps must be create, or get/update by name, got %+v", r.name, role.Name, rule)
					}
				case slices.Equal(rule.Resources, []string{"leases"}) && slices.Equal(rule.APIGroups, []string{"coordination.k8s.io"}):
					leaseRole = true
					if !slices.Equal(rule.Verbs, []string{"create"}) && (len(rule.ResourceNames) != 1 || !slices.Equal(rule.Verbs, []string{"get", "update"})) {
						t.Errorf("%s: Role %s: leases must be create, or get/update by name, got %+v", r.name, role.Name, rule)
					}
				default:
					t.Errorf("%s: Role %s grants %+v", r.name, role.Name, rule)
				}
			}
		case "PodDisruptionBudget":
			pdb := convert[policyv1.PodDisruptionBudget](t, o)
			if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
				t.Errorf("%s: PodDisruptionBudget %s: want maxUnavailable 1 alone, got %+v", r.name, pdb.Name, pdb.Spec)
			}
		case "Namespace":
			if o.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("%s: Namespace %s enforces no restricted Pod Security: labels %v", r.name, o.GetName(), o.GetLabels())
			}
		case "Secret":
			// The guard's self-issued certificate's Secret: Opaque and empty (serve fills it in).
			sec := convert[corev1.Secret](t, o)
			if sec.Type != corev1.SecretTypeOpaque || len(sec.Data) > 0 || len(sec.StringData) > 0 {
				t.Errorf("%s: Secret %s: want Opaque without data, got type %s, %d keys", r.name, sec.Name, sec.Type, len(sec.Data)+len(sec.StringData))
			}
		}
		for _, spec := range podSpecs(t, o) {
			checkPod(t, r.name+" "+o.GetKind(), spec)
		}
		switch o.GetKind() {
		case "ConfigMap":
			data, _, _ := unstructured.NestedString(o.Object, "data", "policy.yaml")
			if _, err := v1alpha1.Decode([]byte(data)); err != nil {
				t.Errorf("%s: ConfigMap %s: the policy does not load: %v", r.name, o.GetName(), err)
			}
		case "CronJob":
			cj := convert[batchv1.CronJob](t, o)
			if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.StartingDeadlineSeconds == nil ||
				cj.Spec.SuccessfulJobsHistoryLimit == nil || cj.Spec.FailedJobsHistoryLimit == nil || cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds == nil {
				t.Errorf("%s: CronJob %s: want concurrencyPolicy Forbid, startingDeadlineSeconds, both history limits and the Job's activeDeadlineSeconds; got %+v", r.name, cj.Name, cj.Spec)
			}
			checkJobSpec(t, r.name+" CronJob "+cj.Name, cj.Spec.JobTemplate.Spec)
		case "Job":
			j := convert[batchv1.Job](t, o)
			checkJobSpec(t, r.name+" Job "+j.Name, j.Spec)
		case "Deployment":
			d := convert[appsv1.Deployment](t, o)
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 || !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--leader-elect=true") {
				t.Errorf("%s: Deployment %s: want 2 replicas and --leader-elect=true, got replicas %v, args %v", r.name, d.Name, d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args)
			}
		}
	}
	if !leaseRole {
		t.Errorf("%s: no Role on the Lease: run and serve both hold it", r.name)
	}
}

// checkOneNamespaceList checks that one list of Redis namespaces, want, drives a rendering: the
// policy's selection (the chart's selection.namespaces.include; kustomize's REDIS_NAMESPACE, the
// workloads' --namespace), the namespaces of the Roles that grant evictions (and claims delete),
// the Redis Secret's Role (and the policy's passwordSecretRef, in the list), and the guard
// webhook's namespaceSelector.
func checkOneNamespaceList(t *testing.T, r rendering, want []string) {
	t.Helper()
	var evictions, claims, selection []string
	workloads := 0
	for _, o := range r.objs {
		switch o.GetKind() {
		case "Role":
			role := convert[rbacv1.Role](t, o)
			for _, rule := range role.Rules {
				switch {
				case slices.Contains(rule.Resources, "pods/eviction"):
					evictions = append(evictions, role.Namespace)
				case slices.Contains(rule.Resources, "persistentvolumeclaims"):
					claims = append(claims, role.Namespace)
				case slices.Equal(rule.Resources, []string{"secrets"}) && !strings.HasSuffix(role.Name, "-guard-cert") && !slices.Contains(want, role.Namespace):
					t.Errorf("%s: the Redis Secret's Role is in %s, outside %v", r.name, role.Namespace, want)
				}
			}
		case "ValidatingWebhookConfiguration":
			vwc := convert[admissionregistrationv1.ValidatingWebhookConfiguration](t, o)
			if got := slices.Sorted(slices.Values(vwc.Webhooks[0].NamespaceSelector.MatchExpressions[0].Values)); !slices.Equal(got, want) {
				t.Errorf("%s: the guard's namespaceSelector names %v, want %v", r.name, got, want)
			}
		case "ConfigMap":
			data, _, _ := unstructured.NestedString(o.Object, "data", "policy.yaml")
			p, err := v1alpha1.Decode([]byte(data))
			if err != nil {
				continue // checkRendering names it
			}
			selection = append(selection, p.Selection.Namespaces.Include...)
			if ref := p.Redis.PasswordSecretRef; ref.Name != "" && !slices.Contains(want, ref.Namespace) {
				t.Errorf("%s: the policy reads the Redis Secret in %s, outside %v", r.name, ref.Namespace, want)
			}
		}
		for _, spec := range podSpecs(t, o) {
			workloads++
			for _, e := range spec.Containers[0].Env {
				if e.Name == "REDIS_NAMESPACE" {
					selection = append(selection, e.Value)
				}
			}
		}
	}
	slices.Sort(selection)
	// The kustomize base has no workload: nothing selects there.
	if selection = slices.Compact(selection); workloads > 0 && !slices.Equal(selection, want) {
		t.Errorf("%s: the policy selects %v, want %v", r.name, selection, want)
	}
	if slices.Sort(evictions); !slices.Equal(evictions, want) {
		t.Errorf("%s: evictions granted in %v, want %v", r.name, evictions, want)
	}
	if slices.Sort(claims); len(claims) > 0 && !slices.Equal(claims, want) {
		t.Errorf("%s: claims delete granted in %v, want %v or nowhere", r.name, claims, want)
	}
}

// checkJobSpec checks a Job's podFailurePolicy (wantPodFailurePolicy) and that it is not retried.
func checkJobSpec(t *testing.T, what string, spec batchv1.JobSpec) {
	t.Helper()
	if diff := cmp.Diff(wantPodFailurePolicy, spec.PodFailurePolicy); diff != "" {
		t.Errorf("%s: podFailurePolicy (-want +got):\n%s", what, diff)
	}
	if spec.BackoffLimit == nil || *spec.BackoffLimit != 0 {
		t.Errorf("%s: backoffLimit %v, want 0", what, spec.BackoffLimit)
	}
}

// podSpecs returns the pod specs of a workload (Deployment, Job, CronJob), none for another kind.
func podSpecs(t *testing.T, o *unstructured.Unstructured) []corev1.PodSpec {
	switch o.GetKind() {
	case "Deployment", "Job", "CronJob":
	default:
		return nil
	}
	spec, err := harness.WorkloadPodSpec(o)
	if err != nil {
		t.Fatal(err)
	}
	return []corev1.PodSpec{*spec}
}

func checkPod(t *testing.T, what string, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v: want runAsNonRoot and seccomp RuntimeDefault", what, psc)
	}
	if psc != nil && (psc.RunAsUser == nil || *psc.RunAsUser == 0) {
		t.Errorf("%s: pod runs as user %v", what, psc.RunAsUser)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: container %s securityContext %+v: want a read-only root filesystem, no privilege escalation, every capability dropped", what, c.Name, sc)
		}
		if c.Resources.Requests == nil || c.Resources.Limits == nil {
			t.Errorf("%s: container %s has no resources", what, c.Name)
		}
	}
}

// applier applies objects with server-side apply (harness.Applier).
type applier struct{ *harness.Applier }

func newApplier(t *testing.T, env *harness.Env) *applier {
	a, err := harness.NewApplier(env.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{a}
}

// apply applies objs as manager and reads each back.
func (a *applier) apply(ctx context.Context, manager string, objs []*unstructured.Unstructured) error {
	return a.Apply(ctx, manager, objs)
}

// serviceAccountKubeconfig writes a kubeconfig holding a token of the ServiceAccount ns/name
// (TokenRequest API, an hour) for the bed's API server, its context in namespace ns
// (harness.ServiceAccountKubeconfig), and returns its path and a client.
func serviceAccountKubeconfig(t *testing.T, env *harness.Env, ns, name string) (string, kubernetes.Interface) {
	t.Helper()
	path, err := harness.ServiceAccountKubeconfig(t.Context(), env.Cluster, ns, name, t.TempDir(), 3600)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return path, client
}

// TestDeploy renders deploy/ (kustomize base and overlays, Helm chart with default values),
// checks least privilege and hardening, applies every rendering with server-side apply, then runs
// the post-scale-down scenario to compliance as the kustomize ServiceAccount (a TokenRequest
// token in a kubeconfig), and checks what that identity is refused and the Events on the moved
// pod.
func TestDeploy(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	ctx := t.Context()
	const helmRelease, helmNamespace = "redis-rebalancer-helm", "redis-rebalancer-helm"
	// The kustomize renderings take the scenario's namespace as their Redis namespace (the
	// settings); the chart keeps its default, redis.
	rs := renderAll(t, helmRelease, helmNamespace, f.Namespace)
	for _, r := range append(slices.Clone(rs), renderHelmKinds(t, helmRelease, helmNamespace)...) {
		t.Logf("%s: %s", r.name, strings.Join(r.kinds(), ", "))
		checkRendering(t, r)
		want := []string{"redis"}
		if strings.HasPrefix(r.name, "kustomize") {
			want = []string{f.Namespace}
		}
		checkOneNamespaceList(t, r, want)
	}

	// The Redis password's Secret lives in the Redis namespace of the renderings (the Role
	// there); the chart's release namespace is created by helm install, not by the chart; the
	// base's namespace holds the workloads. All three go with the test, their pods with them.
	for _, ns := range []string{"redis", helmNamespace, "redis-rebalancer"} {
		f.Bed.UseNamespace(t, ns)
	}
	a := newApplier(t, f.Env)
	t.Cleanup(func() {
		// The guard's webhook configurations are cluster-wide (on namespace "redis" only): gone
		// with the test.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, name := range []string{"redis-rebalancer-guard", helmRelease + "-guard"} {
			if err := f.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})
	for _, r := range rs {
		manager := "e2e-kustomize"
		if strings.HasPrefix(r.name, "helm") {
			manager = "e2e-helm"
		}
		// cert-manager's kinds need its CRDs, which the bed does not have.
		objs := slices.DeleteFunc(slices.Clone(r.objs), func(o *unstructured.Unstructured) bool {
			return o.GroupVersionKind().Group == "cert-manager.io"
		})
		if err := a.apply(ctx, manager, objs); err != nil {
			t.Fatalf("%s: server-side apply: %v", r.name, err)
		}
		t.Logf("%s: %d objects applied (server-side) and read back", r.name, len(objs))
	}
	// The kustomize guard's webhook now selects the scenario's namespace, and no guard serves it:
	// applied and read back, it goes before the scenario's evictions.
	if err := f.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "redis-rebalancer-guard", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The Secret the Role names, and another one, in the Redis namespace; the same name outside it.
	for _, ref := range []struct{ ns, name string }{{f.Namespace, "redis-password"}, {f.Namespace, "other-secret"}, {"redis", "redis-password"}} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ref.name, Namespace: ref.ns}, StringData: map[string]string{"redis-password": "x"}}
		if _, err := f.Client().CoreV1().Secrets(ref.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	kubeconfig, sa := serviceAccountKubeconfig(t, f.Env, "redis-rebalancer", "redis-rebalancer")

	// What the identity may and may not do (SelfSubjectAccessReview), then real requests.
	for _, c := range []struct {
		attr    authorizationv1.ResourceAttributes
		allowed bool
	}{
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "delete", Resource: "pods"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "deletecollection", Resource: "pods"}, false},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "list", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "get", Resource: "secrets", Name: "other-secret"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "redis", Verb: "get", Resource: "secrets", Name: "redis-password"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "watch", Resource: "secrets", Name: "redis-password"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "get", Resource: "secrets", Name: "redis-password"}, true},
		// Evictions and Events in the Redis namespace only.
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "create", Resource: "pods", Subresource: "eviction"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "redis", Verb: "create", Resource: "pods", Subresource: "eviction"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Resource: "pods", Subresource: "eviction"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "create", Resource: "events", Group: "events.k8s.io"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Resource: "events", Group: "events.k8s.io"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "update", Resource: "statefulsets", Group: "apps"}, false},
		// Claims: never written, and deleted only with claim release (the release-replica-claims
		// component, off here).
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "delete", Resource: "persistentvolumeclaims"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "create", Resource: "persistentvolumeclaims"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "update", Resource: "persistentvolumeclaims"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "delete", Resource: "persistentvolumes"}, false},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, true},
		// The Lease: in the rebalancer's namespace only (the base's Role), by name.
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "create", Resource: "leases", Group: "coordination.k8s.io"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "create", Resource: "leases", Group: "coordination.k8s.io"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "update", Resource: "leases", Group: "coordination.k8s.io", Name: "redis-rebalancer"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "update", Resource: "leases", Group: "coordination.k8s.io", Name: "kube-scheduler"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "delete", Resource: "leases", Group: "coordination.k8s.io", Name: "redis-rebalancer"}, false},
		// The eviction guard: Events watched, its own webhook configuration read (and updated,
		// listed and watched by name, for a self-issued certificate), no other; the certificate's
		// Secret by name, in serve's namespace only: never the namespace's other Secrets.
		{authorizationv1.ResourceAttributes{Verb: "watch", Resource: "events"}, true},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "validatingwebhookconfigurations", Group: "admissionregistration.k8s.io", Name: "redis-rebalancer-guard"}, true},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "validatingwebhookconfigurations", Group: "admissionregistration.k8s.io", Name: "redis-rebalancer-guard"}, true},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "validatingwebhookconfigurations", Group: "admissionregistration.k8s.io"}, false},
		{authorizationv1.ResourceAttributes{Verb: "update", Resource: "validatingwebhookconfigurations", Group: "admissionregistration.k8s.io", Name: "other"}, false},
		{authorizationv1.ResourceAttributes{Verb: "delete", Resource: "validatingwebhookconfigurations", Group: "admissionregistration.k8s.io", Name: "redis-rebalancer-guard"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "update", Resource: "secrets", Name: "redis-rebalancer-guard-tls"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "watch", Resource: "secrets", Name: "redis-rebalancer-guard-tls"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "list", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "update", Resource: "secrets", Name: "other"}, false},
		// The step history: its ConfigMap by name in the rebalancer's namespace, and no other.
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "update", Resource: "configmaps", Name: "redis-rebalancer-history"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "update", Resource: "configmaps", Name: "redis-rebalancer-policy"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "redis-rebalancer", Verb: "list", Resource: "configmaps"}, false},
		{authorizationv1.ResourceAttributes{Namespace: f.Namespace, Verb: "create", Resource: "configmaps"}, false},
	} {
		review, err := sa.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &c.attr},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != c.allowed {
			t.Errorf("SelfSubjectAccessReview %+v: allowed %v, want %v (%s)", c.attr, review.Status.Allowed, c.allowed, review.Status.Reason)
		}
	}
	pods, err := sa.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the ServiceAccount lists no pods: %v", err)
	}
	for _, c := range []struct {
		what string
		do   func() error
	}{
		{"pods delete", func() error {
			return sa.CoreV1().Pods(f.Namespace).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
		{"secrets list", func() error { _, err := sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err }},
		{"secrets list in the Redis namespace", func() error { _, err := sa.CoreV1().Secrets(f.Namespace).List(ctx, metav1.ListOptions{}); return err }},
		{"get secret other-secret in the Redis namespace", func() error {
			_, err := sa.CoreV1().Secrets(f.Namespace).Get(ctx, "other-secret", metav1.GetOptions{})
			return err
		}},
		{"get secret redis/redis-password (outside the Redis namespace)", func() error {
			_, err := sa.CoreV1().Secrets("redis").Get(ctx, "redis-password", metav1.GetOptions{})
			return err
		}},
	} {
		if err := c.do(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as the ServiceAccount: %v, want Forbidden", c.what, err)
		}
	}
	if _, err := sa.CoreV1().Secrets(f.Namespace).Get(ctx, "redis-password", metav1.GetOptions{}); err != nil {
		t.Errorf("get secret redis-password in the Redis namespace as the ServiceAccount: %v, want it read", err)
	}

	// The whole scenario as the ServiceAccount, with the cronjob overlay's arguments (a later flag
	// wins: the test's policy, kubeconfig, namespace and Redis port), the Lease in the
	// ServiceAccount's namespace as in a pod.
	cronArgs := overlayArgs(t, rs, "kustomize overlays/cronjob", "CronJob")
	deployArgs := overlayArgs(t, rs, "kustomize overlays/deployment", "Deployment")
	asPod := func(args []string, extra ...string) []string {
		return append(append(append([]string(nil), args...), cliArgs("", f.Env)[1:]...), append([]string{"--kubeconfig", kubeconfig}, extra...)...)
	}
	run := startCLI(t, nil, asPod(cronArgs)...)
	code := run.wait(4 * time.Minute)
	rep := run.report()
	assertExit(t, code, app.ExitOK, run)
	cr := onlyCluster(t, rep)
	if !cr.Compliant {
		t.Errorf("not compliant at the end: stopped by %s: %s", cr.StoppedBy, cr.Stopped)
	}
	var moved []string
	failedOver := ""
	for _, m := range cr.Moves {
		if m.Evicted {
			moved = append(moved, m.Pod)
		}
		if m.Failover != nil {
			failedOver = m.Failover.OldMaster
		}
	}
	if len(moved) == 0 || failedOver == "" {
		t.Fatalf("the run evicted %v and failed over %q; the scenario needs both", moved, failedOver)
	}
	f.finish(t)

	// The step history the run kept, as the ServiceAccount (deploy/base/history-role.yaml): the
	// durations of this cluster's steps, and its rejoins with the bytes the replica synced.
	cm, err := f.Client().CoreV1().ConfigMaps("redis-rebalancer").Get(ctx, v1alpha1.DefaultHistoryConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("step history: %v", err)
	}
	var hist execute.StepHistory
	if err := json.Unmarshal([]byte(cm.Data[execute.HistoryKey(cr.Namespace+"/"+cr.Name)]), &hist); err != nil {
		t.Fatalf("step history of %s/%s: %v (data %v)", cr.Namespace, cr.Name, err, cm.Data)
	}
	t.Logf("step history of %s/%s: %+v", cr.Namespace, cr.Name, hist)
	if len(hist.Steps[report.StepEvict]) != len(moved) || len(hist.Resyncs) != len(moved) || hist.Resyncs[0].Bytes <= 0 || hist.Resyncs[0].Seconds <= 0 {
		t.Errorf("step history %+v: want %d evictions and as many rejoins, with their bytes", hist, len(moved))
	}

	// serve as the ServiceAccount, electing on a Lease where it has no rights (the test's
	// namespace): it cannot take part in the election, so /readyz says 503 and why, /healthz 200.
	noLease := startCLI(t, nil, cliArgs("serve", f.Env, "--kubeconfig", kubeconfig, "--listen-address", "127.0.0.1:0", "--schedule", "@every 1h",
		"--leader-elect-resource-namespace", f.Namespace)...)
	noLease.waitLine(`"msg":"Not ready: this replica cannot take part in the leader election"`, time.Minute)
	addr := serveAddr(t, noLease)
	for path, want := range map[string]int{"/readyz": http.StatusServiceUnavailable, "/healthz": http.StatusOK} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("serve without Lease rights: GET %s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(body)))
		if resp.StatusCode != want || (path == "/readyz" && !strings.Contains(string(body), "may not get, update Lease "+f.Namespace+"/redis-rebalancer")) {
			t.Errorf("GET %s: %d %q, want %d (naming the Lease rights missing)", path, resp.StatusCode, body, want)
		}
	}
	if err := syscall.Kill(noLease.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := noLease.wait(time.Minute); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}

	// The Events on the moved pod: the failover (ours) and the eviction (the PodEvictor's).
	pod := moved[0][strings.Index(moved[0], "/")+1:]
	want := map[string]bool{execute.ReasonFailover: false, execute.EvictionStrategy: false}
	if pod != failedOver {
		delete(want, execute.ReasonFailover)
	}
	evs, err := f.Client().EventsV1().Events(f.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + pod})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		t.Logf("event on %s: %s %s %s (%s): %s", pod, e.Type, e.Reason, e.Action, e.ReportingController, e.Note)
		if _, ok := want[e.Reason]; ok && e.ReportingController == execute.EventSource {
			want[e.Reason] = true
		}
	}
	for reason, seen := range want {
		if !seen {
			t.Errorf("no %s event from %s on pod %s", reason, execute.EventSource, pod)
		}
	}
	if rep.Lease == nil || rep.Lease.Namespace != "redis-rebalancer" || rep.Lease.Name != "redis-rebalancer" {
		t.Errorf("the run's Lease %+v, want redis-rebalancer/redis-rebalancer (the ServiceAccount's namespace)", rep.Lease)
	}

	// The deployment overlay beside the cronjob overlay: serve (the Deployment's arguments) leads
	// on the same Lease, and a run (the CronJob's) then waits for it, gives up without acting
	// (leaseHeld, exit 0), and acts once serve has released the Lease (graceful stop).
	srv := startCLI(t, nil, asPod(deployArgs, "--listen-address", "127.0.0.1:0", "--pass-on-start=false")...)
	leading := srv.waitLine(`"Leading`, time.Minute)
	identity := jsonField(t, leading, "identity")
	held := startCLI(t, nil, asPod(cronArgs, "--lease-wait", "3s")...)
	code = held.wait(time.Minute)
	assertExit(t, code, app.ExitOK, held)
	hrep := held.report()
	if hrep.Outcome != report.OutcomeLeaseHeld || len(hrep.Clusters) != 0 || hrep.Lease == nil || hrep.Lease.Holder != identity {
		t.Errorf("run beside serve: outcome %s, %d clusters, Lease %+v; want leaseHeld, nothing read, held by serve (%s)", hrep.Outcome, len(hrep.Clusters), hrep.Lease, identity)
	}
	held.waitLine(`"Lease held by another process: waiting"`, time.Second)
	if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := srv.wait(time.Minute); code != app.ExitOK {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}
	after := startCLI(t, nil, asPod(cronArgs, "--lease-wait", "30s")...)
	assertExit(t, after.wait(2*time.Minute), app.ExitOK, after)
	if arep := after.report(); arep.Outcome != report.OutcomeCompliant || arep.Lease == nil || arep.Lease.Holder == identity {
		t.Errorf("run after serve released the Lease: outcome %s, Lease %+v; want compliant, held by the run", arep.Outcome, arep.Lease)
	}
}

// overlayArgs returns the container arguments of the workload of kind in the rendering named
// name, without --policy (the test gives its own policy file), $(VAR) references expanded.
func overlayArgs(t *testing.T, rs []rendering, name, kind string) []string {
	t.Helper()
	for _, r := range rs {
		if r.name != name {
			continue
		}
		for _, o := range r.objs {
			if o.GetKind() != kind {
				continue
			}
			// $(VAR) is expanded from the container's env, as the kubelet does.
			all, err := harness.ContainerArgs(o)
			if err != nil {
				t.Fatal(err)
			}
			var args []string
			for _, a := range all {
				if !strings.HasPrefix(a, "--policy") {
					args = append(args, a)
				}
			}
			return args
		}
	}
	t.Fatalf("no %s in %s", kind, name)
	return nil
}

// jsonField returns the string value of key in a JSON log line.
func jsonField(t *testing.T, line, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("log line %q: %v", line, err)
	}
	v, _ := m[key].(string)
	if v == "" {
		t.Fatalf("log line %q has no %s", line, key)
	}
	return v
}
