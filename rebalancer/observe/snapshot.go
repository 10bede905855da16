// Package observe reads what a Kubernetes cluster and its Redis clusters look like now: a live
// snapshot from the API server (ReadSnapshot, listed in pages), an offline one from what kubectl
// prints (DecodeSnapshot, LoadSnapshotFile, read as a stream; EncodeSnapshot writes that form),
// both trimmed to what the model reads (Trim), the checks that a snapshot can be right
// (CheckSnapshot), the choice of Redis clusters by namespace and label selector (Selection),
// each pod's role and shard as Redis reports them (ApplyRedis, ReadRedis live; LoadRedisNodes and
// ApplyRedisNodes from CLUSTER NODES files), and the API requests a run makes
// (RequestCounter). It changes nothing.
//
// It imports policies (the snapshot and model types) and redisctl (CLUSTER NODES, read or
// parsed, converted once into policies.RedisNode: RedisNodes); plan, report and
// execute may import it, it imports none of them.
package observe

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// DefaultPageSize is the number of objects one LIST request asks for (kubectl's --chunk-size
// default).
const DefaultPageSize = 500

// ReadSnapshot is ReadSnapshotPaged with DefaultPageSize.
func ReadSnapshot(ctx context.Context, client kubernetes.Interface, namespace string) (*policies.Snapshot, error) {
	return ReadSnapshotPaged(ctx, client, namespace, DefaultPageSize)
}

// ReadSnapshotPaged lists what the rules need from the API server: every node and
// PersistentVolume, and the pods, StatefulSets, PodDisruptionBudgets and PersistentVolumeClaims
// of namespace (all namespaces when ""). Pods are listed whole (not by a Redis selector) because
// a topology spread constraint counts every matching pod in its namespace.
//
// Each resource is listed once, in pages of pageSize objects (client-go's pager; 0: one
// request), and each object is trimmed (see Trim) as its page arrives, so memory grows with what
// the snapshot keeps, not with the API server's objects. A list whose continue token expires
// before its last page (410 Expired: the pages took longer than the API server keeps a
// consistent view) is listed again from the start, once.
func ReadSnapshotPaged(ctx context.Context, client kubernetes.Interface, namespace string, pageSize int64) (*policies.Snapshot, error) {
	snap := &policies.Snapshot{}
	t := newTrimmer()
	lists := []struct {
		resource string
		list     pager.ListPageFunc
		reset    func()
		add      func(runtime.Object)
	}{
		{"nodes",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().Nodes().List(ctx, o)
			},
			func() { snap.Nodes = nil },
			func(o runtime.Object) { snap.Nodes = append(snap.Nodes, t.node(o.(*corev1.Node))) }},
		{"pods",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().Pods(namespace).List(ctx, o)
			},
			func() { snap.Pods = nil },
			func(o runtime.Object) { snap.Pods = append(snap.Pods, t.pod(o.(*corev1.Pod))) }},
		{"statefulsets",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.AppsV1().StatefulSets(namespace).List(ctx, o)
			},
			func() { snap.StatefulSets = nil },
			func(o runtime.Object) {
				snap.StatefulSets = append(snap.StatefulSets, t.statefulSet(o.(*appsv1.StatefulSet)))
			}},
		{"poddisruptionbudgets",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, o)
			},
			func() { snap.PodDisruptionBudgets = nil },
			func(o runtime.Object) {
				snap.PodDisruptionBudgets = append(snap.PodDisruptionBudgets, t.podDisruptionBudget(o.(*policyv1.PodDisruptionBudget)))
			}},
		{"persistentvolumeclaims",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, o)
			},
			func() { snap.PersistentVolumeClaims = nil },
			func(o runtime.Object) {
				snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, t.persistentVolumeClaim(o.(*corev1.PersistentVolumeClaim)))
			}},
		{"persistentvolumes",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().PersistentVolumes().List(ctx, o)
			},
			func() { snap.PersistentVolumes = nil },
			func(o runtime.Object) {
				snap.PersistentVolumes = append(snap.PersistentVolumes, t.persistentVolume(o.(*corev1.PersistentVolume)))
			}},
	}
	for _, l := range lists {
		p := pager.New(l.list)
		p.PageSize = pageSize
		// One page is decoded while the one before is trimmed; more would only hold pages.
		p.PageBufferSize = 1
		each := func(o runtime.Object) error { l.add(o); return nil }
		err := p.EachListItem(ctx, metav1.ListOptions{}, each)
		if apierrors.IsResourceExpired(err) {
			l.reset()
			err = p.EachListItem(ctx, metav1.ListOptions{}, each)
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", l.resource, err)
		}
	}
	return snap, nil
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

// maxNamedNodes is how many missing nodes CheckSnapshot names.
const maxNamedNodes = 10

// CheckSnapshot returns an error when snap cannot be a whole cluster's state: when pods that are
// bound to a node and neither finished nor terminating name nodes the snapshot does not hold
// (a dump of some nodes only, or of pods without their nodes). The error names the missing nodes
// (the first 10, by name) with their pod counts. An offline snapshot is checked; a live one is
// read whole, and a node deleted between the lists of nodes and pods is the API server's state
// for a moment, not a wrong input.
func CheckSnapshot(snap *policies.Snapshot) error {
	nodes := make(map[string]bool, len(snap.Nodes))
	for _, n := range snap.Nodes {
		nodes[n.Name] = true
	}
	missing := map[string]int{}
	pods := 0
	for _, p := range snap.Pods {
		n := p.Spec.NodeName
		if n == "" || nodes[n] || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		missing[n]++
		pods++
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for i, n := range names {
		if i == maxNamedNodes {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-maxNamedNodes))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d pods)", n, missing[n]))
	}
	return fmt.Errorf("snapshot: %d pods are bound to %d nodes it does not contain: %s (include every node: kubectl get nodes,pods,... -A)", pods, len(names), strings.Join(parts, ", "))
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
