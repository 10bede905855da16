package observe

import (
	"bytes"
	"context"
	"strconv"
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
