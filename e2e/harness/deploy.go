package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
)

// Installing deploy/'s manifests on a test bed as an SRE would: rendered with the real tools
// (kustomize, helm: hack/build-tools.sh caches them), applied with server-side apply, and their
// workloads' processes run with the ServiceAccount's credentials (a TokenRequest token).

// ToolPath returns the path of a rendering tool: $<env>/name, else the tool cache's
// name-version/name (localcluster.EnvToolsCache, else ~/.cache/redis-rebalancer). It fails,
// naming the command that builds it, when the file is missing.
func ToolPath(name, env, version string) (string, error) {
	dir := os.Getenv(env)
	if dir == "" {
		cache := os.Getenv(localcluster.EnvToolsCache)
		if cache == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				return "", err
			}
			cache = filepath.Join(base, "redis-rebalancer")
		}
		dir = filepath.Join(cache, name+"-"+version)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s: %w; build it with `make tools` (./hack/build-tools.sh %s)", name, err, name)
	}
	return p, nil
}

// Render runs a rendering tool (kustomize build, helm template) and decodes its multi-document
// YAML output.
func Render(bin string, args ...string) ([]*unstructured.Unstructured, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, errOut.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("decode %s output: %w", filepath.Base(bin), err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs, nil
}

// Applier applies objects with server-side apply.
type Applier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// NewApplier returns an Applier with the cluster's admin credentials.
func NewApplier(c *localcluster.Cluster) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client().Discovery()))}, nil
}

// Apply applies objs as manager and reads each back.
func (a *Applier) Apply(ctx context.Context, manager string, objs []*unstructured.Unstructured) error {
	var errs []error
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err))
			continue
		}
		var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: manager}); err != nil {
			errs = append(errs, fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err))
			continue
		}
		if _, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("read back %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// ServiceAccountKubeconfig writes into dir a kubeconfig holding a token of the ServiceAccount
// ns/name (TokenRequest API, valid for ttl) for the cluster's API server, its context in
// namespace ns as a pod's in-cluster configuration has it, and returns its path.
func ServiceAccountKubeconfig(ctx context.Context, c *localcluster.Cluster, ns, name, dir string, ttlSeconds int64) (string, error) {
	tr, err := c.Client().CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttlSeconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for %s/%s: %w", ns, name, err)
	}
	admin := c.RESTConfig()
	ca := admin.TLSClientConfig.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(admin.TLSClientConfig.CAFile); err != nil {
			return "", err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bed"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "bed", AuthInfo: name, Namespace: ns}
	kc.CurrentContext = name
	path := filepath.Join(dir, ns+"-"+name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", err
	}
	return path, nil
}

// WorkloadPodSpec returns the pod template's spec of a workload (Deployment, Job, CronJob), or an
// error naming an object of another kind or a spec that does not convert.
func WorkloadPodSpec(o *unstructured.Unstructured) (*corev1.PodSpec, error) {
	var path []string
	switch o.GetKind() {
	case "Deployment", "Job":
		path = []string{"spec", "template", "spec"}
	case "CronJob":
		path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	default:
		return nil, fmt.Errorf("%s %s is no workload", o.GetKind(), o.GetName())
	}
	m, _, _ := unstructured.NestedMap(o.Object, path...)
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return &spec, nil
}

// ContainerArgs returns the first container's arguments of a workload (Deployment, Job,
// CronJob), $(VAR) references expanded from the container's plain env values, as the kubelet
// does.
func ContainerArgs(o *unstructured.Unstructured) ([]string, error) {
	spec, err := WorkloadPodSpec(o)
	if err != nil {
		return nil, err
	}
	if len(spec.Containers) == 0 {
		return nil, fmt.Errorf("%s %s has no container", o.GetKind(), o.GetName())
	}
	c := spec.Containers[0]
	var vars []string
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			vars = append(vars, "$("+e.Name+")", e.Value)
		}
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = strings.NewReplacer(vars...).Replace(a)
	}
	return args, nil
}

// Overlay is a kustomize overlay of deploy/ as deploy/README.md documents one: the settings
// (a configMapGenerator merge, carried by the redis-namespace component) and the policy
// (the ConfigMap redis-rebalancer-policy's file) replaced.
type Overlay struct {
	// Repo is the repository's root; Dir the kustomization of deploy/ it builds on
	// ("overlays/guard").
	Repo, Dir string
	// RedisNamespace and APIServerCIDR are the settings redisNamespace and apiServerCIDR
	// (127.0.0.1/32, the bed's API server, when empty).
	RedisNamespace, APIServerCIDR string
	// Components are more components of deploy/components, before redis-namespace.
	Components []string
	// Policy is the policy's file: deploy/base/policy.yaml with its Redis Secret's namespace
	// set to RedisNamespace, when nil.
	Policy []byte
	// Patches is the kustomization's patches field, verbatim (none when empty).
	Patches string
}

// Build writes the overlay into work (an empty directory) and builds it with kustomize.
func (o Overlay) Build(kustomize, work string) ([]*unstructured.Unstructured, error) {
	rel := func(p string) (string, error) {
		abs, err := filepath.Abs(filepath.Join(o.Repo, filepath.FromSlash(p)))
		if err != nil {
			return "", err
		}
		r, err := filepath.Rel(work, abs)
		return filepath.ToSlash(r), err
	}
	res, err := rel("deploy/" + o.Dir)
	if err != nil {
		return nil, err
	}
	var comps []string
	for _, c := range append(slices.Clone(o.Components), "redis-namespace") {
		r, err := rel("deploy/components/" + c)
		if err != nil {
			return nil, err
		}
		comps = append(comps, r)
	}
	policy := o.Policy
	if policy == nil {
		// The policy's redis.passwordSecretRef.namespace is the one other place
		// (deploy/README.md): the base's policy, that namespace set alike.
		base, err := os.ReadFile(filepath.Join(o.Repo, "deploy", "base", "policy.yaml"))
		if err != nil {
			return nil, err
		}
		policy = []byte(strings.Replace(string(base), "    namespace: redis\n", "    namespace: "+o.RedisNamespace+"\n", 1))
	}
	cidr := o.APIServerCIDR
	if cidr == "" {
		cidr = "127.0.0.1/32"
	}
	k := fmt.Sprintf(`resources: [%s]
configMapGenerator:
- name: redis-rebalancer-settings
  behavior: merge
  literals: [redisNamespace=%s, apiServerCIDR=%s]
- name: redis-rebalancer-policy
  namespace: redis-rebalancer
  behavior: replace
  files: [policy.yaml]
  options: {disableNameSuffixHash: true}
components: [%s]
`, res, o.RedisNamespace, cidr, strings.Join(comps, ", "))
	if o.Patches != "" {
		k += "patches:\n" + o.Patches
	}
	for name, data := range map[string][]byte{"kustomization.yaml": []byte(k), "policy.yaml": policy} {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return Render(kustomize, "build", work)
}
