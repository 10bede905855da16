package app

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
	healthOffline = "offline snapshot: Redis health not checked"
	healthNoRedis = "Redis not read (--redis-roles=false): health not checked"
)

// judgeHealth sets the Redis health of each cluster of a (m's clusters, in the same order): live
// with --redis-roles, observe.JudgeHealth on the snapshot's pods through rc (the client model read
// the roles with), every cluster at once under --redis-deadline; otherwise (offline, or rc nil)
// unknown, saying why.
func (o *modelOptions) judgeHealth(ctx context.Context, m *policies.Model, a *report.Analysis, rc *redisctl.Client) {
	unknown := func(why string) {
		for i := range m.Clusters {
			v := observe.UnknownHealth(why)
			a.Clusters[i].Health = &v
		}
	}
	switch {
	case o.snapshot.file != "":
		unknown(healthOffline)
		return
	case rc == nil:
		unknown(healthNoRedis)
		return
	}
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
