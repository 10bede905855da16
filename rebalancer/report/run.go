package report

import (
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
)

// Run is what a run did (`run -o json` prints it).
type Run struct {
	// Clusters are in namespace/name order.
	Clusters []ClusterRun `json:"clusters"`
	// APIRequests counts the run's requests to the API server by verb and resource (none when
	// they were not counted).
	APIRequests []observe.APIRequests `json:"apiRequests,omitempty"`
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

// Compliant reports whether every cluster complies at the end of the run.
func (r *Run) Compliant() bool {
	for _, c := range r.Clusters {
		if !c.Compliant {
			return false
		}
	}
	return true
}

// ClusterRun is what a run did to one Redis cluster.
type ClusterRun struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Before and After are the violations at the start and at the end of the run.
	Before []policies.Violation `json:"violations"`
	After  []policies.Violation `json:"violationsAfter"`
	// Moves are the moves tried, in order.
	Moves []Move `json:"moves"`
	// Compliant reports whether every hard rule holds at the end.
	Compliant bool `json:"compliant"`
	// Stopped says why the run stopped acting on the cluster before compliance ("" otherwise).
	Stopped string `json:"stopped,omitempty"`
	// Plan is the plan of a dry run.
	Plan *plan.Plan `json:"plan,omitempty"`
}

// Move is one move as it happened (plan.Move is the move as planned).
type Move struct {
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
	// Skipped says why the move was not made ("" when it was).
	Skipped string `json:"skipped,omitempty"`
	// Durations of the phases: health gate, client drain after a failover, eviction, re-creation
	// until Ready, rejoin until in sync, and the whole move.
	Gate, Drain, Evict, Recreate, Rejoin, Total time.Duration
}

// Failover describes a verified failover.
type Failover struct {
	// OldMaster and NewMaster are pod names.
	OldMaster, NewMaster string
	// Duration is the time from CLUSTER FAILOVER to the verified switch.
	Duration time.Duration
}
