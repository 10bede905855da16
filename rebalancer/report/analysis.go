// Package report holds what the commands print: the check/plan analysis, whose JSON form is a
// stable contract (Analysis, ClusterAnalysis, Analyze; README "JSON output"), the report of a run
// in the same contract (Run, ClusterRun, MoveResult, Step, Failover; run.go), and their text rendering
// (the zones × nodes map, the violations, the Redis health, the plan). Rendering writes to an
// io.Writer and changes nothing.
//
// It imports policies, plan and observe (for the health verdict, observe.Health); execute
// imports it, never the reverse.
package report

import (
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
)

// Analysis is what `check` and `plan` report; its JSON form is a stable contract (README
// "JSON output"). Fields may be added, never renamed or removed.
type Analysis struct {
	// Clusters are in namespace/name order.
	Clusters []ClusterAnalysis `json:"clusters"`
}

// ClusterAnalysis is one Redis cluster's verdict and, for `plan`, its plan.
type ClusterAnalysis struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Pods is the number of the cluster's pods that exist; N the cluster size the rules use.
	Pods int `json:"pods"`
	N    int `json:"n"`
	// Zones is the number of allowed zones (Z); AllowedZones their names.
	Zones        int      `json:"zones"`
	AllowedZones []string `json:"allowedZones"`
	// ShardSource is where the shards came from: owner (the pods' controllers), label:KEY, or
	// redis (CLUSTER NODES: a master and its replicas; policies.Cluster.ShardSource).
	ShardSource string `json:"shardSource"`
	// Warnings name the pods never evicted and why (no controller, an owner that re-creates
	// nothing, a pod Redis does not know), and the Redis nodes not matched to one pod.
	Warnings []string `json:"warnings"`
	// Compliant reports whether every hard rule holds now.
	Compliant bool `json:"compliant"`
	// Violations are every broken rule now, hard ones first (soft ones have "soft": true).
	Violations []policies.Violation `json:"violations"`
	// Health is Redis's health now (check only; state "unknown" offline, with why).
	Health *observe.Health `json:"health,omitempty"`
	// Pending explains the pods the scheduler cannot place, and which evictions unblock them.
	Pending []plan.PendingPod `json:"pending,omitempty"`
	// MasterQuorum is what the MasterQuorum rule asks of the cluster: M, the limits, whether the
	// rule applies, and the note that says once which loss the cluster cannot survive whatever the
	// placement (or why the rule is skipped).
	MasterQuorum policies.Quorum `json:"masterQuorum"`
	// Moves is the plan (plan only): the steps in order, evictions then failovers (Kind).
	Moves []plan.Move `json:"moves"`
	// Evictions and Failovers count the plan's steps of each kind (plan only).
	Evictions int `json:"evictions"`
	Failovers int `json:"failovers"`
	// CompliantAfter reports whether every hard rule holds after the moves (plan only; equal to
	// Compliant for check).
	CompliantAfter bool `json:"compliantAfter"`
	// Minimal reports whether the number of evictions is proven minimal; FailoversMinimal whether
	// the number of failovers is too (for that many evictions).
	Minimal          bool `json:"minimal"`
	FailoversMinimal bool `json:"failoversMinimal"`
	// Infeasible says in words why no plan reaches compliance ("" otherwise): the static reason,
	// or which bound stopped the search.
	Infeasible string `json:"infeasible"`
	// LimitedBy names what Infeasible says (plan.LimitStatic, plan.LimitMaxMoves,
	// plan.LimitMaxStates or plan.LimitPendingSteps; check only ever says plan.LimitStatic).
	LimitedBy string `json:"limitedBy,omitempty"`
	// PendingSteps names, for a plan made with --allow-pending-steps, each pod that waits Pending
	// and the moves during which its shard runs without it (plan only).
	PendingSteps []plan.Exposure `json:"pendingSteps,omitempty"`
	// WithPendingSteps is, when no plan exists in which each evicted pod is placed at once, the
	// plan --allow-pending-steps gives (plan only).
	WithPendingSteps *plan.Alternative `json:"withPendingSteps,omitempty"`
	// Searched is the number of placements the planner evaluated (plan only).
	Searched int `json:"searched,omitempty"`
	// SoftEvictions counts the plan's soft evictions (moves with "soft": true), and SoftFix says
	// what they do, with --soft-evictions (plan only).
	SoftEvictions int           `json:"softEvictions,omitempty"`
	SoftFix       *plan.SoftFix `json:"softFix,omitempty"`
	// BestEffort is set on a best-effort plan (--best-effort, plan only): no plan reaches
	// compliance (Infeasible says why), and the moves lead to the placement with the fewest
	// violations the search reached.
	BestEffort *plan.BestEffort `json:"bestEffort,omitempty"`
	// Held names, when no plan reaches compliance (plan only), the pods no eviction takes out of
	// the domain where they break a rule, with the filter's reasons and what would lift them.
	Held []plan.Held `json:"held,omitempty"`
	// Partial is set on a plan of failovers only (plan only): no plan reaches compliance
	// (Infeasible says why), and the moves make Redis safer (MasterQuorum) without moving a pod.
	Partial *plan.Partial `json:"partial,omitempty"`
	// Without is set by `plan --without`: the nodes taken away and the hand-off made before they
	// go. Every other field is then about the cluster without those nodes, its masters handed off
	// and the pods that ran there lost with them (re-created, placed by the plan or Pending).
	Without *WhatIf `json:"without,omitempty"`
}

// WhatIf is what `plan --without NODE,...|zone=ZONE` asks: the cluster as if those nodes were
// gone (drained for maintenance, or lost), after the hand-off that takes every master off them.
type WhatIf struct {
	// Nodes are the nodes taken away, sorted.
	Nodes []string `json:"nodes"`
	// HandOff are the failover steps made before they go (plan.HandOff): the fewest that take
	// every master off them while MasterQuorum holds over the nodes that stay.
	HandOff []plan.Move `json:"handOff"`
	// MasterQuorum is what MasterQuorum asks over the nodes that stay, and QuorumHolds whether
	// the hand-off keeps it.
	MasterQuorum policies.Quorum `json:"masterQuorum"`
	QuorumHolds  bool            `json:"quorumHolds"`
	// Stuck are the masters on those nodes that no replica on a node that stays can take over
	// from: their slots fail until Redis promotes a replica that comes back.
	Stuck []string `json:"stuck,omitempty"`
	// Lost are the cluster's pods that ran on those nodes ("namespace/name"), re-created by their
	// controllers: the plan places them, or they stay Pending.
	Lost []string `json:"lost"`
}

// Analyze evaluates every cluster of m and, when withPlans is true, plans each non-compliant one
// (plan.ComputeAll with opts: clusters in parallel).
func Analyze(m *policies.Model, withPlans bool, opts plan.Options) *Analysis {
	a := &Analysis{Clusters: []ClusterAnalysis{}}
	var plans []plan.Result
	if withPlans {
		plans = plan.ComputeAll(m.Clusters, opts)
	}
	for k, c := range m.Clusters {
		ca := ClusterAnalysis{
			Namespace: c.Namespace, Name: c.Name, Pods: len(c.Members), N: c.N,
			Zones: c.Z(), AllowedZones: c.AllowedZones, Moves: []plan.Move{},
			ShardSource: c.ShardSource.String(), Warnings: c.Warnings,
		}
		if ca.Warnings == nil {
			ca.Warnings = []string{}
		}
		if ca.AllowedZones == nil {
			ca.AllowedZones = []string{}
		}
		ca.Violations = c.Evaluate(c.Current())
		if ca.Violations == nil {
			ca.Violations = []policies.Violation{}
		}
		ca.MasterQuorum = c.MasterQuorum()
		if !m.Setting(policies.MasterQuorum).Enabled {
			ca.MasterQuorum = policies.Quorum{Masters: ca.MasterQuorum.Masters, Zones: ca.MasterQuorum.Zones}
		}
		ca.Compliant = len(policies.Hard(ca.Violations)) == 0
		ca.CompliantAfter, ca.Minimal, ca.FailoversMinimal = ca.Compliant, ca.Compliant, ca.Compliant
		if withPlans {
			p := plans[k].Plan
			ca.Pending, ca.CompliantAfter, ca.Minimal, ca.Infeasible = p.Pending, p.CompliantAfter, p.Minimal, p.Infeasible
			ca.FailoversMinimal, ca.Evictions, ca.Failovers = p.FailoversMinimal, p.Evictions, p.Failovers
			ca.LimitedBy, ca.PendingSteps, ca.WithPendingSteps, ca.Searched = p.LimitedBy, p.PendingSteps, p.WithPendingSteps, p.Searched
			ca.SoftEvictions, ca.SoftFix, ca.BestEffort, ca.Partial, ca.Held = p.SoftEvictions, p.Soft, p.BestEffort, p.Partial, p.Held
			if p.Moves != nil {
				ca.Moves = p.Moves
			}
		} else if !ca.Compliant {
			if ca.Infeasible = c.StaticInfeasibility(nil); ca.Infeasible != "" {
				ca.LimitedBy = plan.LimitStatic
			}
		}
		a.Clusters = append(a.Clusters, ca)
	}
	return a
}

// Compliant reports whether every cluster complies now.
func (a *Analysis) Compliant() bool {
	for _, c := range a.Clusters {
		if !c.Compliant {
			return false
		}
	}
	return true
}

// Planned reports whether every cluster complies or has a plan that reaches compliance (and,
// with Without, no master is stuck on the nodes taken away).
func (a *Analysis) Planned() bool {
	for _, c := range a.Clusters {
		if !c.CompliantAfter || c.Without != nil && len(c.Without.Stuck) > 0 {
			return false
		}
	}
	return true
}
