package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The unit tests run the cache's informers on client-go's fake clientset (its tracker serves
// LIST and WATCH) holding a scenario's objects, each pod with IP 10.0.<shard>.<ordinal>, and a
// fake Redis whose CLUSTER NODES the test sets.

// bed is a fake clientset with a scenario, counting its LIST requests.
type bed struct {
	sc     scenario.Scenario
	client *fake.Clientset
	lists  atomic.Int64
}

func newBed(t *testing.T, sc scenario.Scenario) *bed {
	t.Helper()
	snap := sc.MustSnapshot()
	var objs []runtime.Object
	for _, n := range snap.Nodes {
		objs = append(objs, n)
	}
	for _, p := range snap.Pods {
		var s, o int
		if _, err := fmt.Sscanf(p.Name, "redis-s%d-%d", &s, &o); err != nil {
			t.Fatal(err)
		}
		p.Status.PodIP = podIP(s, o)
		objs = append(objs, p)
	}
	for _, s := range snap.StatefulSets {
		objs = append(objs, s)
	}
	for _, b := range snap.PodDisruptionBudgets {
		objs = append(objs, b)
	}
	b := &bed{sc: sc, client: fake.NewClientset(objs...)}
	b.client.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		b.lists.Add(1)
		return false, nil, nil
	})
	return b
}

func podIP(shard, ordinal int) string { return fmt.Sprintf("10.0.%d.%d", shard, ordinal) }

// start starts a cache on the bed with opts and waits for its informers to sync.
func (b *bed) start(t *testing.T, opts Options) *Cache {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := New(b.client, opts)
	c.Start(ctx)
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if err := c.WaitForSync(sctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeRedis answers CLUSTER NODES for every address with the lines nodes builds: each shard's
// master at the ordinal masters says (0 when absent).
type fakeRedis struct {
	sc      scenario.Scenario
	mu      sync.Mutex
	masters map[int]int
	reads   atomic.Int64
}

func (f *fakeRedis) AddrOf(ip string) string { return net.JoinHostPort(ip, "6379") }

func (f *fakeRedis) setMaster(shard, ordinal int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.masters[shard] = ordinal
}

func (f *fakeRedis) Topology(context.Context, []string) (*redisctl.Topology, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	id := func(s, o int) string { return fmt.Sprintf("%040d", s*10+o+1) }
	for s := 0; s < f.sc.Shards; s++ {
		m := f.masters[s]
		for o := 0; o < f.sc.PodsPerShard; o++ {
			addr := podIP(s, o) + ":6379@16379"
			if o == m {
				fmt.Fprintf(&b, "%s %s master - 0 0 %d connected %d-%d\n", id(s, o), addr, s+1, s*16384/f.sc.Shards, (s+1)*16384/f.sc.Shards-1)
			} else {
				fmt.Fprintf(&b, "%s %s slave %s 0 0 %d connected\n", id(s, o), addr, id(s, m), s+1)
			}
		}
	}
	nodes, err := redisctl.ParseClusterNodes(b.String())
	if err != nil {
		return nil, err
	}
	return &redisctl.Topology{Nodes: nodes}, nil
}

// TestCacheSnapshotIssuesNoList checks that the cache, once synced, gives the snapshot a LIST of
// each resource gives (the same model, the same verdict) without a single LIST more, and its
// pods by selector and by Redis cluster.
func TestCacheSnapshotIssuesNoList(t *testing.T) {
	b := newBed(t, scenario.PostScaleDown())
	c := b.start(t, Options{})
	listed, err := observe.ReadSnapshot(t.Context(), b.client, "")
	if err != nil {
		t.Fatal(err)
	}
	before := b.lists.Load()
	snap, err := c.Snapshot(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	opts := policies.Options{RoleLabel: scenario.RoleLabel}
	verdict := func(s *policies.Snapshot) string {
		m, err := policies.Build(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(m.Clusters[0].Evaluate(m.Clusters[0].Current()))
		return string(out)
	}
	if diff := cmp.Diff(verdict(listed), verdict(snap)); diff != "" {
		t.Errorf("violations from the LISTs (-) and from the cache (+):\n%s", diff)
	}
	pods, err := c.Pods(t.Context(), "redis", labels.SelectorFromSet(labels.Set{policies.DefaultClusterLabel: "redis"}))
	if err != nil || len(pods) != 10 {
		t.Errorf("Pods by the cluster label: %d pods, %v; want 10", len(pods), err)
	}
	if got := len(c.ClusterPods("redis", "redis")); got != 10 {
		t.Errorf("ClusterPods = %d pods, want 10", got)
	}
	if got := c.Clusters(); !cmp.Equal(got, []string{"redis/redis"}) {
		t.Errorf("Clusters = %v, want [redis/redis]", got)
	}
	if n, ok := c.Node("n1"); !ok || n.Name != "n1" {
		t.Errorf("Node(n1) = %v, %v", n, ok)
	}
	if _, err := observe.LiveFrom(t.Context(), c, opts, observe.Selection{Namespace: "redis"}); err != nil {
		t.Fatal(err)
	}
	if after := b.lists.Load(); after != before {
		t.Errorf("%d LISTs while reading the synced cache, want 0", after-before)
	}
}

// TestCacheGeneration checks that the generation moves with what the model reads (a label),
// not with what trimming drops (a heartbeat), and that WaitForPod sees an update.
func TestCacheGeneration(t *testing.T) {
	b := newBed(t, scenario.PostScaleDown())
	c := b.start(t, Options{})
	nodes := b.client.CoreV1().Nodes()
	update := func(change func(n *corev1.Node)) {
		t.Helper()
		n, err := nodes.Get(t.Context(), "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(n)
		n.ResourceVersion = fmt.Sprint(time.Now().UnixNano())
		if _, err := nodes.Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got, _ := c.Node("n1")
			return got != nil && got.ResourceVersion == n.ResourceVersion, nil
		})
		if err != nil {
			t.Fatalf("the cache never saw n1's update: %v", err)
		}
	}
	g := c.Generation()
	update(func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}}
	})
	// The informer's store shows the update before its handler moves the generation: wait for it.
	moved := func(from uint64) uint64 {
		t.Helper()
		var now uint64
		_ = wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			now = c.Generation()
			return now != from, nil
		})
		return now
	}
	g1 := moved(g)
	if g1 == g {
		t.Errorf("generation unchanged after n1 became Ready (a kept condition)")
	}
	update(func(n *corev1.Node) {
		n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Now().Add(time.Minute))
	})
	if g2 := c.Generation(); g2 != g1 {
		t.Errorf("generation %d → %d after a heartbeat only: trimming drops it", g1, g2)
	}
	update(func(n *corev1.Node) { n.Labels["extra"] = "1" })
	if g3 := moved(g1); g3 == g1 {
		t.Errorf("generation unchanged after a label change")
	}
	if n, _ := c.Node("n1"); len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Status != corev1.ConditionTrue || !n.Status.Conditions[0].LastHeartbeatTime.IsZero() {
		t.Errorf("n1's conditions in the cache: %+v; want Ready True without times", n.Status.Conditions)
	}

	pods := b.client.CoreV1().Pods("redis")
	p, err := pods.Get(t.Context(), "redis-s0-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["extra"] = "1"
	p.ResourceVersion = "123456789"
	if p, err = pods.Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitForPod(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Pod("redis", "redis-s0-1"); got.Labels["extra"] != "1" {
		t.Errorf("WaitForPod returned before the cache held the update: %v", got.Labels)
	}
}

// TestQuorumWatch reads the roles of the rebalanced cluster every 20 ms: nothing is broken; then
// Redis promotes redis-s0-1 on n3 (as after losing n1), leaving zone-b 3 of the 5 masters: the
// watch reports MasterQuorum zone-b after every read while it lasts; once s4's master moves to n6,
// it holds again and the watch stops evaluating.
func TestQuorumWatch(t *testing.T) {
	sc := scenario.Rebalanced()
	b := newBed(t, sc)
	r := &fakeRedis{sc: sc, masters: map[int]int{}}
	c := b.start(t, Options{Redis: r, RolesInterval: 20 * time.Millisecond})
	var mu sync.Mutex
	var calls []string
	c.QuorumWatch(policies.Options{}, func(key string, vs []policies.Violation) {
		mu.Lock()
		defer mu.Unlock()
		var hits []string
		for _, v := range vs {
			hits = append(hits, fmt.Sprintf("%s %s %d/%d", v.Rule, v.Domain, v.Count, v.Limit))
		}
		calls = append(calls, key+": "+strings.Join(hits, ", "))
	})
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(calls)
	}
	waitReads := func(n int64) {
		t.Helper()
		target := r.reads.Load() + n
		if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return r.reads.Load() >= target, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitReads(3)
	if roles, ok := c.Roles("redis", "redis"); !ok || len(roles.Nodes) != 10 || roles.Err != nil {
		t.Fatalf("roles %+v, %v; want 10 nodes read", roles, ok)
	}
	if n := count(); n != 0 {
		t.Fatalf("broken reported %d times while MasterQuorum holds: %v", n, calls)
	}
	r.setMaster(0, 1)
	waitReads(4)
	n := count()
	if n < 2 {
		t.Fatalf("broken reported %d times after s0's promotion, want one per read: %v", n, calls)
	}
	mu.Lock()
	first := calls[0]
	mu.Unlock()
	if first != "redis/redis: MasterQuorum zone-b 3/2" {
		t.Errorf("first report %q, want MasterQuorum zone-b 3/2", first)
	}
	r.setMaster(4, 1)
	waitReads(2)
	settled := count()
	waitReads(3)
	if got := count(); got != settled {
		t.Errorf("broken reported %d more times after MasterQuorum held again", got-settled)
	}
}

// TestModelKept checks the models the cache keeps per namespace: handed out again while nothing
// changes; built again after a change in the namespace (a pod's label), a node's change, or new
// roles of one of its Redis clusters (then applied); not after a change in another namespace; and
// ObserveCluster reads the roles now and gives the cluster with them.
func TestModelKept(t *testing.T) {
	sc := scenario.Rebalanced()
	b := newBed(t, sc)
	other := scenario.RoleOnly()
	other.Namespace = "other"
	for _, obj := range other.MustSnapshot().Objects() {
		if _, ok := obj.(*corev1.Node); ok {
			continue
		}
		if err := b.client.Tracker().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	r := &fakeRedis{sc: sc, masters: map[int]int{}}
	c := b.start(t, Options{Redis: r, RolesInterval: time.Hour})
	opts := policies.Options{}
	model := func() *policies.Model {
		t.Helper()
		m, err := c.Model(opts, "redis")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// waitFor waits until the cache holds what cond looks for.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("the cache never saw %s", what)
		}
	}
	// waitEvent waits until the cache holds the change cond looks for and its event handler has
	// counted it (an informer updates its store before its handlers run).
	gen := c.Generation()
	waitEvent := func(what string, cond func() bool) {
		t.Helper()
		waitFor(what, func() bool { return cond() && c.Generation() > gen })
		gen = c.Generation()
	}
	// The roles are read once as soon as the informers have synced.
	waitFor("the first read of the roles", func() bool { _, ok := c.Roles("redis", "redis"); return ok })
	m1 := model()
	if m2 := model(); m2 != m1 {
		t.Error("a second Model without any change built another model")
	}
	if !m1.Clusters[0].RolesKnown() || m1.Clusters[0].Members[0].Role != policies.RoleMaster {
		t.Errorf("the model lacks the roles read: %s is %s", m1.Clusters[0].Members[0].Name(), m1.Clusters[0].Members[0].Role)
	}
	p, err := b.client.CoreV1().Pods("other").Get(t.Context(), "redis-s0-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["extra"] = "1"
	if _, err := b.client.CoreV1().Pods("other").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent("the other namespace's pod label", func() bool { q, _ := c.Pod("other", "redis-s0-1"); return q.Labels["extra"] == "1" })
	if model() != m1 {
		t.Error("a change in another namespace built the model again")
	}
	p, err = b.client.CoreV1().Pods("redis").Get(t.Context(), "redis-s0-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["extra"] = "1"
	if _, err := b.client.CoreV1().Pods("redis").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent("the namespace's pod label", func() bool { q, _ := c.Pod("redis", "redis-s0-1"); return q.Labels["extra"] == "1" })
	m3 := model()
	if m3 == m1 {
		t.Error("a change in the namespace kept the old model")
	}
	cl, err := c.ObserveCluster(t.Context(), opts, "redis/redis")
	if err != nil {
		t.Fatal(err)
	}
	if cl.Model() != m3 {
		t.Error("ObserveCluster with the same roles built another model")
	}
	r.setMaster(0, 1)
	moved, err := c.ObserveCluster(t.Context(), opts, "redis/redis")
	if err != nil || moved == cl {
		t.Fatalf("ObserveCluster after a failover kept the old model (%v)", err)
	}
	for _, mem := range moved.Members {
		want := map[string]policies.Role{"redis-s0-0": policies.RoleReplica, "redis-s0-1": policies.RoleMaster}[mem.Name()]
		if want != "" && mem.Role != want {
			t.Errorf("%s is %s after the failover, want %s", mem.Name(), mem.Role, want)
		}
	}
	n, _ := b.client.CoreV1().Nodes().Get(t.Context(), "n6", metav1.GetOptions{})
	n.Spec.Unschedulable = true
	if _, err := b.client.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent("n6 cordoned", func() bool { q, _ := c.Node("n6"); return q.Spec.Unschedulable })
	if model() == moved.Model() {
		t.Error("a node's change kept the old model")
	}
	if b.lists.Load() != 8 {
		t.Errorf("%d LISTs, want the informers' 8", b.lists.Load())
	}
	if got := c.ClusterKeys(observe.Selection{Namespace: "redis"}); !cmp.Equal(got, []string{"redis/redis"}) {
		t.Errorf("ClusterKeys(namespace redis) = %v", got)
	}
}

// TestWaitForSyncNamesTheCause: a resource the API server refuses to list (RBAC without
// csinodes) keeps the cache from syncing; WaitForSync's error names that resource and the
// refusal, not only "not synced".
func TestWaitForSyncNamesTheCause(t *testing.T) {
	b := newBed(t, scenario.PostScaleDown())
	b.client.PrependReactor("list", "csinodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}, "", errors.New("RBAC: no list"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := New(b.client, Options{})
	c.Start(ctx)
	ended, endNow := context.WithCancel(ctx)
	endNow() // WaitForSync with a context already over: what it says now
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = c.WaitForSync(ended)
		// Until the other informers have listed, they are named too ("no answer yet").
		return last != nil && strings.Contains(last.Error(), "is forbidden") && !strings.Contains(last.Error(), "no answer yet"), nil
	})
	if err != nil {
		t.Fatalf("WaitForSync never named the refused list alone: %v", last)
	}
	want := "cache: informers not synced (context canceled): csinodes.storage.k8s.io (failed to list *v1.CSINode: csinodes.storage.k8s.io is forbidden: RBAC: no list)"
	if last.Error() != want {
		t.Errorf("error %q, want %q", last, want)
	}
}
