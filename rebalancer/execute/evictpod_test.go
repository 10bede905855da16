package execute

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestEvictPod runs post-scale-down with Config.EvictPod set (as the descheduler plugin sets it):
// the function makes every eviction, after the same steps, and its errors are judged as the
// PodEvictor's.
func TestEvictPod(t *testing.T) {
	for _, tc := range []struct {
		name string
		// answer is what EvictPod returns instead of evicting (nil: it evicts through the API).
		answer      error
		wantOutcome string
		wantStopped string
		wantEvicted bool
	}{
		{name: "it evicts: the move completes, every step as without it", wantOutcome: report.OutcomeContinue, wantEvicted: true},
		{name: "a descheduler limit error: the move skips at evict, stopped by the limit",
			answer: fmt.Errorf("%w (maxPodsToEvictTotal 0)", evictions.NewEvictionTotalLimitError()), wantOutcome: report.OutcomeSkip, wantStopped: report.StoppedEvictionLimit},
		{name: "a 429 as the PodEvictor words it: the move skips at evict",
			answer: errors.New("error when evicting pod (ignoring) \"redis-s0-0\": Too many requests"), wantOutcome: report.OutcomeSkip, wantStopped: report.StepEvict},
		{name: "any other error: the move aborts at evict, the run returns it",
			answer: errors.New("the profile's evictor filters pod redis/redis-s0-0 out"), wantOutcome: report.OutcomeAbort, wantStopped: report.StepEvict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestbed(t, scenario.PostScaleDown())
			var mu sync.Mutex
			var asked []string
			rep, err := runExecutor(t, tb, func(c *Config) {
				c.EvictPod = func(ctx context.Context, pod *corev1.Pod) error {
					mu.Lock()
					asked = append(asked, pod.Name)
					mu.Unlock()
					if tc.answer != nil {
						return tc.answer
					}
					return c.Client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}})
				}
			})
			if (err != nil) != (tc.wantOutcome == report.OutcomeAbort) {
				t.Errorf("Run error = %v, want one only when the move aborts", err)
			}
			cr := rep.Clusters[0]
			m := cr.Moves[0]
			if m.Outcome != tc.wantOutcome || m.Evicted != tc.wantEvicted || cr.StoppedBy != tc.wantStopped {
				t.Errorf("first move: outcome %q, evicted %v, cluster stopped by %q; want %q, %v, %q", m.Outcome, m.Evicted, cr.StoppedBy, tc.wantOutcome, tc.wantEvicted, tc.wantStopped)
			}
			// The master was failed over first, whatever EvictPod then said: the pod it was
			// asked to evict was a replica.
			if m.Failover == nil || m.RoleAtEviction != policies.RoleReplica {
				t.Errorf("first move: failover %+v, role at eviction %q; want a failover, then a replica", m.Failover, m.RoleAtEviction)
			}
			if diff := cmp.Diff([]string{podName(m.Pod)}, asked); diff != "" {
				t.Errorf("pods EvictPod was asked to evict (-want +got):\n%s", diff)
			}
			var want []string
			if tc.wantEvicted {
				want = []string{podName(m.Pod)}
			}
			if diff := cmp.Diff(want, tb.evicted()); diff != "" {
				t.Errorf("pods evicted (-want +got):\n%s", diff)
			}
		})
	}
}
