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

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
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
// It asserts that the placement complies and Redis is healthy within the budget, that at least
// one pod was evicted by the descheduler's PodEvictor for RedisClusterBalance, that every pod
// that went away was a replica at that moment, and that no write failed or was lost.
func TestDeschedulerPlugin(t *testing.T) {
	bin := deschedulerPluginBinary(t) // built before the bed is shared with parallel tests
	sc := scenario.PostScaleDown()
	f := newFaultEnv(t, sc, harness.Options{}, false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

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
	var out proc.Buffer
	cmd := exec.Command(bin, "--kubeconfig", f.Kubeconfig(), "--policy-config-file", path,
		"--descheduling-interval", "5s", "--disable-metrics", "--secure-port", "0", "--v", "2")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("$ descheduler %s\n%s", strings.Join(cmd.Args[1:], " "), data)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		// SIGTERM: the descheduler cancels its context, the plugin's run stops.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Errorf("the descheduler did not stop within 30s of SIGTERM")
		}
		if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return errors.Is(syscall.Kill(-cmd.Process.Pid, 0), syscall.ESRCH), nil
		}); err != nil {
			t.Errorf("a process of the descheduler's group %d is still running after it exited", cmd.Process.Pid)
		}
	}
	t.Cleanup(stop)

	var why string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 4*time.Minute, false, func(ctx context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("the descheduler exited early (%v)", cmd.ProcessState)
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
	assertCompliantAndHealthy(t, &result{env: f.Env})
	t.Logf("the descheduler with RedisClusterBalance: %d evictions; writer: %s", len(stops), stats)
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
