package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// Defaults of NodeSpec.
const (
	// DefaultNodeCPU is a node's allocatable CPU when NodeSpec.CPU is empty.
	DefaultNodeCPU = "32"
	// DefaultNodeMemory is a node's allocatable memory when NodeSpec.Memory is empty.
	DefaultNodeMemory = "256Gi"
	// DefaultNodePods is a node's allocatable pod count when NodeSpec.Pods is 0.
	DefaultNodePods = 110
	// DefaultNodeEphemeralStorage is a node's allocatable ephemeral storage unless
	// NodeSpec.Resources gives it (a kubelet always reports it).
	DefaultNodeEphemeralStorage = "100Gi"
)

// Well-known node labels set by AddNode.
const (
	// LabelHostname is set to the node's name.
	LabelHostname = "kubernetes.io/hostname"
	// LabelZone is set to NodeSpec.Zone when it is not empty.
	LabelZone = "topology.kubernetes.io/zone"
	// LabelType is set to "kwok" on every node.
	LabelType = "type"
)

// nodeTimeout bounds how long AddNode and DeleteNode wait.
const nodeTimeout = 30 * time.Second

// NodeSpec describes a kwok node. Name is required.
type NodeSpec struct {
	// Name is the node's name and its kubernetes.io/hostname label.
	Name string
	// Zone is the topology.kubernetes.io/zone label; not set when empty.
	Zone string
	// Labels are added to the node's labels (type=kwok, kubernetes.io/os=linux,
	// kubernetes.io/arch=amd64); they cannot override the hostname and zone labels.
	Labels map[string]string
	// Taints are added to the taint every kwok node has (fixture.KwokTaint).
	Taints []corev1.Taint
	// Unschedulable cordons the node.
	Unschedulable bool
	// CPU and Memory are the node's capacity and allocatable resources, as quantities
	// (DefaultNodeCPU and DefaultNodeMemory when empty).
	CPU, Memory string
	// Pods is the node's pod capacity (DefaultNodePods when 0).
	Pods int
	// Resources are further resources the node offers (capacity and allocatable): its
	// ephemeral-storage (DefaultNodeEphemeralStorage when not given), extended resources,
	// hugepages.
	Resources corev1.ResourceList
}

// AddNode creates a kwok node and waits until it is Ready and has no not-ready taint left, so
// the scheduler places pods on it right away. The i-th node added to the cluster (from 1; indexes
// are not reused) gets the pod CIDR <PodNetwork>.<i>.0/24 and the InternalIP <PodNetwork>.0.<i>.
// It returns the node as it is then.
func (c *Cluster) AddNode(ctx context.Context, spec NodeSpec) (*corev1.Node, error) {
	if errs := validation.IsDNS1123Subdomain(spec.Name); len(errs) > 0 {
		return nil, fmt.Errorf("localcluster: node name %q: %v", spec.Name, errs)
	}
	if spec.CPU == "" {
		spec.CPU = DefaultNodeCPU
	}
	if spec.Memory == "" {
		spec.Memory = DefaultNodeMemory
	}
	if spec.Pods == 0 {
		spec.Pods = DefaultNodePods
	}
	cpu, err := resource.ParseQuantity(spec.CPU)
	if err != nil {
		return nil, fmt.Errorf("localcluster: node %s: CPU: %w", spec.Name, err)
	}
	memory, err := resource.ParseQuantity(spec.Memory)
	if err != nil {
		return nil, fmt.Errorf("localcluster: node %s: Memory: %w", spec.Name, err)
	}
	if spec.Pods < 0 {
		return nil, fmt.Errorf("localcluster: node %s: negative Pods %d", spec.Name, spec.Pods)
	}

	c.mu.Lock()
	i := c.nextNode
	c.nextNode++
	c.mu.Unlock()
	if i > 254 {
		return nil, fmt.Errorf("localcluster: node %s: no pod CIDR left (254 nodes per cluster)", spec.Name)
	}
	podCIDR := fmt.Sprintf("%s.%d.0/24", c.cfg.PodNetwork, i)
	nodeIP := fmt.Sprintf("%s.0.%d", c.cfg.PodNetwork, i)

	labels := map[string]string{
		LabelType:                "kwok",
		corev1.LabelOSStable:     "linux",
		corev1.LabelArchStable:   "amd64",
		corev1.LabelInstanceType: "kwok",
	}
	maps.Copy(labels, spec.Labels)
	labels[LabelHostname] = spec.Name
	if spec.Zone != "" {
		labels[LabelZone] = spec.Zone
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              cpu,
		corev1.ResourceMemory:           memory,
		corev1.ResourcePods:             *resource.NewQuantity(int64(spec.Pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse(DefaultNodeEphemeralStorage),
	}
	maps.Copy(resources, spec.Resources)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        spec.Name,
			Labels:      labels,
			Annotations: map[string]string{KwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:       podCIDR,
			PodCIDRs:      []string{podCIDR},
			Taints:        append([]corev1.Taint{fixture.KwokTaint()}, spec.Taints...),
			Unschedulable: spec.Unschedulable,
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			// Both, or kwok fills in its own.
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeIP},
				{Type: corev1.NodeHostName, Address: spec.Name},
			},
		},
	}
	if _, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("localcluster: node %s: %w", spec.Name, err)
	}
	var last *corev1.Node
	err = wait.PollUntilContextTimeout(ctx, pollInterval, nodeTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, spec.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient; retried until the deadline
		}
		last = n
		return nodeUsable(n), nil
	})
	if err != nil {
		if last != nil {
			return nil, fmt.Errorf("localcluster: node %s: not ready after %v (conditions %v, taints %v; kwok log: %s): %w",
				spec.Name, nodeTimeout, last.Status.Conditions, last.Spec.Taints, c.logPath("kwok"), err)
		}
		return nil, fmt.Errorf("localcluster: node %s: not ready after %v (kwok log: %s): %w", spec.Name, nodeTimeout, c.logPath("kwok"), err)
	}
	return last, nil
}

// nodeUsable reports whether n is Ready and the node lifecycle controller has removed the
// not-ready taint that the apiserver adds to new nodes.
func nodeUsable(n *corev1.Node) bool {
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return true
}

// DeleteNode removes a node as if its machine vanished: it deletes the node, force-deletes
// (grace period 0, no PodDisruptionBudget check) the pods bound to it so that their controllers
// recreate them at once instead of after the pod garbage collector's delay, and waits until the
// node is gone. Deleting a node that does not exist is an error (IsNotFound).
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	if err := c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("localcluster: delete node %s: %w", name, err)
	}
	pods, err := c.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String(),
	})
	if err != nil {
		return fmt.Errorf("localcluster: delete node %s: list its pods: %w", name, err)
	}
	var errs []error
	for _, p := range pods.Items {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, *metav1.NewDeleteOptions(0))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("localcluster: delete node %s: delete its pods: %w", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, nodeTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("localcluster: delete node %s: still there after %v: %w", name, nodeTimeout, err)
	}
	return nil
}

// Namespace creates the namespace name (an existing one is fine) and waits until its default
// ServiceAccount exists: pods cannot be created in a namespace before that.
func (c *Cluster) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		ns, err = c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("localcluster: namespace %s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, nodeTimeout)
	defer cancel()
	if err := c.waitServiceAccount(ctx, name); err != nil {
		return nil, err
	}
	return ns, nil
}
