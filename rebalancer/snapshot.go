package rebalancer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
