package execute

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The steps of a move, in the order steps() lists them, and what they
// share: the step funcs are in steps_gate.go (window, health gate, placeability, PDB dry run),
// steps_failover.go (failover, client drain, role check), steps_evict.go (eviction,
// re-creation, rejoin, re-observe) and steps_release.go (the claims' release after the eviction,
// and the re-introduction of the pod's node that comes back empty); move.go runs them. Each reason starts with what said no
// ("health gate: ...", "PodDisruptionBudget forbids ...", "failover refused: ..."), so that its
// first words tell an operator where the move stopped.

// step is one step of a move: a safety check, a request that disrupts, or a wait.
type step struct {
	// name is a report.Step… name.
	name string
	// bound is the longest the step may take: the timeouts of its waits, or RequestTimeout.
	bound time.Duration
	// deadline gives the step a context that ends after bound (steps without a timeout of their
	// own); the waits keep their own timeouts instead, so that their error is theirs.
	deadline bool
	// wait marks a step that only waits: a graceful stop abandons it (Config.Stop). The other
	// steps are requests, which finish.
	wait bool
	run  func(ctx context.Context, m *moveRun) result
}

// steps returns the steps of a planned move, in order, with their bounds: an eviction's, or a
// failover step's (MasterQuorum), which are the eviction's steps that move no pod (failoverStep),
// with the same bounds and the same waits. An eviction that releases the pod's claims
// (plan.Move.ReleaseClaims) has the release step after the eviction, and its rejoin waits for a
// full sync (FullSyncTimeout).
func (cr *clusterRun) steps(mv plan.Move) []step {
	c := cr.cfg
	rejoin := c.RejoinTimeout
	if len(mv.ReleaseClaims) > 0 {
		rejoin = c.FullSyncTimeout
	}
	all := []step{
		{name: report.StepWindow, run: cr.windowStep},
		{name: report.StepHealthGate, bound: c.HealthTimeout, wait: true, run: cr.healthGate},
		{name: report.StepPlaceable, bound: c.RequestTimeout, deadline: true, run: cr.placeable},
		{name: report.StepPDBDryRun, bound: c.RequestTimeout, deadline: true, run: cr.pdbDryRun},
		{name: report.StepFailover, bound: c.RequestTimeout + c.FailoverTimeout, run: cr.failover},
		{name: report.StepDrain, bound: c.DrainTimeout, wait: true, run: cr.drain},
		{name: report.StepRoleCheck, bound: c.RequestTimeout, deadline: true, run: cr.roleCheck},
		{name: report.StepEvict, bound: c.RequestTimeout, deadline: true, run: cr.evict},
		{name: report.StepRelease, bound: c.RequestTimeout, deadline: true, run: cr.release},
		{name: report.StepRecreate, bound: c.RecreateTimeout, wait: true, run: cr.recreate},
		{name: report.StepRejoin, bound: rejoin, wait: true, run: cr.rejoin},
		{name: report.StepReobserve, bound: c.RequestTimeout + c.HealthTimeout, wait: true, run: cr.reobserve},
	}
	if mv.Kind != plan.KindFailover {
		if len(mv.ReleaseClaims) == 0 {
			all = slices.DeleteFunc(all, func(s step) bool { return s.name == report.StepRelease })
		}
		return all
	}
	var fo []step
	for _, s := range all {
		if failoverStep[s.name] {
			fo = append(fo, s)
		}
	}
	return fo
}

// failoverStep names the steps of a plan's failover step: the same gate as an eviction's, and no
// pod moves: window → health gate → failover to the replica the plan names, verified → client
// drain → re-observe.
var failoverStep = map[string]bool{
	report.StepWindow: true, report.StepHealthGate: true, report.StepFailover: true,
	report.StepDrain: true, report.StepReobserve: true,
}

// moveRun is the state one move's steps share while the move is under way (plan.Move is the
// move as planned; report.MoveResult, rep, the move as it happened).
type moveRun struct {
	// c is the cluster as last observed (the placeability check observes it afresh).
	c  *policies.Cluster
	mv plan.Move
	// plan is the plan mv is the first move of.
	plan plan.Plan
	// pod is the pod to move, as last observed; addr its Redis address.
	pod  *corev1.Pod
	addr string
	// health is the health gate's verdict (its Redis topology gives the pod's role).
	health observe.Health
	// masterID is the master the re-created pod must replicate (its shard's master after the
	// failover); nodeID the pod's own Redis node ID before the move.
	masterID, nodeID string
	// released maps each claim the release step deleted to its UID (the re-created claim has
	// another one).
	released map[string]types.UID
	// release gives back the eviction reserved against the run's limits, unless it was made.
	release func()
	// recreated is the pod the StatefulSet re-created; after the cluster observed at the end.
	recreated *corev1.Pod
	after     *policies.Cluster
	// steps are the move's steps; index the one running.
	steps []step
	index int
	rep   *report.MoveResult
}

// result is what a step returns: continue (with an optional note), skip (a safety check said
// no; the reason), or abort (an error).
type result struct {
	outcome string // report.OutcomeContinue, OutcomeSkip or OutcomeAbort
	// reason is the note of a step that continued, or why it skipped.
	reason string
	// err is why the step aborted.
	err error
	// stoppedBy, when set, names what stopped the cluster instead of the step (report.StepWindow
	// for the window re-check the failover step makes).
	stoppedBy string
}

func proceed(format string, args ...any) result {
	return result{outcome: report.OutcomeContinue, reason: fmt.Sprintf(format, args...)}
}

func skip(format string, args ...any) result {
	return result{outcome: report.OutcomeSkip, reason: fmt.Sprintf(format, args...)}
}

func abort(err error) result { return result{outcome: report.OutcomeAbort, err: err} }

// text is the reason or the error's text.
func (r result) text() string {
	if r.err != nil {
		return r.err.Error()
	}
	return r.reason
}
