package cli

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

func TestPlanExitCodes(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "plan on the seed deadlock → 0, evict redis-s1-1", args: []string{"plan", "--snapshot", "../../examples/seed-deadlock.yaml", "--role-label", roleLabel}, wantCode: ExitOK, wantOut: []string{"evict redis/redis-s1-1 from n2", "compliant after: true", "evicting redis/redis-s1-1 unblocks it"}},
		{name: "plan on too few nodes → 3 with the reason", args: []string{"plan", "--snapshot", "../../examples/too-few-nodes.yaml"}, wantCode: ExitViolations, wantOut: []string{"no plan: N=6 pods at most 1 per node"}},
		{name: "plan on zonal volumes → 3, the volumes keep the pods", args: []string{"plan", "--snapshot", "../../examples/zonal-volumes.yaml"}, wantCode: ExitViolations, wantOut: []string{"zonal PersistentVolumes keep them there"}},
		{name: "plan --release-replica-claims on zonal volumes → 0, moves a replica", args: []string{"plan", "--snapshot", "../../examples/zonal-volumes.yaml", "--role-label", roleLabel, "--release-replica-claims"}, wantCode: ExitOK, wantOut: []string{"evict redis/redis-s3-1", "compliant after: true"}},
		{name: "bad output format → 1", args: []string{"plan", "--snapshot", "../../examples/excluded-zone.yaml", "-o", "yaml"}, wantCode: ExitError, wantErr: []string{`output (--output): Unsupported value: "yaml"`}},
	})
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
