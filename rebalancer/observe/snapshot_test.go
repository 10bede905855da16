package observe

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// names lists "Kind namespace/name" ("Kind name" for an object without a namespace) for every
// object of snap, in snapshot order (Objects), CSINodes last with their drivers' attach limits:
// "CSINode n1 (ebs.csi.aws.com 25)".
func names(snap *policies.Snapshot) []string {
	var out []string
	for gvk, o := range snap.Objects() {
		if gvk.Kind == "CSINode" {
			continue
		}
		name := o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		out = append(out, gvk.Kind+" "+name)
	}
	for _, o := range snap.CSINodes {
		name := "CSINode " + o.Name
		for _, d := range o.Spec.Drivers {
			name += " (" + d.Name
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				name += " " + strconv.Itoa(int(*d.Allocatable.Count))
			}
			name += ")"
		}
		out = append(out, name)
	}
	return out
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	snap := twoClusters(t)
	snap.CSINodes = append(snap.CSINodes, fixture.CSINode("n1", "ebs.csi.aws.com=25"))
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
	if diff := cmp.Diff(Trim(snap).Pods[0], got.Pods[0]); diff != "" {
		t.Errorf("first pod, trimmed (-want +got):\n%s", diff)
	}
}

// TestReadSnapshot checks, on a fake clientset, that a namespace limits the namespaced objects
// and not the nodes and their CSINodes.
func TestReadSnapshot(t *testing.T) {
	snap := twoClusters(t)
	snap.CSINodes = append(snap.CSINodes, fixture.CSINode("n1", "ebs.csi.aws.com=25"))
	objs := appendObjects(appendObjects(nil, snap.Nodes), snap.Pods)
	objs = appendObjects(appendObjects(objs, snap.StatefulSets), snap.PodDisruptionBudgets)
	objs = appendObjects(objs, snap.CSINodes)
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
			if diff := cmp.Diff(names(&policies.Snapshot{CSINodes: snap.CSINodes}), names(&policies.Snapshot{CSINodes: got.CSINodes})); diff != "" {
				t.Errorf("CSINodes (-want +got):\n%s", diff)
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

// TestReadSnapshotPages checks the paged LISTs on a fake clientset that pages pods as
// kube-apiserver does (limit, continue): every pod is read once, in pages of the page size, and
// a continue token that expires (410 Expired) makes the pods be listed again from the start.
func TestReadSnapshotPages(t *testing.T) {
	snap := twoClusters(t)
	objs := appendObjects(appendObjects(nil, snap.Nodes), snap.Pods)
	for _, tc := range []struct {
		name       string
		pageSize   int64
		expireOnce bool
		wantLists  int
	}{
		{name: "page size 5 → a request per 5 pods", pageSize: 5, wantLists: (len(snap.Pods) + 4) / 5},
		{name: "page size 0 → one request", pageSize: 0, wantLists: 1},
		{name: "expired continue token → the pods listed again, none twice", pageSize: 5, expireOnce: true, wantLists: 2 + (len(snap.Pods)+4)/5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(objs...)
			lists, expired := 0, false
			client.PrependReactor("list", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				lists++
				opts := a.(clienttesting.ListActionImpl).ListOptions
				if tc.expireOnce && !expired && opts.Continue != "" {
					expired = true
					return true, nil, apierrors.NewResourceExpired("continue token expired")
				}
				start, _ := strconv.Atoi(opts.Continue)
				end := len(snap.Pods)
				if opts.Limit > 0 && start+int(opts.Limit) < end {
					end = start + int(opts.Limit)
				}
				list := &corev1.PodList{}
				for _, p := range snap.Pods[start:end] {
					list.Items = append(list.Items, *p)
				}
				if end < len(snap.Pods) {
					list.Continue = strconv.Itoa(end)
				}
				return true, list, nil
			})
			got, err := ReadSnapshotPaged(context.Background(), client, "", tc.pageSize)
			if err != nil {
				t.Fatal(err)
			}
			var want, gotNames []string
			for _, p := range snap.Pods {
				want = append(want, p.Name)
			}
			for _, p := range got.Pods {
				gotNames = append(gotNames, p.Name)
			}
			if diff := cmp.Diff(want, gotNames); diff != "" {
				t.Errorf("pods read (-want +got):\n%s", diff)
			}
			if lists != tc.wantLists {
				t.Errorf("%d LIST requests of pods, want %d", lists, tc.wantLists)
			}
		})
	}
}

// TestCheckSnapshot: a snapshot that cannot be one cluster's state is refused naming the
// objects (an object listed twice, a StatefulSet with negative replicas, pods on nodes it does not
// hold); the examples' snapshots pass.
func TestCheckSnapshot(t *testing.T) {
	example, err := os.ReadFile("../../examples/post-scale-down.yaml")
	if err != nil {
		t.Fatal(err)
	}
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: n9}\n"
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p9, namespace: redis}\nspec: {nodeName: n9}\n"
	sts := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: rc-s9, namespace: redis}\nspec: {replicas: -1}\n"
	for _, tc := range []struct {
		name string
		in   string
		want []string // phrases of the error; none: accepted
	}{
		{name: "the example → accepted", in: string(example)},
		{name: "a node and its pod, each once → accepted", in: string(example) + "---\n" + node + "---\n" + pod},
		{name: "the same List twice → refused naming the objects and the count", in: string(example) + "\n---\n" + string(example),
			want: []string{"snapshot: 26 objects listed more than once: Node n1 (2 times)", "and 16 more", "was a List given twice"}},
		{name: "a pod twice → refused naming it", in: string(example) + "---\n" + node + "---\n" + pod + "---\n" + pod,
			want: []string{"snapshot: 1 object listed more than once: Pod redis/p9 (2 times)"}},
		{name: "a node three times → refused naming it", in: string(example) + "---\n" + node + "---\n" + node + "---\n" + node,
			want: []string{"Node n9 (3 times)"}},
		{name: "a StatefulSet with replicas -1 → refused naming it", in: string(example) + "---\n" + sts,
			want: []string{"snapshot: StatefulSet redis/rc-s9: spec.replicas -1: must not be negative"}},
		{name: "a pod on a node not in it → refused naming the node", in: string(example) + "---\n" + pod,
			want: []string{"snapshot: 1 pod is bound to 1 node it does not contain: n9 (1 pod)"}},
		{name: "a duplicate and a negative StatefulSet → both", in: string(example) + "---\n" + node + "---\n" + node + "---\n" + sts,
			want: []string{"Node n9 (2 times)", "StatefulSet redis/rc-s9: spec.replicas -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, _, err := DecodeSnapshot(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckSnapshot(snap)
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want %q", err, w)
				}
			}
		})
	}
}
