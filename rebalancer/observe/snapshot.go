// Package observe reads what a Kubernetes cluster and its Redis clusters look like now: a live
// snapshot from the API server (ReadSnapshot), an offline one from what kubectl prints
// (DecodeSnapshot, LoadSnapshotFile; EncodeSnapshot writes that form), the choice of Redis
// clusters by namespace and label selector (Selection), and each pod's role as Redis reports it
// (ApplyRoles). It changes nothing.
//
// It imports policies (the snapshot and model types) and redisctl (roles); plan, report and
// execute may import it, it imports none of them.
package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// ReadSnapshot lists what the rules need from the API server: every node and PersistentVolume,
// and the pods, StatefulSets, PodDisruptionBudgets and PersistentVolumeClaims of namespace (all
// namespaces when ""). Pods are listed whole (not by a Redis selector) because a topology spread
// constraint counts every matching pod in its namespace.
func ReadSnapshot(ctx context.Context, client kubernetes.Interface, namespace string) (*policies.Snapshot, error) {
	snap := &policies.Snapshot{}
	opts := metav1.ListOptions{}
	nodes, err := client.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		snap.Nodes = append(snap.Nodes, &nodes.Items[i])
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		snap.Pods = append(snap.Pods, &pods.Items[i])
	}
	stss, err := client.AppsV1().StatefulSets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list statefulsets: %w", err)
	}
	for i := range stss.Items {
		snap.StatefulSets = append(snap.StatefulSets, &stss.Items[i])
	}
	pdbs, err := client.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list poddisruptionbudgets: %w", err)
	}
	for i := range pdbs.Items {
		snap.PodDisruptionBudgets = append(snap.PodDisruptionBudgets, &pdbs.Items[i])
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list persistentvolumeclaims: %w", err)
	}
	for i := range pvcs.Items {
		snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, &pvcs.Items[i])
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list persistentvolumes: %w", err)
	}
	for i := range pvs.Items {
		snap.PersistentVolumes = append(snap.PersistentVolumes, &pvs.Items[i])
	}
	return snap, nil
}

// DecodeSnapshot reads a snapshot from what `kubectl get nodes,pods,statefulsets,
// poddisruptionbudgets,pvc,pv -A -o yaml` (or -o json) prints: a List, a stream of YAML
// documents or JSON objects, or single objects, in any mix. Nodes, Pods, StatefulSets,
// PodDisruptionBudgets, PersistentVolumeClaims and PersistentVolumes are kept; other kinds are
// counted in skipped (by kind). An object without apiVersion/kind, or one that does not decode,
// is an error naming its position.
func DecodeSnapshot(r io.Reader) (snap *policies.Snapshot, skipped map[string]int, err error) {
	snap = &policies.Snapshot{}
	skipped = map[string]int{}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 64*1024)
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return snap, skipped, nil
			}
			return nil, nil, fmt.Errorf("snapshot: document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		if err := addObject(snap, skipped, raw, fmt.Sprintf("document %d", doc)); err != nil {
			return nil, nil, err
		}
	}
}

// LoadSnapshotFile is DecodeSnapshot on a file ("-" reads standard input).
func LoadSnapshotFile(path string) (*policies.Snapshot, map[string]int, error) {
	if path == "-" {
		return DecodeSnapshot(os.Stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	return DecodeSnapshot(f)
}

func addObject(snap *policies.Snapshot, skipped map[string]int, raw json.RawMessage, where string) error {
	var meta metav1.TypeMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("snapshot: %s: %w", where, err)
	}
	if meta.Kind == "" {
		return fmt.Errorf("snapshot: %s: no kind (is this kubectl -o yaml/json output?)", where)
	}
	decode := func(into any) error {
		if err := json.Unmarshal(raw, into); err != nil {
			return fmt.Errorf("snapshot: %s (%s): %w", where, meta.Kind, err)
		}
		return nil
	}
	switch meta.Kind {
	case "List", "NodeList", "PodList", "StatefulSetList", "PodDisruptionBudgetList", "PersistentVolumeClaimList", "PersistentVolumeList":
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := decode(&list); err != nil {
			return err
		}
		for i, item := range list.Items {
			if meta.Kind != "List" {
				// Typed lists omit the items' kind.
				item = withKind(item, strings.TrimSuffix(meta.Kind, "List"), meta.APIVersion)
			}
			if err := addObject(snap, skipped, item, fmt.Sprintf("%s item %d", where, i+1)); err != nil {
				return err
			}
		}
	case "Node":
		o := &corev1.Node{}
		if err := decode(o); err != nil {
			return err
		}
		snap.Nodes = append(snap.Nodes, o)
	case "Pod":
		o := &corev1.Pod{}
		if err := decode(o); err != nil {
			return err
		}
		snap.Pods = append(snap.Pods, o)
	case "StatefulSet":
		o := &appsv1.StatefulSet{}
		if err := decode(o); err != nil {
			return err
		}
		snap.StatefulSets = append(snap.StatefulSets, o)
	case "PodDisruptionBudget":
		o := &policyv1.PodDisruptionBudget{}
		if err := decode(o); err != nil {
			return err
		}
		snap.PodDisruptionBudgets = append(snap.PodDisruptionBudgets, o)
	case "PersistentVolumeClaim":
		o := &corev1.PersistentVolumeClaim{}
		if err := decode(o); err != nil {
			return err
		}
		snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, o)
	case "PersistentVolume":
		o := &corev1.PersistentVolume{}
		if err := decode(o); err != nil {
			return err
		}
		snap.PersistentVolumes = append(snap.PersistentVolumes, o)
	default:
		skipped[meta.Kind]++
	}
	return nil
}

// withKind sets kind (and apiVersion when missing) on a JSON object.
func withKind(raw json.RawMessage, kind, apiVersion string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = kind
	}
	if _, ok := m["apiVersion"]; !ok && apiVersion != "" {
		m["apiVersion"] = apiVersion
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// EncodeSnapshot writes snap as one YAML List, the form `kubectl get -o yaml` prints and
// DecodeSnapshot reads.
func EncodeSnapshot(w io.Writer, snap *policies.Snapshot) error {
	var items []any
	add := func(obj runtime.Object, apiVersion, kind string) {
		obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
		items = append(items, obj)
	}
	for _, o := range snap.Nodes {
		add(o.DeepCopy(), "v1", "Node")
	}
	for _, o := range snap.PersistentVolumes {
		add(o.DeepCopy(), "v1", "PersistentVolume")
	}
	for _, o := range snap.PersistentVolumeClaims {
		add(o.DeepCopy(), "v1", "PersistentVolumeClaim")
	}
	for _, o := range snap.StatefulSets {
		add(o.DeepCopy(), "apps/v1", "StatefulSet")
	}
	for _, o := range snap.PodDisruptionBudgets {
		add(o.DeepCopy(), "policy/v1", "PodDisruptionBudget")
	}
	for _, o := range snap.Pods {
		add(o.DeepCopy(), "v1", "Pod")
	}
	b, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	_, err = w.Write(b)
	return err
}
