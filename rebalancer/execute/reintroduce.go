package execute

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// reintroduceEmpty finishes, before a cluster's moves, what a move that released a pod's claims
// left undone when it was stopped between the release and the rejoin (a run killed, a step
// aborted): the pod came back with empty volumes, its Redis node knows no other node, and the
// cluster still lists the replica it replaces, gone. It pairs each such empty node (a member pod's
// node that knows no other node and serves no slot) with one such old replica (listed by the
// other nodes, answering no more, at no member pod's address, its master a healthy master), in
// order, and re-introduces it as a replica of that master, the old one forgotten
// (Redis.Reintroduce), then waits for its full sync (FullSyncTimeout). It acts only with
// Policy.ReleaseReplicaClaims (without it, a node back empty is its operator's to add) and leaves
// alone an empty node with no old replica to replace (a scale-up: its operator adds it). It
// returns one line per node re-introduced.
func (cr *clusterRun) reintroduceEmpty(ctx context.Context, c *policies.Cluster) ([]string, error) {
	if !cr.cfg.Policy.ReleaseReplicaClaims || cr.cfg.DryRun || !cr.act {
		return nil, nil
	}
	podAt, addrs := cr.memberAddrs(c)
	if len(addrs) == 0 {
		return nil, nil
	}
	topo, err := cr.cfg.Redis.Topology(ctx, addrs)
	if err != nil {
		return nil, fmt.Errorf("re-introduce: %w", err)
	}
	var empty []string // addresses of member pods' nodes that know no other node
	answering := map[string]bool{}
	for _, v := range topo.Views {
		self, ok := v.Myself()
		if !ok {
			continue
		}
		answering[self.ID] = true
		if len(v.Nodes) == 1 && len(self.Slots) == 0 && podAt[v.Addr] != "" {
			empty = append(empty, v.Addr)
		}
	}
	if len(empty) == 0 {
		return nil, nil
	}
	masters := map[string]redisctl.Node{}
	for _, n := range topo.Nodes {
		if n.IsMaster() && !n.IsFailing() && n.IsUsable() && len(n.Slots) > 0 {
			masters[n.ID] = n
		}
	}
	var gone []redisctl.Node // replicas the cluster lists that answer no more, at no pod's address
	for _, n := range topo.Nodes {
		if n.IsReplica() && !answering[n.ID] && podAt[n.Addr()] == "" && masters[n.MasterID].ID != "" {
			gone = append(gone, n)
		}
	}
	sort.Slice(gone, func(a, b int) bool { return gone[a].ID < gone[b].ID })
	slices.SortFunc(empty, func(a, b string) int {
		switch {
		case podAt[a] < podAt[b]:
			return -1
		case podAt[a] > podAt[b]:
			return 1
		}
		return 0
	})
	var done []string
	for k, addr := range empty {
		if k >= len(gone) {
			cr.printf("  ! %s (%s) knows no other Redis node and replaces no node the cluster lists: left to its operator (a scale-up?)\n", podAt[addr], addr)
			continue
		}
		old, master := gone[k], masters[gone[k].MasterID]
		pod := podAt[addr]
		cr.printf("  … %s (%s) came back empty in place of replica %s (%s) of %s: re-introducing it (a move that released its claims was stopped before its rejoin)\n", pod, addr, short(old.ID), old.Addr(), master.Addr())
		progress := func(s string) { cr.printf("    … %s: %s\n", pod, s) }
		start := cr.cfg.Clock.Now()
		id, err := cr.cfg.Redis.Reintroduce(ctx, addr, old.ID, master.ID, addrs, cr.cfg.FullSyncTimeout, progress)
		if err != nil {
			return done, fmt.Errorf("re-introduce %s: %w", pod, err)
		}
		if err := cr.cfg.Redis.WaitRejoin(ctx, addr, master.ID, cr.cfg.FullSyncTimeout-cr.cfg.Clock.Since(start), progress); err != nil {
			return done, fmt.Errorf("re-introduce %s: %w", pod, err)
		}
		line := fmt.Sprintf("%s: node %s re-introduced in place of %s, an in-sync replica of %s after a full sync", pod, short(id), short(old.ID), master.Addr())
		cr.printf("  ✓ %s\n", line)
		done = append(done, line)
	}
	return done, nil
}

// rejoinStrays makes each member pod's Redis node that is a stray master (redisctl.StrayMaster:
// a master without slots holding a copy of another master's keys, which Redis's start-up check
// marked importing though no migration runs) a replica of that master again
// (Redis.RejoinStray: FLUSHALL, CLUSTER REPLICATE; a Replicating one's server is restarted
// first, SHUTDOWN NOSAVE, as Redis refuses both until then), then waits for its full sync
// (FullSyncTimeout). Until then its shard has no replica and every health gate refuses. It acts
// only in a run that may act (a window open, not a dry run); otherwise it says what it would do.
// A stray master at no member pod's address is left alone. It returns one line per node rejoined.
func (cr *clusterRun) rejoinStrays(ctx context.Context, c *policies.Cluster) ([]string, error) {
	// A stray master serves no slot: without a member Redis reports so (observe.ApplyRedis),
	// there is none, and no topology is read again.
	if !slices.ContainsFunc(c.Members, func(m *policies.Member) bool { return m.EmptyMaster }) {
		return nil, nil
	}
	podAt, addrs := cr.memberAddrs(c)
	if len(addrs) == 0 {
		return nil, nil
	}
	topo, err := cr.cfg.Redis.Topology(ctx, addrs)
	if err != nil {
		return nil, fmt.Errorf("stray masters: %w", err)
	}
	var done []string
	for _, s := range topo.StrayMasters() {
		pod := podAt[s.Addr]
		if pod == "" {
			continue
		}
		if cr.cfg.DryRun || !cr.act {
			cr.printf("  ! %s is a stray master, %s: a run that may act makes it a replica of %s again\n", pod, s, s.Owner.Addr())
			continue
		}
		how := "no migration running: making it a replica of " + s.Owner.Addr() + " again"
		if s.Replicating {
			how = "as Redis 7.0 leaves a replica after an UPDATE about itself: restarting its server, then making it a replica of " + s.Owner.Addr() + " again"
		}
		cr.printf("  … %s is a stray master, %s, %s\n", pod, s, how)
		progress := func(line string) { cr.printf("    … %s: %s\n", pod, line) }
		start := cr.cfg.Clock.Now()
		if err := cr.cfg.Redis.RejoinStray(ctx, s.Addr, s.Owner.ID, addrs, cr.cfg.FullSyncTimeout, progress); err != nil {
			return done, fmt.Errorf("rejoin stray master %s: %w", pod, err)
		}
		if err := cr.cfg.Redis.WaitRejoin(ctx, s.Addr, s.Owner.ID, cr.cfg.FullSyncTimeout-cr.cfg.Clock.Since(start), progress); err != nil {
			return done, fmt.Errorf("rejoin stray master %s: %w", pod, err)
		}
		what := fmt.Sprintf("a copy of %d slots of %s", s.Count, s.Owner.Addr())
		if s.Replicating {
			what = "flagged master while it replicated " + s.Owner.Addr() + ", restarted"
		}
		line := fmt.Sprintf("%s: stray master %s (%s) made a replica of it again, in sync after a full sync", pod, short(s.ID), what)
		cr.printf("  ✓ %s\n", line)
		done = append(done, line)
	}
	return done, nil
}

// memberAddrs returns the Redis addresses of c's member pods that are placed, have an IP and are
// not terminating, and the pod at each.
func (cr *clusterRun) memberAddrs(c *policies.Cluster) (podAt map[string]string, addrs []string) {
	podAt = map[string]string{}
	for _, mem := range c.Members {
		if ip := mem.Pod.Status.PodIP; ip != "" && mem.Node >= 0 && !mem.Terminating {
			a := cr.cfg.Redis.AddrOf(ip)
			podAt[a] = mem.Pod.Name
			addrs = append(addrs, a)
		}
	}
	return podAt, addrs
}
