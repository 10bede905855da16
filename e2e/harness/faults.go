package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
)

// Faults a test inflicts on an environment, and the conditions it waits for: a node's
// redis-servers paused as if the node were lost, and a pod that kube-scheduler cannot place.

// PauseNode stops (redisrt.Runtime.Pause) the redis-server of every environment pod bound to
// node, as when the node is lost, and returns them. The pods stay as they are.
func (e *Env) PauseNode(ctx context.Context, node string) ([]redisrt.ServerInfo, error) {
	pods, err := e.Client().CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
	if err != nil {
		return nil, fmt.Errorf("harness: pause node %s: %w", node, err)
	}
	var paused []redisrt.ServerInfo
	for _, p := range pods.Items {
		if p.Spec.NodeName != node {
			continue
		}
		s, err := e.Runtime.Pause(e.Namespace, p.Name)
		if err != nil {
			return paused, fmt.Errorf("harness: pause node %s: %w", node, err)
		}
		paused = append(paused, s)
	}
	return paused, nil
}

// ResumeNode resumes the servers PauseNode paused.
func (e *Env) ResumeNode(paused []redisrt.ServerInfo) error {
	var errs []error
	for _, s := range paused {
		if _, err := e.Runtime.Resume(s.Namespace, s.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WaitUnschedulable waits up to timeout until kube-scheduler has tried and failed to place the
// environment's pod (PodScheduled False, reason Unschedulable).
func (e *Env) WaitUnschedulable(ctx context.Context, pod string, timeout time.Duration) error {
	var getErr error // the last failed get, the cause when the poll times out
	err := poll(ctx, 100*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		p, err := e.Client().CoreV1().Pods(e.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if getErr = err; err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		if getErr != nil {
			err = fmt.Errorf("%w (get pod: %w)", err, getErr)
		}
		return fmt.Errorf("harness: pod %s not found Unschedulable within %v: %w", pod, timeout, err)
	}
	return nil
}
