package execute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The unit tests' test bed: a client-go fake clientset holding scenarios' objects, with reactors
// that play the API server's eviction subresource and the StatefulSet controller, scheduler and
// kubelet (an evicted pod comes back at once, with a new UID, Ready, on the node the test says);
// and a fake Redis whose nodes are the pods' addresses, with closures for every answer a test
// changes.

// redisPort is the fake pods' Redis port.
const redisPort = 6379

// testbed is one fake Kubernetes cluster with fake Redis clusters.
type testbed struct {
	t      *testing.T
	client *fake.Clientset
	redis  *fakeRedis
	clock  *testingclock.FakeClock
	out    bytes.Buffer

	mu sync.Mutex
	// landOn maps a pod name to the node its re-created pod lands on (default: the node the first
	// plan expects).
	landOn map[string]string
	// onEviction, when set, answers an eviction (dry run or not) instead of the default: nil
	// error → the default goes on; handled true → its error is the answer.
	onEviction func(ev *policyv1.Eviction, dryRun bool) (handled bool, err error)
	// recreate, when set, changes the re-created pod (e.g. leaves it Pending).
	recreate func(p *corev1.Pod)
	// apiDown makes every API request fail with a connection error.
	apiDown bool
	// evictions lists the pods evicted for real, in order.
	evictions []string
}

// errConnRefused is the error every request gets while the API server is down.
var errConnRefused = errors.New(`Get "https://127.0.0.1:6443/api/v1/nodes": dial tcp 127.0.0.1:6443: connect: connection refused`)

// newTestbed lays out scs (one Redis cluster each, in namespace "redis"); pod IPs are
// 10.<cluster>.<shard>.<ordinal>, ordinal 0 the master of its shard.
func newTestbed(t *testing.T, scs ...scenario.Scenario) *testbed {
	t.Helper()
	tb := &testbed{
		t: t, redis: newFakeRedis(), landOn: map[string]string{},
		clock: testingclock.NewFakeClock(time.Date(2026, 3, 10, 2, 30, 0, 0, time.UTC)),
	}
	var objs []runtime.Object
	for k, sc := range scs {
		snap, err := sc.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		type pos struct{ shard, ordinal int }
		where := map[string]pos{}
		for i := 0; i < sc.Shards; i++ {
			for o := 0; o < sc.PodsPerShard; o++ {
				where[sc.PodName(i, o)] = pos{i, o}
			}
		}
		for _, o := range snap.Objects() {
			if k > 0 && o.GetNamespace() == "" {
				continue // the scenarios share the nodes (and every cluster-scoped object)
			}
			objs = append(objs, o)
			p, ok := o.(*corev1.Pod)
			if !ok || p.Spec.NodeName == "" {
				continue // Pending: no IP, no Redis node yet
			}
			shard, ordinal := where[p.Name].shard, where[p.Name].ordinal
			p.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", k, shard, ordinal)
			masterAddr := ""
			if ordinal > 0 {
				masterAddr = addrOf(fmt.Sprintf("10.%d.%d.0", k, shard))
			}
			tb.redis.add(addrOf(p.Status.PodIP), masterAddr)
		}
		// The re-created pod lands where the plan expects.
		m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Clusters {
			for _, mv := range plan.Compute(c, plan.Options{}).Moves {
				if _, ok := tb.landOn[podName(mv.Pod)]; !ok {
					tb.landOn[podName(mv.Pod)] = mv.Expected
				}
			}
		}
	}
	tb.client = fake.NewClientset(objs...)
	tb.client.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if tb.apiDown {
			return true, nil, errConnRefused
		}
		return false, nil, nil
	})
	tb.client.PrependReactor("create", "pods", tb.evictionReactor)
	return tb
}

func addrOf(ip string) string { return net.JoinHostPort(ip, strconv.Itoa(redisPort)) }

// evictionReactor plays the eviction subresource: a dry run is accepted; a real eviction deletes
// the pod and re-creates it (new UID, Ready, on landOn's node, same IP).
func (tb *testbed) evictionReactor(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	ev := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	dryRun := ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0
	tb.mu.Lock()
	hook := tb.onEviction
	tb.mu.Unlock()
	if hook != nil {
		if handled, err := hook(ev, dryRun); handled {
			return true, nil, err
		}
	}
	if dryRun {
		return true, nil, nil
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	obj, err := tb.client.Tracker().Get(gvr, ev.Namespace, ev.Name)
	if err != nil {
		return true, nil, err
	}
	old := obj.(*corev1.Pod)
	if err := tb.client.Tracker().Delete(gvr, ev.Namespace, ev.Name); err != nil {
		return true, nil, err
	}
	p := old.DeepCopy()
	p.UID = types.UID(string(old.UID) + "-again")
	p.ResourceVersion = ""
	tb.mu.Lock()
	fixture.On(tb.landOn[p.Name])(p)
	fixture.Ready()(p)
	if tb.recreate != nil {
		tb.recreate(p)
	}
	tb.evictions = append(tb.evictions, p.Name)
	tb.mu.Unlock()
	if err := tb.client.Tracker().Add(p); err != nil {
		return true, nil, err
	}
	return true, nil, nil
}

// set runs fn under the test bed's lock (for the fields the reactors read).
func (tb *testbed) set(fn func()) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	fn()
}

func (tb *testbed) evicted() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.evictions...)
}

// cordonAll marks every node unschedulable in the fake API server.
func (tb *testbed) cordonAll() {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	objs, err := tb.client.Tracker().List(gvr, schema.GroupVersionKind{Version: "v1", Kind: "Node"}, "")
	if err != nil {
		tb.t.Error(err)
		return
	}
	items, _ := meta.ExtractList(objs)
	for _, o := range items {
		n := o.(*corev1.Node).DeepCopy()
		fixture.Cordoned()(n)
		if err := tb.client.Tracker().Update(gvr, n, ""); err != nil {
			tb.t.Error(err)
		}
	}
}

// config returns an Executor configuration on the test bed with short waits.
func (tb *testbed) config() Config {
	return Config{
		Client: tb.client, Redis: tb.redis, Out: &tb.out, Clock: tb.clock,
		HealthTimeout: 300 * time.Millisecond, RecreateTimeout: 300 * time.Millisecond, RejoinTimeout: 300 * time.Millisecond,
		FailoverTimeout: time.Second, DrainTimeout: time.Second, RequestTimeout: 5 * time.Second, PollInterval: 5 * time.Millisecond,
	}
}

// fakeRedis is Redis as the executor sees it: one node per pod address, ordinal 0 of each shard a
// master at first. Hooks change single answers; calls records what was asked, in order.
type fakeRedis struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode // by address
	calls []string
	// reasons, when set, gives the health gate's reasons for each CheckHealth call (n counts the
	// calls from 1).
	reasons func(n int) []redisctl.Reason
	health  int
	// down, when set, is every node's answer: the topology read fails and the health gate lists
	// every node unreachable.
	down error
	// choose, failover, role and rejoin, when set, answer instead of the default (which works).
	choose   func(masterAddr string) error
	failover func(replicaAddr string) error
	role     func(addr string) (interface{}, error)
	rejoin   func(addr string) error
	// topo, when set, is the topology Topology returns.
	topo func() *redisctl.Topology
	// info, when set, answers CLUSTER INFO (section "cluster") and INFO <section> first: ok false
	// leaves the answer to the default.
	info func(addr, section string) (answer string, ok bool)
}

type fakeNode struct {
	id, addr   string
	masterAddr string // "" for a master
}

func newFakeRedis() *fakeRedis { return &fakeRedis{nodes: map[string]*fakeNode{}} }

func (r *fakeRedis) add(addr, masterAddr string) {
	r.nodes[addr] = &fakeNode{id: fmt.Sprintf("%040x", len(r.nodes)+1), addr: addr, masterAddr: masterAddr}
}

func (r *fakeRedis) record(format string, args ...any) {
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

// called returns the calls recorded that start with prefix.
func (r *fakeRedis) called(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		if len(c) >= len(prefix) && c[:len(prefix)] == prefix {
			out = append(out, c)
		}
	}
	return out
}

func (r *fakeRedis) AddrOf(ip string) string { return addrOf(ip) }

// topology builds the merged view from the nodes (callers hold mu).
func (r *fakeRedis) topology() *redisctl.Topology {
	t := &redisctl.Topology{Unreachable: map[string]error{}}
	for _, n := range r.nodes {
		host, port, _ := net.SplitHostPort(n.addr)
		p, _ := strconv.Atoi(port)
		node := redisctl.Node{ID: n.id, IP: host, Port: p, LinkState: redisctl.LinkConnected, Flags: []string{redisctl.FlagMaster}}
		if n.masterAddr != "" {
			node.Flags = []string{redisctl.FlagReplica}
			node.MasterID = r.nodes[n.masterAddr].id
		} else {
			node.Slots = []redisctl.SlotRange{{Start: 0, End: 0}}
		}
		t.Nodes = append(t.Nodes, node)
	}
	sort.Slice(t.Nodes, func(a, b int) bool { return t.Nodes[a].Addr() < t.Nodes[b].Addr() })
	return t
}

func (r *fakeRedis) Topology(_ context.Context, addrs []string) (*redisctl.Topology, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down != nil {
		return nil, fmt.Errorf("redisctl: topology: no node answered: %s: cluster nodes: %w", addrs[0], r.down)
	}
	if r.topo != nil {
		return r.topo(), nil
	}
	return r.topology(), nil
}

// CheckHealth answers the health gate; the reasons hook runs first (it may change the nodes, as
// Redis would between two reads), then the topology is read.
func (r *fakeRedis) CheckHealth(ctx context.Context, addrs []string, _ redisctl.HealthOptions) (*redisctl.Health, error) {
	r.mu.Lock()
	r.health++
	n, reasons := r.health, r.reasons
	r.mu.Unlock()
	var rs []redisctl.Reason
	if reasons != nil {
		rs = reasons(n)
	}
	r.mu.Lock()
	h := &redisctl.Health{Topology: r.topology(), SlotsServed: redisctl.NumSlots}
	down := r.down
	r.mu.Unlock()
	if down != nil {
		for _, a := range addrs {
			h.Reasons = append(h.Reasons, redisctl.Reason{Code: redisctl.ReasonNodeUnreachable, Addr: a, Message: down.Error()})
		}
		return h, h.Err()
	}
	h.Reasons = rs
	return h, h.Err()
}

func (r *fakeRedis) ChooseReplica(_ context.Context, topo *redisctl.Topology, masterID string, _ func(redisctl.Node) bool) (redisctl.Node, error) {
	r.mu.Lock()
	choose := r.choose
	r.mu.Unlock()
	var master redisctl.Node
	for _, n := range topo.Nodes {
		if n.ID == masterID {
			master = n
		}
	}
	if choose != nil {
		if err := choose(master.Addr()); err != nil {
			return redisctl.Node{}, err
		}
	}
	for _, n := range topo.Nodes {
		if n.MasterID == masterID {
			return n, nil
		}
	}
	return redisctl.Node{}, fmt.Errorf("redisctl: %w for %s", redisctl.ErrNoInSyncReplica, master.Addr())
}

func (r *fakeRedis) Failover(_ context.Context, replicaAddr string, _ redisctl.FailoverOptions) (*redisctl.FailoverResult, error) {
	r.mu.Lock()
	r.record("failover %s", replicaAddr)
	hook := r.failover
	r.mu.Unlock()
	if hook != nil {
		if err := hook(replicaAddr); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := r.nodes[replicaAddr]
	old := r.nodes[rep.masterAddr]
	for _, n := range r.nodes {
		if n.masterAddr == old.addr && n != rep {
			n.masterAddr = rep.addr
		}
	}
	rep.masterAddr, old.masterAddr = "", rep.addr
	return &redisctl.FailoverResult{NewMasterID: rep.id, NewMasterAddr: rep.addr, OldMasterID: old.id, OldMasterAddr: old.addr, Duration: 50 * time.Millisecond}, nil
}

func (r *fakeRedis) WaitClientsDrained(context.Context, string, time.Duration, time.Duration) ([]redisctl.ClientConn, error) {
	return nil, nil
}

func (r *fakeRedis) Do(_ context.Context, addr string, args ...interface{}) (interface{}, error) {
	r.mu.Lock()
	r.record("%v %s", args[0], addr)
	hook, info := r.role, r.info
	n := r.nodes[addr]
	r.mu.Unlock()
	if info != nil && len(args) >= 2 {
		section := ""
		switch {
		case fmt.Sprint(args[0]) == "INFO":
			section = fmt.Sprint(args[1])
		case fmt.Sprint(args[0]) == "CLUSTER" && fmt.Sprint(args[1]) == "INFO":
			section = "cluster"
		}
		if answer, ok := info(addr, section); section != "" && ok {
			return answer, nil
		}
	}
	switch {
	case len(args) >= 2 && fmt.Sprint(args[0]) == "CLUSTER" && fmt.Sprint(args[1]) == "INFO":
		return "cluster_state:ok\r\n", nil
	case len(args) >= 2 && fmt.Sprint(args[0]) == "INFO":
		if n.masterAddr == "" {
			return "role:master\r\nconnected_slaves:1\r\n", nil
		}
		return "role:slave\r\nmaster_link_status:up\r\n", nil
	}
	if hook != nil {
		return hook(addr)
	}
	if n.masterAddr == "" {
		return []interface{}{"master", int64(0), []interface{}{}}, nil
	}
	return []interface{}{"slave", "10.0.0.0", int64(redisPort), "connected", int64(0)}, nil
}

// Reintroduce records the call; the node keeps its ID (the fake Redis keeps a node per address).
func (r *fakeRedis) Reintroduce(_ context.Context, addr, oldID, masterID string, _ []string, _ time.Duration, _ func(string)) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record("reintroduce %s in place of %s, replica of %s", addr, oldID, masterID)
	if n := r.nodes[addr]; n != nil {
		return n.id, nil
	}
	return oldID, nil
}

// RejoinStray records the call.
func (r *fakeRedis) RejoinStray(_ context.Context, addr, ownerID string, _ []string, _ time.Duration, _ func(string)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record("rejoin stray %s as a replica of %s", addr, ownerID)
	return nil
}

func (r *fakeRedis) WaitRejoin(_ context.Context, addr, _ string, _ time.Duration, _ func(string)) error {
	r.mu.Lock()
	r.record("rejoin %s", addr)
	hook := r.rejoin
	r.mu.Unlock()
	if hook != nil {
		return hook(addr)
	}
	return nil
}
