// Package plan is the planner: for one Redis cluster of a policies.Model it finds the fewest
// evictions, then the fewest failovers, after which every hard rule holds, assuming kube-scheduler
// re-places each evicted pod with its StatefulSet's current template, and lists per move the
// nodes the scheduler may choose. It also explains Pending pods and which evictions unblock them.
// It reads the model only (state computed once by policies.Build, then read, like a scheduler
// plugin's PreFilter/Filter) and changes nothing.
//
// # The model
//
// A plan has two kinds of step (Move.Kind). An eviction evicts one pod whose controller re-creates
// it (a StatefulSet, or an owner named as re-creating pods; policies.Member.NotEvictable) (a master
// first hands its slots to a promotable member of its shard that the plan names, chosen so that
// its node and zone keep MasterQuorum; a master whose shard has none cannot be evicted); the
// scheduler then places every pod that is not placed and can be (the evicted one, and Pending
// ones the eviction unblocks) on nodes that pass the filter, in the order best for the plan; a
// pod stays on its node whatever the node's schedulability, and a re-created pod rejoins as a
// replica. A failover promotes a named replica of a shard; no pod moves. By default the evicted
// pod must be placed at once. With Options.AllowPendingSteps it may wait Pending until a later
// step frees room, as long as it is then the cluster's only pod not placed (at most one Pending
// pod per Redis cluster at a time); the plan names that exposure (Plan.PendingSteps).
//
// Failovers matter only to MasterQuorum, which the pod rules do not read, and the roles matter
// to evictions only through which pods need a failover first: so the failovers of a plan with
// the fewest evictions and failovers can all come after its evictions (the exhaustive test checks
// this against a search with failovers anywhere), and for the placement the evictions reach, the
// fewest failovers are a min-cost flow (policies.State.QuorumFix).
//
// # The search
//
// The planner keeps one policies.State (the placement with its rules' and filter's counts,
// updated per move) and searches it depth-first with iterative deepening (IDA*) on a lower
// bound: every eviction relocates one pod, so it lowers each of the excess sums
// (policies.Excess) by at most one. When the plan's length equals the bound, every step must
// lower every sum that sets the bound, which only evicting a pod counted in that sum can do: the
// first round of the search tries only those pods. A member is only tried on the nodes other
// members occupy and on one free node per class of interchangeable nodes
// (policies.Cluster.NodeClass). Placements proven not to reach compliance within some number of
// moves are remembered (by policies.StateKey), so no placement is searched twice to the same
// depth. A plan found by a round that follows complete rounds has the fewest evictions; within
// that round the search goes on for one with fewer failovers, cutting every branch whose masters'
// excess (policies.State.QuorumExcess) minus the evictions left is no less than the best plan's
// failovers, until that bound is met (FailoversMinimal) or it has spent as many placements again
// (at least 1,000, at most a tenth of Options.MaxStates). When the search runs out of
// Options.MaxStates placements, a greedy plan is returned with Minimal false.
//
// It owns Plan, Move, Candidate, PendingPod, Exposure, Alternative and Options. It imports
// policies only; report and execute import it, never the reverse.
package plan

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Candidate is a node the scheduler may choose for a re-created pod.
type Candidate struct {
	// Node is the node's name.
	Node string `json:"node"`
	// OnTrack reports whether the rest of the plan still reaches compliance in the planned number
	// of moves when the scheduler picks this node.
	OnTrack bool `json:"onTrack"`
	// Undecided is true when the bounded search ran out of placements before it could tell (a
	// tenth of Options.MaxStates per candidate); OnTrack is then false.
	Undecided bool `json:"undecided,omitempty"`
}

// Placed is a pod the scheduler places as a side effect of a move, and the node the plan expects.
type Placed struct {
	// Pod is "namespace/name"; Node the node's name.
	Pod  string `json:"pod"`
	Node string `json:"node"`
}

// Kinds of step (Move.Kind).
const (
	// KindEvict: evict a pod (failing it over first when it is a master); the scheduler re-places
	// it.
	KindEvict = "evict"
	// KindFailover: promote a named in-sync replica of a shard; no pod moves, nothing is evicted.
	KindFailover = "failover"
)

// Move is one planned step: an eviction, or a failover (Kind).
type Move struct {
	// Kind is KindEvict or KindFailover.
	Kind string `json:"kind"`
	// Member is the pod's index in the cluster's Members.
	Member int `json:"-"`
	// Pod is "namespace/name"; Node the node it runs on before the move. For a failover, the
	// master that hands its slots over.
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// Shard is the pod's shard; Role its Redis role at this step of the plan (a pod the plan has
	// failed over or re-created is a replica).
	Shard string        `json:"shard"`
	Role  policies.Role `json:"role,omitempty"`
	// Failover is true when the pod is (or may be) a master: fail it over to an in-sync replica
	// before the eviction (always true for a failover step).
	Failover bool `json:"failover"`
	// From and To are the failover the plan names: the master (From, "namespace/name") and the
	// replica of its shard promoted in its place (To), chosen so that their nodes and zones keep
	// MasterQuorum. Set on a failover step, and on an eviction of a master (roles known).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// ToNode is the node of To.
	ToNode string `json:"toNode,omitempty"`
	// FailoverTo is To's index in the cluster's Members (-1 or unset without a named replica).
	FailoverTo int `json:"-"`
	// Expected is the node the plan assumes the scheduler picks ("" when the pod waits Pending,
	// and for a failover).
	Expected string `json:"expected"`
	// Candidates are the nodes where the re-created pod passes the filter, by name, in node
	// order (empty for a failover).
	Candidates []Candidate `json:"candidates"`
	// CandidateNodes lists the candidates' names (the JSON contract's short form).
	CandidateNodes []string `json:"candidateNodes"`
	// Reason says which violations the move addresses.
	Reason string `json:"reason"`
	// WaitsPending is true when no node fits the re-created pod right after the eviction: it
	// waits Pending until a later move frees room (Options.AllowPendingSteps only; see
	// Plan.PendingSteps).
	WaitsPending bool `json:"waitsPending,omitempty"`
	// Places are the other pods the scheduler places after this eviction, where the plan
	// expects them: Pending pods the move unblocks, a pod that waited Pending since an earlier
	// move among them.
	Places []Placed `json:"places,omitempty"`
	// ReleaseClaims names the pod's PersistentVolumeClaims (in its namespace) that are deleted
	// once its eviction is accepted, the pod then a replica (a master is failed over first): the
	// node the plan expects is one their zonal PersistentVolumes do not allow
	// (policies.Options.ReleaseReplicaClaims). Its StatefulSet re-creates them empty, they bind in
	// the zone the scheduler picks, and the pod resyncs in full from its shard's master. Empty
	// when the pod keeps its claims: its candidates are then the nodes their volumes allow.
	ReleaseClaims []string `json:"releaseClaims,omitempty"`
	// Soft is true for an eviction of the soft fix (Options.SoftEvictions): every hard rule
	// holds before and after it, and it lowers the soft violations; its candidates are on track
	// when the soft fix still reaches its soft excess from there.
	Soft bool `json:"soft,omitempty"`
}

// Exposure is one pod a plan lets wait Pending: its shard runs without it from one move to a
// later one.
type Exposure struct {
	// Pod is "namespace/name"; Shard its shard; Role its Redis role when the plan was made (a
	// master is failed over before its eviction, so the shard keeps its master and loses a
	// replica).
	Pod   string        `json:"pod"`
	Shard string        `json:"shard"`
	Role  policies.Role `json:"role,omitempty"`
	// FromMove is the move (1-based) whose eviction leaves the pod Pending; UntilMove the move
	// after which the scheduler places it again, on Node.
	FromMove  int    `json:"fromMove"`
	UntilMove int    `json:"untilMove"`
	Node      string `json:"node"`
}

// Alternative is the plan that exists when pods may wait Pending (Options.AllowPendingSteps)
// while none exists without: what --allow-pending-steps would give.
type Alternative struct {
	// Moves is its number of evictions; Minimal whether that is proven minimal.
	Moves   int  `json:"moves"`
	Minimal bool `json:"minimal"`
	// Evictions are the pods it evicts, in order.
	Evictions []string `json:"evictions"`
	// PendingSteps is its exposure.
	PendingSteps []Exposure `json:"pendingSteps"`
}

// Why no plan was found (Plan.LimitedBy).
const (
	// LimitStatic: no placement the evictions can reach complies (policies'
	// StaticInfeasibility).
	LimitStatic = "static"
	// LimitMaxMoves: no plan of at most Options.MaxMoves evictions exists (the lower bound is
	// higher, or every shorter sequence was searched).
	LimitMaxMoves = "maxMoves"
	// LimitMaxStates: the search ran out of Options.MaxStates placements before it found a plan
	// or ruled every plan within Options.MaxMoves out.
	LimitMaxStates = "maxStates"
	// LimitPendingSteps: no plan exists in which each evicted pod is placed at once, and one
	// does when a pod may wait Pending (Plan.WithPendingSteps).
	LimitPendingSteps = "pendingSteps"
)

// SoftFix is what the soft fix of a plan does (Options.SoftEvictions): the soft excess
// (policies.SoftExcess) before its moves and after them.
type SoftFix struct {
	// Before is the soft excess once the hard rules hold (after the plan's other moves); After
	// is the soft excess after the soft evictions (Before when none lowers it).
	Before int `json:"before"`
	After  int `json:"after"`
	// Minimal reports whether the search was exhaustive within Options.SoftEvictions: After is
	// the lowest soft excess that many evictions reach, with the fewest of them.
	Minimal bool `json:"minimal"`
}

// BestEffort is what a best-effort plan does (Options.BestEffort): no placement the search
// reaches satisfies every hard rule, and the plan leads to the one with the fewest violations.
type BestEffort struct {
	// Before is the penalty of the current placement; After the penalty of the placement the
	// plan reaches (Before when no eviction lowers it: the plan has no move).
	Before policies.Penalty `json:"before"`
	After  policies.Penalty `json:"after"`
	// Minimal reports whether the search was exhaustive (within Options.MaxMoves evictions):
	// After is the lowest penalty reachable, with the fewest evictions.
	Minimal bool `json:"minimal"`
}

// Partial is what a plan of failovers only does where no plan reaches compliance: Redis made
// safer, the placement left as it is. Its moves are failover steps (no pod moves) after which
// MasterQuorum's excess is the least that failovers alone reach, with the fewest of them.
type Partial struct {
	// QuorumBefore and QuorumAfter are MasterQuorum's excess (the masters above its node and zone
	// limits, summed) before the failovers and after them: 0 after means the rule holds, and the
	// cluster survives the loss of any one node (and zone) whatever its placement.
	QuorumBefore int `json:"quorumBefore"`
	QuorumAfter  int `json:"quorumAfter"`
}

// Plan is the planner's answer for one cluster.
type Plan struct {
	// Moves are the steps in order, carried out one at a time: the evictions, then the failovers
	// that make MasterQuorum hold.
	Moves []Move `json:"moves"`
	// Evictions and Failovers count the steps of each kind (Failovers: failover steps only, not
	// the failover before a master's eviction).
	Evictions int `json:"evictions"`
	Failovers int `json:"failovers"`
	// Before are the violations of the current placement; After those expected after the plan.
	Before []policies.Violation `json:"violations"`
	After  []policies.Violation `json:"violationsAfter,omitempty"`
	// CompliantAfter reports whether every hard rule holds after the moves.
	CompliantAfter bool `json:"compliantAfter"`
	// Minimal reports whether the number of evictions is proven minimal (exhaustive within the
	// budget).
	Minimal bool `json:"minimal"`
	// FailoversMinimal reports whether, the evictions being minimal, the number of failover steps
	// is proven minimal too (once a plan is found, the search for one with fewer failovers spends
	// as many placements as it took to find it, at least 1,000 and at most a tenth of
	// Options.MaxStates).
	FailoversMinimal bool `json:"failoversMinimal"`
	// Infeasible says in words why no plan reaches compliance ("" when one does or none is
	// needed): the static reason, or which bound stopped the search, under which model.
	Infeasible string `json:"infeasible"`
	// LimitedBy names what Infeasible says: LimitStatic, LimitMaxMoves, LimitMaxStates or
	// LimitPendingSteps ("" when there is a plan).
	LimitedBy string `json:"limitedBy,omitempty"`
	// AllowPendingSteps is the model the plan was made with (Options.AllowPendingSteps).
	AllowPendingSteps bool `json:"allowPendingSteps,omitempty"`
	// PendingSteps names, for a plan made with AllowPendingSteps, each pod that waits Pending and
	// the moves during which its shard runs without it.
	PendingSteps []Exposure `json:"pendingSteps,omitempty"`
	// WithPendingSteps is, when no plan exists without Pending steps, the plan that exists with
	// them (LimitPendingSteps).
	WithPendingSteps *Alternative `json:"withPendingSteps,omitempty"`
	// Pending explains, for each pod the scheduler cannot place now, why per node.
	Pending []PendingPod `json:"pending,omitempty"`
	// Searched is the number of placements the planner evaluated (its searches and the on-track
	// checks of the candidates).
	Searched int `json:"searched"`
	// SoftEvictions counts the evictions of the soft fix (Move.Soft), after the other moves.
	SoftEvictions int `json:"softEvictions,omitempty"`
	// Soft is what the soft fix does, when Options.SoftEvictions allows it and the plan reaches
	// compliance with soft violations left.
	Soft *SoftFix `json:"softFix,omitempty"`
	// BestEffort is set on a best-effort plan (Options.BestEffort): Infeasible still says why no
	// plan reaches compliance, CompliantAfter is false, and the moves lead to the placement with
	// the fewest violations.
	BestEffort *BestEffort `json:"bestEffort,omitempty"`
	// Held names, when no plan reaches compliance, the pods that no eviction takes out of the
	// domain where they break a rule, with the filter's reasons and what would lift them.
	Held []Held `json:"held,omitempty"`
	// Partial is set on a plan of failovers only where no plan reaches compliance (and no
	// best-effort plan was asked for): Infeasible says why the placement stays non-compliant, and
	// the moves make Redis safer (MasterQuorum) without moving a pod.
	Partial *Partial `json:"partial,omitempty"`
	// Work is what the plan cost in units that do not depend on the machine's speed: the nodes
	// the counts before the search visited, the filter's node checks and the placements
	// searched (Searched). Not part of the JSON contract.
	Work policies.Work `json:"-"`
}

// PendingPod is a Pending pod's diagnosis.
type PendingPod struct {
	// Pod is "namespace/name".
	Pod string `json:"pod"`
	// Why is the filter's per-node verdict, like kube-scheduler's FailedScheduling message.
	Why string `json:"why"`
	// Unblock lists the smallest set of pods whose eviction lets this pod and every evicted pod
	// be placed (empty when none was found within the budget).
	Unblock []string `json:"unblock,omitempty"`
}

// Defaults of Options.
const (
	// DefaultMaxMoves is the longest plan considered when Options.MaxMoves is 0, unless twice the
	// lower bound on the moves needed is more.
	DefaultMaxMoves = 12
	// DefaultMaxStates is Options.MaxStates when 0: placements evaluated (the policy's,
	// v1alpha1.DefaultMaxStates).
	DefaultMaxStates = v1alpha1.DefaultMaxStates
)

// Options bound the search and choose its model.
type Options struct {
	// MaxMoves is the longest plan considered. 0 picks DefaultMaxMoves (12), or twice the lower
	// bound on the number of moves when that is more (a large drift in a large cluster).
	MaxMoves int
	// MaxStates bounds the placements the search evaluates (DefaultMaxStates when 0). When it
	// runs out before a plan is proven minimal, the best plan found (a greedy one, when the
	// search found none) is returned with Minimal false.
	MaxStates int
	// AllowPendingSteps lets an evicted pod wait Pending until a later move frees room, one pod
	// per Redis cluster at a time (the package's model). Off by default: each evicted pod must
	// be placeable at once. When no plan exists without, the plan says whether one exists with
	// it (Plan.WithPendingSteps).
	AllowPendingSteps bool
	// SoftEvictions is the most evictions a plan may add, once every hard rule holds, to lower
	// its soft violations (policies.SoftExcess): each such eviction keeps every hard rule, and
	// they come after the plan's other moves (Move.Soft, Plan.Soft). 0: soft rules are only
	// reported.
	SoftEvictions int
	// BestEffort: when no plan reaches compliance, plan the fewest evictions to the placement
	// with the fewest violations the search reaches (policies.Penalty: the pods left without a
	// node first, then the hard rules' excess; Plan.BestEffort). Off: such a cluster gets no
	// plan.
	BestEffort bool
}

func (o Options) withDefaults() Options {
	if o.MaxStates == 0 {
		o.MaxStates = DefaultMaxStates
	}
	return o
}

// Result is one cluster's plan and the time Compute took for it.
type Result struct {
	Plan Plan
	Took time.Duration
}

// ComputeAll plans every cluster of cs with opts, up to GOMAXPROCS clusters at a time (each
// planner reads its cluster and the shared model only), the largest clusters first so that no
// large one is left for the end, and returns the results in cs's order.
func ComputeAll(cs []*policies.Cluster, opts Options) []Result {
	return computeAll(cs, func(c *policies.Cluster) Plan { return Compute(c, opts) })
}

// computeAll is ComputeAll with compute in place of Compute.
func computeAll(cs []*policies.Cluster, compute func(*policies.Cluster) Plan) []Result {
	out := make([]Result, len(cs))
	order := make([]int, len(cs))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return len(cs[order[a]].Members) > len(cs[order[b]].Members) })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(cs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				x := int(next.Add(1)) - 1
				if x >= len(cs) {
					return
				}
				k := order[x]
				start := time.Now()
				p := compute(cs[k])
				out[k] = Result{Plan: p, Took: time.Since(start)}
			}
		}()
	}
	wg.Wait()
	return out
}
