package handoff

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/cache"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// fakeRoles is Redis as the hand-off reads it: a master address per replica address ("" for a
// master), pod IP 10.0.<shard>.<ordinal>, ordinal 0 the master at first. It is also the executor:
// HandOff swaps the roles of the move's two members, as a verified failover would.
type fakeRoles struct {
	mu      sync.Mutex
	master  map[string]string
	slots   map[string][]redisctl.SlotRange
	handOff []string // "from → to (why)"
	pods    map[int]string
}

func (f *fakeRoles) AddrOf(ip string) string { return ip + ":6379" }

func (f *fakeRoles) Topology(_ context.Context, _ []string) (*redisctl.Topology, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := func(addr string) string { return fmt.Sprintf("%040x", []byte(addr)[:min(len(addr), 20)]) }
	t := &redisctl.Topology{}
	for addr, m := range f.master {
		ip, _, _ := strings.Cut(addr, ":")
		n := redisctl.Node{ID: id(addr), IP: ip, Port: 6379, LinkState: redisctl.LinkConnected}
		if m == "" {
			n.Flags, n.Slots = []string{redisctl.FlagMaster}, f.slots[addr]
		} else {
			n.Flags, n.MasterID = []string{redisctl.FlagReplica}, id(m)
		}
		t.Nodes = append(t.Nodes, n)
	}
	sort.Slice(t.Nodes, func(a, b int) bool { return t.Nodes[a].IP < t.Nodes[b].IP })
	return t, nil
}

func (f *fakeRoles) HandOff(_ context.Context, c *policies.Cluster, mv plan.Move, why string) (report.MoveResult, *policies.Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	from, to := f.AddrOf(c.Members[mv.Member].Pod.Status.PodIP), f.AddrOf(c.Members[mv.FailoverTo].Pod.Status.PodIP)
	for addr, m := range f.master {
		if m == from {
			f.master[addr] = to
		}
	}
	f.master[to], f.master[from] = "", to
	f.slots[to], f.slots[from] = f.slots[from], nil
	f.handOff = append(f.handOff, fmt.Sprintf("%s → %s (%s)", mv.From, mv.To, why))
	return report.MoveResult{Kind: plan.KindFailover, Outcome: report.OutcomeContinue}, nil, nil
}

func (f *fakeRoles) handOffs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.handOff...)
}

// handOffBed lays sc out in a fake clientset (pods 10.0.<shard>.<ordinal>, n1 changed by node),
// and returns a Controller on it (scanning every 10 ms) with its Redis, holds and client, its
// source a watched cache (rebalancer/cache) of the client, synced.
func handOffBed(t *testing.T, sc scenario.Scenario, node ...fixture.NodeOption) (*Controller, *fakeRoles, *guard.Holds, *fake.Clientset) {
	t.Helper()
	snap, err := sc.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRoles{master: map[string]string{}, slots: map[string][]redisctl.SlotRange{}}
	var objs []runtime.Object
	for _, n := range snap.Nodes {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if n.Name == "n1" {
			for _, o := range node {
				o(n)
			}
		}
		objs = append(objs, n)
	}
	for _, s := range snap.StatefulSets {
		objs = append(objs, s)
	}
	for i := 0; i < sc.Shards; i++ {
		for o := 0; o < sc.PodsPerShard; o++ {
			addr := f.AddrOf(fmt.Sprintf("10.0.%d.%d", i, o))
			f.master[addr] = ""
			if o > 0 {
				f.master[addr] = f.AddrOf(fmt.Sprintf("10.0.%d.0", i))
			} else {
				f.slots[addr] = []redisctl.SlotRange{{Start: i * 1000, End: i*1000 + 999}}
			}
		}
	}
	for _, p := range snap.Pods {
		i, o := sc.ShardOf(p.Name), 0
		if strings.HasSuffix(p.Name, "-1") {
			o = 1
		}
		p.Status.PodIP = fmt.Sprintf("10.0.%d.%d", i, o)
		fixture.Ready()(p)
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	src := cache.New(client, cache.Options{Redis: f})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	src.Start(ctx)
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	holds := guard.NewHolds(nil, time.Hour)
	c, err := New(Config{
		Client: client, Source: src, Holds: holds, Executor: f,
		Policy: policies.Options{ClusterLabel: policies.DefaultClusterLabel}, DrainTaints: []string{"ToBeDeletedByClusterAutoscaler"},
		MaxHold: time.Hour, ScanInterval: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, f, holds, client
}

// runFor runs c until want hand-offs were made (or 10 s pass), then 200 ms more (nothing else
// may come), and returns them.
func runFor(t *testing.T, c *Controller, f *fakeRoles, want int) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(f.handOffs()) >= want, nil
	})
	time.Sleep(200 * time.Millisecond) // the scans that follow: settled, nothing more to hand off
	cancel()
	<-done
	return f.handOffs()
}

func TestControllerHandsOffTheMastersOfANodeBeingEmptied(t *testing.T) {
	for _, tc := range []struct {
		name string
		node fixture.NodeOption
		want []string
	}{
		{
			name: "n1 cordoned → room on n3 and n6 first, then its 3 masters, one at a time, each once",
			node: fixture.Cordoned(),
			want: []string{
				"redis/redis-s3-0 → redis/redis-s3-1 (keeps MasterQuorum over the nodes that stay (at most 2 of the 5 masters per node and 2 per zone) once the masters leave the drained nodes)",
				"redis/redis-s4-0 → redis/redis-s4-1 (keeps MasterQuorum over the nodes that stay (at most 2 of the 5 masters per node and 2 per zone) once the masters leave the drained nodes)",
				"redis/redis-s0-0 → redis/redis-s0-1 (node n1 is being emptied (cordoned); master on n1, which the drain empties; MasterQuorum over the nodes that stay: at most 2 of the 5 masters per node and 2 per zone)",
				"redis/redis-s1-0 → redis/redis-s1-1 (node n1 is being emptied (cordoned); master on n1, which the drain empties; MasterQuorum over the nodes that stay: at most 2 of the 5 masters per node and 2 per zone)",
				"redis/redis-s2-0 → redis/redis-s2-1 (node n1 is being emptied (cordoned); master on n1, which the drain empties; MasterQuorum over the nodes that stay: at most 2 of the 5 masters per node and 2 per zone)",
			},
		},
		{
			name: "n1 tainted ToBeDeletedByClusterAutoscaler → the same, before any eviction",
			node: fixture.Tainted("ToBeDeletedByClusterAutoscaler", "1767225600", corev1.TaintEffectNoSchedule),
			want: nil, // filled below: the same hand-offs, the taint named
		},
		{
			name: "n1 cordoned but NotReady → nothing: its Redis nodes are gone, Redis promotes",
			node: func(n *corev1.Node) {
				fixture.Cordoned()(n)
				n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
			},
			want: []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f, _, _ := handOffBed(t, scenario.RoleOnly(), tc.node)
			want := tc.want
			if want == nil {
				c0, f0, _, _ := handOffBed(t, scenario.RoleOnly(), fixture.Cordoned())
				for _, h := range runFor(t, c0, f0, 5) {
					want = append(want, strings.ReplaceAll(h, "(cordoned)", "(taint ToBeDeletedByClusterAutoscaler)"))
				}
			}
			got := runFor(t, c, f, len(want))
			if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
				t.Errorf("hand-offs (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpEmpty equates nil and empty lists.
var cmpEmpty = cmp.Comparer(func(a, b []string) bool {
	return len(a) == 0 && len(b) == 0 || cmp.Equal([]string(a), []string(b))
})

func TestControllerHandsOffHeldEvictions(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(client *fake.Clientset) guard.Hold
		want []string
	}{
		{
			name: "the guard held redis-s4-0's eviction (a master on a node that stays) → that master only",
			hold: func(*fake.Clientset) guard.Hold {
				return guard.Hold{Namespace: "redis", Name: "redis-s4-0", UID: "pod-redis-s4-0"}
			},
			want: []string{"redis/redis-s4-0 → redis/redis-s4-1 (the guard held the eviction of pod redis/redis-s4-0)"},
		},
		{
			name: "a hold naming a pod UID the API server does not hold (a forged review, a pod re-created since) → nothing",
			hold: func(*fake.Clientset) guard.Hold {
				return guard.Hold{Namespace: "redis", Name: "redis-s4-0", UID: "forged"}
			},
			want: []string{},
		},
		{
			name: "a hold of a replica → nothing to hand off",
			hold: func(*fake.Clientset) guard.Hold {
				return guard.Hold{Namespace: "redis", Name: "redis-s4-1", UID: "pod-redis-s4-1"}
			},
			want: []string{},
		},
		{
			name: "a RedisEvictionHeld Event of another replica → that master",
			hold: func(client *fake.Clientset) guard.Hold {
				_, err := client.CoreV1().Events("redis").Create(context.Background(), &corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: "held", Namespace: "redis"},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "redis", Name: "redis-s3-0", UID: "pod-redis-s3-0"},
					Reason:         guard.EventEvictionHeld, EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "redis-rebalancer",
				}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return guard.Hold{}
			},
			want: []string{"redis/redis-s3-0 → redis/redis-s3-1 (the guard held the eviction of pod redis/redis-s3-0)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f, holds, client := handOffBed(t, scenario.RoleOnly())
			if h := tc.hold(client); h.UID != "" {
				holds.Hold(h)
			}
			got := runFor(t, c, f, len(tc.want))
			if diff := cmp.Diff(tc.want, got, cmpEmpty); diff != "" {
				t.Errorf("hand-offs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestControllerLeavesStaleHolds: a hold no denial has renewed for StaleAfter belongs to an
// evictor that stopped asking and is not handed off; one renewed is (seed 1's 30-minute soak: a
// drain of n7 given up at +12m3s, n7 uncordoned, and the hand-off, busy until +13m5s, then failed
// redis-cluster-8 over from n7 to a zone already holding 3 of the 6 masters, breaking
// MasterQuorum for nothing).
func TestControllerLeavesStaleHolds(t *testing.T) {
	c, f, _, _ := handOffBed(t, scenario.RoleOnly())
	clk := clocktesting.NewFakePassiveClock(time.Now())
	holds := guard.NewHolds(clk, time.Hour)
	c.cfg.Holds = holds
	holds.Hold(guard.Hold{Namespace: "redis", Name: "redis-s3-0", UID: "pod-redis-s3-0"})
	clk.SetTime(clk.Now().Add(DefaultStaleAfter + time.Second))
	holds.Hold(guard.Hold{Namespace: "redis", Name: "redis-s4-0", UID: "pod-redis-s4-0"})
	// Another replica's holds, known from their Events: one just now, one older than StaleAfter.
	now := time.Now()
	c.remote["pod-redis-s1-0"] = guard.Hold{Namespace: "redis", Name: "redis-s1-0", UID: "pod-redis-s1-0", Since: now, Last: now}
	old := now.Add(-DefaultStaleAfter - time.Second)
	c.remote["pod-redis-s2-0"] = guard.Hold{Namespace: "redis", Name: "redis-s2-0", UID: "pod-redis-s2-0", Since: old, Last: old}
	want := []string{
		"redis/redis-s1-0 → redis/redis-s1-1 (the guard held the eviction of pod redis/redis-s1-0)",
		"redis/redis-s4-0 → redis/redis-s4-1 (the guard held the eviction of pod redis/redis-s4-0)",
	}
	if diff := cmp.Diff(want, runFor(t, c, f, len(want)), cmpEmpty); diff != "" {
		t.Errorf("hand-offs (-want +got):\n%s", diff)
	}
}

// countingSource counts the observations of a cluster (one per hand-off attempt).
type countingSource struct {
	Source
	observed atomic.Int64
}

func (s *countingSource) ObserveCluster(ctx context.Context, opts policies.Options, key string) (*policies.Cluster, error) {
	s.observed.Add(1)
	return s.Source.ObserveCluster(ctx, opts, key)
}

// TestControllerReadsNoListPerAttempt counts the requests the hand-off makes to the API server
// (a reactor on the fake clientset, after the watched cache has synced): while n1 stays
// cordoned, its 3 masters and 2 that make room are handed off, then the cluster is looked at
// again every SettledFor (20 ms here, 30 s by default) until at least 15 attempts were made. The
// pods, nodes and every other object come from the watched cache: no LIST and no GET, whatever
// the number of attempts (the Events of the other replicas' holds are watched: one LIST).
func TestControllerReadsNoListPerAttempt(t *testing.T) {
	c0, f, _, client := handOffBed(t, scenario.RoleOnly(), fixture.Cordoned())
	cfg := c0.cfg
	src := &countingSource{Source: cfg.Source}
	cfg.Source, cfg.SettledFor = src, 20*time.Millisecond
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	requests := map[string]int{} // "verb resource" → count
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if v := a.GetVerb(); v == "list" || v == "get" {
			mu.Lock()
			requests[v+" "+a.GetResource().Resource]++
			mu.Unlock()
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(f.handOffs()) >= 5 && src.observed.Load() >= 15, nil
	})
	cancel()
	<-done
	if err != nil {
		t.Fatalf("%d hand-offs, %d attempts: want 5 and at least 15", len(f.handOffs()), src.observed.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"list events": 1}
	if diff := cmp.Diff(want, requests); diff != "" {
		t.Errorf("requests to the API server over %d attempts (-want +got):\n%s", src.observed.Load(), diff)
	}
	t.Logf("%d hand-offs and %d attempts; requests: %v", len(f.handOffs()), src.observed.Load(), requests)
}
