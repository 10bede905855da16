package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
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

// ReplicationLag bounds how long a write a master acknowledged may take to reach its replicas on
// the test beds (every server on one machine; the replication stream lags by milliseconds): a
// write acknowledged this long before its master was lost is counted as possibly not replicated.
const ReplicationLag = time.Second

// Loss is a loss of redis-servers a test inflicted (PauseNode, then ResumeNode), kept so that the
// acknowledged writes Redis Cluster itself may lose in it can be told from the ones the rebalancer
// must never lose. Redis Cluster "does not guarantee strong consistency" (the Redis Cluster
// specification and tutorial, "Redis Cluster consistency guarantees") and names two ways a write
// is lost; Explains admits exactly those, for the slots the lost masters served:
//   - asynchronous replication: the master acknowledged the write and was lost before sending it
//     to its replica, which was then promoted (acknowledged from ReplicationLag before Paused up
//     to PauseDone);
//   - the minority side: the old master came back still serving its slots until it learned of
//     its replica's promotion, acknowledged a write from a client with a stale slot map, then
//     became a replica and dropped it (acknowledged between Resumed and Settled).
type Loss struct {
	// Nodes are the nodes whose servers were paused.
	Nodes []string
	// Slots are the slots served by masters among the paused servers when they were paused.
	Slots []redisctl.SlotRange
	// Paused is when the first server was about to be paused, PauseDone when the last was;
	// Resumed is when the first was about to be resumed, Settled when the cluster was healthy
	// again (or the wait for it ended).
	Paused, PauseDone, Resumed, Settled time.Time
}

// Explains reports whether w may have been lost to l by Redis Cluster's design (see Loss).
func (l Loss) Explains(w LostWrite) bool {
	in := slices.ContainsFunc(l.Slots, func(r redisctl.SlotRange) bool { return r.Start <= w.Slot && w.Slot <= r.End })
	within := func(from, to time.Time) bool { return !w.Acked.Before(from) && !w.Acked.After(to) }
	return in && (within(l.Paused.Add(-ReplicationLag), l.PauseDone) || within(l.Resumed, l.Settled))
}

// ServedSlots returns the slots served now by masters among the environment's pods bound to
// nodes, as the Redis Cluster's servers agree (redisctl.Client.Topology). Call it before pausing
// them: a paused server answers nobody.
func (e *Env) ServedSlots(ctx context.Context, nodes []string) ([]redisctl.SlotRange, error) {
	pods, err := e.Client().CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
	if err != nil {
		return nil, fmt.Errorf("harness: slots served on %v: %w", nodes, err)
	}
	topo, err := e.Redis.Topology(ctx, e.Addrs())
	if err != nil {
		return nil, fmt.Errorf("harness: slots served on %v: %w", nodes, err)
	}
	var slots []redisctl.SlotRange
	for _, p := range pods.Items {
		if !slices.Contains(nodes, p.Spec.NodeName) || p.Status.PodIP == "" {
			continue
		}
		if n, ok := topo.NodeByIP(p.Status.PodIP); ok && n.IsMaster() {
			slots = append(slots, n.Slots...)
		}
	}
	return slots, nil
}
