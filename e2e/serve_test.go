package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/serve"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The leader election's timings in the serve test: short, so that the hand-over is quick.
const (
	testLeaseDuration = 8 * time.Second
	testRenewDeadline = 5 * time.Second
	testRetryPeriod   = time.Second
)

// servePolicy is e2ePolicy with a drain that waits for 3 s of quiet after a failover, so that the
// test kills the leader between its failover and its eviction with time to spare.
const servePolicy = e2ePolicy + "failover: {drainQuiet: 3s}\n"

// serveArgs returns `redis-rebalancer serve`'s arguments for env: cliArgs's with
// servePolicy, a pass every 10 s, a listener on a free loopback port, and the Lease in env's
// namespace.
func serveArgs(t *testing.T, env *harness.Env) []string {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(servePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return cliArgs("serve", env, "--policy", policy,
		"--schedule", "@every 10s", "--listen-address", "127.0.0.1:0",
		"--leader-elect-resource-namespace", env.Namespace,
		"--leader-elect-lease-duration", testLeaseDuration.String(),
		"--leader-elect-renew-deadline", testRenewDeadline.String(),
		"--leader-elect-retry-period", testRetryPeriod.String())
}

// addressRE finds the address in serve's JSON log line "Serving".
var addressRE = regexp.MustCompile(`"address":"([^"]+)"`)

// serveAddr waits until serve says where it listens and returns the address.
func serveAddr(t *testing.T, r *cliRun) string {
	t.Helper()
	m := addressRE.FindStringSubmatch(r.waitLine(`"msg":"Serving"`, time.Minute))
	if m == nil {
		t.Fatal("no listen address in serve's output")
	}
	return m[1]
}

// scrape reads /metrics at addr.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// matches reports whether m's labels include labels.
func matches(m *dto.Metric, labels map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range labels {
		if have[k] != v {
			return false
		}
	}
	return true
}

// sample returns the value of the first sample of family name whose labels include labels (a
// histogram's sample count), and whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// gaugeSum adds the values of gauge family name's samples whose labels include labels.
func gaugeSum(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	sum := 0.0
	for _, m := range fams[name].GetMetric() {
		if matches(m, labels) {
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// wantSamples checks that each sample is present and at least its minimum.
func wantSamples(t *testing.T, who string, fams map[string]*dto.MetricFamily, want []metricWant) {
	t.Helper()
	for _, w := range want {
		got, ok := sample(fams, w.name, w.labels)
		if !ok || got < w.min {
			t.Errorf("%s /metrics: %s%v = %v (present %v), want ≥ %v", who, w.name, w.labels, got, ok, w.min)
		}
	}
}

type metricWant struct {
	name   string
	labels map[string]string
	min    float64
}

// TestServeLeaderElection runs two `redis-rebalancer serve` processes against the post-scale-down
// scenario: only the leader passes; it is killed (SIGKILL) right after its failover, before the
// eviction; the other takes over once the Lease expires, evicts the old master (a replica by then,
// as its role check confirms) and brings the cluster to compliance with no write lost. The
// leader's /metrics show the failover, the new leader's the rest; the moved pod carries the
// failover's and the eviction's Events; a SIGTERM then stops the new leader gracefully and
// releases the Lease.
func TestServeLeaderElection(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	ctx := t.Context()
	args := serveArgs(t, f.Env)

	a := startCLI(t, nil, args...)
	addrA := serveAddr(t, a)
	a.waitLine(`"Leading`, time.Minute)
	b := startCLI(t, nil, args...)
	addrB := serveAddr(t, b)
	b.waitLine(`"Another replica leads"`, time.Minute)

	// A fails the master over; its /metrics say so; then it dies before the eviction (the drain
	// after a failover waits for 3 s of quiet on the old master: servePolicy).
	a.waitLine("✓ failover (", 3*time.Minute)
	wantSamples(t, "leader", scrape(t, addrA), []metricWant{
		{"redis_rebalancer_failovers_total", map[string]string{"result": string(execute.FailoverSucceeded)}, 1},
		{"redis_rebalancer_step_duration_seconds", map[string]string{"step": "failover"}, 1},
		{"redis_rebalancer_leader", nil, 1},
		{"redis_rebalancer_build_info", nil, 1},
	})
	killed := time.Now()
	a.kill()
	if strings.Contains(a.stderr(), "✓ evict (") {
		t.Fatalf("the leader evicted before it was killed: the test needs the kill between the failover and the eviction")
	}

	// B takes over once the Lease expires: at most a lease duration after the last renewal B
	// observed, plus a retry period (jittered) for B to see the renewal and one to acquire.
	b.waitLine(`"Leading`, time.Minute)
	handOver := time.Since(killed)
	bound := testLeaseDuration + 2*time.Duration(float64(testRetryPeriod)*(1+leaderelection.JitterFactor))
	t.Logf("hand-over %s after the kill (lease duration %s, bound %s)", handOver.Round(time.Millisecond), testLeaseDuration, bound)
	if handOver > bound {
		t.Errorf("hand-over took %s, more than the lease duration and two retries (%s)", handOver, bound)
	}
	b.waitLine(`"Pass starting"`, time.Minute)
	if before, _, _ := strings.Cut(b.stderr(), `"msg":"Leading`); strings.Contains(before, `"msg":"Pass starting"`) {
		t.Errorf("the follower passed before it led")
	}
	b.waitLine(`"outcome":"compliant"`, 4*time.Minute) // the log line "Pass ended"
	if !strings.Contains(b.stderr(), "✓ evict (") {
		t.Errorf("the new leader did not evict the old master")
	}

	wantSamples(t, "new leader", scrape(t, addrB), []metricWant{
		{"redis_rebalancer_evictions_total", map[string]string{"result": string(execute.EvictionEvicted)}, 1},
		{"redis_rebalancer_moves_total", map[string]string{"result": "done"}, 1},
		{"redis_rebalancer_step_duration_seconds", map[string]string{"step": "evict"}, 1},
		{"redis_rebalancer_step_duration_seconds", map[string]string{"step": "roleCheck"}, 1},
		{"redis_rebalancer_runs_total", map[string]string{"outcome": "compliant"}, 1},
		{"redis_rebalancer_last_run_outcome", map[string]string{"outcome": "compliant"}, 1},
		{"redis_rebalancer_last_run_timestamp_seconds", nil, float64(killed.Unix())},
		{"redis_rebalancer_last_run_duration_seconds", nil, 0.001},
		{"redis_rebalancer_leader", nil, 1},
		{"redis_rebalancer_build_info", nil, 1},
	})
	fams := scrape(t, addrB)
	if v := gaugeSum(fams, "redis_rebalancer_violations", map[string]string{"namespace": f.Namespace, "phase": "before"}); v < 1 {
		t.Errorf("new leader /metrics: no violation before its first pass (sum %v)", v)
	}

	// The moved pod's Events: the failover (A's) and the eviction (B's PodEvictor).
	seen := map[string]bool{}
	evs, err := f.Client().EventsV1().Events(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.ReportingController == execute.EventSource {
			t.Logf("event on %s %s: %s %s: %s", e.Regarding.Kind, e.Regarding.Name, e.Type, e.Reason, e.Note)
			seen[e.Regarding.Name+" "+e.Reason] = true
		}
	}
	evictedPod := ""
	for k := range seen {
		if name, ok := strings.CutSuffix(k, " "+execute.EvictionStrategy); ok {
			evictedPod = name
		}
	}
	if evictedPod == "" || !seen[evictedPod+" "+execute.ReasonFailover] {
		t.Errorf("events %v: want %s and %s on the moved pod", seen, execute.ReasonFailover, execute.EvictionStrategy)
	}
	f.finish(t)

	// A graceful stop: B exits 0 and releases the Lease.
	if err := syscall.Kill(b.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(time.Minute); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}
	lease, err := f.Client().CoordinationV1().Leases(f.Namespace).Get(context.Background(), serve.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("Lease still held by %q after the graceful stop", *h)
	}
}

// TestRunGracefulStop sends `redis-rebalancer run` a SIGTERM right after its failover: the drain
// (a wait) is abandoned at once, nothing is evicted, and run exits 0 with the cluster stopped by
// the graceful stop (outcome progressing); no write is lost. A second run then plans again from Redis's roles (the old
// master is a replica by now; which pod it evicts is the planner's choice, MasterQuorum's failover
// steps included), evicts only replicas, and the cluster complies.
func TestRunGracefulStop(t *testing.T) {
	f := newFaultEnv(t, scenario.PostScaleDown(), harness.Options{}, false)
	run := startCLI(t, nil, runArgs(f.Env)...)
	run.waitLine("✓ failover (", 3*time.Minute)
	if err := syscall.Kill(run.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := run.wait(time.Minute)
	assertExit(t, code, app.ExitOK, run)
	cr := onlyCluster(t, run.report())
	if cr.StoppedBy != report.StoppedGracefulStop || len(cr.Moves) != 1 || cr.Outcome != report.OutcomeProgressing {
		t.Fatalf("stopped by %q (%s), %d moves, outcome %s; want the graceful stop during the one move, progressing", cr.StoppedBy, cr.Stopped, len(cr.Moves), cr.Outcome)
	}
	m := cr.Moves[0]
	if m.Evicted || m.Failover == nil || m.Outcome != report.OutcomeSkip {
		t.Errorf("move %+v: want failed over, skipped, not evicted", m)
	}
	t.Logf("stopped: %s", cr.Stopped)

	again := startCLI(t, nil, runArgs(f.Env)...)
	assertExit(t, again.wait(3*time.Minute), app.ExitOK, again)
	cr = onlyCluster(t, again.report())
	if !cr.Compliant || len(cr.Moves) == 0 {
		t.Fatalf("second run: compliant %v, moves %+v", cr.Compliant, cr.Moves)
	}
	for _, mv := range cr.Moves {
		if mv.Evicted && mv.RoleAtEviction != policies.RoleReplica {
			t.Errorf("second run's move %+v: %s evicted as %q, want a replica", mv, mv.Pod, mv.RoleAtEviction)
		}
		if mv.Pod == m.Pod && mv.Failover != nil {
			t.Errorf("second run failed %s over again: it was a replica since the first run's failover", m.Pod)
		}
	}
	f.finish(t)
}
