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
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// ReadSnapshotPaged lists what the rules need from the API server: every node, PersistentVolume
// and CSINode (storage.k8s.io/v1: the nodes' CSI attach limits), and the pods, StatefulSets,
// PodDisruptionBudgets, PersistentVolumeClaims and Services (the per-pod LoadBalancers a Redis
// node may announce) of namespace (all namespaces when ""). Pods
// are listed whole (not by a Redis selector) because a topology spread constraint counts every
// matching pod in its namespace.
//
// Each resource is listed once, in pages of pageSize objects (client-go's pager; 0: one
// request), and each object is trimmed (see Trim) as its page arrives, so memory grows with what
// the snapshot keeps, not with the API server's objects. A list whose continue token expires
// before its last page (410 Expired: the pages took longer than the API server keeps a
// consistent view) is listed again from the start, once.
func ReadSnapshotPaged(ctx context.Context, client kubernetes.Interface, namespace string, pageSize int64) (*policies.Snapshot, error) {
	snap := &policies.Snapshot{}
	t := newTrimmer()
	core, apps, policy, storage := client.CoreV1(), client.AppsV1(), client.PolicyV1(), client.StorageV1()
	lists := []pagedList{
		pagedInto("nodes", core.Nodes().List, &snap.Nodes, t.node),
		pagedInto("pods", core.Pods(namespace).List, &snap.Pods, t.pod),
		pagedInto("statefulsets", apps.StatefulSets(namespace).List, &snap.StatefulSets, t.statefulSet),
		pagedInto("poddisruptionbudgets", policy.PodDisruptionBudgets(namespace).List, &snap.PodDisruptionBudgets, t.podDisruptionBudget),
		pagedInto("persistentvolumeclaims", core.PersistentVolumeClaims(namespace).List, &snap.PersistentVolumeClaims, t.persistentVolumeClaim),
		pagedInto("persistentvolumes", core.PersistentVolumes().List, &snap.PersistentVolumes, t.persistentVolume),
		pagedInto("csinodes", storage.CSINodes().List, &snap.CSINodes, t.csiNode),
		pagedInto("services", core.Services(namespace).List, &snap.Services, t.service),
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

// pagedList is one resource ReadSnapshotPaged lists: its LIST call, how to forget what an
// expired list kept, and how to keep one object of a page.
type pagedList struct {
	resource string
	list     pager.ListPageFunc
	reset    func()
	add      func(runtime.Object)
}

// pagedInto returns the pagedList of a resource whose LIST is list and whose objects are kept,
// trimmed by trim, in *dst.
func pagedInto[L runtime.Object, T any](resource string, list func(context.Context, metav1.ListOptions) (L, error), dst *[]*T, trim func(*T) *T) pagedList {
	return pagedList{
		resource: resource,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, o)
		},
		reset: func() { *dst = nil },
		add:   func(o runtime.Object) { *dst = append(*dst, trim(any(o).(*T))) },
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

// maxNamedNodes is how many missing nodes, and duplicate objects, CheckSnapshot names.
const maxNamedNodes = 10

// CheckSnapshot returns an error when snap cannot be a whole cluster's state, naming every
// problem:
//   - an object listed twice (the same kind, namespace and name: a List given twice, or dumps
//     put together), naming the objects (the first 10, by kind and name) and how often each is
//     listed;
//   - a StatefulSet with negative spec.replicas (the API server stores none), naming it;
//   - pods bound to a node and neither finished nor terminating that name nodes the snapshot does
//     not hold (a dump of some nodes only, or of pods without their nodes), naming the missing
//     nodes (the first 10, by name) with their pod counts.
//
// An offline snapshot is checked; a live one is read whole, and a node deleted between the lists
// of nodes and pods is the API server's state for a moment, not a wrong input.
func CheckSnapshot(snap *policies.Snapshot) error {
	var errs []error
	if err := checkDuplicates(snap); err != nil {
		errs = append(errs, err)
	}
	for _, s := range snap.StatefulSets {
		if r := s.Spec.Replicas; r != nil && *r < 0 {
			errs = append(errs, fmt.Errorf("snapshot: StatefulSet %s/%s: spec.replicas %d: must not be negative (the API server stores none; was this dump edited?)", s.Namespace, s.Name, *r))
		}
	}
	if err := checkNodesHeld(snap); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkDuplicates refuses an object listed twice or more in snap.
func checkDuplicates(snap *policies.Snapshot) error {
	seen := map[string]int{}
	var order []string
	for gvk, o := range snap.Objects() {
		name := o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		key := gvk.Kind + " " + name
		if seen[key]++; seen[key] == 2 {
			order = append(order, key)
		}
	}
	if len(order) == 0 {
		return nil
	}
	parts := make([]string, 0, min(len(order), maxNamedNodes+1))
	for i, k := range order {
		if i == maxNamedNodes {
			parts = append(parts, fmt.Sprintf("and %d more", len(order)-maxNamedNodes))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d times)", k, seen[k]))
	}
	return fmt.Errorf("snapshot: %s listed more than once: %s (was a List given twice, or dumps put together? give each object once)", policies.Plural(len(order), "object"), strings.Join(parts, ", "))
}

// checkNodesHeld refuses pods bound to nodes snap does not hold (CheckSnapshot).
func checkNodesHeld(snap *policies.Snapshot) error {
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
		parts = append(parts, fmt.Sprintf("%s (%s)", n, policies.Plural(missing[n], "pod")))
	}
	are := "are"
	if pods == 1 {
		are = "is"
	}
	return fmt.Errorf("snapshot: %s %s bound to %s it does not contain: %s (include every node: kubectl get nodes,pods,... -A)", policies.Plural(pods, "pod"), are, policies.Plural(len(names), "node"), strings.Join(parts, ", "))
}

// EncodeSnapshot writes snap as one YAML List, the form `kubectl get -o yaml` prints and
// DecodeSnapshot reads: every object of snap (policies.Snapshot.Objects, in its order), copied
// with its apiVersion and kind set.
func EncodeSnapshot(w io.Writer, snap *policies.Snapshot) error {
	var items []any
	for gvk, o := range snap.Objects() {
		obj := o.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		items = append(items, obj)
	}
	b, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	_, err = w.Write(b)
	return err
}
