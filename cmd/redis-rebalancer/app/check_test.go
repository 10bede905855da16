package app

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
)

func TestCheckExitCodes(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "check on a compliant snapshot → 0", args: []string{"check", "--snapshot", "../../../examples/excluded-zone.yaml"}, wantCode: ExitOK, wantOut: []string{"every hard rule holds"}},
		{name: "offline check says health is unknown → 0 on placement alone", args: []string{"check", "--snapshot", "../../../examples/excluded-zone.yaml"}, wantCode: ExitOK, wantOut: []string{"? Redis unknown: offline snapshot: Redis health not checked"}},
		{name: "check on post-scale-down → 3", args: []string{"check", "--snapshot", "../../../examples/post-scale-down.yaml"}, wantCode: ExitViolations, wantOut: []string{"MaxPodsPerNode", "n1", "redis-s0-0 ?"}},
		{name: "check with role label marks masters", args: []string{"check", "--snapshot", "../../../examples/post-scale-down.yaml", "--role-label", roleLabel}, wantCode: ExitViolations, wantOut: []string{"redis-s0-0 M", "redis-s0-1 R"}},
		{name: "check --release-replica-claims is accepted → 3 (claims change plans, not violations)", args: []string{"check", "--snapshot", "../../../examples/zonal-volumes.yaml", "--release-replica-claims"}, wantCode: ExitViolations, wantOut: []string{"MaxPodsPerZone"}},
		{name: "check --allow-pending-steps (plan's: check makes no plan) → 1, unknown flag", args: []string{"check", "--snapshot", "../../../examples/excluded-zone.yaml", "--allow-pending-steps"}, wantCode: ExitError, wantErr: []string{"unknown flag: --allow-pending-steps"}},
		{name: "missing snapshot file → 1", args: []string{"check", "--snapshot", "does-not-exist.yaml"}, wantCode: ExitError, wantErr: []string{"redis-rebalancer: snapshot:"}},
		{name: "bad output format → 1", args: []string{"check", "--snapshot", "../../../examples/excluded-zone.yaml", "-o", "xml"}, wantCode: ExitError, wantErr: []string{`output (--output): Unsupported value: "xml": supported values: "text", "table", "json"`}},
		{name: "bad selector → 1", args: []string{"check", "--snapshot", "../../../examples/excluded-zone.yaml", "-l", "a=(b"}, wantCode: ExitError, wantErr: []string{"--selector:"}},
		{name: "selector matching no pod → 1, the selector named", args: []string{"check", "--snapshot", "../../../examples/post-scale-down.yaml", "-l", "app=nothing"}, wantCode: ExitError, wantErr: []string{`no Redis cluster there has a pod the label selector "app=nothing" matches`, "--allow-empty"}},
		{name: "a namespace without pods → 1, the namespace named", args: []string{"check", "--snapshot", "../../../examples/post-scale-down.yaml", "-n", "elsewhere"}, wantCode: ExitError, wantErr: []string{`no pod in namespace "elsewhere"`}},
		{name: "a namespace without pods, --allow-empty → 0, no cluster", args: []string{"check", "--snapshot", "../../../examples/post-scale-down.yaml", "-n", "elsewhere", "--allow-empty"}, wantCode: ExitOK, wantOut: []string{"no Redis cluster found"}},
	})
}

// TestCheckJSONHealth: check's JSON carries each cluster's health; offline it is unknown, and
// says why.
func TestCheckJSONHealth(t *testing.T) {
	out, _, code := runCLI(t, "check", "--snapshot", "../../../examples/excluded-zone.yaml", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Clusters []struct {
			Health *observe.Health `json:"health"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	want := &observe.Health{State: observe.HealthUnknown, Reasons: []string{healthOffline}}
	if len(doc.Clusters) != 1 {
		t.Fatalf("clusters: %d", len(doc.Clusters))
	}
	if diff := cmp.Diff(want, doc.Clusters[0].Health); diff != "" {
		t.Errorf("health (-want +got):\n%s", diff)
	}
}
