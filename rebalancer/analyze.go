package rebalancer

import (
	"fmt"
	"io"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
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
	// Compliant reports whether every hard rule holds now.
	Compliant bool `json:"compliant"`
	// Violations are every broken rule now, hard ones first (soft ones have "soft": true).
	Violations []policies.Violation `json:"violations"`
	// Pending explains the pods the scheduler cannot place, and which evictions unblock them.
	Pending []PendingPod `json:"pending,omitempty"`
	// Moves is the plan (plan only): evictions in order.
	Moves []Move `json:"moves"`
	// CompliantAfter reports whether every hard rule holds after the moves (plan only; equal to
	// Compliant for check).
	CompliantAfter bool `json:"compliantAfter"`
	// Minimal reports whether the move count is proven minimal.
	Minimal bool `json:"minimal"`
	// Infeasible says in words why no plan reaches compliance ("" otherwise).
	Infeasible string `json:"infeasible"`
}

// Analyze evaluates every cluster of m and, when plan is true, plans each non-compliant one.
func Analyze(m *policies.Model, plan bool, opts PlanOptions) *Analysis {
	a := &Analysis{Clusters: []ClusterAnalysis{}}
	for _, c := range m.Clusters {
		ca := ClusterAnalysis{
			Namespace: c.Namespace, Name: c.Name, Pods: len(c.Members), N: c.N,
			Zones: c.Z(), AllowedZones: c.AllowedZones, Moves: []Move{},
		}
		if ca.AllowedZones == nil {
			ca.AllowedZones = []string{}
		}
		ca.Violations = c.Evaluate(c.Current())
		if ca.Violations == nil {
			ca.Violations = []policies.Violation{}
		}
		ca.Compliant = len(policies.Hard(ca.Violations)) == 0
		ca.CompliantAfter, ca.Minimal = ca.Compliant, ca.Compliant
		if plan {
			p := PlanCluster(c, opts)
			ca.Pending, ca.CompliantAfter, ca.Minimal, ca.Infeasible = p.Pending, p.CompliantAfter, p.Minimal, p.Infeasible
			if p.Moves != nil {
				ca.Moves = p.Moves
			}
		} else if !ca.Compliant {
			ca.Infeasible = c.StaticInfeasibility()
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

// Planned reports whether every cluster complies or has a plan that reaches compliance.
func (a *Analysis) Planned() bool {
	for _, c := range a.Clusters {
		if !c.CompliantAfter {
			return false
		}
	}
	return true
}

// RenderAnalysis writes a as tables: per cluster a header, the zones × nodes map, the
// violations, the Pending pods' diagnosis and, when plan is true, the moves.
func RenderAnalysis(w io.Writer, m *policies.Model, a *Analysis, plan bool) {
	byKey := map[string]*policies.Cluster{}
	for _, c := range m.Clusters {
		byKey[c.Key()] = c
	}
	if len(a.Clusters) == 0 {
		fmt.Fprintf(w, "no Redis cluster found (no pod has the label %s)\n", m.Options.ClusterLabel)
	}
	for k, ca := range a.Clusters {
		if k > 0 {
			fmt.Fprintln(w)
		}
		c := byKey[ca.Namespace+"/"+ca.Name]
		fmt.Fprintf(w, "Redis cluster %s/%s: %d pods (N=%d), %d shards, zones [%s]\n", ca.Namespace, ca.Name, ca.Pods, ca.N, len(c.Shards), strings.Join(ca.AllowedZones, " "))
		RenderMap(w, c, c.Current())
		RenderViolations(w, ca.Violations)
		for _, p := range ca.Pending {
			fmt.Fprintf(w, "  pending %s: %s\n", p.Pod, p.Why)
			if len(p.Unblock) > 0 {
				fmt.Fprintf(w, "    evicting %s unblocks it\n", strings.Join(p.Unblock, ", "))
			}
		}
		if !plan {
			if ca.Infeasible != "" {
				fmt.Fprintf(w, "  no placement can comply: %s\n", ca.Infeasible)
			}
			continue
		}
		switch {
		case ca.Infeasible != "":
			fmt.Fprintf(w, "  no plan: %s\n", ca.Infeasible)
		case len(ca.Moves) == 0:
			fmt.Fprintln(w, "  nothing to do")
		default:
			note := ""
			if ca.Minimal {
				note = ", minimal"
			}
			fmt.Fprintf(w, "  plan: %d moves%s; compliant after: %v\n", len(ca.Moves), note, ca.CompliantAfter)
			for i, mv := range ca.Moves {
				fo := ""
				if mv.Failover {
					fo = ", fail over first"
				}
				fmt.Fprintf(w, "  %d. evict %s from %s (%s%s) → %s; scheduler may choose %s\n     because: %s\n", i+1, mv.Pod, mv.Node, roleMark(mv.Role), fo, mv.Expected, candidatesText(mv), mv.Reason)
			}
		}
	}
}
