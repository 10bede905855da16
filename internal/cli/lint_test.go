package cli

import (
	"encoding/json"
	"testing"
)

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
