package observe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// names lists "Kind namespace/name" for every object of snap, in snapshot order.
func names(snap *policies.Snapshot) []string {
	var out []string
	for _, o := range snap.Nodes {
		out = append(out, "Node "+o.Name)
	}
	for _, o := range snap.PersistentVolumes {
		out = append(out, "PersistentVolume "+o.Name)
	}
	for _, o := range snap.PersistentVolumeClaims {
		out = append(out, "PersistentVolumeClaim "+o.Namespace+"/"+o.Name)
	}
	for _, o := range snap.StatefulSets {
		out = append(out, "StatefulSet "+o.Namespace+"/"+o.Name)
	}
	for _, o := range snap.PodDisruptionBudgets {
		out = append(out, "PodDisruptionBudget "+o.Namespace+"/"+o.Name)
	}
	for _, o := range snap.Pods {
		out = append(out, "Pod "+o.Namespace+"/"+o.Name)
	}
	return out
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	snap := twoClusters(t)
	var buf bytes.Buffer
	if err := EncodeSnapshot(&buf, snap); err != nil {
		t.Fatal(err)
	}
	got, skipped, err := DecodeSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %v, want nothing", skipped)
	}
	if diff := cmp.Diff(names(snap), names(got)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(snap.Pods[0].Spec, got.Pods[0].Spec); diff != "" {
		t.Errorf("first pod's spec (-want +got):\n%s", diff)
	}
}

func TestDecodeSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          string
		want        []string
		wantSkipped map[string]int
		wantErr     string
	}{
		{
			name: "YAML stream of a typed list and single objects → items get the list's kind, others counted",
			in: `apiVersion: v1
kind: PodList
items:
- metadata: {name: p1, namespace: ns}
- metadata: {name: p2, namespace: ns}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns}
`,
			want:        []string{"Node n1", "Pod ns/p1", "Pod ns/p2"},
			wantSkipped: map[string]int{"ConfigMap": 1},
		},
		{
			name: "JSON List of mixed kinds → each kept by its kind",
			in: `{"apiVersion":"v1","kind":"List","items":[
  {"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s","namespace":"ns"}},
  {"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"}},
  {"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","namespace":"ns"}}]}`,
			want:        []string{"PersistentVolume pv1", "StatefulSet ns/s"},
			wantSkipped: map[string]int{"Service": 1},
		},
		{name: "object without kind → error naming the document", in: "metadata: {name: x}\n", wantErr: "document 1: no kind"},
		{name: "item that does not decode → error naming the item", in: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","spec":"nope"}]}`, wantErr: "document 1 item 1 (Pod)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, skipped, err := DecodeSnapshot(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(snap)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadSnapshot checks, on a fake clientset, that a namespace limits the namespaced objects
// and not the nodes.
func TestReadSnapshot(t *testing.T) {
	snap := twoClusters(t)
	objs := appendObjects(appendObjects(nil, snap.Nodes), snap.Pods)
	objs = appendObjects(appendObjects(objs, snap.StatefulSets), snap.PodDisruptionBudgets)
	client := fake.NewClientset(objs...)
	for _, tc := range []struct {
		name, namespace string
		wantPods        int
	}{
		{name: "all namespaces → both clusters' pods", wantPods: len(snap.Pods)},
		{name: "namespace cache → its 6 pods, every node", namespace: "cache", wantPods: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadSnapshot(context.Background(), client, tc.namespace)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Pods) != tc.wantPods || len(got.Nodes) != len(snap.Nodes) {
				t.Errorf("pods %d, nodes %d; want %d, %d", len(got.Pods), len(got.Nodes), tc.wantPods, len(snap.Nodes))
			}
			for _, p := range got.Pods {
				if tc.namespace != "" && p.Namespace != tc.namespace {
					t.Errorf("pod %s/%s outside namespace %s", p.Namespace, p.Name, tc.namespace)
				}
			}
		})
	}
}

// appendObjects appends items to objs, as the fake clientset takes them.
func appendObjects[T runtime.Object](objs []runtime.Object, items []T) []runtime.Object {
	for _, o := range items {
		objs = append(objs, o)
	}
	return objs
}
