package report

// Outcome is how a pass (`run`, or one of serve's passes) ended, for the whole run (Run.Outcome)
// and for each Redis cluster (ClusterRun.Outcome). The same strings are the JSON report's
// `outcome` and the metrics' `outcome` label; `run`'s exit status follows from the run's outcome
// (docs/operations.md has the table: outcome → exit status → Job status → what to alert on).
type Outcome string

// The outcomes. Compliant, Progressing, OutsideWindow, LeaseHeld and DryRun are expected: the
// pass did what it could and the next one goes on (run exits 0). Partial, NeedsAttention and
// Error are not (run exits 3, 3 and 1).
const (
	// OutcomeCompliant: every hard rule holds and Redis is healthy at the end of the pass
	// (nothing to do, or done).
	OutcomeCompliant Outcome = "compliant"
	// OutcomeProgressing: not compliant yet, and the pass stopped for a budget it was given
	// (the move budget, an eviction limit) or a graceful stop: the next pass continues.
	OutcomeProgressing Outcome = "progressing"
	// OutcomeOutsideWindow: not compliant, and no maintenance window was open (or the open one
	// had no time left for the next move): the next pass inside a window continues.
	OutcomeOutsideWindow Outcome = "outsideWindow"
	// OutcomeLeaseHeld: another run or serve held the Lease for the whole wait: this pass
	// observed nothing and changed nothing (Run.Lease names the holder).
	OutcomeLeaseHeld Outcome = "leaseHeld"
	// OutcomeDryRun: a dry run planned and changed nothing.
	OutcomeDryRun Outcome = "dryRun"
	// OutcomeNeedsAttention: not compliant, and this pass could not get it there: no plan
	// reaches compliance, Redis is not healthy, a safety check skipped the move (a
	// PodDisruptionBudget, no node fits the pod, the failover refused, the role check), or the
	// scheduler keeps undoing the moves. Another pass alone will not fix it.
	OutcomeNeedsAttention Outcome = "needsAttention"
	// OutcomePartial: not compliant, and no plan reaches compliance, but Redis is as safe as
	// failovers make it: MasterQuorum holds (this pass failed masters over until it did, or found
	// it holding), and Redis is healthy. The cluster survives the loss of any one node (and zone);
	// the placement needs what no eviction gives (room in a zone, a claim released, a relaxed
	// constraint: ClusterRun.Partial says which). Another pass alone will not fix the placement.
	OutcomePartial Outcome = "partial"
	// OutcomeError: the pass failed: a bad policy or flag, the API server or Redis unreachable,
	// a step that aborted, a cluster that could not be observed, the Lease lost. Run.Error (and
	// ClusterRun.Error) says why.
	OutcomeError Outcome = "error"
)

// Outcomes lists every outcome, from the most to the least severe: a run's outcome is the most
// severe of its clusters' (Run.Classify).
var Outcomes = []Outcome{OutcomeError, OutcomeNeedsAttention, OutcomePartial, OutcomeLeaseHeld, OutcomeProgressing, OutcomeOutsideWindow, OutcomeDryRun, OutcomeCompliant}

// Expected reports whether o is an expected outcome: the pass did what it could, and a Job that
// ran it completes (run exits 0).
func (o Outcome) Expected() bool {
	return o != OutcomeError && o != OutcomeNeedsAttention && o != OutcomePartial
}

// severity is o's rank in Outcomes (0: the most severe).
func (o Outcome) severity() int {
	for i, v := range Outcomes {
		if v == o {
			return i
		}
	}
	return 0
}

// ClusterOutcome is the outcome of one cluster's part of a pass: OutcomeError when it ended in
// an error, OutcomeCompliant when it complies, else by what stopped it: OutcomeOutsideWindow (the
// window step), OutcomeProgressing (the move budget, an eviction limit, a graceful stop),
// OutcomeDryRun, OutcomePartial (no plan, MasterQuorum holds and Redis is healthy:
// ClusterRun.Partial), and OutcomeNeedsAttention for anything else (no plan while Redis is not as
// safe as failovers make it, off track, a step that skipped the move for safety, or nothing
// stopped it and Redis is not healthy).
func ClusterOutcome(c *ClusterRun) Outcome {
	switch {
	case c.Error != "":
		return OutcomeError
	case c.Compliant:
		return OutcomeCompliant
	}
	switch c.StoppedBy {
	case StepWindow:
		return OutcomeOutsideWindow
	case StoppedMaxMoves, StoppedEvictionLimit, StoppedGracefulStop, StoppedHandOff:
		return OutcomeProgressing
	case StoppedDryRun:
		return OutcomeDryRun
	case StoppedNoPlan:
		if c.Partial != nil && c.Partial.QuorumHolds && c.Health.Healthy() {
			return OutcomePartial
		}
	}
	return OutcomeNeedsAttention
}

// Classify sets the outcome of every cluster of r (ClusterOutcome) and of r itself: the most
// severe of its clusters' (OutcomeCompliant without any), OutcomeError when runErr is set (r.Error
// then holds it). A run that held no Lease is classified by the caller (OutcomeLeaseHeld).
func (r *Run) Classify(runErr error) {
	o := OutcomeCompliant
	for i := range r.Clusters {
		c := &r.Clusters[i]
		c.Outcome = ClusterOutcome(c)
		if c.Outcome.severity() < o.severity() {
			o = c.Outcome
		}
	}
	if runErr != nil {
		o, r.Error = OutcomeError, runErr.Error()
	}
	r.Outcome = o
}
