package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
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

// TestLintCommandBitnami: the Bitnami example (the recommended spread set through the chart's
// values, 10 pods on 6 nodes) lints clean, its soft anti-affinity a note that --disable-rules
// ShardSeparation silences; the chart's defaults (no spread constraints) give the findings with
// the values, nested with --values-path; a bad --values-path is refused.
func TestLintCommandBitnami(t *testing.T) {
	base := []string{"lint", "--snapshot", "../../../examples/bitnami-post-scale-down.yaml", "--redis-nodes", "../../../examples/redis-nodes/bitnami_redis-cluster.txt", "--layout", "bitnami"}
	// The text is wrapped: compare it with its spaces folded.
	out, _, code := runCLI(t, base...)
	text := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"1 Redis cluster checked: every StatefulSet follows the recommendation as far as its chart can express it (notes below)",
		"note: bitnami/redis-cluster: SoftAntiAffinity: StatefulSet redis-cluster renders only a preferred pod anti-affinity", "(4 would stay Pending)"} {
		if code != ExitOK || !strings.Contains(text, want) {
			t.Errorf("the chart's values as lint advises: exit %d, want 0 and %q:\n%s", code, want, out)
		}
	}
	runExitCases(t, []exitCase{
		{name: "--values-path a..b → 1, naming the flag", args: append(base, "--values-path", "a..b"), wantCode: ExitError, wantErr: []string{`--values-path: values path "a..b": an empty key`}},
	})
	out, _, code = runCLI(t, append(base, "--disable-rules", "ShardSeparation", "-o", "json")...)
	var doc struct{ Notes []string }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK || len(doc.Notes) != 1 || strings.Contains(doc.Notes[0], "SoftAntiAffinity") {
		t.Errorf("--disable-rules ShardSeparation: exit %d, notes %q (%v); want 0 and the note on roles alone", code, doc.Notes, err)
	}
}

// TestLintCommandBitnamiAlias: Bitnami's chart under the alias sessions of an umbrella release
// web, read from a snapshot file: --layout bitnami alone selects nothing and the error gives the
// --workload-selector that selects it; with that selector lint tells the chart (by its
// REDIS_NODES, kept in the snapshot) and nests its values under --values-path.
func TestLintCommandBitnamiAlias(t *testing.T) {
	sc := scenario.BitnamiAliasPostScaleDown()
	snap := sc.MustSnapshot()
	for _, sts := range snap.StatefulSets { // the chart's defaults: no spread constraints
		sts.Spec.Template.Spec.TopologySpreadConstraints = nil
	}
	for _, p := range snap.Pods {
		p.Spec.TopologySpreadConstraints = nil
	}
	snapFile, nodesFile := writeOffline(t, t.TempDir(), sc, snap)
	base := []string{"lint", "--snapshot", snapFile, "--redis-nodes", nodesFile, "--layout", "bitnami"}
	runExitCases(t, []exitCase{
		{name: "--layout bitnami alone → 1: the pods of the chart under its alias, and the selector that selects them", args: base, wantCode: ExitError,
			wantErr: []string{"bitnami/web-sessions-0, bitnami/web-sessions-1, bitnami/web-sessions-2, … (10 pods) of Bitnami's redis-cluster chart carry helm.sh/chart sessions-13.0.5 and app.kubernetes.io/name sessions",
				"--workload-selector 'app.kubernetes.io/name=sessions' selects them"}},
	})
	out, errOut, code := runCLI(t, append(base, "--workload-selector", "app.kubernetes.io/name=sessions", "--values-path", "sessions", "-o", "json")...)
	var doc struct {
		Findings []struct{ Kind, Values string }
		Notes    []string
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitViolations || len(doc.Findings) == 0 {
		t.Fatalf("with the advised selector: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if v := doc.Findings[0].Values; !strings.HasPrefix(v, "sessions:\n  redis:\n") || !strings.Contains(v, "app.kubernetes.io/name: sessions") {
		t.Errorf("the first finding's values, want the chart's under sessions selecting its pods:\n%s", v)
	}
	if !strings.Contains(strings.Join(doc.Notes, "\n"), "StatefulSet web-sessions renders only a preferred pod anti-affinity") {
		t.Errorf("notes %q: want the chart's soft anti-affinity", doc.Notes)
	}
}
