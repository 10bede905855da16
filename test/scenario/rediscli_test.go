package scenario

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// TestBitnamiFormedAsRedisCliForms forms clusters as the Bitnami chart's init does — redis-cli
// --cluster create --cluster-replicas R over the pods' addresses in ordinal order, every node at
// an IP of its own (127.x.y.<ordinal+1>, as pods have) — with the installed redis-cli and
// redis-server, and checks that the Bitnami layout's Redis side (BitnamiOrdinal's pairing,
// RedisCliSlots' ranges) is what redis-cli made. On one IP (every node on 127.0.0.1, ports apart)
// redis-cli's anti-affinity pass shuffles the replicas at random: the nodes need IPs of their own.
func TestBitnamiFormedAsRedisCliForms(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (installed with redis-server) is needed: %v", err)
	}
	for _, tc := range []struct {
		name            string
		nodes, replicas int
	}{
		{name: "the chart's default cluster.nodes=6 → 3 masters, 0←4, 1←5, 2←3", nodes: 6, replicas: 1},
		{name: "cluster.nodes=10 → 5 masters, 0←6, 1←7, 2←8, 3←9, 4←5", nodes: 10, replicas: 1},
		{name: "cluster.nodes=9 cluster.replicas=2 → 3 masters, 0←4,5; 1←6,7; 2←8,3", nodes: 9, replicas: 2},
		{name: "cluster.nodes=14 → 7 masters, slots split as redis-cli rounds them", nodes: 14, replicas: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.nodes / (tc.replicas + 1)
			sc := Scenario{Layout: LayoutBitnami, Cluster: "redis-cluster", Shards: m, PodsPerShard: tc.replicas + 1}
			c := redistest.Start(t, redistest.Config{Shards: tc.nodes, PodsPerShard: 1, NoForm: true})
			ordinal := map[string]int{} // node address → pod ordinal
			args := []string{"--cluster", "create"}
			for k, shard := range c.Shards {
				ordinal[shard[0].Addr()] = k
				args = append(args, shard[0].Addr())
			}
			args = append(args, "--cluster-replicas", strconv.Itoa(tc.replicas), "--cluster-yes")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
				t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			// CLUSTER REPLICATE reaches the first node by gossip: wait until it sees every replica.
			first := c.Shards[0][0].Addr()
			var nodes []redisctl.Node
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				nodes, err = c.Client.ClusterNodes(ctx, first)
				if err != nil {
					return false, nil
				}
				replicas := 0
				for _, n := range nodes {
					if n.IsReplica() {
						replicas++
					}
				}
				return replicas == tc.nodes-m, nil
			})
			if err != nil {
				t.Fatalf("%s never saw %d replicas: %v (last view %v)", first, tc.nodes-m, err, nodes)
			}

			got := map[int]string{} // ordinal → "master slots A-B" or "replica of ordinal K"
			byID := map[string]int{}
			for _, n := range nodes {
				byID[n.ID] = ordinal[fmt.Sprintf("%s:%d", n.IP, n.Port)]
			}
			for _, n := range nodes {
				k := byID[n.ID]
				if n.IsMaster() {
					var ranges []string
					for _, r := range n.Slots {
						ranges = append(ranges, fmt.Sprintf("%d-%d", r.Start, r.End))
					}
					got[k] = "master slots " + strings.Join(ranges, " ")
				} else {
					got[k] = fmt.Sprintf("replica of %d", byID[n.MasterID])
				}
			}
			want := map[int]string{}
			for i := 0; i < m; i++ {
				r := RedisCliSlots(i, m)
				want[sc.BitnamiOrdinal(i, 0)] = fmt.Sprintf("master slots %d-%d", r[0], r[1])
				for o := 1; o <= tc.replicas; o++ {
					want[sc.BitnamiOrdinal(i, o)] = fmt.Sprintf("replica of %d", i)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the cluster redis-cli formed, by pod ordinal (-want BitnamiOrdinal, RedisCliSlots +got):\n%s", diff)
			}
		})
	}
}
