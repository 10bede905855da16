package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/lease"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/proc"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// deschedulerPluginBinary builds (hack/descheduler-plugin/build.sh: go build, which relinks only
// when a source changed) the descheduler with the RedisClusterBalance plugin into the
// checkout's bin/descheduler-redis and returns its path. `make test` builds it before the suite.
func deschedulerPluginBinary(t *testing.T) string {
	t.Helper()
	out, err := filepath.Abs(filepath.Join("..", "bin", "descheduler-redis"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join("..", "hack", "descheduler-plugin", "build.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the descheduler with RedisClusterBalance: %v\n%s", err, b)
	}
	return out
}

// TestDeschedulerPlugin runs the descheduler built with the RedisClusterBalance plugin
// (hack/descheduler-plugin), in its loop, with a DeschedulerPolicy profile that enables only
// that balance plugin (and the DefaultEvictor), on the post-scale-down scenario with the writer
// on: the descheduler's PodEvictor evicts, after the plugin's health gate and verified failover.
// The Lease run and serve share is held by another identity first: the plugin skips two cycles
// (a log line each, naming the holder) and changes nothing; once the Lease is released it takes
// it and acts. It asserts that the placement complies and Redis is healthy within the budget,
// that at least one pod was evicted by the descheduler's PodEvictor for RedisClusterBalance, that
// every pod that went away was a replica at that moment, and that no write failed or was lost.
func TestDeschedulerPlugin(t *testing.T) {
	bin := deschedulerPluginBinary(t) // built before the bed is shared with parallel tests
	sc := scenario.PostScaleDown()
	f := newFaultEnv(t, sc, harness.Options{}, false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	// The Lease run and serve share (in the test's namespace), held by another identity first:
	// the plugin must do nothing while it is held.
	holdLease(t, f.Env, "serve-elsewhere")
	roles := rolesOf(t, f.Env)
	d := startDeschedulerPlugin(t, bin, f, sc)
	out, done, stop := &d.out, d.done, d.stop
	skip := fmt.Sprintf(`"Skipping this cycle: another redis-rebalancer holds the Lease (a run, or serve's leader, acts)" plugin="RedisClusterBalance" lease="%s/redis-rebalancer" holder="serve-elsewhere"`, f.Namespace)
	d.waitCount(skip, 2, 2*time.Minute)
	if got := rolesOf(t, f.Env); !equalRoles(roles, got) {
		t.Errorf("roles changed while the Lease was held by another identity: %v", changedRoles(roles, got))
	}
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods stopped while the Lease was held by another identity: %+v", stops)
	}
	if strings.Contains(out.String(), "Holding the Lease: acting") {
		t.Errorf("the plugin acted while the Lease was held by another identity")
	}
	releaseLease(t, f.Env)
	var why string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 4*time.Minute, false, func(ctx context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("the descheduler exited early (%v)", d.cmd.ProcessState)
		default:
		}
		// The plugin's own verdict first (its cycle is over: no move is in flight), then ours.
		if !strings.Contains(out.String(), fmt.Sprintf(`namespace=%q name=%q compliant=true`, f.Namespace, sc.ClusterLabels()[sc.ClusterLabel()])) {
			why = "the plugin has not reported the Redis cluster compliant yet"
			return false, nil
		}
		why = notCompliant(ctx, f.Env, sc.N())
		return why == "", nil
	})
	// What the descheduler printed until then: a cycle cut short by the stop below may log an
	// error of its own (a SIGTERM cancels the plugin's waits).
	before := out.String()
	stop()
	t.Logf("descheduler output:\n%s", out.String())
	if err != nil {
		t.Fatalf("post-scale-down not fixed by the descheduler with RedisClusterBalance: %v (last: %s)", err, why)
	}
	if strings.Contains(before, "finished with error") {
		t.Errorf("a descheduling cycle of RedisClusterBalance ended in an error (see the output above)")
	}

	stats := f.finish(t)
	if stats.Failed > 0 {
		t.Errorf("%d writes failed: the plugin's moves must cost clients no error", stats.Failed)
	}
	stops := f.Stops()
	evicted := strings.Count(before, `"Evicted pod"`)
	byPlugin := strings.Count(before, `strategy="RedisClusterBalance"`)
	if len(stops) < 1 || evicted != len(stops) || byPlugin != len(stops) {
		t.Errorf("pods that went away: %d; the descheduler's PodEvictor logged %d evictions, %d of them for RedisClusterBalance: want at least 1, all of them its", len(stops), evicted, byPlugin)
	}
	if !strings.Contains(before, "Failover verified") {
		t.Errorf("the plugin's progress has no verified failover: the post-scale-down fix fails a master over before its pod is evicted")
	}
	if !strings.Contains(before, `"Holding the Lease: acting"`) {
		t.Errorf("the plugin acted without holding the Lease once it was released")
	}
	assertCompliantAndHealthy(t, &result{env: f.Env})
	t.Logf("the descheduler with RedisClusterBalance: %d evictions; writer: %s", len(stops), stats)
}

// TestDeschedulerPluginDryRun runs the descheduler built with RedisClusterBalance under its own
// --dry-run on the post-scale-down scenario (whose fix fails a master over before it is evicted,
// then fails two more over): a dry run changes nothing. Each cycle plans and logs the plan a real
// cycle makes (stoppedBy dryRun), and after two cycles no role has changed (no failover), no pod
// has gone (no eviction), no Lease exists in the namespace (none taken) and redis-rebalancer
// recorded no Event.
func TestDeschedulerPluginDryRun(t *testing.T) {
	bin := deschedulerPluginBinary(t)
	sc := scenario.PostScaleDown()
	f := newFaultEnv(t, sc, harness.Options{}, false)
	roles := rolesOf(t, f.Env)
	d := startDeschedulerPlugin(t, bin, f, sc, "--dry-run")
	cycle := fmt.Sprintf(`"Redis cluster" plugin="RedisClusterBalance" namespace=%q name=%q compliant=false moves=0 stoppedBy="dryRun"`, f.Namespace, sc.ClusterLabels()[sc.ClusterLabel()])
	d.waitCount(cycle, 2, 3*time.Minute)
	out := d.out.String()
	d.stop()
	t.Logf("descheduler output:\n%s", d.out.String())
	// The plan a real cycle makes (TestDeschedulerPlugin): the cluster is read as it is, not
	// from the descheduler's sandbox, which mirrors no StatefulSet.
	for _, want := range []string{"Dry run: planning only (no failover, no eviction, no Lease taken)", "(dry run): 1 eviction, 2 failovers", "evict " + f.Namespace + "/"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run's output lacks %q: the plan is not logged", want)
		}
	}
	if got := rolesOf(t, f.Env); !equalRoles(roles, got) {
		t.Errorf("roles changed in a dry run: %v", changedRoles(roles, got))
	}
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods stopped in a dry run: %+v", stops)
	}
	for _, bad := range []string{"Failover verified", "Holding the Lease", `"Evicted pod"`} {
		if strings.Contains(out, bad) {
			t.Errorf("the dry run logged %q", bad)
		}
	}
	if _, err := f.Client().CoordinationV1().Leases(f.Namespace).Get(t.Context(), lease.DefaultName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease in %s after a dry run: %v, want none (NotFound)", f.Namespace, err)
	}
	events, err := f.Client().EventsV1().Events(f.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.ReportingController == execute.EventSource {
			t.Errorf("the dry run recorded Event %s %s: %s", e.Reason, e.Regarding.Name, e.Note)
		}
	}
	if stats := f.finish(t); stats.Failed > 0 {
		t.Errorf("%d writes failed in a dry run", stats.Failed)
	}
}

// deschedulerRun is the descheduler built with RedisClusterBalance running as a child process.
type deschedulerRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  proc.Buffer   // its stdout and stderr
	done chan struct{} // closed once it has exited
	stop func()        // SIGTERM, then SIGKILL after 30 s; waits for its process group
}

// startDeschedulerPlugin starts bin (deschedulerPluginBinary) in its loop (a cycle every 5 s,
// --v 2, extra flags last) with a DeschedulerPolicy whose one profile enables RedisClusterBalance
// (and the DefaultEvictor) on f's namespace, the Lease run and serve share named in f's
// namespace. It is stopped when the test ends.
func startDeschedulerPlugin(t *testing.T, bin string, f *faultEnv, sc scenario.Scenario, extra ...string) *deschedulerRun {
	t.Helper()
	policy := map[string]any{
		"apiVersion": "descheduler/v1alpha2",
		"kind":       "DeschedulerPolicy",
		"profiles": []any{map[string]any{
			"name": "redis",
			"pluginConfig": []any{
				map[string]any{"name": "DefaultEvictor", "args": map[string]any{}},
				map[string]any{"name": "RedisClusterBalance", "args": map[string]any{
					"namespaces":         map[string]any{"include": []string{f.Namespace}},
					"clusterLabel":       sc.ClusterLabel(),
					"redisPort":          f.Port,
					"maxMovesPerCluster": 6,
					"healthGateTimeout":  "1m",
					"recreateTimeout":    "2m",
					"rejoinTimeout":      "2m",
					"lease":              map[string]any{"namespace": f.Namespace},
				}},
			},
			"plugins": map[string]any{"balance": map[string]any{"enabled": []string{"RedisClusterBalance"}}},
		}},
	}
	data, err := yaml.Marshal(policy)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d := &deschedulerRun{t: t, done: make(chan struct{})}
	d.cmd = exec.Command(bin, append([]string{"--kubeconfig", f.Kubeconfig(), "--policy-config-file", path,
		"--descheduling-interval", "5s", "--disable-metrics", "--secure-port", "0", "--v", "2"}, extra...)...)
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("$ descheduler %s\n%s", strings.Join(d.cmd.Args[1:], " "), data)
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	stopped := false
	d.stop = func() {
		if stopped {
			return
		}
		stopped = true
		// SIGTERM: the descheduler cancels its context, the plugin's run stops.
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
			t.Errorf("the descheduler did not stop within 30s of SIGTERM")
		}
		if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return errors.Is(syscall.Kill(-d.cmd.Process.Pid, 0), syscall.ESRCH), nil
		}); err != nil {
			t.Errorf("a process of the descheduler's group %d is still running after it exited", d.cmd.Process.Pid)
		}
	}
	t.Cleanup(d.stop)
	return d
}

// waitCount waits until the descheduler has printed substr n times (cycles counted, not slept
// for); it fails the test, with the output, when it has not within timeout or exits first.
func (d *deschedulerRun) waitCount(substr string, n int, timeout time.Duration) {
	d.t.Helper()
	err := wait.PollUntilContextTimeout(d.t.Context(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		select {
		case <-d.done:
			return false, fmt.Errorf("the descheduler exited (%v)", d.cmd.ProcessState)
		default:
		}
		return strings.Count(d.out.String(), substr) >= n, nil
	})
	if err != nil {
		d.t.Fatalf("the descheduler printed %q %d times, want %d: %v; its output:\n%s", substr, strings.Count(d.out.String(), substr), n, err, d.out.String())
	}
}

// holdLease makes identity the holder of the Lease run and serve share in env's namespace (as a
// serve leader elsewhere would, for an hour) until releaseLease or the end of the test.
func holdLease(t *testing.T, env *harness.Env, identity string) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: lease.DefaultName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(identity), LeaseDurationSeconds: ptr.To(int32(3600)),
			AcquireTime: &now, RenewTime: &now},
	}
	if _, err := env.Client().CoordinationV1().Leases(env.Namespace).Create(t.Context(), l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// releaseLease releases the Lease of env's namespace as its holder does when it stops leading
// (client-go's ReleaseOnCancel: no holder, a lease duration of 1 s).
func releaseLease(t *testing.T, env *harness.Env) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := env.Client().CoordinationV1().Leases(env.Namespace).Get(t.Context(), lease.DefaultName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = ptr.To(""), ptr.To(int32(1)), &now
		_, err = env.Client().CoordinationV1().Leases(env.Namespace).Update(t.Context(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// notCompliant returns "" when env's Redis cluster complies (every hard rule holds, with the
// roles Redis reports; every one of its n pods is Ready with its redis-server running; the
// health gate passes), else why not.
func notCompliant(ctx context.Context, env *harness.Env, n int) string {
	snap, err := observe.ReadSnapshot(ctx, env.Client(), env.Namespace)
	if err != nil {
		return "read: " + err.Error()
	}
	model, err := policies.Build(snap, policies.Options{ClusterLabel: env.Scenario.ClusterLabel()})
	if err != nil || len(model.Clusters) != 1 {
		return fmt.Sprintf("model: %d clusters, %v", len(model.Clusters), err)
	}
	c := model.Clusters[0]
	if _, err := observe.ApplyRedis(ctx, env.Redis, c); err != nil {
		return "roles: " + err.Error()
	}
	if vs := policies.Hard(c.Evaluate(c.Current())); len(vs) > 0 {
		return fmt.Sprintf("%d hard-rule violations, first %s: %s", len(vs), vs[0].Rule, vs[0].Message)
	}
	sel, err := labels.Parse(env.Scenario.Selector())
	if err != nil {
		return "selector: " + err.Error()
	}
	servers := map[string]bool{}
	for _, s := range env.Runtime.Servers() {
		servers[s.Name+"/"+string(s.UID)+"/"+s.IP] = !s.Paused
	}
	var addrs []string
	for _, p := range snap.Pods {
		if !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if !observe.PodReady(p) || !servers[p.Name+"/"+string(p.UID)+"/"+p.Status.PodIP] {
			return fmt.Sprintf("pod %s not Ready with its redis-server yet", p.Name)
		}
		addrs = append(addrs, env.Redis.AddrOf(p.Status.PodIP))
	}
	if len(addrs) < n {
		return fmt.Sprintf("%d of %d pods Ready", len(addrs), n)
	}
	if _, err := env.Redis.CheckHealth(ctx, addrs, redisctl.HealthOptions{}); err != nil {
		return "health: " + err.Error()
	}
	return ""
}
