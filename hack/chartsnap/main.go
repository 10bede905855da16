// Command chartsnap makes a snapshot of a chart's rendering as installed on the nodes of another
// snapshot: the StatefulSets and PodDisruptionBudgets `helm template` printed, each
// StatefulSet's pods as its controller creates them (test/fixture's StatefulSetPod: the
// template's labels and spec, a controller reference, hostname and claims), each pod bound,
// Running and Ready on the node, and with the IP, that the pod of the same namespace and name
// has in the placement snapshot; with that snapshot's nodes and CSINodes. It is how
// docs/bitnami-journey.md puts Bitnami's real chart under the post-scale-down example's
// placement, so that lint, constraints and plan read the chart's own rendering:
//
//	helm template redis-cluster bitnami/redis-cluster -n bitnami --set cluster.nodes=10 > rendered.yaml
//	go run ./hack/chartsnap -rendered rendered.yaml -placement examples/bitnami-post-scale-down.yaml > snapshot.yaml
//
// A pod the placement does not hold is Pending. Other kinds in the rendering are left out.
//
// With -cluster-nodes FILE it also writes the CLUSTER NODES that Bitnami's redis-cluster chart
// forms over the placed pods (redis-cli --cluster create --cluster-replicas -replicas over them in
// ordinal order: test/scenario's Bitnami layout, checked against redis-cli), for --redis-nodes.
package main

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

func main() {
	rendered := flag.String("rendered", "", "the chart's rendering (helm template's output)")
	placement := flag.String("placement", "", "a snapshot whose nodes the pods are placed on, each where the pod of its namespace and name is")
	clusterNodes := flag.String("cluster-nodes", "", "write the CLUSTER NODES Bitnami's chart forms over the placed pods to this file")
	replicas := flag.Int("replicas", 1, "with -cluster-nodes: the chart's cluster.replicas")
	flag.Parse()
	if err := run(os.Stdout, *rendered, *placement, *clusterNodes, *replicas); err != nil {
		fmt.Fprintln(os.Stderr, "chartsnap:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, rendered, placement, clusterNodes string, replicas int) error {
	if rendered == "" || placement == "" {
		return errors.New("-rendered and -placement are required")
	}
	data, err := os.ReadFile(rendered)
	if err != nil {
		return err
	}
	sets, budgets, err := decode(data)
	if err != nil {
		return fmt.Errorf("%s: %w", rendered, err)
	}
	if len(sets) == 0 {
		return fmt.Errorf("%s: no StatefulSet", rendered)
	}
	where, _, err := observe.LoadSnapshotFile(placement)
	if err != nil {
		return err
	}
	placed := map[string]*corev1.Pod{}
	for _, p := range where.Pods {
		placed[p.Namespace+"/"+p.Name] = p
	}
	snap := &policies.Snapshot{Nodes: where.Nodes, CSINodes: where.CSINodes, StatefulSets: sets, PodDisruptionBudgets: budgets}
	for _, sts := range sets {
		sts.UID = types.UID("sts-" + sts.Name)
		replicas := 1
		if sts.Spec.Replicas != nil {
			replicas = int(*sts.Spec.Replicas)
		}
		for ord := range replicas {
			var opts []fixture.PodOption
			if at := placed[sts.Namespace+"/"+sts.Name+"-"+fmt.Sprint(ord)]; at != nil && at.Spec.NodeName != "" {
				ip := at.Status.PodIP
				opts = append(opts, fixture.On(at.Spec.NodeName), fixture.Ready(), func(p *corev1.Pod) { p.Status.PodIP = ip })
			} else {
				opts = append(opts, fixture.Unschedulable())
			}
			snap.Pods = append(snap.Pods, fixture.StatefulSetPod(sts, ord, opts...))
		}
	}
	if clusterNodes != "" {
		if err := writeClusterNodes(clusterNodes, sets[0], snap.Pods, replicas); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := observe.EncodeSnapshot(&buf, snap); err != nil {
		return err
	}
	_, err = out.Write(buf.Bytes())
	return err
}

// writeClusterNodes writes to path the CLUSTER NODES of Bitnami's chart's cluster of sts (release
// app.kubernetes.io/instance, the chart's name app.kubernetes.io/name), formed with replicas
// replicas per master over its pods: test/scenario's Bitnami layout with the pods' placement. It
// fails when sts's name is not the scenario's fullname for that release, or a pod's IP is not the
// one the scenario gives it (10.244.x.y by ordinal, as the examples have them).
func writeClusterNodes(path string, sts *appsv1.StatefulSet, pods []*corev1.Pod, replicas int) error {
	l := sts.Spec.Template.Labels
	n := int(*sts.Spec.Replicas)
	if replicas < 1 || n%(replicas+1) != 0 {
		return fmt.Errorf("-replicas %d: %d pods are no whole number of shards", replicas, n)
	}
	sc := scenario.Scenario{Layout: scenario.LayoutBitnami, Namespace: sts.Namespace, Cluster: l["app.kubernetes.io/instance"],
		Shards: n / (replicas + 1), PodsPerShard: replicas + 1, Placement: map[string]string{}}
	if name := l["app.kubernetes.io/name"]; name != scenario.BitnamiChartName {
		sc.BitnamiAlias = name
	}
	if sc.BitnamiFullname() != sts.Name {
		return fmt.Errorf("StatefulSet %s: the chart's fullname for release %s is %s (a fullnameOverride?)", sts.Name, sc.Cluster, sc.BitnamiFullname())
	}
	ips := map[string]string{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			sc.Placement[p.Name] = p.Spec.NodeName
			ips[p.Name] = p.Status.PodIP
		}
	}
	for _, rn := range sc.RedisNodes() {
		for pod, ip := range ips {
			if fmt.Sprintf("%x", sha1.Sum([]byte(pod))) == rn.ID && ip != rn.IP {
				return fmt.Errorf("pod %s: IP %s, the chart's cluster has it at %s", pod, ip, rn.IP)
			}
		}
	}
	return os.WriteFile(path, []byte(sc.ClusterNodes()), 0o644)
}

// decode reads the StatefulSets and PodDisruptionBudgets of a multi-document YAML rendering.
func decode(data []byte) ([]*appsv1.StatefulSet, []*policyv1.PodDisruptionBudget, error) {
	var sets []*appsv1.StatefulSet
	var budgets []*policyv1.PodDisruptionBudget
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return sets, budgets, nil
			}
			return nil, nil, err
		}
		var into any
		switch obj["kind"] {
		case "StatefulSet":
			s := &appsv1.StatefulSet{}
			sets, into = append(sets, s), s
		case "PodDisruptionBudget":
			b := &policyv1.PodDisruptionBudget{}
			budgets, into = append(budgets, b), b
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
			return nil, nil, fmt.Errorf("%s %v: %w", obj["kind"], obj["metadata"], err)
		}
	}
}
