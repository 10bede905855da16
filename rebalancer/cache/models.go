package cache

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
)

// A model of a namespace (policies.Build of its snapshot, every Redis cluster's roles as last
// read applied) costs a pass of every node: on a large cluster, far more than a lookup. The cache
// keeps one per namespace and hands it out again for as long as nothing it was built from has
// changed: no node or PersistentVolume, no object of the namespace, no roles of its Redis
// clusters (Cache.changed and readRoles count those), and the same rules' options. A model
// handed out is shared: callers read it and never change it (ApplyRedis, MarkLost).

// namespaceModel is a kept model and what it was built from.
type namespaceModel struct {
	model *policies.Model
	// opts are the rules' options (fmt's %#v of policies.Options); clusterScoped and inNamespace
	// the counts when it was built.
	opts                       string
	clusterScoped, inNamespace uint64
}

// Model returns the model of namespace built from the cache with opts, every Redis cluster's
// roles as last read applied (a cluster not read yet keeps the roles opts give, or none), kept and
// shared (see above). It issues no request.
func (c *Cache) Model(opts policies.Options, namespace string) (*policies.Model, error) {
	key := fmt.Sprintf("%#v", opts)
	c.mu.Lock()
	// Read the counts before the objects: a change that lands while the model is built makes
	// the model older than its counts say, and the next call builds again.
	scoped, inNS := c.clusterScoped.Load(), c.changes[namespace]
	if k := c.models[namespace]; k != nil && k.opts == key && k.clusterScoped == scoped && k.inNamespace == inNS {
		c.mu.Unlock()
		return k.model, nil
	}
	c.mu.Unlock()
	m, err := observe.LiveFrom(context.Background(), c, opts, observe.Selection{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range m.Clusters {
		if r, ok := c.roles[cl.Key()]; ok && r.Nodes != nil {
			cl.ApplyRedis(r.Nodes)
		}
	}
	c.models[namespace] = &namespaceModel{model: m, opts: key, clusterScoped: scoped, inNamespace: inNS}
	return m, nil
}

// forgetModels drops the models of the namespaces live does not name (no Redis cluster left).
func (c *Cache) forgetModels(live map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ns := range c.models {
		if !live[ns] {
			delete(c.models, ns)
		}
	}
}

// ObserveCluster reads Redis cluster key's roles now (RefreshRoles) and returns the cluster from
// its namespace's model (Model): observe.ClusterObserver. Unless the roles or the namespace's
// objects changed, no model is built. When the roles cannot be read, the cluster is returned with
// the roles last read and the error.
func (c *Cache) ObserveCluster(ctx context.Context, opts policies.Options, key string) (*policies.Cluster, error) {
	if c.opts.Redis == nil {
		return nil, fmt.Errorf("cache: no Redis client: roles are not read")
	}
	ns, name, _ := strings.Cut(key, "/")
	r := c.RefreshRoles(ctx, ns, name)
	m, err := c.Model(opts, ns)
	if err != nil {
		return nil, err
	}
	for _, cl := range m.Clusters {
		if cl.Key() == key {
			if r.Err != nil {
				return cl, r.Err
			}
			return cl, nil
		}
	}
	return nil, fmt.Errorf("cluster %s has no pods any more", key)
}
