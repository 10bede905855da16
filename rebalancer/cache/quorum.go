package cache

import (
	"strings"
	"sync"

	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// QuorumWatch evaluates MasterQuorum after each read of a Redis cluster's roles that changed
// them, or that follows an evaluation that found the rule broken: on the model of the cluster's
// namespace the cache keeps (Model, opts: the rules' options), with the roles read. While the rule is
// broken, broken is called with the cluster's key and its MasterQuorum violations after every
// read (the caller rate-limits what it does about them; the log says so once); once it holds
// again, the cluster is no longer evaluated until its roles change. Reads that fail are skipped. It issues no request to
// the API server.
func (c *Cache) QuorumWatch(opts policies.Options, broken func(key string, vs []policies.Violation)) {
	var mu sync.Mutex
	known := map[string]bool{} // clusters whose MasterQuorum was broken at their last evaluation
	c.OnRoles(func(key string, r Roles) {
		mu.Lock()
		defer mu.Unlock()
		if r.Err != nil || !r.Changed && !known[key] {
			return
		}
		vs, err := c.quorumViolations(key, opts)
		if err != nil {
			klog.V(2).InfoS("MasterQuorum not evaluated", "cluster", key, "err", err)
			return
		}
		if len(vs) == 0 {
			if known[key] {
				klog.InfoS("MasterQuorum holds again", "cluster", key)
			}
			delete(known, key)
			return
		}
		if !known[key] {
			klog.InfoS("MasterQuorum broken", "cluster", key, "violations", len(vs), "first", vs[0].Message)
		}
		known[key] = true
		broken(key, vs)
	})
}

// quorumViolations returns the MasterQuorum violations of Redis cluster key under its roles as
// last read, on the kept model of its namespace (Model).
func (c *Cache) quorumViolations(key string, opts policies.Options) ([]policies.Violation, error) {
	ns, _, _ := strings.Cut(key, "/")
	m, err := c.Model(opts, ns)
	if err != nil {
		return nil, err
	}
	var out []policies.Violation
	for _, cl := range m.Clusters {
		if cl.Key() != key {
			continue
		}
		for _, v := range policies.Hard(cl.Evaluate(cl.Current())) {
			if v.Rule == policies.MasterQuorum {
				out = append(out, v)
			}
		}
	}
	return out, nil
}
