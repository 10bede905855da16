package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// runCLI runs the root command with args and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	code := ExitOK
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case err != nil:
		code = ExitError
	}
	return out.String(), errOut.String(), code
}

const roleLabel = "redis.rebalancer.io/role"

func TestCheckAndPlanExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{"check on a compliant snapshot → 0", []string{"check", "--snapshot", "../../examples/excluded-zone.yaml"}, ExitOK, []string{"every hard rule holds"}},
		{"check on post-scale-down → 3", []string{"check", "--snapshot", "../../examples/post-scale-down.yaml"}, ExitViolations, []string{"MaxPodsPerNode", "n1", "redis-s0-0 ?"}},
		{"check with role label marks masters", []string{"check", "--snapshot", "../../examples/post-scale-down.yaml", "--role-label", roleLabel}, ExitViolations, []string{"redis-s0-0 M", "redis-s0-1 R"}},
		{"plan on the seed deadlock → 0, evict redis-s1-1", []string{"plan", "--snapshot", "../../examples/seed-deadlock.yaml", "--role-label", roleLabel}, ExitOK, []string{"evict redis/redis-s1-1 from n2", "compliant after: true", "evicting redis/redis-s1-1 unblocks it"}},
		{"plan on too few nodes → 3 with the reason", []string{"plan", "--snapshot", "../../examples/too-few-nodes.yaml"}, ExitViolations, []string{"no plan: N=6 pods at most 1 per node"}},
		{"missing snapshot file → 1", []string{"check", "--snapshot", "does-not-exist.yaml"}, ExitError, nil},
		{"bad output format → 1", []string{"check", "--snapshot", "../../examples/excluded-zone.yaml", "-o", "xml"}, ExitError, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestPlanJSONContract checks the JSON fields the README documents.
func TestPlanJSONContract(t *testing.T) {
	out, _, code := runCLI(t, "plan", "--snapshot", "../../examples/post-scale-down.yaml", "--role-label", roleLabel, "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Clusters []struct {
			Namespace, Name string
			Pods, Zones     int
			Violations      []struct {
				Rule, Domain string
				Count, Limit int
				Pods         []string
				Message      string
			}
			Moves []struct {
				Pod, Node, Shard, Role string
				Failover               bool
				CandidateNodes         []string
				Reason                 string
			}
			CompliantAfter bool
			Infeasible     string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Clusters) != 1 {
		t.Fatalf("clusters: %d", len(doc.Clusters))
	}
	c := doc.Clusters[0]
	if c.Namespace != "redis" || c.Name != "redis" || c.Pods != 10 || c.Zones != 3 || !c.CompliantAfter || c.Infeasible != "" {
		t.Errorf("cluster header: %+v", c)
	}
	if len(c.Moves) != 1 || !c.Moves[0].Failover || c.Moves[0].Role != "master" || c.Moves[0].Node != "n1" || len(c.Moves[0].CandidateNodes) == 0 {
		t.Errorf("moves: %+v", c.Moves)
	}
	var rules []string
	for _, v := range c.Violations {
		if v.Rule == "MaxPodsPerNode" && (v.Domain != "n1" || v.Count != 4 || v.Limit != 3 || len(v.Pods) != 4) {
			t.Errorf("MaxPodsPerNode violation: %+v", v)
		}
		rules = append(rules, v.Rule)
	}
	want := []string{"MaxPodsPerNode", "MaxPodsPerZone", "TopologySpread", "NodeSpread", "ZoneBalance"}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	// The report type round-trips.
	var a report.Analysis
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
}

func TestConstraintsCommand(t *testing.T) {
	out, _, code := runCLI(t, "constraints", "--shards", "5", "--pods-per-shard", "2", "--zones", "a,b,c", "--cluster-name", "rc1", "--shard", "rc1-s0")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var frag struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec
			}
		}
	}
	if err := yaml.Unmarshal([]byte(out), &frag); err != nil {
		t.Fatal(err)
	}
	type c struct {
		Key  string
		Skew int32
		Hard bool
	}
	var got []c
	for _, t := range frag.Spec.Template.Spec.TopologySpreadConstraints {
		got = append(got, c{t.TopologyKey, t.MaxSkew, t.WhenUnsatisfiable == corev1.DoNotSchedule})
	}
	want := []c{{corev1.LabelHostname, 3, true}, {corev1.LabelTopologyZone, 4, true}, {corev1.LabelHostname, 1, false}, {corev1.LabelTopologyZone, 1, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("N=10 constraints (-want +got):\n%s", diff)
	}
	if _, _, code := runCLI(t, "constraints", "--shards", "3"); code != ExitError {
		t.Errorf("without --cluster-name: exit %d, want %d", code, ExitError)
	}
}

func TestLintCommand(t *testing.T) {
	out, _, code := runCLI(t, "lint", "--snapshot", "../../examples/seed-deadlock.yaml", "-o", "json")
	if code != ExitViolations {
		t.Fatalf("exit %d, want %d", code, ExitViolations)
	}
	var doc struct {
		Findings []struct{ Kind, StatefulSet string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings) != 3 || doc.Findings[0].Kind != "DeadlockRisk" {
		t.Errorf("findings: %+v", doc.Findings)
	}
	if _, _, code := runCLI(t, "lint", "--snapshot", "../../examples/post-scale-down.yaml"); code != ExitOK {
		t.Errorf("post-scale-down lint exit %d, want 0", code)
	}
}
