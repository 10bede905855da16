package harness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The operator stand-in: what an operator (Bitnami's chart's scripts, OT's redis-operator) does
// for the environment's Redis Cluster while it runs: a new member joins as a replica of its shard,
// and in OT's layout each pod's redis-role label follows its Redis role.

// startOperator starts the operator stand-in (operate); Stop stops it.
func (e *Env) startOperator() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.opDone = make(chan struct{})
	go e.operate(ctx)
}

// operate is the operator stand-in: every 500 ms it adds each Redis node that is alone (a new pod
// with an empty data dir) to the cluster as a replica of its shard's master (not with
// Options.NoMemberAdds), and in OT's layout sets each pod's redis-role label to its Redis role
// (OT's UpdatePodRoleLabel).
func (e *Env) operate(ctx context.Context) {
	defer close(e.opDone)
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, false, func(ctx context.Context) (bool, error) {
		if !e.noAdds {
			if err := e.addNewMembers(ctx); err != nil && ctx.Err() == nil {
				e.logf("operator: %v", err)
			}
		}
		if e.Scenario.Layout == scenario.LayoutOT {
			if err := e.syncRoleLabels(ctx); err != nil && ctx.Err() == nil {
				e.logf("operator: %v", err)
			}
		}
		return false, nil
	})
}

// syncRoleLabels sets the OT redis-role label (master or slave) of every pod whose Redis node
// answers to the role that node reports, as OT's operator does on each reconcile.
func (e *Env) syncRoleLabels(ctx context.Context) error {
	pods, err := e.Cluster.Client().CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods.Items {
		addr, ok := e.Runtime.Addr(e.Namespace, p.Name)
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		role, err := redisRole(ctx, e.Redis, addr)
		if err != nil {
			continue // not answering yet: the next round
		}
		if (role != "master" && role != "slave") || p.Labels[scenario.OTRedisRoleLabel] == role {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, scenario.OTRedisRoleLabel, role)
		if _, err := e.Cluster.Client().CoreV1().Pods(e.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("label %s %s=%s: %w", p.Name, scenario.OTRedisRoleLabel, role, err))
		}
	}
	return errors.Join(errs...)
}

func (e *Env) addNewMembers(ctx context.Context) error {
	servers := e.Runtime.Servers()
	sort.Slice(servers, func(a, b int) bool { return servers[a].Name < servers[b].Name })
	var lonely []redisrt.ServerInfo
	var members []string
	for _, s := range servers {
		info, err := e.Redis.ClusterInfo(ctx, s.Addr)
		if err != nil {
			continue
		}
		if info.Int("cluster_known_nodes", 0) <= 1 && info.Int("cluster_slots_assigned", 0) == 0 {
			lonely = append(lonely, s)
		} else {
			members = append(members, s.Addr)
		}
	}
	if len(lonely) == 0 || len(members) == 0 {
		return nil
	}
	topo, err := e.Redis.Topology(ctx, members)
	if err != nil {
		return err
	}
	pods, err := e.Cluster.Client().CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
	if err != nil {
		return err
	}
	shardOf := map[string]int{} // pod IP → the scenario's shard
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			shardOf[p.Status.PodIP] = e.ShardOf(p.Name)
		}
	}
	var errs []error
	for _, s := range lonely {
		shard, known := shardOf[s.IP]
		masterID := ""
		for _, n := range topo.Nodes {
			if sh, ok := shardOf[n.IP]; ok && known && shard >= 0 && sh == shard && n.IsMaster() && !n.IsFailing() {
				masterID = n.ID
			}
		}
		if masterID == "" {
			errs = append(errs, fmt.Errorf("new member %s (%s): no master for shard %d", s.Name, s.Addr, shard))
			continue
		}
		if err := redistest.AddReplica(ctx, e.Redis, s.Addr, members[0], masterID, 30*time.Second); err != nil {
			errs = append(errs, err)
			continue
		}
		e.logf("operator: added %s (%s) as a replica in shard %d", s.Name, s.Addr, shard)
	}
	return errors.Join(errs...)
}
