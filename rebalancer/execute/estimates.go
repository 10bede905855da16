package execute

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// estimates keeps the step durations a move's expected duration is judged with: per Redis
// cluster, those of earlier runs (its StepHistory, loaded from the history ConfigMap) followed by
// those this run measured; and this run's of every cluster.
type estimates struct {
	mode v1alpha1.StepEstimate
	mu   sync.Mutex
	// history is, per Redis cluster ("namespace/name"), the durations loaded and those measured
	// since, oldest first (at most MaxHistorySamples each).
	history map[string]*StepHistory
	// measured is, per Redis cluster, what this run measured (what is saved).
	measured map[string]*StepHistory
}

func newEstimates(mode v1alpha1.StepEstimate) *estimates {
	return &estimates{mode: mode, history: map[string]*StepHistory{}, measured: map[string]*StepHistory{}}
}

// load sets the durations earlier runs measured (StepHistory per Redis cluster), before anything
// is recorded.
func (e *estimates) load(h map[string]*StepHistory) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range h {
		e.history[k] = v.clone()
	}
}

// record records that step name of a move in cluster took d. For the rejoin step, bytes is the
// dataset the replica synced (its used_memory once back; 0 when unknown); a rejoin that synced
// nothing (a pod left Pending) is not recorded.
func (e *estimates) record(cluster, name string, d time.Duration, bytes int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range []map[string]*StepHistory{e.history, e.measured} {
		h := m[cluster]
		if h == nil {
			h = &StepHistory{}
			m[cluster] = h
		}
		h.add(name, d, bytes)
	}
}

// measuredIn returns a copy of cluster's history with what this run measured, or nil when this
// run measured nothing there (nothing to save).
func (e *estimates) measuredIn(cluster string) *StepHistory {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.measured[cluster] == nil {
		return nil
	}
	return e.measured[cluster].clone()
}

// expected returns how long steps of a move in cluster are expected to take: the sum of their
// bounds, or, with v1alpha1.StepEstimateP95, of each step's 95th percentile (nearest rank) of
// the durations measured for it in this cluster (earlier runs and this one) and in this run's
// other clusters, capped at its bound (a step that outlasts its bound aborts); a step never
// measured counts its bound. A rejoin's durations are scaled to dataset, the bytes the moving pod
// holds now (used_memory; 0 when unknown): a rejoin that synced b bytes in d is expected to take
// d × dataset/b when dataset > b (a sync rate of b/d bytes per second), d otherwise.
func (e *estimates) expected(cluster string, steps []step, dataset int64) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var sum time.Duration
	for _, s := range steps {
		if e.mode != v1alpha1.StepEstimateP95 {
			sum += s.bound
			continue
		}
		ds := e.samples(cluster, s.name, dataset)
		if len(ds) == 0 {
			sum += s.bound
			continue
		}
		sort.Float64s(ds)
		p := time.Duration(ds[int(math.Ceil(0.95*float64(len(ds))))-1] * float64(time.Second))
		sum += min(p, s.bound)
	}
	return sum
}

// samples returns the durations (seconds) step name was measured in: cluster's history, then
// this run's other clusters; a rejoin's scaled to dataset (expected). Callers hold mu.
func (e *estimates) samples(cluster, name string, dataset int64) []float64 {
	var out []float64
	add := func(h *StepHistory) {
		if h == nil {
			return
		}
		if name != report.StepRejoin {
			out = append(out, h.Steps[name]...)
			return
		}
		for _, r := range h.Resyncs {
			s := r.Seconds
			if dataset > 0 && r.Bytes > 0 && dataset > r.Bytes {
				s *= float64(dataset) / float64(r.Bytes)
			}
			out = append(out, s)
		}
	}
	add(e.history[cluster])
	for k, h := range e.measured {
		if k != cluster {
			add(h)
		}
	}
	return out
}
