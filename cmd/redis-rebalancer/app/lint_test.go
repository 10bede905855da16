package app

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLintCommand(t *testing.T) {
	out, _, code := runCLI(t, "lint", "--snapshot", "../../../examples/seed-deadlock.yaml", "-o", "json")
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
	if _, _, code := runCLI(t, "lint", "--snapshot", "../../../examples/post-scale-down.yaml"); code != ExitOK {
		t.Errorf("post-scale-down lint exit %d, want 0", code)
	}
	// 4 shards in 2 zones: the loss of a zone cannot be survived, said once for the cluster; the
	// note on roles comes once too.
	out, _, code = runCLI(t, "lint", "--snapshot", "../../../examples/two-zones.yaml", "-o", "json")
	var doc2 struct {
		Findings []struct{ Kind, StatefulSet, Message string }
		Notes    []string
	}
	if err := json.Unmarshal([]byte(out), &doc2); err != nil {
		t.Fatal(err)
	}
	if code != ExitViolations || len(doc2.Findings) != 1 || doc2.Findings[0].Kind != "MasterQuorum" || doc2.Findings[0].StatefulSet != "" ||
		!strings.Contains(doc2.Findings[0].Message, "a third zone would fix it") {
		t.Errorf("two-zones lint: exit %d, findings %+v; want one MasterQuorum finding for the cluster", code, doc2.Findings)
	}
	if len(doc2.Notes) != 1 || !strings.Contains(doc2.Notes[0], "pod -0 is the master drifts after every failover") {
		t.Errorf("notes %q, want the note on roles", doc2.Notes)
	}
}
