package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The fault matrix: each test injects one fault into the post-scale-down scenario (the
// fix fails a master over and evicts it) with a writer at 250 writes/s, and asserts the exit
// status, the first line of the reason, what the run did (or did not) do, and faultEnv.finish's
// invariants (no acknowledged write lost, ≥ 200 writes/s, no master evicted without a failover;
// writes that failed after the client's retries are logged); startCLI checks that no process is
// left behind. The maintenance-window rows are in windows_test.go.

// TestFaultPDBsAtZero: every PodDisruptionBudget allows no disruption. The eviction dry run is
// refused (429) before anything happens: the move is skipped, nothing failed over or evicted,
// exit 3.
func TestFaultPDBsAtZero(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	ctx := t.Context()
	client := f.Client()
	pdbs, err := client.PolicyV1().PodDisruptionBudgets(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pdbs.Items {
		p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		if _, err := client.PolicyV1().PodDisruptionBudgets(f.Namespace).Update(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPDBs(t, f.Env, len(pdbs.Items), func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.ObservedGeneration == p.Generation && p.Status.DisruptionsAllowed == 0
	})
	roles := rolesOf(t, f.Env)

	run := startCLI(t, nil, runArgs(f.Env)...)
	code := run.wait(3 * time.Minute)
	rep := run.report()
	assertExit(t, code, app.ExitViolations, run)
	cr := onlyCluster(t, rep)
	assertReason(t, "report's stopped", cr.Stopped, "PodDisruptionBudget forbids evicting")
	assertNothingDone(t, cr)
	if got := rolesOf(t, f.Env); !equalRoles(got, roles) {
		t.Errorf("roles changed: before %v, after %v", roles, got)
	}
	f.finish(t)
}

// TestFaultOverlappingPDBs: a second PodDisruptionBudget selects every pod of the cluster, so
// each pod has two, and the Eviction API answers 500 ("more than one PodDisruptionBudget"). The
// run stops with that error, exit 1, before any failover.
func TestFaultOverlappingPDBs(t *testing.T) {
	sc := scenario.PostScaleDown()
	f := newFaultEnv(t, sc, harness.Options{}, false)
	pdb := fixture.PodDisruptionBudget("redis-all", &metav1.LabelSelector{MatchLabels: f.Scenario.ClusterLabels()},
		func(b *policyv1.PodDisruptionBudget) { b.Namespace = f.Namespace })
	if _, err := f.Client().PolicyV1().PodDisruptionBudgets(f.Namespace).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPDBs(t, f.Env, sc.Shards+1, func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.ObservedGeneration == p.Generation
	})

	run := startCLI(t, nil, runArgs(f.Env)...)
	code := run.wait(3 * time.Minute)
	rep := run.report()
	assertExit(t, code, app.ExitError, run)
	assertReason(t, "error", run.errorLine(), "more than one PodDisruptionBudget")
	assertNothingDone(t, onlyCluster(t, rep))
	f.finish(t)
}

// TestFaultKillAfterFailover: `run` is killed (SIGKILL) right after it has verified a failover,
// before the eviction. The old master is a replica now and nothing was evicted; a fresh run
// completes the fix.
func TestFaultKillAfterFailover(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	run := startCLI(t, nil, runArgs(f.Env)...)
	line := run.waitStep(report.StepFailover, "verified", 2*time.Minute)
	run.kill()
	if code := run.wait(time.Minute); code != -1 {
		t.Errorf("killed run: exit %d, want -1 (killed by a signal)", code)
	}
	t.Logf("killed after %q", strings.TrimSpace(line))
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods went away although the run was killed before its eviction: %+v", stops)
	}
	freshRunCompletes(t, f)
}

// TestFaultKillAfterEviction: `run` is killed right after the eviction was accepted, while the
// pod is being re-created and its Redis node has not rejoined. Fresh runs complete the fix; one
// that starts while the replica resyncs reports it (exit 3), never compliance
// (freshRunCompletes).
func TestFaultKillAfterEviction(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	run := startCLI(t, nil, runArgs(f.Env)...)
	line := run.waitStep(report.StepEvict, "", 2*time.Minute)
	run.kill()
	if code := run.wait(time.Minute); code != -1 {
		t.Errorf("killed run: exit %d, want -1 (killed by a signal)", code)
	}
	t.Logf("killed after %q", strings.TrimSpace(line))
	freshRunCompletes(t, f)
}

// TestFaultReplicaDown: a replica's redis-server is stopped (SIGSTOP, as a lost node: the pod
// stays Ready, Redis flags the node failing). The health gate refuses every move and says which
// node: exit 3, nothing failed over or evicted.
// The 8 s health timeout falls inside a poll (each takes the stopped node's 3 s read timeout):
// the old executor then reported that poll, cut short ("context deadline exceeded"), which named
// nothing; the reason must be the first real one.
func TestFaultReplicaDown(t *testing.T) {
	sc := scenario.PostScaleDown()
	f := newFaultEnv(t, sc, harness.Options{}, false)
	victim := sc.PodName(2, 1) // shard 2's replica, on n4; the fix moves shard 0's master off n1
	s, resume := pauseServer(t, f, victim)

	run := startCLI(t, nil, runArgs(f.Env, "--health-timeout", "8s")...)
	code := run.wait(3 * time.Minute)
	rep := run.report()
	assertExit(t, code, app.ExitViolations, run)
	cr := onlyCluster(t, rep)
	assertReason(t, "report's stopped", cr.Stopped, "health gate")
	if first := firstLine(cr.Stopped); !strings.Contains(first, victim) && !strings.Contains(first, s.Addr) {
		t.Errorf("reason %q names neither the stopped replica %s nor its address %s", first, victim, s.Addr)
	}
	assertNothingDone(t, cr)
	resume()
	if _, err := f.WaitHealthy(t.Context(), time.Minute); err != nil {
		t.Errorf("cluster not healthy after the replica came back: %v", err)
	}
	f.finish(t)
}

// pauseServer stops pod's redis-server (SIGSTOP, as a lost node: the pod stays Ready) and returns
// it and the function that resumes it; the test's cleanup resumes it if the test has not.
func pauseServer(t *testing.T, f *faultEnv, pod string) (redisrt.ServerInfo, func()) {
	t.Helper()
	s, err := f.Runtime.Pause(f.Namespace, pod)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume := func() {
		once.Do(func() {
			if _, err := f.Runtime.Resume(f.Namespace, pod); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(resume)
	return s, resume
}

// TestFaultAllNodesCordoned: every node is cordoned after the plan, before the eviction. The
// timing is held, not slept for: a replica's redis-server is paused before the run, so the health
// gate waits; once the run says so, every node is cordoned, then the server resumed. The
// placeability check, which re-creates the pod from its template against the nodes as they are
// now, finds none: the move is skipped before any failover (exit 3, stoppedBy placeable), nothing
// failed over or evicted. Once the nodes are uncordoned a fresh run completes the fix. It cordons
// every node of the shared bed, so it does not call t.Parallel.
func TestFaultAllNodesCordoned(t *testing.T) {
	sc := scenario.PostScaleDown()
	f := newFaultEnv(t, sc, harness.Options{}, true)
	roles := rolesOf(t, f.Env)
	victim := sc.PodName(2, 1) // shard 2's replica, on n4; the fix moves shard 0's master off n1
	_, resume := pauseServer(t, f, victim)

	run := startCLI(t, nil, runArgs(f.Env)...)
	pod := movedPod.FindStringSubmatch(run.waitLineWith(2*time.Minute, "): evict ", " from "))[1]
	run.waitLine("waiting for a healthy cluster", time.Minute)
	cordon(t, f.Env) // every node
	resume()
	_, cr, _ := waitStopped(t, run, app.ExitViolations, report.StepPlaceable, "placeability: "+pod+", re-created from its template now, fits no node")
	assertSkippedAtPlaceable(t, f, cr, roles, "every node was cordoned before the eviction")

	// Uncordoned, and the node lifecycle controller's unschedulable taints gone.
	if err := f.Bed.RestoreNodes(t.Context()); err != nil {
		t.Fatal(err)
	}
	freshRunCompletes(t, f)
}

// cordon cordons nodes of the test bed (every node when none is named), failing the test on
// error; the bed's nodes are restored when the test ends (harness.Bed.RestoreNodesOnCleanup).
// Only a test that does not call t.Parallel may do this.
func cordon(t *testing.T, env *harness.Env, nodes ...string) {
	t.Helper()
	env.Bed.RestoreNodesOnCleanup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := env.Client()
	if len(nodes) == 0 {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list nodes: %v", err)
		}
		for _, n := range list.Items {
			nodes = append(nodes, n.Name)
		}
	}
	for _, name := range nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || cur.Spec.Unschedulable {
				return err
			}
			cur.Spec.Unschedulable = true
			_, err = client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("cordon node %s: %v", name, err)
		}
	}
}

// TestFaultAPIServerDownAfterFailover: kube-apiserver goes down right after the verified
// failover (a sequential test: it owns the control plane). The eviction cannot be made: the run aborts with the eviction's error (exit 1),
// nothing was evicted (the old master is a replica now, the cluster safe), and once the API
// server is back a fresh run completes the fix.
// The final observe fails as well; it must not replace the eviction's error (the old executor
// reported "list nodes: … connection refused").
func TestFaultAPIServerDownAfterFailover(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, true)
	// Down as soon as the PDB dry run passed: the failover needs Redis only, so it is made and
	// verified with the API server down, and the eviction that follows cannot be (taking it down
	// on the failover's line would race a drain that ends at once).
	run, pod := runWithAPIServerDown(t, f, report.StepPDBDryRun, "")
	if !strings.Contains(run.stderr(), "✓ "+report.StepFailover+" (") {
		t.Errorf("the run made no verified failover before the eviction failed")
	}
	got := assertReason(t, "error", run.errorLine(), apiServerGone...)
	if !strings.Contains(got, "evict") || !strings.Contains(got, pod) {
		t.Errorf("reason %q is not the eviction of %s", got, pod)
	}
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods went away although the API server was down before the eviction: %+v", stops)
	}
	freshRunCompletes(t, f)
}

// TestFaultWrongPassword: the Redis nodes require a password and run is given another one. It
// cannot read the roles and stops with Redis's answer, exit 1, having changed nothing.
func TestFaultWrongPassword(t *testing.T) {
	const password = "right-password"
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{
		RedisArgs: []string{"--requirepass", password, "--masterauth", password},
		Redis:     redisOptionsWithPassword(password),
	}, false)
	run := startCLI(t, []string{"E2E_REDIS_PASSWORD=wrong-password"}, runArgs(f.Env, "--redis-password-env", "E2E_REDIS_PASSWORD")...)
	code := run.wait(3 * time.Minute)
	assertExit(t, code, app.ExitError, run)
	assertReason(t, "error", run.errorLine(), "WRONGPASS")
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods went away: %+v", stops)
	}
	f.finish(t)
}

// TestFaultUnreachablePort: run is pointed at a Redis port nothing listens on. It cannot read
// the roles and stops with the connection error, naming the address, exit 1.
func TestFaultUnreachablePort(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	port := strconv.Itoa(f.Port + 1000)
	run := startCLI(t, nil, runArgs(f.Env, "--redis-port", port)...)
	code := run.wait(3 * time.Minute)
	assertExit(t, code, app.ExitError, run)
	got := assertReason(t, "error", run.errorLine(), "connection refused")
	if !strings.Contains(got, ":"+port) {
		t.Errorf("reason %q does not name an address on port %s", got, port)
	}
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods went away: %+v", stops)
	}
	f.finish(t)
}

// freshRunCompletes runs redis-rebalancer again after a fault, as a CronJob's next runs would:
// every 3 s until one exits 0, for 2 minutes at most (after an API server restart,
// kube-controller-manager's StatefulSet controller may take 40 s to re-create an evicted pod: its
// work queue backed off while the API server was down). Compliant means healthy:
// each run exits 0 exactly when its report says compliant, a run that does leaves Redis healthy
// as it exits (read once, at once), and one that does not exits 3 (a cluster still resyncing
// is reported as such). At the end every hard rule holds, Redis is healthy, and
// faultEnv.finish's invariants hold over every run.
func freshRunCompletes(t *testing.T, f *faultEnv) {
	t.Helper()
	attempts := 0
	err := wait.PollUntilContextTimeout(t.Context(), 3*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		attempts++
		run := startCLI(t, nil, runArgs(f.Env)...)
		code := run.wait(5 * time.Minute)
		_, healthErr := f.Redis.CheckHealth(ctx, f.Addrs(), redisctl.HealthOptions{})
		cr := onlyCluster(t, run.report())
		if cr.Compliant && healthErr != nil {
			t.Errorf("fresh run %d reports compliance, but Redis is not healthy as it exits: %v", attempts, healthErr)
		}
		if cr.Compliant != (cr.Outcome == report.OutcomeCompliant) {
			t.Errorf("fresh run %d: compliant=%v with outcome %s", attempts, cr.Compliant, cr.Outcome)
		}
		if want := exitOf(cr.Outcome); code != want {
			t.Errorf("fresh run %d exited %d with outcome %s; want %d", attempts, code, cr.Outcome, want)
		}
		if code != app.ExitOK && code != app.ExitViolations {
			return false, fmt.Errorf("fresh run %d exited %d (%s), want 0 or 3", attempts, code, run.errorLine())
		}
		return cr.Compliant, nil
	})
	if err != nil {
		t.Errorf("no fresh run completed the fix (%d runs): %v", attempts, err)
	}
	t.Logf("the fix completed at fresh run %d", attempts)
	res := &result{env: f.Env, rc: f.Redis}
	res.writer = f.finish(t)
	res.stops = f.Stops()
	assertCompliantAndHealthy(t, res)
}

// exitOf is run's exit status for an outcome (docs/operations.md's table).
func exitOf(o report.Outcome) int {
	switch o {
	case report.OutcomeError:
		return app.ExitError
	case report.OutcomeNeedsAttention:
		return app.ExitViolations
	}
	return app.ExitOK
}

// assertExit checks a run's exit status.
func assertExit(t *testing.T, got, want int, run *cliRun) {
	t.Helper()
	if got != want {
		t.Errorf("redis-rebalancer run exited %d, want %d (error: %q)", got, want, run.errorLine())
	}
}

// waitStopped waits for run to exit and checks its exit status, that its one cluster was stopped
// by stoppedBy, and that the first line of the reason starts with prefix. It returns the report,
// the cluster's part and that first line.
func waitStopped(t *testing.T, run *cliRun, exit int, stoppedBy, prefix string) (report.Run, report.ClusterRun, string) {
	t.Helper()
	code := run.wait(3 * time.Minute)
	rep := run.report()
	assertExit(t, code, exit, run)
	if want := exitOf(rep.Outcome); want != code {
		t.Errorf("the report's outcome %s means exit %d, the run exited %d", rep.Outcome, want, code)
	}
	cr := onlyCluster(t, rep)
	if cr.StoppedBy != stoppedBy {
		t.Errorf("stopped by %q, want %q", cr.StoppedBy, stoppedBy)
	}
	first := firstLine(cr.Stopped)
	if !strings.HasPrefix(first, prefix) {
		t.Errorf("reason: first line %q does not start with %q (whole reason: %q)", first, prefix, cr.Stopped)
	}
	return rep, cr, first
}

// assertReason checks that the first line of a reason contains one of want, and returns that
// line.
func assertReason(t *testing.T, what, reason string, want ...string) string {
	t.Helper()
	first := firstLine(reason)
	for _, w := range want {
		if strings.Contains(first, w) {
			return first
		}
	}
	t.Errorf("%s: first line %q contains none of %q (whole reason: %q)", what, first, want, reason)
	return first
}

// apiServerGone are the errors of a request to a kube-apiserver that was killed: refused when it
// was down before the request, reset when it went away during it.
var apiServerGone = []string{"connection refused", "connection reset by peer"}

// onlyCluster returns the report's one cluster.
func onlyCluster(t *testing.T, rep report.Run) report.ClusterRun {
	t.Helper()
	if len(rep.Clusters) != 1 {
		t.Fatalf("report has %d clusters, want 1: %+v", len(rep.Clusters), rep)
	}
	return rep.Clusters[0]
}

// assertSkippedAtPlaceable fails t unless cr made exactly one move, skipped at the placeability
// check after the window and the health gate, before any failover or eviction (assertNothingDone),
// and f's cluster is as it was: no pod went away (f records stops) and the Redis roles are still
// roles. fault says what kept the pod from any node, for the messages.
func assertSkippedAtPlaceable(t *testing.T, f *faultEnv, cr report.ClusterRun, roles map[string]string, fault string) {
	t.Helper()
	assertNothingDone(t, cr)
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods went away although %s: %+v", fault, stops)
	}
	if got := rolesOf(t, f.Env); !equalRoles(got, roles) {
		t.Errorf("roles changed: before %v, after %v", roles, got)
	}
	if len(cr.Moves) != 1 {
		t.Fatalf("moves %+v, want one", cr.Moves)
	}
	var steps []string
	for _, s := range cr.Moves[0].Steps {
		steps = append(steps, s.Name+" "+s.Outcome)
	}
	wantSteps := []string{report.StepWindow + " continue", report.StepHealthGate + " continue", report.StepPlaceable + " skip"}
	if strings.Join(steps, ", ") != strings.Join(wantSteps, ", ") {
		t.Errorf("steps %v, want %v: skipped at the placeability check, before any failover", steps, wantSteps)
	}
}

// assertNothingDone checks that a run neither failed over nor evicted anything and did not report
// compliance.
func assertNothingDone(t *testing.T, cr report.ClusterRun) {
	t.Helper()
	for _, m := range cr.Moves {
		if m.Evicted || m.Failover != nil {
			t.Errorf("move %+v: want no eviction and no failover", m)
		}
	}
	if cr.Compliant {
		t.Error("report says compliant; the placement still breaks the rules")
	}
}

// waitPDBs waits until the namespace has n PodDisruptionBudgets and ok holds for each (the
// disruption controller has computed their status).
func waitPDBs(t *testing.T, env *harness.Env, n int, ok func(*policyv1.PodDisruptionBudget) bool) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := env.Client().PolicyV1().PodDisruptionBudgets(env.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var notYet []string
		for i := range l.Items {
			if !ok(&l.Items[i]) {
				notYet = append(notYet, fmt.Sprintf("%s %+v", l.Items[i].Name, l.Items[i].Status))
			}
		}
		last = fmt.Sprintf("%d PDBs, not yet: %v", len(l.Items), notYet)
		return len(l.Items) == n && len(notYet) == 0, nil
	})
	if err != nil {
		t.Fatalf("PodDisruptionBudgets: %s: %v", last, err)
	}
}

// rolesOf returns each running server's Redis role, by pod name.
func rolesOf(t *testing.T, env *harness.Env) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range env.Runtime.Servers() {
		reply, err := env.Redis.Do(t.Context(), s.Addr, "ROLE")
		if err != nil {
			t.Fatalf("ROLE of %s: %v", s.Name, err)
		}
		if arr, ok := reply.([]interface{}); ok && len(arr) > 0 {
			out[s.Name] = fmt.Sprint(arr[0])
		}
	}
	return out
}

// redisOptionsWithPassword returns the harness's Redis options for nodes that require password.
func redisOptionsWithPassword(password string) redisctl.Options {
	return redisctl.Options{Password: password}
}

func equalRoles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// movedPod matches run's move line ("move 1 (plan: …): evict <namespace>/<pod> from <node> …").
var movedPod = regexp.MustCompile(`evict [^/\s]+/(\S+) from `)

// runWithAPIServerDown runs redis-rebalancer (with extra arguments), takes kube-apiserver down as
// soon as the run reports that step continued with note, and brings it back once the run has
// exited. It checks that the run exited 1 and returns it and the pod its first move evicts. A
// step's line comes when the step has ended: take the API server down after the step before the
// one to hit, unless that step is slow.
func runWithAPIServerDown(t *testing.T, f *faultEnv, step, note string, extra ...string) (*cliRun, string) {
	t.Helper()
	run := startCLI(t, nil, runArgs(f.Env, extra...)...)
	pod := movedPod.FindStringSubmatch(run.waitLineWith(2*time.Minute, "): evict ", " from "))[1]
	run.waitStep(step, note, 2*time.Minute)
	apiServerDown(t, f.Env)
	code := run.wait(3 * time.Minute)
	apiServerUp(t, f.Env)
	assertExit(t, code, app.ExitError, run)
	return run, pod
}

// apiServerDown takes the test bed's kube-apiserver down; apiServerUp (or the test's cleanup)
// brings it back. Only a test that does not call t.Parallel may do this.
func apiServerDown(t *testing.T, env *harness.Env) {
	t.Helper()
	if err := env.Cluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	t.Cleanup(func() {
		if err := env.Cluster.StartAPIServer(context.Background()); err == nil {
			t.Logf("kube-apiserver restarted in cleanup, %v after it went down", time.Since(down).Round(time.Millisecond))
		}
	})
}

// apiServerUp starts the test bed's kube-apiserver again after apiServerDown.
func apiServerUp(t *testing.T, env *harness.Env) {
	t.Helper()
	if err := env.Cluster.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestFaultAPIServerDownAfterEviction: kube-apiserver goes down right after the eviction was
// accepted. The run cannot see the pod come back: it aborts with that (exit 1), naming the pod
// and the API server's error (the first real cause, never a poll the deadline cut short); the
// evicted pod was a replica, so the cluster is safe, and once the API server is back a fresh run
// completes the fix. Like the other API-server test it does not call t.Parallel.
func TestFaultAPIServerDownAfterEviction(t *testing.T) {
	// The evicted pod takes 5 s to go (kwok's pod-delete delay), so the re-creation is still
	// waiting when the API server goes down, and stays so for --recreate-timeout.
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{
		PodAnnotations: map[string]string{localcluster.PodDeleteDelayAnnotation: "5s"},
	}, true)
	run, pod := runWithAPIServerDown(t, f, report.StepEvict, "", "--recreate-timeout", "10s")
	got := assertReason(t, "error", run.errorLine(), apiServerGone...)
	if !strings.Contains(got, pod) {
		t.Errorf("reason %q does not name the evicted pod %s", got, pod)
	}
	freshRunCompletes(t, f)
}
