package cli

import (
	"context"
	"sync"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Why check reports no health (observe.UnknownHealth).
const (
	healthOffline  = "offline snapshot: Redis health not checked"
	healthNoRedis  = "Redis not read (--redis-roles=false): health not checked"
	healthNoClient = "Redis client: "
)

// judgeHealth sets the Redis health of each cluster of a (m's clusters, in the same order): live
// with --redis-roles, observe.JudgeHealth on the snapshot's pods with p's Redis settings, every
// cluster at once under --redis-deadline; otherwise unknown, saying why.
func (o *modelOptions) judgeHealth(ctx context.Context, m *policies.Model, a *report.Analysis, p *policy) {
	set := func(h func(c *policies.Cluster) observe.Health) {
		for i, c := range m.Clusters {
			v := h(c)
			a.Clusters[i].Health = &v
		}
	}
	switch {
	case o.snapshot.file != "":
		set(func(*policies.Cluster) observe.Health { return observe.UnknownHealth(healthOffline) })
		return
	case !o.snapshot.redisRoles:
		set(func(*policies.Cluster) observe.Health { return observe.UnknownHealth(healthNoRedis) })
		return
	}
	client, err := o.kube.client()
	if err != nil {
		set(func(*policies.Cluster) observe.Health { return observe.UnknownHealth(healthNoClient + err.Error()) })
		return
	}
	rc, err := redisClient(ctx, client, &p.Redis)
	if err != nil {
		set(func(*policies.Cluster) observe.Health { return observe.UnknownHealth(healthNoClient + err.Error()) })
		return
	}
	defer rc.Close()
	// Every cluster at once under one deadline, as the roles are read (observe.ReadRedis): a Redis
	// that hangs costs its read timeout once, not once per cluster.
	ctx, cancel := o.snapshot.redisContext(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, c := range m.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := observe.JudgeHealth(ctx, rc, c, observe.MemberPods(c))
			a.Clusters[i].Health = &v
			var topo *redisctl.Topology
			if v.Redis != nil {
				topo = v.Redis.Topology
			}
			observe.ForgetCluster(rc, c, topo)
		}()
	}
	wg.Wait()
}
