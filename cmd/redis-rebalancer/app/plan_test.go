package app

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

func TestPlanExitCodes(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "plan on the seed deadlock → 0, evict redis-s1-1", args: []string{"plan", "--snapshot", "../../../examples/seed-deadlock.yaml", "--role-label", roleLabel}, wantCode: ExitOK, wantOut: []string{"evict redis/redis-s1-1 from n2", "compliant after: true", "evicting redis/redis-s1-1 unblocks it"}},
		{name: "plan on too few nodes → 3 with the reason", args: []string{"plan", "--snapshot", "../../../examples/too-few-nodes.yaml"}, wantCode: ExitViolations, wantOut: []string{"no plan: N=6 pods at most 1 per node"}},
		{name: "plan on zonal volumes → 3, the volumes keep the pods", args: []string{"plan", "--snapshot", "../../../examples/zonal-volumes.yaml"}, wantCode: ExitViolations, wantOut: []string{"zonal PersistentVolumes keep them there"}},
		{name: "plan --release-replica-claims on zonal volumes → 0, moves a replica", args: []string{"plan", "--snapshot", "../../../examples/zonal-volumes.yaml", "--role-label", roleLabel, "--release-replica-claims"}, wantCode: ExitOK, wantOut: []string{"evict redis/redis-s3-1", "compliant after: true"}},
		{name: "plan on the Bitnami drift with zonal volumes → 3, zone-a's masters are pinned; 3 failovers alone make MasterQuorum hold", args: []string{"plan", "--snapshot", "../../../examples/bitnami-zonal-post-scale-down.yaml", "--redis-nodes", "../../../examples/redis-nodes/bitnami_redis-cluster.txt", "--layout", "bitnami"}, wantCode: ExitViolations,
			wantOut: []string{"no plan reaches compliance: zone zone-a holds 5 pods whose zonal PersistentVolumes keep them", "(--release-replica-claims)", "partial plan: 0 evictions, 3 failovers; Redis made safer: MasterQuorum excess 5 → 0", "3. fail bitnami/redis-cluster-4 (n2) over to bitnami/redis-cluster-5 (n5): no pod moves"}},
		{name: "plan --release-replica-claims on the Bitnami drift with zonal volumes → 0, a master failed over, then its claim released", args: []string{"plan", "--snapshot", "../../../examples/bitnami-zonal-post-scale-down.yaml", "--redis-nodes", "../../../examples/redis-nodes/bitnami_redis-cluster.txt", "--layout", "bitnami", "--release-replica-claims"}, wantCode: ExitOK,
			wantOut: []string{"evict bitnami/redis-cluster-3 from n1 (M, fail over to bitnami/redis-cluster-9 on n4 first;\n     then release claim redis-data-redis-cluster-3: it resyncs in full) → n5", "compliant after: true"}},
		{name: "plan on the Bitnami drift with externalAccess (nodes at LoadBalancer IPs) → 0, pods matched through their Services", args: []string{"plan", "--snapshot", "../../../examples/bitnami-external-access-post-scale-down.yaml", "--redis-nodes", "../../../examples/redis-nodes/bitnami-lb_redis-cluster.txt", "--layout", "bitnami"}, wantCode: ExitOK,
			wantOut: []string{"n1    redis-cluster-0 M, redis-cluster-1 M, redis-cluster-2 M, redis-cluster-3 M", "evict bitnami-lb/redis-cluster-3 from n1 (M, fail over to bitnami-lb/redis-cluster-9 on n4", "compliant after: true"}},
		{name: "plan on the role-only case → 0, one failover and no eviction", args: []string{"plan", "--snapshot", "../../../examples/role-only.yaml", "--role-label", roleLabel}, wantCode: ExitOK,
			wantOut: []string{"MasterQuorum: node n1 holds 3 of the 5 masters", "plan: 0 evictions, 1 failover, minimal; compliant after: true", "1. fail redis/redis-s2-0 (n1) over to redis/redis-s2-1 (n4): no pod moves"}},
		{name: "check on the role-only case without --role-label → 0, MasterQuorum skipped with a note", args: []string{"check", "--snapshot", "../../../examples/role-only.yaml"}, wantCode: ExitOK,
			wantOut: []string{"every hard rule holds", "note: MasterQuorum not checked: the members' Redis roles are unknown"}},
		{name: "check on the role-only case with --role-label → 3, MasterQuorum n1 and zone-a", args: []string{"check", "--snapshot", "../../../examples/role-only.yaml", "--role-label", roleLabel}, wantCode: ExitViolations,
			wantOut: []string{"MasterQuorum: node n1 holds 3 of the 5 masters", "MasterQuorum: zone zone-a holds 3 of the 5 masters"}},
		{name: "bad output format → 1", args: []string{"plan", "--snapshot", "../../../examples/excluded-zone.yaml", "-o", "yaml"}, wantCode: ExitError, wantErr: []string{`output (--output): Unsupported value: "yaml"`}},
	})
}

// TestPlanJSONContract checks the JSON fields the README documents.
func TestPlanJSONContract(t *testing.T) {
	out, _, code := runCLI(t, "plan", "--snapshot", "../../../examples/post-scale-down.yaml", "--role-label", roleLabel, "-o", "json")
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
				Kind, Pod, Node, Shard, Role string
				Failover                     bool
				From, To, ToNode             string
				CandidateNodes               []string
				Reason                       string
			}
			Evictions, Failovers int
			MasterQuorum         struct {
				Applies                       bool
				Masters, NodeLimit, ZoneLimit int
			}
			CompliantAfter, Minimal, FailoversMinimal bool
			Infeasible                                string
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
	// One eviction of a master of n1 (failed over to its named replica first), then two failovers.
	if len(c.Moves) != 3 || c.Evictions != 1 || c.Failovers != 2 || !c.Minimal || !c.FailoversMinimal {
		t.Fatalf("moves: %+v (evictions %d, failovers %d); want 1 eviction then 2 failovers, minimal", c.Moves, c.Evictions, c.Failovers)
	}
	if mv := c.Moves[0]; mv.Kind != "evict" || !mv.Failover || mv.Role != "master" || mv.Node != "n1" || len(mv.CandidateNodes) == 0 || mv.From != mv.Pod || mv.To == "" || mv.ToNode == "" {
		t.Errorf("move 1: %+v", mv)
	}
	for _, mv := range c.Moves[1:] {
		if mv.Kind != "failover" || mv.From != mv.Pod || mv.To == "" || mv.ToNode == "" || len(mv.CandidateNodes) != 0 {
			t.Errorf("failover step: %+v", mv)
		}
	}
	if q := c.MasterQuorum; !q.Applies || q.Masters != 5 || q.NodeLimit != 2 || q.ZoneLimit != 2 {
		t.Errorf("masterQuorum: %+v", q)
	}
	var rules []string
	for _, v := range c.Violations {
		if v.Rule == "MaxPodsPerNode" && (v.Domain != "n1" || v.Count != 4 || v.Limit != 3 || len(v.Pods) != 4) {
			t.Errorf("MaxPodsPerNode violation: %+v", v)
		}
		if v.Rule == "MasterQuorum" && v.Domain == "n1" && (v.Count != 4 || v.Limit != 2 || len(v.Pods) != 4) {
			t.Errorf("MasterQuorum violation: %+v", v)
		}
		rules = append(rules, v.Rule)
	}
	want := []string{"MasterQuorum", "MasterQuorum", "MaxPodsPerNode", "MaxPodsPerZone", "TopologySpread", "NodeSpread", "ZoneBalance"}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	// The report type round-trips.
	var a report.Analysis
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
}

// TestPlanJSONReleaseClaims checks the JSON of a move that fails a master over and releases its
// claim: failover, the replica named, then the claims the eviction releases.
func TestPlanJSONReleaseClaims(t *testing.T) {
	out, _, code := runCLI(t, "plan", "--snapshot", "../../../examples/bitnami-zonal-post-scale-down.yaml",
		"--redis-nodes", "../../../examples/redis-nodes/bitnami_redis-cluster.txt", "--layout", "bitnami", "--release-replica-claims", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Clusters []struct {
			Moves []struct {
				Kind, Pod, Role, To string
				Failover            bool
				ReleaseClaims       []string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Clusters) != 1 || len(doc.Clusters[0].Moves) == 0 {
		t.Fatalf("clusters %+v, want one with moves", doc.Clusters)
	}
	type move struct {
		Kind, Pod, Role, To string
		Failover            bool
		ReleaseClaims       []string
	}
	got := move(doc.Clusters[0].Moves[0])
	want := move{Kind: "evict", Pod: "bitnami/redis-cluster-3", Role: "master", To: "bitnami/redis-cluster-9", Failover: true, ReleaseClaims: []string{"redis-data-redis-cluster-3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first move (-want +got):\n%s", diff)
	}
	for _, mv := range doc.Clusters[0].Moves[1:] {
		if len(mv.ReleaseClaims) > 0 {
			t.Errorf("move %s %s releases %v: only the eviction does", mv.Kind, mv.Pod, mv.ReleaseClaims)
		}
	}
}
