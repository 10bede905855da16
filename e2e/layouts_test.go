package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestBitnamiPostScaleDown runs the post-scale-down drift on a cluster installed as Bitnami's
// redis-cluster chart installs it with cluster.externalAccess.enabled (scenario.LayoutBitnami):
// one StatefulSet of 10 pods created by the StatefulSet controller from the chart's template
// (RollingUpdate, Parallel, the chart's labels, selector and requests with ephemeral-storage),
// its release-wide PodDisruptionBudget, the password in the chart's Secret, the recommended spread
// constraints set through the chart's topologySpreadConstraints value and its soft
// anti-affinity; a LoadBalancer Service per pod ("redis-cluster-<i>-svc", its status set as a
// cloud would) whose IP the pod's Redis node announces, so that no Redis address is a pod IP; the
// cluster formed by redis-cli --cluster create over those IPs in ordinal order, as the chart's
// init forms it (masters 0..4, master i with replica 5+((i+1) mod 5)). The chart's persistence is
// off here (persistence.enabled=false): the zonal claims are the zonal volumes' test, which
// installs the chart without externalAccess. Shards come from Redis alone, its nodes matched to
// pods through the Services. Before the run, the plan made offline (a snapshot with the Services
// and the CLUSTER NODES output, LoadBalancer IPs and all) equals the live one, and lint reports
// no finding, live and offline: the chart's values carry the recommended constraints, and its soft
// anti-affinity is a note (a node per pod, podAntiAffinityPreset: hard, would leave 4 of the 10
// pods Pending on 6 nodes).
func TestBitnamiPostScaleDown(t *testing.T) {
	const password = "bitnami-e2e-password"
	sc := scenario.BitnamiPostScaleDown()
	sc.NoPersistence = true
	opts := harness.Options{
		RedisArgs:      []string{"--requirepass", password, "--masterauth", password},
		Redis:          redisctl.Options{Password: password},
		ExternalAccess: true,
	}
	// The chart's release-wide budget protects every shard; its soft anti-affinity does not, and
	// no value of the chart can do better here: a note.
	layoutRun(t, sc, opts, "bitnami", func(env *harness.Env) []string {
		// The password as the chart keeps it: Secret <fullname>, key redis-password.
		policy := e2ePolicy + fmt.Sprintf("redis: {passwordSecretRef: {namespace: %s, name: %s, key: %s}}\n",
			env.Namespace, sc.BitnamiFullname(), scenario.BitnamiPasswordKey)
		file := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(file, []byte(policy), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"--policy", file}
	}, lintWant{note: "SoftAntiAffinity: StatefulSet redis-cluster renders only a preferred pod anti-affinity"})
}

// TestOTPostScaleDown runs the post-scale-down drift on a cluster installed as OT's
// redis-operator installs it: StatefulSets redis-cluster-leader and redis-cluster-follower of 5
// each (RollingUpdate, OrderedReady), the operator's labels (role fixed per StatefulSet,
// redis-role kept in step with Redis by the harness's operator stand-in), a PodDisruptionBudget
// per role, the recommended spread constraints set through spec.redisLeader/redisFollower; the
// cluster formed as the operator forms it: redis-cli --cluster create over the leaders, then
// redis-cli --cluster add-node --cluster-slave for each follower, which makes it a replica of a
// leader with the fewest replicas. Shards come from Redis alone, matched to pods by the FQDN each
// Redis node announces. Before the run, the plan made offline equals the live one, and lint
// reports the soft anti-affinity and the budgets per role, live and offline.
func TestOTPostScaleDown(t *testing.T) {
	// OT has Redis 7 announce hostnames: its pods are matched to their Redis nodes by name.
	// lint: a budget per role lets a drain take a leader and its follower together.
	layoutRun(t, scenario.OTPostScaleDown(), harness.Options{AnnounceHostnames: true}, "ot", func(*harness.Env) []string { return nil },
		lintWant{kinds: []lint.Kind{lint.SoftAntiAffinity, lint.DisruptionBudget}})
}

// lintWant is what lint must say of a layout's cluster: the kinds of its findings, in order
// (exit 3; none: exit 0), and a note ("" for none required).
type lintWant struct {
	kinds []lint.Kind
	note  string
}

// layoutRun lays out sc with opts, checks that Redis was formed with the scenario's shards,
// compares the offline plan with the live one, checks lint's findings (lintWant, live and
// offline), runs `run --layout layout` (with the writer at
// writeRate throughout) and checks what every run must give (assertSafeAndCompliant: compliant,
// healthy, every evicted pod a replica when it went, no write lost or failed).
func layoutRun(t *testing.T, sc scenario.Scenario, opts harness.Options, layout string, extra func(*harness.Env) []string, want lintWant) {
	var redisArgs []string
	res := runScenarioWith(t, sc, opts, false, func(ctx context.Context, env *harness.Env) error {
		if err := assertShardsAsFormed(ctx, env, opts.AnnounceHostnames); err != nil {
			return err
		}
		if err := assertAnnounced(ctx, env); err != nil {
			return err
		}
		redisArgs = extra(env)
		snapFile, nodesFile := offline(t, env)
		assertOfflinePlanIsLive(t, env, layout, snapFile, nodesFile, redisArgs)
		assertLint(t, env, layout, snapFile, nodesFile, redisArgs, want)
		return nil
	}, func(*harness.Env) []string { return append([]string{"--layout", layout}, redisArgs...) })
	evictions, failovers := assertSafeAndCompliant(t, res)
	if evictions < 1 || failovers < 1 {
		t.Errorf("the run made %d evictions and %d failovers; the drift needs at least one of each", evictions, failovers)
	}
	for _, cr := range res.report.Clusters {
		for _, m := range cr.Moves {
			fo := ""
			if m.Failover != nil {
				fo = fmt.Sprintf(", failover %s → %s", m.Failover.OldMaster, m.Failover.NewMaster)
			}
			t.Logf("%s move: %s %s %s → %s (expected %s), role at eviction %q%s, %s", layout, m.Kind, m.Pod, m.From, m.To, m.Expected, m.RoleAtEviction, fo, m.Outcome)
		}
	}
	t.Logf("%s: %d evictions, %d failovers; writer %s", layout, evictions, failovers, res.writer)
}

// assertShardsAsFormed checks that Redis's shards are the ones redis-cli forms: the master of
// shard i is the pod sc.PodName(i, 0) and, in Bitnami's layout, every other pod of the shard
// (sc.ShardPods: the ordinals redis-cli pairs) replicates it; in OT's, each leader has
// PodsPerShard-1 followers replicating it, whichever redis-cli chose; with hostnames, that every
// node announces its pod's FQDN (so that pods are matched to nodes by name).
func assertShardsAsFormed(ctx context.Context, env *harness.Env, hostnames bool) error {
	sc := env.Scenario
	pods, err := env.Client().CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sc.Selector()})
	if err != nil {
		return err
	}
	podOf := map[string]string{} // Redis address → pod
	for _, p := range pods.Items {
		podOf[env.Redis.AddrOf(p.Status.PodIP)] = p.Name
	}
	topo, err := env.Redis.Topology(ctx, env.Addrs())
	if err != nil {
		return err
	}
	podByID := map[string]string{}
	for _, n := range topo.Nodes {
		podByID[n.ID] = podOf[n.Addr()]
	}
	got := map[string]string{} // pod → the pod it replicates, or "master"
	for _, n := range topo.Nodes {
		pod := podOf[n.Addr()]
		if hostnames && !(strings.HasPrefix(n.Hostname, pod+".") && strings.HasSuffix(n.Hostname, "."+env.Namespace+".svc.cluster.local")) {
			return fmt.Errorf("redis node %s (pod %s) announces hostname %q, want the pod's FQDN", n.Addr(), pod, n.Hostname)
		}
		if n.IsMaster() {
			got[podOf[n.Addr()]] = "master"
		} else {
			got[podOf[n.Addr()]] = podByID[n.MasterID]
		}
	}
	want := map[string]string{}
	for i := 0; i < sc.Shards; i++ {
		members := sc.ShardPods(i)
		want[members[0]] = "master"
		for _, p := range members[1:] {
			want[p] = members[0]
		}
	}
	if sc.Layout == scenario.LayoutOT { // the followers' leaders are redis-cli's choice
		perLeader := map[string]int{}
		for pod, of := range got {
			if of != "master" {
				perLeader[of]++
				want[pod] = of
			}
		}
		for i := 0; i < sc.Shards; i++ {
			if n := perLeader[sc.PodName(i, 0)]; n != sc.PodsPerShard-1 {
				return fmt.Errorf("leader %s has %d followers replicating it, want %d (Redis: %v)", sc.PodName(i, 0), n, sc.PodsPerShard-1, got)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return fmt.Errorf("redis shards differ from the scenario's (-want +got):\n%s", diff)
	}
	return nil
}

// assertAnnounced checks that every Redis node announces what env's pods announce: its
// LoadBalancer's IP with Options.ExternalAccess (Env.LoadBalancerIP; CLUSTER NODES, as redis-cli
// prints it, then names no pod IP), else its pod IP.
func assertAnnounced(ctx context.Context, env *harness.Env) error {
	raw, err := env.Redis.Do(ctx, env.Addrs()[0], "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	lines, err := redisctl.ParseClusterNodes(fmt.Sprint(raw))
	if err != nil {
		return err
	}
	pods, err := env.Client().CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: env.Scenario.Selector()})
	if err != nil {
		return err
	}
	want := map[string]string{} // announced IP → pod
	for _, p := range pods.Items {
		ip := env.LoadBalancerIP(p.Name)
		if ip == "" {
			ip = p.Status.PodIP
		}
		want[ip] = p.Name
	}
	for _, n := range lines {
		if _, ok := want[n.IP]; !ok {
			return fmt.Errorf("redis node %s announces %s, which is none of the pods' announced IPs %v", n.ID, n.Addr(), want)
		}
	}
	return nil
}

// offline writes what env's cluster looks like for the offline commands: a snapshot of its
// objects (observe.EncodeSnapshot, as kubectl would dump them) and the CLUSTER NODES output of
// one of its Redis nodes (the --redis-nodes file), and returns both paths.
func offline(t *testing.T, env *harness.Env) (snapshot, redisNodes string) {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	snap, err := observe.ReadSnapshot(ctx, env.Client(), env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	snapFile, err := os.Create(filepath.Join(dir, "snapshot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := observe.EncodeSnapshot(snapFile, snap); err != nil {
		t.Fatal(err)
	}
	if err := snapFile.Close(); err != nil {
		t.Fatal(err)
	}
	nodes, err := env.Redis.Do(ctx, env.Addrs()[0], "CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	nodesFile := filepath.Join(dir, observe.RedisNodesFile(env.Namespace, env.Scenario.Cluster)+".txt")
	if err := os.WriteFile(nodesFile, []byte(fmt.Sprint(nodes)), 0o644); err != nil {
		t.Fatal(err)
	}
	return snapFile.Name(), nodesFile
}

// assertOfflinePlanIsLive plans env's cluster live (`plan --layout layout`, extra after) and
// offline from its snapshot and CLUSTER NODES files (`--snapshot`, `--redis-nodes`), and checks
// that both give the same answer: violations, moves with their candidates, evictions and
// failovers.
func assertOfflinePlanIsLive(t *testing.T, env *harness.Env, layout, snapFile, nodesFile string, extra []string) {
	t.Helper()
	live := planJSON(t, cliArgs("plan", env, append([]string{"--layout", layout, "-o", "json"}, extra...)...)...)
	offline := planJSON(t, "plan", "--snapshot", snapFile, "--redis-nodes", nodesFile, "--layout", layout, "-o", "json")
	if len(live.Clusters) != 1 || len(live.Clusters[0].Moves) == 0 {
		t.Fatalf("live plan: %d clusters, want 1 with moves: %+v", len(live.Clusters), live.Clusters)
	}
	if diff := cmp.Diff(live, offline); diff != "" {
		t.Errorf("offline plan differs from the live plan (-live +offline):\n%s", diff)
	}
	t.Logf("%s plan, live and offline: %d evictions, %d failovers", layout, live.Clusters[0].Evictions, live.Clusters[0].Failovers)
}

// planJSON runs redis-rebalancer plan with args (-o json) and decodes its answer; it must exit 0.
func planJSON(t *testing.T, args ...string) report.Analysis {
	t.Helper()
	r := startCLI(t, nil, args...)
	if code := r.wait(time.Minute); code != app.ExitOK {
		t.Fatalf("redis-rebalancer plan exited %d (%s), want %d", code, r.errorLine(), app.ExitOK)
	}
	var a report.Analysis
	if err := json.Unmarshal(r.stdout.Bytes(), &a); err != nil {
		t.Fatalf("plan output: %v\n%s", err, r.stdout.String())
	}
	return a
}

// assertLint runs `lint --layout layout -o json` live (extra after) and offline (the snapshot
// and CLUSTER NODES files) and checks that both report the kinds of finding want.kinds, in
// order, exiting 3 (0 without any), and a note holding want.note.
func assertLint(t *testing.T, env *harness.Env, layout, snapFile, nodesFile string, extra []string, want lintWant) {
	t.Helper()
	wantCode := app.ExitViolations
	if len(want.kinds) == 0 {
		wantCode = app.ExitOK
	}
	for _, args := range [][]string{
		cliArgs("lint", env, append([]string{"--layout", layout, "-o", "json"}, extra...)...),
		{"lint", "--snapshot", snapFile, "--redis-nodes", nodesFile, "--layout", layout, "-o", "json"},
	} {
		r := startCLI(t, nil, args...)
		if code := r.wait(time.Minute); code != wantCode {
			t.Fatalf("redis-rebalancer lint exited %d (%s), want %d", code, r.errorLine(), wantCode)
		}
		var out struct {
			Findings []lint.Finding
			Notes    []string
		}
		if err := json.Unmarshal(r.stdout.Bytes(), &out); err != nil {
			t.Fatalf("lint output: %v\n%s", err, r.stdout.String())
		}
		var got []lint.Kind
		for _, f := range out.Findings {
			got = append(got, f.Kind)
			t.Logf("lint: %s: %s", f.Kind, f.Message)
		}
		if diff := cmp.Diff(want.kinds, got); diff != "" {
			t.Errorf("%s findings (-want +got):\n%s", args[1], diff)
		}
		if want.note != "" && !strings.Contains(strings.Join(out.Notes, "\n"), want.note) {
			t.Errorf("%s: no note says %q: %q", args[1], want.note, out.Notes)
		}
	}
}
