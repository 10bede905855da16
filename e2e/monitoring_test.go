package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/metrics"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// deploy/monitoring's tests: the PrometheusRule's rules checked and unit-tested by promtool (built
// by hack/build-tools.sh into the tool cache), and every metric its alerts and the Grafana
// dashboard query exported by rebalancer/metrics. No control plane.

// promtoolVersion is the promtool the Makefile builds (Prometheus 3.16.0's module version).
const promtoolVersion = "v0.316.0"

// exportedFamilies returns the names of the metric families serve exports (rebalancer/metrics),
// each family given a series first, with a histogram's _bucket, _sum and _count.
func exportedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New(metrics.BuildInfo{Version: "v0.0.0", Revision: "test"})
	m.Cluster(report.ClusterRun{Namespace: "redis", Name: "a"})
	m.Step("redis/a", report.Step{Name: report.StepEvict, Seconds: 1})
	m.RunDone(time.Now(), time.Second, report.OutcomeCompliant)
	m.SetLeader(true)
	m.Review(guard.ReasonHoldExpired, true, false, time.Millisecond)
	m.HandOff("done")
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		if mf.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[mf.GetName()+s] = true
			}
		}
	}
	return names
}

// metricNames are the metric names a PromQL expression reads (ours, the Go runtime's and the
// process's).
var metricNames = regexp.MustCompile(`\b(redis_rebalancer_[a-z_]+|go_[a-z_]+|process_[a-z_]+)\b`)

// checkExprMetrics fails for each metric an expression reads that serve does not export.
func checkExprMetrics(t *testing.T, what, expr string, exported map[string]bool) {
	t.Helper()
	for _, name := range metricNames.FindAllString(expr, -1) {
		if !exported[name] {
			t.Errorf("%s reads %s, which serve does not export (rebalancer/metrics)", what, name)
		}
	}
}

// TestPrometheusRules checks deploy/monitoring/prometheusrule.yaml with `promtool check rules`
// and its unit test rules_test.yaml with `promtool test rules` (each alert of the outcome table
// fires on the series that mean it, and not on the others), and that the alerts and the Grafana
// dashboard read only metrics serve exports.
func TestPrometheusRules(t *testing.T) {
	t.Parallel()
	promtool := tool(t, "promtool", "PROMTOOL_BIN_DIR", promtoolVersion)
	exported := exportedFamilies(t)

	data, err := os.ReadFile(repoPath("deploy/monitoring/prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			checkExprMetrics(t, "alert "+r.Alert, r.Expr, exported)
		}
	}
	for _, want := range []string{"RedisRebalancerNeedsAttention", "RedisRebalancerPartial", "RedisRebalancerPassFailed", "RedisClusterNotCompliant", "RedisEvictionGuardHoldExpired", "RedisRebalancerNoLeader"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s in prometheusrule.yaml (alerts: %v)", want, alerts)
		}
	}

	// promtool reads a rule file: the PrometheusRule's spec, beside the unit test's copy.
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	rules, err := yaml.Marshal(obj["spec"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(repoPath("deploy/monitoring/rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"rules.yaml": rules, "rules_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		var out bytes.Buffer
		cmd := exec.Command(promtool, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
			continue
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), strings.TrimSpace(out.String()))
	}

	// The dashboard: every panel's queries read exported metrics.
	dash, err := os.ReadFile(repoPath("deploy/monitoring/dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dash, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if len(d.Panels) < 10 {
		t.Errorf("dashboard.json has %d panels, want the outcome, the leader, the violations, the moves and the guard's", len(d.Panels))
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkExprMetrics(t, "dashboard panel "+p.Title, q.Expr, exported)
		}
	}
}
