package execute

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The steps that disrupt nothing, run before any failover or eviction: the maintenance window,
// the health gate, the placeability check and the PodDisruptionBudget dry run.

// windowStep is the window step: a maintenance window is open with time left for the whole
// move, so that a window that closes never cuts a move between its failover and the pod's return.
func (cr *clusterRun) windowStep(_ context.Context, m *moveRun) result {
	return cr.windowCheck(m, m.index, "the move")
}

// windowCheck continues when no window is configured, windows are ignored, or a window is open
// with time left for m's steps from index from on; otherwise it skips, saying when the next
// window opens or how much time is left against how much the steps need.
func (cr *clusterRun) windowCheck(m *moveRun, from int, what string) result {
	switch {
	case cr.handOff != "":
		return proceed("a hand-off before a disruption another tool makes (%s): maintenance windows do not apply", cr.handOff)
	case cr.windows.Always():
		return proceed("no maintenance window configured")
	case cr.cfg.IgnoreWindows:
		return proceed("maintenance windows ignored (--ignore-windows)")
	}
	now := cr.cfg.Clock.Now()
	need := cr.estimates.expected(m.steps[from:])
	closes, open := cr.windows.Open(now)
	if !open {
		return result{outcome: report.OutcomeSkip, stoppedBy: report.StepWindow, reason: cr.closedReason(now)}
	}
	left := closes.Sub(now)
	if left < need {
		return result{outcome: report.OutcomeSkip, stoppedBy: report.StepWindow,
			reason: fmt.Sprintf("maintenance window: closes at %s, in %s; %s needs up to %s (%s estimate)", timeText(closes), left.Round(time.Second), what, need.Round(time.Millisecond), cr.windows.StepEstimate())}
	}
	return proceed("window open until %s: %s left, %s needs up to %s (%s estimate)", timeText(closes), left.Round(time.Second), what, need.Round(time.Millisecond), cr.windows.StepEstimate())
}

// healthGate is the health gate: every pod Ready, Redis healthy. A cluster still resyncing is
// waited for.
func (cr *clusterRun) healthGate(ctx context.Context, m *moveRun) result {
	h, status, err := cr.waitHealthy(ctx, m.c, nil)
	if err != nil {
		return cr.healthResult(ctx, "health gate", status, err)
	}
	m.health = h
	return proceed("%s", healthText(h))
}

// placeable observes the cluster afresh and checks that the pod, re-created from its template,
// passes the filter on at least one node now (a node cordoned since the plan, for instance,
// would leave it Pending and its shard without a replica): on a node its volumes allow when it
// keeps its claims, on any when the move releases them, which it checks may still be (the
// claims still releasable, no other claim of the shard in flight).
func (cr *clusterRun) placeable(ctx context.Context, m *moveRun) result {
	model, err := observe.LiveFrom(ctx, cr.cfg.Source, cr.cfg.Policy, observe.Selection{Namespace: m.c.Namespace})
	if err != nil {
		return abort(fmt.Errorf("placeability: %w", err))
	}
	var fresh *policies.Cluster
	for _, c := range model.Clusters {
		if c.Key() == m.c.Key() {
			fresh = c
		}
	}
	i := -1
	if fresh != nil {
		for k, mem := range fresh.Members {
			if mem.Pod.Name == m.pod.Name {
				i = k
			}
		}
	}
	if i < 0 || fresh.Members[i].Pod.UID != m.pod.UID || fresh.Members[i].Terminating {
		return skip("placeability: pod %s changed since it was planned (gone, re-created or terminating)", m.pod.Name)
	}
	m.pod = fresh.Members[i].Pod
	// The roles are Redis's, as the cluster was last observed: whether the pod's claims may be
	// released depends on them (a master is failed over first).
	if k := slices.IndexFunc(m.c.Members, func(mem *policies.Member) bool { return mem.Pod.Name == m.pod.Name }); k >= 0 {
		fresh.Members[i].Role, fresh.Members[i].EmptyMaster = m.c.Members[k].Role, m.c.Members[k].EmptyMaster
	}
	cands := fresh.Candidates(fresh.Current(), i)
	release := ""
	switch {
	case len(m.mv.ReleaseClaims) > 0:
		if got := fresh.ReleasableClaims(i); !sameSet(got, m.mv.ReleaseClaims) {
			why := fresh.ClaimsKept(i)
			if why == "" {
				why = fmt.Sprintf("its releasable claims are %v", got)
			}
			return skip("placeability: the plan releases claims %s of %s, which may not be released now: %s", strings.Join(m.mv.ReleaseClaims, ", "), m.pod.Name, why)
		}
		if why := cr.shardSettled(ctx, m); why != "" {
			return skip("placeability: %s", why)
		}
		release = fmt.Sprintf(" (its claims %s released: any zone)", strings.Join(m.mv.ReleaseClaims, ", "))
	case fresh.ClaimsReleasable(i):
		// It keeps its claims: only the nodes their volumes allow.
		cands = slices.DeleteFunc(cands, func(n int) bool { return !fresh.VolumesAllow(i, n) })
		release = " (it keeps its claims: its volumes' nodes)"
	}
	if len(cands) == 0 && m.mv.WaitsPending {
		return proceed("re-created from its template now, %s fits no node, as the plan says: it waits Pending until a later move frees room (%s)", m.pod.Name, fresh.Explain(fresh.Current(), i).Summary())
	}
	if len(cands) == 0 {
		return skip("placeability: %s, re-created from its template now, fits no node: %s", m.pod.Name, fresh.Explain(fresh.Current(), i).Summary())
	}
	names := make([]string, len(cands))
	for k, n := range cands {
		names[k] = model.Nodes[n].Name
	}
	return proceed("re-created from its template now, %s fits %s%s", m.pod.Name, strings.Join(names, ", "), release)
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(s string) bool { return !slices.Contains(b, s) })
}

// pdbDryRun is the PodDisruptionBudget check, with the run's eviction limits: it reserves the
// eviction against the limits, then asks the API server for a dry-run eviction. A 429 means a
// PodDisruptionBudget forbids it now (skip); any other error, such as the 500 of a pod covered by
// more than one PodDisruptionBudget, aborts.
func (cr *clusterRun) pdbDryRun(ctx context.Context, m *moveRun) result {
	release, err := cr.budget.reserve(m.pod)
	if err != nil {
		r := skip("eviction limit: %v", err)
		r.stoppedBy = report.StoppedEvictionLimit
		return r
	}
	m.release = release
	pod := m.pod
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err = cr.cfg.Client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
	switch {
	case err == nil:
		return proceed("eviction dry run accepted: the PodDisruptionBudget allows it")
	case apierrors.IsTooManyRequests(err) && guard.Denied(err.Error(), guard.ReasonMaster):
		// The eviction guard holds a master's eviction until its failover, which comes next;
		// it answers before the PodDisruptionBudget is asked, so the eviction itself asks it.
		return proceed("the eviction guard holds %s's eviction while it is a master (the failover comes next); the PodDisruptionBudget is asked at the eviction", pod.Name)
	case apierrors.IsTooManyRequests(err):
		return skip("PodDisruptionBudget forbids evicting %s now: %v", pod.Name, err)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return skip("pod %s changed since it was planned: %v", pod.Name, err)
	}
	return abort(fmt.Errorf("eviction dry run for %s: %w", pod.Name, err))
}
