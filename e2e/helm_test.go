package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// The Helm chart's tests: rendered with every value changed from its default (each change seen
// in the objects), refused by its schema with bad values, and upgraded through every kind on the
// local control plane (helm install/upgrade/uninstall against the test bed's API server).

// chartPath is the chart, from the e2e package.
var chartPath = repoPath("deploy/helm/redis-rebalancer")

// knobs sets every value of the chart's values.yaml to something other than its default
// (TestHelmChartKnobs checks that none is left out, and what each does).
const knobs = `
nameOverride: rr
fullnameOverride: my-rebalancer
namespaceOverride: ops
createNamespace: true
commonLabels: {team: sre}
schedule: "30 3 * * 1-5"
timeZone: Europe/Paris
suspend: true
image: {repository: ghcr.io/acme/redis-rebalancer, tag: v9.9.9, pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
redisNamespaces: [redis-a, redis-b, redis-auth]
layout: bitnami
bitnami: {release: cache, name: sessions, fullnameOverride: cache-main}
redisSecret: {enabled: true, namespace: redis-auth, name: pw, key: password}
policy:
  selection: {clusterLabel: app.kubernetes.io/name}
  rules: {releaseReplicaClaims: true}
  limits: {maxMovesPerCluster: 3, maxNoOfPodsToEvictPerNode: 2}
logging: {format: text, verbosity: 3}
extraArgs: [--max-parallel-clusters=2]
leaderElection: {leaseName: my-lease, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 5s, leaseWait: 45s}
cronjob: {concurrencyPolicy: Replace, startingDeadlineSeconds: 60, successfulJobsHistoryLimit: 1, failedJobsHistoryLimit: 5, activeDeadlineSeconds: 600, ttlSecondsAfterFinished: 3600}
job: {activeDeadlineSeconds: 900, ttlSecondsAfterFinished: 60, ignoreWindows: false}
deployment: {replicas: 3, listenPort: 9090}
livenessProbe: {httpGet: {path: /readyz, port: 9090}, periodSeconds: 30, failureThreshold: 5}
cronJobAnnotations: {a/cronjob: "1"}
cronJobLabels: {l-cronjob: "1"}
jobAnnotations: {a/job: "1"}
jobLabels: {l-job: "1"}
deploymentAnnotations: {a/deployment: "1"}
podAnnotations: {a/pod: "1"}
podLabels: {l-pod: "1"}
podDisruptionBudget: {enabled: true, minAvailable: 2, maxUnavailable: null, unhealthyPodEvictionPolicy: AlwaysAllow, annotations: {a/pdb: "1"}}
service: {enabled: true, type: NodePort, port: 9000, annotations: {a/service: "1"}, ipFamilyPolicy: SingleStack, ipFamilies: [IPv4]}
serviceMonitor: {enabled: true, apiVersion: monitoring.example.com/v2, namespace: monitoring, additionalLabels: {release: prom}, interval: 30s, scrapeTimeout: 10s, honorLabels: false, metricRelabelings: [{action: keep, regex: redis_rebalancer_.*, sourceLabels: [__name__]}], relabelings: [{action: replace, targetLabel: team, replacement: sre}]}
serviceAccount: {create: true, name: sa-x, annotations: {iam.gke.io/gcp-service-account: rebalancer@acme.iam.gserviceaccount.com}}
automountServiceAccountToken: false
rbac: {create: true}
historyConfigMap: my-history
priorityClassName: ops-high
extraVolumes: [{name: redis-tls, secret: {secretName: redis-tls}}]
extraVolumeMounts: [{name: redis-tls, mountPath: /etc/redis-tls, readOnly: true}]
env: [{name: REDIS_PASSWORD, valueFrom: {secretKeyRef: {name: redis-pw, key: password}}}]
networkPolicy: {enabled: true, apiServer: [{ipBlock: {cidr: 10.0.0.2/32}}], metricsFrom: [{namespaceSelector: {matchLabels: {team: observability}}}]}
terminationGracePeriodSeconds: 30
resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 256Mi}}
podSecurityContext: {runAsNonRoot: true, runAsUser: 1001, runAsGroup: 1001, fsGroup: 1001, seccompProfile: {type: RuntimeDefault}}
securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: {drop: [ALL]}}
nodeSelector: {pool: ops}
tolerations: [{key: ops, operator: Exists, effect: NoSchedule}]
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [ops]}]}]}}}
topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app.kubernetes.io/name: rr}}}]
dnsConfig: {options: [{name: ndots, value: "2"}]}
guard: {enabled: true, listenPort: 9444, failurePolicy: Fail, timeoutSeconds: 3, maxHold: 2m, certificate: selfSigned}
`

// helmEnv returns the environment helm runs with: its own cache, config and data directories,
// and kubeconfig (none when "").
func helmEnv(t *testing.T, kubeconfig string) []string {
	dir := t.TempDir()
	env := append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"), "HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	if kubeconfig != "" {
		env = append(env, "KUBECONFIG="+kubeconfig)
	}
	return env
}

// helmRun runs helm with args and returns its output and error (its stderr in the error).
func helmRun(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(tool(t, "helm", "HELM_BIN_DIR", helmVersion), args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = &out, &errOut, env
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// valuesFile writes values to a file of the test and returns its path.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// leafPaths lists the dotted paths of v's values that are not maps (lists and scalars), sorted.
func leafPaths(prefix string, v any) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{prefix}
	}
	var out []string
	for k, sub := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		out = append(out, leafPaths(p, sub)...)
	}
	sort.Strings(out)
	return out
}

// lookup returns the value at a dotted path of v.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// byKind returns the rendered objects by "Kind/name".
func byKind(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetName()] = o
	}
	return out
}

// TestHelmChartKnobs renders the chart with knobs (every value of values.yaml set to something
// else: a value left out fails the test) in each kind, and checks what each value does to the
// objects; then without RBAC and with an existing ServiceAccount.
func TestHelmChartKnobs(t *testing.T) {
	t.Parallel()
	helm := tool(t, "helm", "HELM_BIN_DIR", helmVersion)
	defaultsData, err := os.ReadFile(filepath.Join(chartPath, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var defaults, set map[string]any
	if err := yaml.Unmarshal(defaultsData, &defaults); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(knobs), &set); err != nil {
		t.Fatal(err)
	}
	// Every value is set (kind aside: each kind is rendered), and set apart from its default but
	// for those checked elsewhere.
	elsewhere := map[string]string{
		"rbac.create": "the subtest without RBAC", "serviceAccount.create": "the subtest without RBAC",
		"podDisruptionBudget.enabled": "the subtest without RBAC",
		// The pods' hardening stays: checkPod checks it on every rendering.
		"podSecurityContext.runAsNonRoot": "checkPod", "podSecurityContext.seccompProfile.type": "checkPod",
		"securityContext.allowPrivilegeEscalation": "checkPod", "securityContext.capabilities.drop": "checkPod",
		"securityContext.readOnlyRootFilesystem": "checkPod",
		// knobs issues the guard's certificate itself (selfSigned), which names no issuer.
		"guard.issuerRef": "the guard.issuerRef subtest",
		// The NetworkPolicy stays: checked in kind deployment.
		"networkPolicy.enabled": "the subtest without RBAC",
		// knobs names its Secret: the defaults that follow the layout have their own test.
		"redisSecret.enabled": "TestHelmChartLayout", "bitnami.release": "TestHelmChartLayout", "bitnami.fullnameOverride": "TestHelmChartLayout",
	}
	for _, p := range leafPaths("", defaults) {
		if p == "kind" || elsewhere[p] != "" {
			continue
		}
		got, ok := lookup(set, p)
		if !ok {
			t.Errorf("knobs leaves %s out: set it, and check what it does", p)
			continue
		}
		if def, _ := lookup(defaults, p); cmp.Equal(def, got) {
			t.Errorf("knobs sets %s to its default %v: its effect cannot be seen", p, got)
		}
	}
	file := valuesFile(t, knobs)
	const ns = "ops"
	for _, kind := range []string{"cronjob", "job", "deployment"} {
		t.Run(kind, func(t *testing.T) {
			args := []string{"template", "rel", chartPath, "-n", "default", "-f", file, "--set", "kind=" + kind}
			if kind != "deployment" {
				// The guard is serve's: kinds cronjob and job refuse it (TestHelmChartSchema).
				args = append(args, "--set", "guard.enabled=false")
			}
			objs := render(t, helm, args...)
			all := byKind(objs)
			for _, o := range objs {
				for _, spec := range podSpecs(t, o) {
					checkPod(t, "helm knobs "+o.GetKind(), spec)
				}
			}
			for key, o := range all {
				if o.GetLabels()["team"] != "sre" {
					t.Errorf("%s lacks commonLabels' team=sre", key)
				}
				if o.GetLabels()["app.kubernetes.io/name"] != "rr" {
					t.Errorf("%s: app.kubernetes.io/name %q, want nameOverride rr", key, o.GetLabels()["app.kubernetes.io/name"])
				}
				switch o.GetKind() {
				case "Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration":
				case "Role", "RoleBinding":
					if want := map[string]bool{ns: true, "redis-auth": true, "redis-a": true, "redis-b": true}; !want[o.GetNamespace()] {
						t.Errorf("%s in namespace %q", key, o.GetNamespace())
					}
				case "ServiceMonitor":
					if o.GetNamespace() != "monitoring" {
						t.Errorf("%s in %q, want serviceMonitor.namespace monitoring", key, o.GetNamespace())
					}
				default:
					if o.GetNamespace() != ns {
						t.Errorf("%s in namespace %q, want namespaceOverride %s", key, o.GetNamespace(), ns)
					}
				}
			}
			if n := all["Namespace/ops"]; n == nil || n.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("createNamespace: no Namespace ops enforcing restricted: %v", n)
			}
			if sa := all["ServiceAccount/sa-x"]; sa == nil || sa.GetAnnotations()["iam.gke.io/gcp-service-account"] == "" {
				t.Errorf("serviceAccount: no ServiceAccount sa-x with its annotation: %v", sa)
			}
			cr := convert[rbacv1.ClusterRole](t, all["ClusterRole/my-rebalancer"])
			if diff := cmp.Diff(wantClusterRules, cr.Rules); diff != "" {
				t.Errorf("the ClusterRole's rules (-want +got):\n%s", diff)
			}
			// redisNamespaces and policy.rules.releaseReplicaClaims: a Role in each namespace
			// granting evictions, Events and claims delete.
			for _, redisNS := range []string{"redis-a", "redis-b", "redis-auth"} {
				var role *unstructured.Unstructured
				for _, o := range objs {
					if o.GetKind() == "Role" && o.GetNamespace() == redisNS && o.GetName() == "my-rebalancer-redis" {
						role = o
					}
				}
				want := append(slices.Clone(wantRedisNamespaceRules), wantClaimsRule)
				if role == nil || !cmp.Equal(convert[rbacv1.Role](t, role).Rules, want) {
					t.Errorf("redisNamespaces: no Role my-rebalancer-redis in %s granting %v", redisNS, want)
				}
			}
			checkOneNamespaceList(t, rendering{name: "helm knobs " + kind, objs: objs}, []string{"redis-a", "redis-auth", "redis-b"})
			for _, o := range objs {
				if o.GetKind() == "RoleBinding" || o.GetKind() == "ClusterRoleBinding" {
					subj, _, _ := unstructured.NestedSlice(o.Object, "subjects")
					if s := subj[0].(map[string]any); s["name"] != "sa-x" || s["namespace"] != ns {
						t.Errorf("%s/%s binds %v, want ServiceAccount ops/sa-x", o.GetKind(), o.GetName(), s)
					}
				}
			}
			secretRole := false
			for _, o := range objs {
				if o.GetKind() == "Role" && o.GetNamespace() == "redis-auth" {
					secretRole = cmp.Equal(convert[rbacv1.Role](t, o).Rules[0].ResourceNames, []string{"pw"})
				}
			}
			if !secretRole {
				t.Error("redisSecret: no Role in redis-auth for the Secret pw")
			}
			hist := convert[rbacv1.Role](t, all["Role/my-rebalancer-history"])
			if len(hist.Rules) != 2 || !cmp.Equal(hist.Rules[1].ResourceNames, []string{"my-history"}) {
				t.Errorf("historyConfigMap: the history Role grants %v", hist.Rules)
			}
			data, _, _ := unstructured.NestedString(all["ConfigMap/my-rebalancer-policy"].Object, "data", "policy.yaml")
			p, err := v1alpha1.Decode([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			if p.Selection.ClusterLabel != "app.kubernetes.io/name" || p.Limits.MaxMovesPerCluster != 3 || p.Windows.HistoryConfigMap != "my-history" ||
				p.Redis.PasswordSecretRef != (v1alpha1.SecretKeyRef{Namespace: "redis-auth", Name: "pw", Key: "password"}) {
				t.Errorf("policy: %+v", p)
			}
			// layout and bitnami.name: the layout in the policy, the alias its workload selector.
			if p.Selection.Layout != v1alpha1.LayoutBitnami || !cmp.Equal(p.Selection.WorkloadSelector.MatchLabels, map[string]string{"app.kubernetes.io/name": "sessions"}) {
				t.Errorf("layout, bitnami.name: selection %+v", p.Selection)
			}
			if (kind == "deployment") != (p.Schedule == "30 3 * * 1-5") {
				t.Errorf("schedule in the policy %q (serve's schedule, kind deployment only)", p.Schedule)
			}

			var tmpl corev1.PodTemplateSpec
			switch kind {
			case "cronjob":
				cj := convert[batchv1.CronJob](t, all["CronJob/my-rebalancer"])
				s := cj.Spec
				if s.Schedule != "30 3 * * 1-5" || *s.TimeZone != "Europe/Paris" || !*s.Suspend || s.ConcurrencyPolicy != batchv1.ReplaceConcurrent ||
					*s.StartingDeadlineSeconds != 60 || *s.SuccessfulJobsHistoryLimit != 1 || *s.FailedJobsHistoryLimit != 5 ||
					*s.JobTemplate.Spec.ActiveDeadlineSeconds != 600 || *s.JobTemplate.Spec.TTLSecondsAfterFinished != 3600 {
					t.Errorf("cronjob values: %+v", s)
				}
				if cj.Annotations["a/cronjob"] != "1" || cj.Labels["l-cronjob"] != "1" || s.JobTemplate.Annotations["a/job"] != "1" || s.JobTemplate.Labels["l-job"] != "1" {
					t.Errorf("cronJob/job annotations and labels: %v %v %v %v", cj.Annotations, cj.Labels, s.JobTemplate.Annotations, s.JobTemplate.Labels)
				}
				tmpl = s.JobTemplate.Spec.Template
			case "job":
				j := convert[batchv1.Job](t, all["Job/my-rebalancer-1"])
				if *j.Spec.ActiveDeadlineSeconds != 900 || *j.Spec.TTLSecondsAfterFinished != 60 || j.Annotations["a/job"] != "1" || j.Labels["l-job"] != "1" {
					t.Errorf("job values: %+v %v %v", j.Spec, j.Annotations, j.Labels)
				}
				tmpl = j.Spec.Template
				if slices.Contains(tmpl.Spec.Containers[0].Args, "--ignore-windows") {
					t.Error("job.ignoreWindows false: the Job still ignores the windows")
				}
			case "deployment":
				d := convert[appsv1.Deployment](t, all["Deployment/my-rebalancer"])
				if *d.Spec.Replicas != 3 || d.Annotations["a/deployment"] != "1" {
					t.Errorf("deployment values: replicas %d, annotations %v", *d.Spec.Replicas, d.Annotations)
				}
				tmpl = d.Spec.Template
				if args := tmpl.Spec.Containers[0].Args; !slices.Contains(args, "--listen-address=:9090") {
					t.Errorf("deployment args %v lack --listen-address=:9090", args)
				}
				if tmpl.Spec.Containers[0].Ports[0].ContainerPort != 9090 {
					t.Errorf("listenPort: container port %v", tmpl.Spec.Containers[0].Ports)
				}
				pdb := convert[policyv1.PodDisruptionBudget](t, all["PodDisruptionBudget/my-rebalancer"])
				if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 2 || pdb.Spec.MaxUnavailable != nil ||
					*pdb.Spec.UnhealthyPodEvictionPolicy != policyv1.AlwaysAllow || pdb.Annotations["a/pdb"] != "1" || !cmp.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
					t.Errorf("podDisruptionBudget: %+v %v", pdb.Spec, pdb.Annotations)
				}
				svc := convert[corev1.Service](t, all["Service/my-rebalancer"])
				if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].Port != 9000 || svc.Spec.Ports[0].TargetPort.StrVal != "http" ||
					*svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || !cmp.Equal(svc.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) || svc.Annotations["a/service"] != "1" {
					t.Errorf("service: %+v %v", svc.Spec, svc.Annotations)
				}
				// guard: its port, the self-issued certificate, the webhook's scope, failure policy
				// and timeout, and the longest hold in the policy.
				args := tmpl.Spec.Containers[0].Args
				if !slices.Contains(args, "--guard-listen-address=:9444") || !slices.Contains(args, "--guard-self-signed") {
					t.Errorf("guard: args %v lack --guard-listen-address=:9444 or --guard-self-signed", args)
				}
				vwc := convert[admissionregistrationv1.ValidatingWebhookConfiguration](t, all["ValidatingWebhookConfiguration/my-rebalancer-guard"])
				if wh := vwc.Webhooks; len(wh) != 1 || *wh[0].FailurePolicy != admissionregistrationv1.Fail || *wh[0].TimeoutSeconds != 3 ||
					!cmp.Equal(wh[0].NamespaceSelector.MatchExpressions[0].Values, []string{"redis-a", "redis-b", "redis-auth"}) || wh[0].ClientConfig.Service.Namespace != ns {
					t.Errorf("guard: webhook %+v", wh)
				}
				if p.Guard.MaxHold.Duration != 2*time.Minute || !p.Guard.Enabled || p.Guard.FailurePolicy != "Fail" || p.Guard.TimeoutSeconds != 3 {
					t.Errorf("guard: the policy's guard %+v", p.Guard)
				}
				if lp := tmpl.Spec.Containers[0].LivenessProbe; lp == nil || lp.PeriodSeconds != 30 || lp.FailureThreshold != 5 || lp.HTTPGet == nil || lp.HTTPGet.Path != "/readyz" || lp.HTTPGet.Port.IntValue() != 9090 {
					t.Errorf("livenessProbe: %+v", lp)
				}
				// networkPolicy: metrics from metricsFrom, the guard's port from apiServer alone.
				np := convert[networkingv1.NetworkPolicy](t, all["NetworkPolicy/my-rebalancer"])
				if in := np.Spec.Ingress; len(in) != 2 || in[0].Ports[0].Port.StrVal != "http" || in[0].From[0].NamespaceSelector.MatchLabels["team"] != "observability" ||
					in[1].Ports[0].Port.StrVal != "guard" || in[1].From[0].IPBlock == nil || in[1].From[0].IPBlock.CIDR != "10.0.0.2/32" {
					t.Errorf("networkPolicy: ingress %+v", in)
				}
				sm := all["ServiceMonitor/my-rebalancer"]
				ep, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				e := ep[0].(map[string]any)
				if sm.GetAPIVersion() != "monitoring.example.com/v2" || sm.GetLabels()["release"] != "prom" || e["port"] != "http-metrics" || e["path"] != "/metrics" || e["interval"] != "30s" || e["scrapeTimeout"] != "10s" ||
					e["honorLabels"] != false || len(e["metricRelabelings"].([]any)) != 1 || len(e["relabelings"].([]any)) != 1 {
					t.Errorf("serviceMonitor: labels %v, endpoint %v", sm.GetLabels(), e)
				}
			}
			// Every kind takes the Lease (serve elects on it, run holds it while it acts).
			lease := convert[rbacv1.Role](t, all["Role/my-rebalancer-leader-election"])
			if !cmp.Equal(lease.Rules[1].ResourceNames, []string{"my-lease"}) {
				t.Errorf("leaderElection.leaseName: the Lease Role grants %v", lease.Rules)
			}
			leaseArgs := []string{"--leader-elect-resource-name=my-lease", "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=5s"}
			if kind != "deployment" {
				leaseArgs = append(leaseArgs, "--lease-wait=45s")
			}
			for _, want := range leaseArgs {
				if args := tmpl.Spec.Containers[0].Args; !slices.Contains(args, want) {
					t.Errorf("leaderElection: args %v lack %s", args, want)
				}
			}
			if kind != "deployment" {
				for _, k := range []string{"PodDisruptionBudget/my-rebalancer", "Service/my-rebalancer", "ServiceMonitor/my-rebalancer"} {
					if all[k] != nil {
						t.Errorf("kind %s renders %s", kind, k)
					}
				}
			}

			ps, c := tmpl.Spec, tmpl.Spec.Containers[0]
			// extraVolumes, extraVolumeMounts, env: a Secret's files and a password from a Secret.
			if !slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool { return v.Name == "redis-tls" && v.Secret != nil }) ||
				!slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "redis-tls" && m.MountPath == "/etc/redis-tls" }) ||
				!slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "REDIS_PASSWORD" && e.ValueFrom != nil }) ||
				!slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
					return e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
				}) {
				t.Errorf("extraVolumes, extraVolumeMounts, env: volumes %v, mounts %v, env %v", ps.Volumes, c.VolumeMounts, c.Env)
			}
			if kind != "deployment" {
				np := convert[networkingv1.NetworkPolicy](t, all["NetworkPolicy/my-rebalancer"])
				if np.Spec.Ingress == nil || len(np.Spec.Ingress) != 0 {
					t.Errorf("kind %s: the NetworkPolicy admits %v, want nothing", kind, np.Spec.Ingress)
				}
			}
			if tmpl.Annotations["a/pod"] != "1" || tmpl.Labels["l-pod"] != "1" || len(tmpl.Annotations["checksum/config"]) != 64 {
				t.Errorf("pod template metadata: %v %v", tmpl.Annotations, tmpl.Labels)
			}
			if c.Image != "ghcr.io/acme/redis-rebalancer:v9.9.9" || c.ImagePullPolicy != corev1.PullAlways || !cmp.Equal(ps.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
				t.Errorf("image: %s %s %v", c.Image, c.ImagePullPolicy, ps.ImagePullSecrets)
			}
			for _, want := range []string{"--logging-format=text", "-v=3", "--max-parallel-clusters=2", "--policy=/etc/redis-rebalancer/policy.yaml"} {
				if !slices.Contains(c.Args, want) {
					t.Errorf("args %v lack %s", c.Args, want)
				}
			}
			if ps.ServiceAccountName != "sa-x" || ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken || ps.PriorityClassName != "ops-high" ||
				*ps.TerminationGracePeriodSeconds != 30 || *ps.SecurityContext.FSGroup != 1001 || ps.NodeSelector["pool"] != "ops" || len(ps.Tolerations) != 1 ||
				ps.Affinity == nil || len(ps.TopologySpreadConstraints) != 1 || ps.TopologySpreadConstraints[0].TopologyKey != "topology.kubernetes.io/zone" ||
				ps.DNSConfig == nil || len(ps.DNSConfig.Options) != 1 || c.Resources.Limits.Memory().String() != "256Mi" || c.SecurityContext.RunAsNonRoot == nil {
				t.Errorf("pod spec values: %+v", ps)
			}
		})
	}

	t.Run("rbac.create, serviceAccount.create, podDisruptionBudget.enabled and networkPolicy.enabled false → no RBAC object, the named ServiceAccount, no PodDisruptionBudget, no NetworkPolicy", func(t *testing.T) {
		objs := render(t, helm, "template", "rel", chartPath, "--set", "kind=deployment", "--set", "rbac.create=false", "--set", "serviceAccount.create=false",
			"--set", "serviceAccount.name=existing", "--set", "podDisruptionBudget.enabled=false", "--set", "networkPolicy.enabled=false")
		for _, o := range objs {
			switch o.GetKind() {
			case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy":
				t.Errorf("rendered %s/%s", o.GetKind(), o.GetName())
			case "Deployment":
				if sa, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName"); sa != "existing" {
					t.Errorf("the pods run as %q, want existing", sa)
				}
			}
		}
	})
	t.Run("a policy change changes the pods' checksum/config", func(t *testing.T) {
		sum := func(extra ...string) string {
			objs := render(t, helm, append([]string{"template", "rel", chartPath, "--set", "kind=deployment"}, extra...)...)
			d := convert[appsv1.Deployment](t, byKind(objs)["Deployment/rel-redis-rebalancer"])
			return d.Spec.Template.Annotations["checksum/config"]
		}
		if a, b := sum(), sum("--set", "policy.limits.maxMovesPerCluster=4"); a == b || a == "" {
			t.Errorf("checksum/config %q before and %q after a policy change: want two different sums", a, b)
		}
	})
	t.Run("guard.issuerRef: cert-manager's Certificate names that issuer, and no Issuer of ours is rendered", func(t *testing.T) {
		all := byKind(render(t, helm, "template", "rel", chartPath, "--set", "kind=deployment", "--set", "guard.enabled=true",
			"--set", "guard.issuerRef.kind=ClusterIssuer", "--set", "guard.issuerRef.name=corp-ca", "--set", "networkPolicy.apiServer[0].ipBlock.cidr=10.0.0.2/32"))
		cert := all["Certificate/rel-redis-rebalancer-guard"]
		if cert == nil {
			t.Fatal("no Certificate rel-redis-rebalancer-guard")
		}
		ref, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
		if !cmp.Equal(ref, map[string]string{"kind": "ClusterIssuer", "name": "corp-ca"}) {
			t.Errorf("the Certificate's issuerRef %v, want ClusterIssuer corp-ca", ref)
		}
		if all["Issuer/rel-redis-rebalancer-guard"] != nil {
			t.Error("a self-signed Issuer is rendered beside guard.issuerRef")
		}
	})
}

// TestHelmChartLayout renders the chart with each layout and the values that follow it, and
// checks the policy it writes (selection.layout, and what the layout sets once the policy is
// loaded: v1alpha1.ApplyLayout, as the command applies it) and the Redis Secret it reads and
// grants: for bitnami, the Bitnami release's Secret as the chart names it (common.names.fullname:
// <release>-<name>, the release alone when it holds the name, fullnameOverride), key
// redis-password; otherwise redis-password, with the layout's key.
func TestHelmChartLayout(t *testing.T) {
	t.Parallel()
	helm := tool(t, "helm", "HELM_BIN_DIR", helmVersion)
	type want struct {
		layout       v1alpha1.Layout
		clusterLabel string
		workloads    map[string]string
		secret       v1alpha1.SecretKeyRef // after ApplyLayout; zero: none read, no Role
	}
	ref := func(name, key string) v1alpha1.SecretKeyRef {
		return v1alpha1.SecretKeyRef{Namespace: "redis", Name: name, Key: key}
	}
	bitnami := func(secret string) want {
		return want{v1alpha1.LayoutBitnami, "app.kubernetes.io/instance", map[string]string{"app.kubernetes.io/name": "redis-cluster"}, ref(secret, "redis-password")}
	}
	aliased := bitnami("web-sessions")
	aliased.workloads = map[string]string{"app.kubernetes.io/name": "sessions"}
	own := bitnami("redis-cluster-sessions") // the default release, the chart named sessions
	own.workloads = map[string]string{"app.kubernetes.io/name": "mine"}
	for _, tc := range []struct {
		name string
		set  []string
		want want
	}{
		{"no layout → the policy's defaults, Secret redis-password key redis-password", nil,
			want{"", "app.kubernetes.io/instance", nil, ref("redis-password", "redis-password")}},
		{"layout=bitnami → the default release redis-cluster's Secret redis-cluster (the release holds the chart's name)", []string{"layout=bitnami"}, bitnami("redis-cluster")},
		{"layout=bitnami bitnami.release=cache → Secret cache-redis-cluster", []string{"layout=bitnami", "bitnami.release=cache"}, bitnami("cache-redis-cluster")},
		{"layout=bitnami bitnami.release=my-redis-cluster → Secret my-redis-cluster", []string{"layout=bitnami", "bitnami.release=my-redis-cluster"}, bitnami("my-redis-cluster")},
		{"layout=bitnami, the umbrella release web with the alias sessions → Secret web-sessions, the workload selector on sessions",
			[]string{"layout=bitnami", "bitnami.release=web", "bitnami.name=sessions"}, aliased},
		{"layout=bitnami bitnami.fullnameOverride=redis-main → Secret redis-main", []string{"layout=bitnami", "bitnami.release=cache", "bitnami.fullnameOverride=redis-main"}, bitnami("redis-main")},
		{"layout=bitnami with redisSecret.name and key → those", []string{"layout=bitnami", "redisSecret.name=custom", "redisSecret.key=pw"},
			want{v1alpha1.LayoutBitnami, "app.kubernetes.io/instance", map[string]string{"app.kubernetes.io/name": "redis-cluster"}, ref("custom", "pw")}},
		{"layout=bitnami redisSecret.enabled=false → no Secret read, no Role", []string{"layout=bitnami", "redisSecret.enabled=false"},
			want{v1alpha1.LayoutBitnami, "app.kubernetes.io/instance", map[string]string{"app.kubernetes.io/name": "redis-cluster"}, v1alpha1.SecretKeyRef{Key: "redis-password"}}},
		{"layout=bitnami with policy.selection.workloadSelector → the policy's selector, not bitnami.name's", []string{"layout=bitnami", "bitnami.name=sessions", "policy.selection.workloadSelector.matchLabels.app\\.kubernetes\\.io/name=mine"}, own},
		{"layout=ot → cluster label cluster, Secret redis-password with OT's key password", []string{"layout=ot"},
			want{v1alpha1.LayoutOT, "cluster", map[string]string{"redis_setup_type": "cluster"}, ref("redis-password", "password")}},
		{"policy.selection.layout=ot alone → the same as layout=ot", []string{"policy.selection.layout=ot"},
			want{v1alpha1.LayoutOT, "cluster", map[string]string{"redis_setup_type": "cluster"}, ref("redis-password", "password")}},
		{"layout=seed → cluster label cloud.netease.com/cluster-name", []string{"layout=seed"},
			want{v1alpha1.LayoutSeed, "cloud.netease.com/cluster-name", nil, ref("redis-password", "redis-password")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "rel", chartPath}
			for _, v := range tc.set {
				args = append(args, "--set", v)
			}
			all := byKind(render(t, helm, args...))
			data, _, _ := unstructured.NestedString(all["ConfigMap/rel-redis-rebalancer-policy"].Object, "data", "policy.yaml")
			p, err := v1alpha1.Decode([]byte(data))
			if err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			v1alpha1.ApplyLayout(p)
			got := want{p.Selection.Layout, p.Selection.ClusterLabel, p.Selection.WorkloadSelector.MatchLabels, p.Redis.PasswordSecretRef}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("the policy (-want +got):\n%s", diff)
			}
			role := all["Role/rel-redis-rebalancer-redis-secret"]
			switch {
			case tc.want.secret.Name == "" && role != nil:
				t.Errorf("no Secret read, yet a Role for it: %v", role.Object)
			case tc.want.secret.Name != "" && (role == nil || !cmp.Equal(convert[rbacv1.Role](t, role).Rules[0].ResourceNames, []string{tc.want.secret.Name})):
				t.Errorf("no Role granting the Secret %s", tc.want.secret.Name)
			}
		})
	}
}

// TestHelmChartSchema: values.schema.json and the templates refuse what the chart cannot render
// right, at render time, each refusal naming the value: a wrong key, type or range (the policy's
// part generated from its types, with the policy's own ranges), an empty or missing Redis
// namespace list, and values that contradict each other.
func TestHelmChartSchema(t *testing.T) {
	t.Parallel()
	env := helmEnv(t, "")
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"kind=bogus → refused", []string{"kind=bogus"}, "at '/kind': value must be one of 'cronjob', 'job', 'deployment'"},
		{"an unknown top-level value → refused", []string{"replicas=2"}, "additional properties 'replicas' not allowed"},
		{"a misspelt nested value → refused", []string{"serviceAccount.annotation.x=y"}, "additional properties 'annotation' not allowed"},
		{"0 replicas → refused", []string{"kind=deployment", "deployment.replicas=0"}, "at '/deployment/replicas': minimum: got 0, want 1"},
		{"a bad pull policy → refused", []string{"image.pullPolicy=Sometimes"}, "at '/image/pullPolicy'"},
		{"a bad log format → refused", []string{"logging.format=yaml"}, "at '/logging/format'"},
		{"a lease duration without a unit → refused", []string{"leaderElection.leaseDuration=15"}, "at '/leaderElection/leaseDuration'"},
		{"a string where a number goes → refused", []string{"cronjob.startingDeadlineSeconds=soon"}, "at '/cronjob/startingDeadlineSeconds'"},
		{"createNamespace without namespaceOverride → refused by the template, naming both", []string{"createNamespace=true"}, "createNamespace creates namespaceOverride's Namespace"},
		{"minAvailable and maxUnavailable together → refused", []string{"kind=deployment", "podDisruptionBudget.minAvailable=1"}, "set minAvailable or maxUnavailable, not both"},
		// The policy, checked as the policy's validation checks it (schema generated from its types).
		{"policy.bogus=1 → refused", []string{"policy.bogus=1"}, "at '/policy': additional properties 'bogus' not allowed"},
		{"policy.limits.maxMovesPerCluster=-5 → refused", []string{"policy.limits.maxMovesPerCluster=-5"}, "at '/policy/limits/maxMovesPerCluster': minimum: got -5, want 1"},
		{"policy.limits.maxMovesPerCluster=0 (refused by the policy too) → refused", []string{"policy.limits.maxMovesPerCluster=0"}, "at '/policy/limits/maxMovesPerCluster': minimum: got 0, want 1"},
		{"policy.failover.mode=fast → refused", []string{"policy.failover.mode=fast"}, "at '/policy/failover/mode'"},
		{"policy.timeouts.recreate without a unit → refused", []string{"policy.timeouts.recreate=300"}, "at '/policy/timeouts/recreate'"},
		{"policy.rules.enabled naming no rule → refused", []string{"policy.rules.enabled={NoSuchRule}"}, "at '/policy/rules/enabled/0'"},
		{"policy.guard.timeoutSeconds=6 → refused", []string{"policy.guard.timeoutSeconds=6"}, "at '/policy/guard/timeoutSeconds': maximum: got 6, want 5"},
		{"guard.timeoutSeconds=6 (the policy's range, 1 to 5) → refused", []string{"guard.timeoutSeconds=6"}, "at '/guard/timeoutSeconds': maximum: got 6, want 5"},
		{"guard.timeoutSeconds=0 → refused", []string{"guard.timeoutSeconds=0"}, "at '/guard/timeoutSeconds': minimum: got 0, want 1"},
		// One namespace list, never empty.
		{"redisNamespaces=null → refused", []string{"redisNamespaces=null"}, "missing property 'redisNamespaces'"},
		{"redisNamespaces empty → refused", []string{"redisNamespaces=[]"}, "at '/redisNamespaces'"},
		{"a Redis namespace that is no DNS label → refused", []string{"redisNamespaces={Redis_A}"}, "at '/redisNamespaces/0'"},
		{"guard.namespaces=null (the list is redisNamespaces) → refused", []string{"guard.namespaces=null"}, "at '/guard': additional properties 'namespaces' not allowed"},
		{"rbac.evictionNamespaces (the list is redisNamespaces) → refused", []string{"rbac.evictionNamespaces={redis}"}, "at '/rbac': additional properties 'evictionNamespaces' not allowed"},
		{"policy.selection.namespaces (the chart's, from redisNamespaces) → refused by the template", []string{"policy.selection.namespaces.include={redis}"}, "policy.selection.namespaces: the chart sets it from redisNamespaces"},
		{"a Redis Secret outside redisNamespaces → refused by the template", []string{"redisSecret.namespace=kube-system"}, "redisSecret.namespace: kube-system is not one of redisNamespaces"},
		// The layout: the policy's values, one place to say it.
		{"layout=bogus → refused", []string{"layout=bogus"}, "at '/layout': value must be one of '', 'seed', 'bitnami', 'ot', 'ucloud', 'kubeblocks'"},
		{"layout and policy.selection.layout disagreeing → refused by the template", []string{"layout=bitnami", "policy.selection.layout=ot"}, "layout bitnami and policy.selection.layout ot disagree"},
		{"bitnami.name that is no label value → refused", []string{"bitnami.name=my chart"}, "at '/bitnami/name'"},
		{"an unknown bitnami value → refused", []string{"bitnami.secret=x"}, "at '/bitnami': additional properties 'secret' not allowed"},
		// The guard is serve's, and admits kube-apiserver alone.
		{"guard.enabled with kind cronjob → refused by the template", []string{"guard.enabled=true"}, "guard.enabled: the eviction guard is served by serve, kind deployment; kind cronjob"},
		{"guard.enabled with kind job → refused by the template", []string{"kind=job", "guard.enabled=true"}, "guard.enabled: the eviction guard is served by serve, kind deployment; kind job"},
		{"guard.enabled without networkPolicy.apiServer → refused by the template", []string{"kind=deployment", "guard.enabled=true"}, "networkPolicy.apiServer: with guard.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "rel", chartPath}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, err := helmRun(t, env, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template --set %v: %v, want a refusal with %q", tc.set, err, tc.want)
			}
		})
	}
}

// TestHelmUpgrade installs the chart on the local control plane and upgrades it through every
// kind: cronjob (a policy change rolls the job template's checksum), job (every upgrade a new Job
// named with the revision: no `spec.template: field is immutable`), deployment (a policy change
// rolls the pods; the PodDisruptionBudget and the Service follow), back to cronjob; then
// uninstalls it. The pods are kept off the nodes (a node selector no node has): the objects are
// the test, not a pass.
func TestHelmUpgrade(t *testing.T) {
	t.Parallel()
	b := bed(t)
	b.SettleForTest(t)
	ctx := t.Context()
	client := b.Cluster.Client()
	env := helmEnv(t, b.Cluster.Kubeconfig())
	const release, ns = "upg", "helm-upgrade"
	b.UseNamespace(t, ns) // its pods (Pending: no node has the chart's node selector) are this test's
	// The Roles go into the Redis namespaces, which must exist: the release's own here.
	base := []string{release, chartPath, "-n", ns, "--set", "nodeSelector.e2e-no-such-node=x", "--set", "redisSecret.enabled=false", "--set", "redisNamespaces={" + ns + "}"}
	step := func(verb string, set ...string) {
		t.Helper()
		args := append([]string{verb}, base...)
		if verb == "install" {
			args = append(args, "--create-namespace")
		}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		start := time.Now()
		if _, err := helmRun(t, env, args...); err != nil {
			t.Fatalf("%v", err)
		}
		t.Logf("helm %s %v: %s", verb, set, time.Since(start).Round(time.Millisecond))
	}
	t.Cleanup(func() {
		if _, err := helmRun(t, env, "uninstall", release, "-n", ns, "--wait"); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	name := release + "-redis-rebalancer"

	step("install", "kind=cronjob")
	cjSum := func() string {
		cj, err := client.BatchV1().CronJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cj.Spec.JobTemplate.Spec.Template.Annotations["checksum/config"]
	}
	before := cjSum()
	step("upgrade", "kind=cronjob", "policy.limits.maxMovesPerCluster=4", "suspend=true")
	if after := cjSum(); after == before {
		t.Errorf("cronjob: checksum/config %s unchanged by a policy change", after)
	}

	jobs := func() []string {
		l, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range l.Items {
			if j.DeletionTimestamp == nil {
				out = append(out, j.Name)
			}
		}
		return out
	}
	step("upgrade", "kind=job")
	step("upgrade", "kind=job", "policy.limits.maxMovesPerCluster=5")
	if got := jobs(); !cmp.Equal(got, []string{name + "-4"}) {
		t.Errorf("jobs after two upgrades in job mode: %v, want the 4th revision's only", got)
	}
	if _, err := client.BatchV1().CronJobs(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the CronJob after the switch to job: %v, want NotFound", err)
	}

	step("upgrade", "kind=deployment", "service.enabled=true")
	depSum := func() string {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations["checksum/config"]
	}
	before = depSum()
	step("upgrade", "kind=deployment", "service.enabled=true", "policy.limits.maxMovesPerCluster=6")
	if after := depSum(); after == before {
		t.Errorf("deployment: checksum/config %s unchanged by a policy change", after)
	}
	// The new template makes a second ReplicaSet: the pods roll.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		rs, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(rs.Items) >= 2, nil
	}); err != nil {
		t.Errorf("deployment: no second ReplicaSet after a policy change")
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("deployment: PodDisruptionBudget: %v", err)
	}
	if _, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("deployment: Service: %v", err)
	}
	if got := jobs(); len(got) != 0 {
		t.Errorf("jobs after the switch to deployment: %v, want none", got)
	}

	step("upgrade", "kind=cronjob")
	if _, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment after the switch back to cronjob: %v, want NotFound", err)
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the PodDisruptionBudget after the switch back to cronjob: %v, want NotFound", err)
	}
	out, err := helmRun(t, env, "history", release, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm history:\n%s", out)
}
