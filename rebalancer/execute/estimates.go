package execute

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// estimates keeps the durations this run has measured per step (over every cluster), for the
// p95 estimate of a move's duration.
type estimates struct {
	mode v1alpha1.StepEstimate
	mu   sync.Mutex
	seen map[string][]time.Duration
}

func newEstimates(mode v1alpha1.StepEstimate) *estimates {
	return &estimates{mode: mode, seen: map[string][]time.Duration{}}
}

func (e *estimates) record(name string, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen[name] = append(e.seen[name], d)
}

// expected returns how long steps are expected to take: the sum of their bounds, or, with
// v1alpha1.StepEstimateP95, of the 95th percentile (nearest rank) of each step's measured durations,
// its bound when none was measured yet.
func (e *estimates) expected(steps []step) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var sum time.Duration
	for _, s := range steps {
		ds := e.seen[s.name]
		if e.mode != v1alpha1.StepEstimateP95 || len(ds) == 0 {
			sum += s.bound
			continue
		}
		sorted := append([]time.Duration(nil), ds...)
		sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
		sum += sorted[int(math.Ceil(0.95*float64(len(sorted))))-1]
	}
	return sum
}
