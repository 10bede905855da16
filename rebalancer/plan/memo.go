package plan

import (
	"sync"
	"weak"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Memo keeps each Redis cluster's last plan with what it was made from, so that a long-running
// caller (serve, whose watched cache hands out the same *policies.Cluster for as long as neither
// its namespace's objects nor its Redis roles change: rebalancer/cache's Model) plans again only
// what changed: a later pass with nothing changed costs the verdicts alone. A plan is reused for
// the same cluster object and the same Options, and for nothing else; the memo holds the cluster
// weakly, so that it never keeps an old model alive. Safe for concurrent use; the zero value is
// ready to use.
type Memo struct {
	mu    sync.Mutex
	plans map[string]memoEntry // by cluster key
	// computed and reused count the calls of Compute that planned and that reused a plan.
	computed, reused int
}

// memoEntry is one cluster's kept plan.
type memoEntry struct {
	cluster weak.Pointer[policies.Cluster]
	opts    Options
	plan    Plan
}

// Compute returns Compute(c, opts), computed again only when the memo holds no plan made from
// this very cluster object with these options. The Plan returned may share its slices with the
// memo's copy and with earlier callers': callers read it, never change it.
func (m *Memo) Compute(c *policies.Cluster, opts Options) Plan {
	key := c.Key()
	m.mu.Lock()
	if e, ok := m.plans[key]; ok && e.cluster.Value() == c && e.opts == opts {
		m.reused++
		m.mu.Unlock()
		return e.plan
	}
	m.mu.Unlock()
	p := Compute(c, opts)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.plans == nil {
		m.plans = map[string]memoEntry{}
	}
	for k, e := range m.plans {
		if e.cluster.Value() == nil {
			delete(m.plans, k) // its cluster is gone: no caller can ask for its plan again
		}
	}
	m.plans[key] = memoEntry{cluster: weak.Make(c), opts: opts, plan: p}
	m.computed++
	return p
}

// ComputeAll is ComputeAll through the memo: only the clusters whose plan it does not hold are
// planned (in parallel, as ComputeAll plans them).
func (m *Memo) ComputeAll(cs []*policies.Cluster, opts Options) []Result {
	return computeAll(cs, func(c *policies.Cluster) Plan { return m.Compute(c, opts) })
}

// Forget drops the plan kept for the cluster key (namespace/name): it needs none any more.
func (m *Memo) Forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.plans, key)
}

// Counts returns how many calls of Compute planned (computed) and how many reused a kept plan.
func (m *Memo) Counts() (computed, reused int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.computed, m.reused
}
