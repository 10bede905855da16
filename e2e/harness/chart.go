package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// Installing a scenario of Bitnami's or OT's layout as the chart and the operator install it:
// their StatefulSets are created once, with their final templates (the default scheduler,
// RollingUpdate), the StatefulSet controller creates every pod, and the cluster is formed by the
// real redis-cli as the chart's init and the operator form it. Only the first pods' nodes are the
// scenario's: a MutatingAdmissionPolicy of the environment's namespace sets spec.nodeName on each
// pod the scenario places when the controller creates it (a pod created with a node is never seen
// by kube-scheduler), and is deleted before the environment is handed to the test, so that every
// re-created pod goes to kube-scheduler.

// layOutChart lays out a Bitnami or OT scenario (layOut's counterpart for the seed layout).
func (e *Env) layOutChart(ctx context.Context, opts Options) error {
	if opts.RunningPods != nil {
		return fmt.Errorf("scenario %s: Options.RunningPods needs the seed layout (the %s layout's RollingUpdate would replace the pods)", e.Scenario.Name, e.Scenario.Layout)
	}
	if len(e.Scenario.Placement) != e.Scenario.N() {
		return fmt.Errorf("scenario %s: the %s layout places every pod (%d of %d placed)", e.Scenario.Name, e.Scenario.Layout, len(e.Scenario.Placement), e.Scenario.N())
	}
	if err := e.createSecret(ctx); err != nil {
		return err
	}
	if err := e.createPDBs(ctx); err != nil {
		return err
	}
	if e.externalAccess {
		if err := e.createExternalAccess(ctx); err != nil {
			return err
		}
	}
	unplace, err := e.placeOnCreate(ctx)
	if err != nil {
		return err
	}
	defer unplace()
	if _, _, err := e.createStatefulSets(ctx, opts.PodAnnotations, opts.Templates, nil); err != nil {
		return err
	}
	if err := e.waitPlaced(ctx); err != nil {
		return err
	}
	if err := unplace(); err != nil {
		return err
	}
	addrs, err := e.waitServers(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if e.Scenario.Layout == scenario.LayoutOT {
		err = e.formOT(ctx, addrs)
	} else {
		err = e.formBitnami(ctx, addrs)
	}
	if err != nil {
		return err
	}
	if _, err := e.WaitHealthy(ctx, 90*time.Second); err != nil {
		return fmt.Errorf("redis cluster formed by redis-cli: %w", err)
	}
	e.logf("redis cluster formed by redis-cli --cluster over %d pods in %s", len(addrs), time.Since(t0).Round(10*time.Millisecond))
	return e.readShards(ctx)
}

// placeOnCreate creates the MutatingAdmissionPolicy (and its binding to the environment's
// namespace) that sets spec.nodeName to the scenario's node on each pod the scenario places,
// when it is created without one, and waits until the API server applies it (a dry-run create).
// The returned func deletes both; it may be called more than once.
func (e *Env) placeOnCreate(ctx context.Context) (func() error, error) {
	client := e.Client().AdmissionregistrationV1()
	name := "harness-place-" + e.Namespace
	names := slices.Sorted(maps.Keys(e.Scenario.Placement))
	nodes, err := json.Marshal(e.Scenario.Placement) // a JSON object is a CEL map literal
	if err != nil {
		return nil, err
	}
	podNames, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "placed-by-the-scenario",
				Expression: fmt.Sprintf(`object.metadata.name in %s && (!has(object.spec.nodeName) || object.spec.nodeName == "")`, podNames),
			}},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{
					Expression: fmt.Sprintf(`[JSONPatch{op: "add", path: "/spec/nodeName", value: %s[object.metadata.name]}]`, nodes),
				},
			}},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: e.Namespace},
			}},
		},
	}
	deleted := false
	unplace := func() error {
		if deleted {
			return nil
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		errB := client.MutatingAdmissionPolicyBindings().Delete(dctx, name, metav1.DeleteOptions{})
		errP := client.MutatingAdmissionPolicies().Delete(dctx, name, metav1.DeleteOptions{})
		for _, err := range []error{errB, errP} {
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete placement policy %s: %w", name, err)
			}
		}
		deleted = true
		return nil
	}
	if _, err := client.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create placement policy %s: %w", name, err)
	}
	if _, err := client.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		_ = unplace()
		return nil, fmt.Errorf("create placement policy binding %s: %w", name, err)
	}
	// The policy is active once a dry-run create of a placed pod comes back with its node.
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: names[0], Namespace: e.Namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}},
			Tolerations: e.Scenario.Tolerations},
	}
	var last error
	err = poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		got, err := e.Client().CoreV1().Pods(e.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if last = err; err != nil {
			return false, nil
		}
		return got.Spec.NodeName == e.Scenario.Placement[names[0]], nil
	})
	if err != nil {
		_ = unplace()
		if last != nil {
			err = fmt.Errorf("%w (last dry run: %w)", err, last)
		}
		return nil, fmt.Errorf("placement policy %s not applied: %w", name, err)
	}
	return unplace, nil
}

// waitPlaced waits until the StatefulSet controller has created every pod the scenario places,
// on its node, and annotates each pod's unbound claims with the node
// (volume.kubernetes.io/selected-node), as kube-scheduler's VolumeBinding plugin does for a
// WaitForFirstConsumer claim when it places a pod: a provisioner then makes the volume in the
// node's zone.
func (e *Env) waitPlaced(ctx context.Context) error {
	client := e.Client().CoreV1()
	want := e.Scenario.Placement
	annotated := map[string]bool{}
	var last error
	err := poll(ctx, 100*time.Millisecond, 2*time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := client.Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
		if last = err; err != nil {
			return false, nil
		}
		placed := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			node, ok := want[p.Name]
			if !ok {
				continue
			}
			if p.Spec.NodeName != node {
				return false, fmt.Errorf("pod %s was created on node %q, the scenario places it on %s", p.Name, p.Spec.NodeName, node)
			}
			placed++
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim == nil || annotated[v.PersistentVolumeClaim.ClaimName] {
					continue
				}
				if err := e.selectNode(ctx, v.PersistentVolumeClaim.ClaimName, node); err != nil {
					last = err
					return false, nil
				}
				annotated[v.PersistentVolumeClaim.ClaimName] = true
			}
		}
		return placed == len(want), nil
	})
	if err != nil {
		if last != nil {
			err = fmt.Errorf("%w (last: %w)", err, last)
		}
		return fmt.Errorf("wait for the pods on their nodes: %w", err)
	}
	return nil
}

// selectNode annotates claim with volume.kubernetes.io/selected-node=node unless it is bound or
// already has a node.
func (e *Env) selectNode(ctx context.Context, claim, node string) error {
	pvc, err := e.Client().CoreV1().PersistentVolumeClaims(e.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("claim %s: %w", claim, err)
	}
	if pvc.Spec.VolumeName != "" || pvc.Annotations[selectedNodeAnnotation] != "" {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, selectedNodeAnnotation, node)
	if _, err := e.Client().CoreV1().PersistentVolumeClaims(e.Namespace).Patch(ctx, claim, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("claim %s: select node %s: %w", claim, node, err)
	}
	return nil
}

// selectedNodeAnnotation is the annotation kube-scheduler sets on a WaitForFirstConsumer claim
// with the node it placed the claim's pod on (volume.AnnSelectedNode).
const selectedNodeAnnotation = "volume.kubernetes.io/selected-node"

// redisCLI runs redis-cli with args, with the environment's password in REDISCLI_AUTH (as the
// chart's scripts pass it), and returns its output; a failure's error carries the output.
func (e *Env) redisCLI(ctx context.Context, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "redis-cli", args...)
	cmd.Env = os.Environ()
	if e.RedisOptions.Password != "" {
		cmd.Env = append(cmd.Env, "REDISCLI_AUTH="+e.RedisOptions.Password)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// formBitnami forms the cluster as the chart's init does: redis-cli --cluster create over every
// pod's address in ordinal order (with externalAccess, its LoadBalancer's), --cluster-replicas R
// (PodsPerShard-1).
func (e *Env) formBitnami(ctx context.Context, addrs map[string]string) error {
	sc := e.Scenario
	args := []string{"--cluster", "create"}
	for o := 0; o < sc.N(); o++ {
		pod := fmt.Sprintf("%s-%d", sc.BitnamiFullname(), o)
		a, ok := addrs[pod]
		if !ok {
			return fmt.Errorf("no redis-server for pod %s", pod)
		}
		if lb := e.LoadBalancerIP(pod); lb != "" {
			a = net.JoinHostPort(lb, strconv.Itoa(e.Port))
		}
		args = append(args, a)
	}
	args = append(args, "--cluster-replicas", fmt.Sprint(sc.PodsPerShard-1), "--cluster-yes")
	_, err := e.redisCLI(ctx, args...)
	return err
}

// formOT forms the cluster as OT's operator does: redis-cli --cluster create over the leaders in
// ordinal order (ExecuteRedisClusterCommand), then for each follower j redis-cli --cluster
// add-node <follower j> <leader j mod M> --cluster-slave (ExecuteRedisReplicationCommand): no
// master ID is given, so redis-cli makes the follower a replica of a master with the fewest
// replicas, whichever it finds first.
func (e *Env) formOT(ctx context.Context, addrs map[string]string) error {
	sc := e.Scenario
	addr := func(pod string) (string, error) {
		a, ok := addrs[pod]
		if !ok {
			return "", fmt.Errorf("no redis-server for pod %s", pod)
		}
		return a, nil
	}
	args := []string{"--cluster", "create"}
	for i := 0; i < sc.Shards; i++ {
		a, err := addr(sc.PodName(i, 0)) // leader i
		if err != nil {
			return err
		}
		args = append(args, a)
	}
	if _, err := e.redisCLI(ctx, append(args, "--cluster-yes")...); err != nil {
		return err
	}
	for j := 0; j < sc.Shards*(sc.PodsPerShard-1); j++ {
		follower, err := addr(sc.PodName(j%sc.Shards, j/sc.Shards+1)) // follower j
		if err != nil {
			return err
		}
		leader, err := addr(sc.PodName(j%sc.Shards, 0))
		if err != nil {
			return err
		}
		if _, err := e.redisCLI(ctx, "--cluster", "add-node", follower, leader, "--cluster-slave"); err != nil {
			return err
		}
	}
	return nil
}

// readShards reads the shards Redis was formed with: for each pod, the scenario's index of the
// shard whose master its node is or replicates (Env.ShardOf).
func (e *Env) readShards(ctx context.Context) error {
	pods, err := e.Client().CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
	if err != nil {
		return err
	}
	podOf := map[string]string{} // Redis address → pod
	for _, p := range pods.Items {
		podOf[e.Redis.AddrOf(p.Status.PodIP)] = p.Name
	}
	topo, err := e.Redis.Topology(ctx, e.Addrs())
	if err != nil {
		return err
	}
	masterPod := map[string]string{} // node ID → the pod of its master (its own for a master)
	for _, n := range topo.Nodes {
		if n.IsMaster() {
			masterPod[n.ID] = podOf[n.Addr()]
		}
	}
	shards := map[string]int{}
	var errs []error
	for _, n := range topo.Nodes {
		id := n.ID
		if !n.IsMaster() {
			id = n.MasterID
		}
		pod, master := podOf[n.Addr()], masterPod[id]
		if pod == "" || master == "" {
			errs = append(errs, fmt.Errorf("redis node %s (%s): no pod, or no master pod", n.Addr(), pod))
			continue
		}
		shards[pod] = e.Scenario.ShardOf(master)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("read the shards formed: %w", err)
	}
	e.formed = shards
	return nil
}

// ShardOf returns the index of the shard the named pod was formed in: for Bitnami's and OT's
// layouts as Redis was formed (the index the scenario gives the shard's master), otherwise
// Scenario.ShardOf; -1 when unknown.
func (e *Env) ShardOf(pod string) int {
	if e.formed != nil {
		if i, ok := e.formed[pod]; ok {
			return i
		}
		return -1
	}
	return e.Scenario.ShardOf(pod)
}

// FormedShards returns the pods of each shard as Redis was formed, by shard index, each sorted
// by name (ShardOf).
func (e *Env) FormedShards() [][]string {
	out := make([][]string, e.Scenario.Shards)
	for i := range out {
		for _, p := range e.Scenario.ShardPods(i) {
			if j := e.ShardOf(p); j >= 0 && j < len(out) {
				out[j] = append(out[j], p)
			}
		}
	}
	for _, s := range out {
		sort.Strings(s)
	}
	return out
}
