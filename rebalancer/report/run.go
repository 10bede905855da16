package report

import (
	"fmt"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
)

// Run is what a run did; `run -o json` prints it. It follows the check/plan contract (README
// "JSON output"): camelCase names, durations in seconds (float), fields added, never renamed or
// removed.
type Run struct {
	// Outcome is how the run ended (Classify): the most severe of its clusters' outcomes, or
	// OutcomeError, or OutcomeLeaseHeld. run's exit status follows from it.
	Outcome Outcome `json:"outcome"`
	// Error is set when the run failed (OutcomeError): every cluster's error and the run's own,
	// as the exit message gives them.
	Error string `json:"error,omitempty"`
	// Lease is the Lease the run held while it acted, or the one another holder kept (nil when
	// the run took none: a dry run, or --leader-elect=false).
	Lease *Lease `json:"lease,omitempty"`
	// Started is when the run started (RFC 3339, UTC).
	Started time.Time `json:"started"`
	// Window is the maintenance-window verdict at the start of the run.
	Window WindowState `json:"window"`
	// Limits are the run's eviction limits and what was counted against them.
	Limits Limits `json:"limits"`
	// Clusters are in namespace/name order.
	Clusters []ClusterRun `json:"clusters"`
	// APIRequests counts the run's requests to the API server by verb and resource (none when
	// they were not counted).
	APIRequests []observe.APIRequests `json:"apiRequests,omitempty"`
	// Seconds is the run's duration.
	Seconds float64 `json:"seconds"`
}

// Lease is the coordination.k8s.io Lease that makes one run or serve act at a time.
type Lease struct {
	// Namespace and Name name the Lease.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Holder is the identity that held it: this run's while it acted, or the other holder's when
	// the run gave up waiting (OutcomeLeaseHeld).
	Holder string `json:"holder"`
	// WaitedSeconds is how long the run waited for it.
	WaitedSeconds float64 `json:"waitedSeconds"`
}

// WindowState says whether the run could act: the maintenance windows and their state when the
// run started.
type WindowState struct {
	// Windows lists the configured windows as "SCHEDULE for DURATION" (empty: always open).
	Windows []string `json:"windows"`
	// Ignored is true when --ignore-windows let the run act outside every window.
	Ignored bool `json:"ignored"`
	// Open reports whether a window was open when the run started (true without windows).
	Open bool `json:"open"`
	// Closes is when the open window closes (RFC 3339, UTC; omitted when closed or without
	// windows).
	Closes *time.Time `json:"closes,omitempty"`
	// NextOpen is when the next window opens, when none was open (RFC 3339, UTC).
	NextOpen *time.Time `json:"nextOpen,omitempty"`
	// StepEstimate is how a move's expected duration was judged: "bound" or "p95".
	StepEstimate string `json:"stepEstimate"`
}

// Limits are the eviction limits of a run (the descheduler's names; nil: no limit) and the
// evictions counted against them, over all clusters.
type Limits struct {
	// MaxPodsToEvictPerNode, MaxPodsToEvictPerNamespace and MaxPodsToEvictTotal are the limits.
	MaxPodsToEvictPerNode      *uint `json:"maxPodsToEvictPerNode,omitempty"`
	MaxPodsToEvictPerNamespace *uint `json:"maxPodsToEvictPerNamespace,omitempty"`
	MaxPodsToEvictTotal        *uint `json:"maxPodsToEvictTotal,omitempty"`
	// MaxParallelClusters is how many Redis clusters progressed at once.
	MaxParallelClusters int `json:"maxParallelClusters"`
	// Evicted is the number of evictions made.
	Evicted int `json:"evicted"`
}

// Moves returns the number of evictions made, over all clusters.
func (r *Run) Moves() int {
	n := 0
	for _, c := range r.Clusters {
		for _, m := range c.Moves {
			if m.Evicted {
				n++
			}
		}
	}
	return n
}

// Failovers returns the number of failover steps made (MasterQuorum; not the failovers before
// evictions), over all clusters.
func (r *Run) Failovers() int {
	n := 0
	for _, c := range r.Clusters {
		for _, m := range c.Moves {
			if m.Kind == plan.KindFailover && m.Failover != nil {
				n++
			}
		}
	}
	return n
}

// Compliant reports whether every cluster complies at the end of the run: its placement rules
// hold and Redis is healthy.
func (r *Run) Compliant() bool {
	for _, c := range r.Clusters {
		if !c.Compliant {
			return false
		}
	}
	return true
}

// OnlyWindowStopped reports whether every cluster that does not comply was stopped by the
// maintenance window (StoppedBy StepWindow) and at least one was.
func (r *Run) OnlyWindowStopped() bool {
	found := false
	for _, c := range r.Clusters {
		if c.Compliant {
			continue
		}
		if c.StoppedBy != StepWindow {
			return false
		}
		found = true
	}
	return found
}

// ClusterRun is what a run did to one Redis cluster.
type ClusterRun struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// ShardSource and Warnings are the analysis's (ClusterAnalysis), as the run first observed
	// the cluster.
	ShardSource string   `json:"shardSource,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// Before and After are the violations at the start and at the end of the run.
	Before []policies.Violation `json:"violations"`
	After  []policies.Violation `json:"violationsAfter"`
	// PlacementCompliant reports whether every hard rule holds at the end.
	PlacementCompliant bool `json:"placementCompliant"`
	// Health is Redis's health at the end of the run.
	Health observe.Health `json:"health"`
	// Compliant reports whether the cluster complies at the end: every hard rule holds and Redis
	// is healthy (a cluster still resyncing does not comply).
	Compliant bool `json:"compliant"`
	// Outcome is how the cluster's part of the run ended (ClusterOutcome).
	Outcome Outcome `json:"outcome"`
	// Moves are the moves tried, in order.
	Moves []MoveResult `json:"moves"`
	// Stopped says why the run stopped acting on the cluster before compliance ("" otherwise):
	// the first real reason; its first line is what an operator reads first.
	Stopped string `json:"stopped,omitempty"`
	// StoppedBy names what stopped it: a step name (StepWindow, StepHealthGate, ...) when a move
	// step skipped or aborted, or "evictionLimit", "maxMoves", "noPlan", "offTrack", "dryRun",
	// "observe", "gracefulStop".
	StoppedBy string `json:"stoppedBy,omitempty"`
	// Error is set when the cluster's run ended in an error (an aborted step, or an observation
	// that failed): the cause, as the exit message gives it.
	Error string `json:"error,omitempty"`
	// ObserveAfterError is set when the final observation failed after an earlier stop: it does
	// not replace Stopped or Error (the first real reason).
	ObserveAfterError string `json:"observeAfterError,omitempty"`
	// Plan is the plan of a dry run, or of a run outside every window.
	Plan *plan.Plan `json:"plan,omitempty"`
	// Partial is set when no plan reaches compliance (StoppedBy noPlan): what failovers alone did
	// for Redis meanwhile, and why the placement stays as it is.
	Partial *PartialRun `json:"partial,omitempty"`
	// Reintroduced says, one line per node, which pods' Redis nodes the run re-introduced before
	// its moves: pods back with empty volumes in place of a replica the cluster still listed, left
	// so by a move that released their claims and was stopped before its rejoin; and stray
	// masters (redisctl.StrayMaster: a master without slots holding a copy of another master's
	// keys) made replicas of that master again.
	Reintroduced []string `json:"reintroduced,omitempty"`
	// Seconds is the time spent on the cluster.
	Seconds float64 `json:"seconds"`
}

// PartialRun is what a pass did for a Redis cluster that no plan brings to compliance: the
// failover steps that made Redis safer (plan.Partial's, carried out with the same gates as any
// failover step), and whether MasterQuorum holds at the end. With MasterQuorum holding and Redis
// healthy, the cluster's outcome is OutcomePartial.
type PartialRun struct {
	// Failovers counts the failover steps this pass made toward MasterQuorum (0 when it held
	// already, or no failover lowers its violations).
	Failovers int `json:"failovers"`
	// QuorumHolds reports whether MasterQuorum holds at the end of the pass (false when it is
	// broken, disabled, or the roles are unknown).
	QuorumHolds bool `json:"quorumHolds"`
	// Because says why the placement stays non-compliant: the planner's reason (plan.Plan's
	// Infeasible).
	Because string `json:"because"`
	// Held are the pods no eviction takes out of the domain where they break a rule, with the
	// filter's reasons and what would lift them (plan.Plan's Held).
	Held []plan.Held `json:"held,omitempty"`
}

// PartialRunText says what a partial outcome means for a cluster: "Redis made safer (2 failovers
// this pass; MasterQuorum holds), placement still non-compliant because …", or "Redis as safe as
// failovers make it (MasterQuorum holds), …" when this pass made none.
func PartialRunText(p *PartialRun) string {
	what := "Redis as safe as failovers make it (MasterQuorum holds)"
	if p.Failovers > 0 {
		what = fmt.Sprintf("Redis made safer (%s this pass; MasterQuorum holds)", plural(p.Failovers, "failover"))
	}
	return what + ", placement still non-compliant because " + p.Because
}

// Names of the steps of a move, in order (Step.Name), and of the other things that stop a
// cluster's run (ClusterRun.StoppedBy).
const (
	StepWindow     = "window"
	StepHealthGate = "healthGate"
	StepPlaceable  = "placeable"
	StepPDBDryRun  = "pdbDryRun"
	StepFailover   = "failover"
	StepDrain      = "drain"
	StepRoleCheck  = "roleCheck"
	StepEvict      = "evict"
	// StepRelease deletes the pod's claims after its eviction (a move that releases them:
	// plan.Move.ReleaseClaims).
	StepRelease   = "release"
	StepRecreate  = "recreate"
	StepRejoin    = "rejoin"
	StepReobserve = "reobserve"

	StoppedEvictionLimit = "evictionLimit"
	StoppedMaxMoves      = "maxMoves"
	StoppedNoPlan        = "noPlan"
	StoppedDryRun        = "dryRun"
	StoppedObserve       = "observe"
	// StoppedOffTrack: the scheduler placed evicted pods off the plan's track twice (each time
	// the re-plan after the move needed as many evictions as before it): with only soft
	// constraints in the templates, re-evicting would go round in circles.
	StoppedOffTrack = "offTrack"
	// StoppedGracefulStop: a graceful stop (SIGTERM) was asked for; the cluster was left at a
	// safe point and the next run continues.
	StoppedGracefulStop = "gracefulStop"
	// StoppedHandOff: serve's hand-off was failing the cluster's masters over off nodes being
	// emptied (or whose eviction the guard held); the pass left the cluster to it rather than
	// plan from its intermediate state, and the next pass continues.
	StoppedHandOff = "handOff"
)

// Step outcomes (Step.Outcome).
const (
	// OutcomeContinue: the step passed; the move goes on.
	OutcomeContinue = "continue"
	// OutcomeSkip: a safety check said no; the move stops and the cluster is left as it is.
	OutcomeSkip = "skip"
	// OutcomeAbort: an error; the move stops and the run reports the error (exit status 1).
	OutcomeAbort = "abort"
)

// MoveResult is one move as it was carried out: its steps and how it ended (plan.Move is the
// move as planned).
type MoveResult struct {
	// Kind is the planned step's kind: plan.KindEvict, or plan.KindFailover (a failover step:
	// Pod is the master failed over, From its node; nothing is evicted, To stays empty).
	Kind string `json:"kind"`
	// Pod is "namespace/name"; From the node it left; To the node its replacement landed on.
	Pod  string `json:"pod"`
	From string `json:"from"`
	To   string `json:"to,omitempty"`
	// Expected is the node the plan hoped for.
	Expected string `json:"expected"`
	// Failover describes the failover made before the eviction (nil when the pod was a replica).
	Failover *Failover `json:"failover,omitempty"`
	// RoleAtEviction is the pod's Redis role as Redis reported it just before the eviction.
	RoleAtEviction policies.Role `json:"roleAtEviction,omitempty"`
	// Evicted reports whether the eviction was accepted.
	Evicted bool `json:"evicted"`
	// ReleasedClaims are the pod's claims the move deleted after the eviction (plan.Move's
	// ReleaseClaims, once the checks passed); ClaimsKept says why a move that was to release
	// them kept them (its pod then came back to its volumes' zone).
	ReleasedClaims []string `json:"releasedClaims,omitempty"`
	ClaimsKept     string   `json:"claimsKept,omitempty"`
	// Volumes are the re-created pod's claims after a release: each bound to a new
	// PersistentVolume, in the zone the scheduler picked.
	Volumes []Volume `json:"volumes,omitempty"`
	// WaitsPending is true for an eviction the plan lets wait Pending (--allow-pending-steps): the
	// re-created pod is not waited for, and Exposure says which shard runs without it until when.
	WaitsPending bool   `json:"waitsPending,omitempty"`
	Exposure     string `json:"exposure,omitempty"`
	// OffTrack is true for a completed eviction after which the re-plan still needed as many
	// evictions as the plan before it: the scheduler chose a node off the plan's track (To is
	// not among the on-track candidates), undoing the move's progress.
	OffTrack bool `json:"offTrack,omitempty"`
	// Soft is true for an eviction of the soft fix (--soft-evictions): every hard rule held
	// before it and was planned to hold after it; it lowers the soft violations.
	Soft bool `json:"soft,omitempty"`
	// BestEffort is true for a move of a best-effort plan (--best-effort): no plan reached
	// compliance, and the move leads toward the placement with the fewest violations.
	BestEffort bool `json:"bestEffort,omitempty"`
	// Outcome is the last step's outcome: OutcomeContinue when the move completed.
	Outcome string `json:"outcome"`
	// Skipped says why the move was not made ("" when it was, or when it was aborted): the
	// reason of the step that skipped.
	Skipped string `json:"skipped,omitempty"`
	// Error is the reason of the step that aborted ("" otherwise).
	Error string `json:"error,omitempty"`
	// Steps are the steps run, in order.
	Steps []Step `json:"steps"`
	// Started is when the move's first step started (RFC 3339 with fractions, UTC): with
	// Seconds, the interval in which the move may have disrupted the cluster.
	Started time.Time `json:"started"`
	// Seconds is the whole move's duration.
	Seconds float64 `json:"seconds"`
}

// Volume is a claim and the PersistentVolume it is bound to.
type Volume struct {
	// Claim is the claim's name (in the pod's namespace); PersistentVolume its volume's.
	Claim            string `json:"claim"`
	PersistentVolume string `json:"persistentVolume"`
	// Zone is the zone the volume's node affinity (or its zone label) pins it to ("" when none).
	Zone string `json:"zone,omitempty"`
}

// Step is one step of a move as it ran.
type Step struct {
	// Name is one of the Step… names.
	Name string `json:"name"`
	// Outcome is OutcomeContinue, OutcomeSkip or OutcomeAbort.
	Outcome string `json:"outcome"`
	// Reason says why a step skipped or aborted; for a step that continued, an optional note
	// ("replica: no failover needed").
	Reason string `json:"reason,omitempty"`
	// Seconds is the step's duration.
	Seconds float64 `json:"seconds"`
}

// Failover describes a verified failover.
type Failover struct {
	// OldMaster and NewMaster are pod names.
	OldMaster string `json:"oldMaster"`
	NewMaster string `json:"newMaster"`
	// Seconds is the time from CLUSTER FAILOVER to the verified switch.
	Seconds float64 `json:"seconds"`
}

// Seconds converts d to seconds, rounded to the millisecond, as the reports give durations.
func Seconds(d time.Duration) float64 {
	return d.Round(time.Millisecond).Seconds()
}
