package app

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	rebalancedExample    = "../../../examples/rebalanced.yaml"
	postScaleDownExample = "../../../examples/post-scale-down.yaml"
)

func TestPrepareDrainExitCodes(t *testing.T) {
	runExitCases(t, []exitCase{
		{name: "rebalanced, drain n1 offline → 0, room on n3 first, then n1's master; each pod's fate",
			args: []string{"prepare-drain", "n1", "--snapshot", rebalancedExample, "--role-label", roleLabel}, wantCode: ExitOK,
			wantOut: []string{
				"hand-off (to make): 2 failovers",
				"1. fail redis/redis-s1-0 (n3) over to redis/redis-s1-1 (n5): no pod moves",
				"2. fail redis/redis-s0-0 (n1) over to redis/redis-s0-1 (n3): no pod moves",
				"MasterQuorum over the nodes that stay (at most 2 of 5 masters per node, 2 per zone): holds",
				"redis/redis-s0-0 on n1: replica; master redis/redis-s0-1 on n3; no other replica stays",
				"redis/redis-s2-1 on n1: replica; master redis/redis-s2-0 on n5",
				"safe: the drain may start",
			},
			wantErr: []string{"note: offline (--snapshot): the hand-off is only planned"}},
		{name: "rebalanced, --zone zone-c offline → 0, s1 and s2 leave zone-c",
			args: []string{"prepare-drain", "--zone", "zone-c", "--snapshot", rebalancedExample, "--role-label", roleLabel, "--dry-run"}, wantCode: ExitOK,
			wantOut: []string{"prepare-drain zone zone-c (n5, n6):", "fail redis/redis-s2-0 (n5) over to redis/redis-s2-1 (n1)", "safe: the drain may start"}},
		{name: "post-scale-down, drain n1 → 3: every replica of n1's masters is in zone-b, which would hold 4 of 5",
			args: []string{"prepare-drain", "n1", "--snapshot", postScaleDownExample, "--role-label", roleLabel}, wantCode: ExitViolations,
			wantOut: []string{"hand-off (to make): 4 failovers", "cannot hold", "✗ no failovers keep MasterQuorum over the nodes that stay", "not safe"}},
		{name: "post-scale-down, drain n1 and n3 → 3: s0's and s1's masters have no replica that stays",
			args: []string{"prepare-drain", "n1", "n3", "--snapshot", postScaleDownExample, "--role-label", roleLabel}, wantCode: ExitViolations,
			wantOut: []string{"✗ redis/redis-s0-0 on n1 is a master serving slots that the hand-off cannot move", "✗ redis/redis-s1-0 on n1 is a master"}},
		{name: "roles unknown offline → 3, says why",
			args: []string{"prepare-drain", "n1", "--snapshot", rebalancedExample}, wantCode: ExitViolations,
			wantOut: []string{"the Redis roles are unknown"}},
		{name: "a node with no Redis pod → 0, nothing to hand off",
			args: []string{"prepare-drain", "n6", "--snapshot", rebalancedExample, "--role-label", roleLabel}, wantCode: ExitOK,
			wantOut: []string{"hand-off: none needed (no master there)", "redis/redis-s4-1 on n6: replica", "safe"}},
		{name: "an unknown node → 1 naming it", args: []string{"prepare-drain", "n9", "--snapshot", rebalancedExample, "--role-label", roleLabel}, wantCode: ExitError,
			wantErr: []string{"no node n9 in the cluster"}},
		{name: "no node and no zone → 1", args: []string{"prepare-drain", "--snapshot", rebalancedExample}, wantCode: ExitError,
			wantErr: []string{"name the nodes to drain, or --zone ZONE"}},
		{name: "plan --without n1 on rebalanced → 0: the hand-off, the lost pods placed again, compliant after",
			args: []string{"plan", "--snapshot", rebalancedExample, "--role-label", roleLabel, "--without", "n1"}, wantCode: ExitOK,
			wantOut: []string{"as if n1 were gone; MasterQuorum over the nodes that stay: at most 2 of 5 masters per node, 2 per\n    zone",
				"hand-off first: 2 failovers", "pods lost with the nodes, re-created by their controllers: redis/redis-s0-0, redis/redis-s2-1",
				"compliant after: true"}},
		{name: "plan --without zone=zone-b on post-scale-down → 3: no placement of 10 pods in 2 zones complies",
			args: []string{"plan", "--snapshot", postScaleDownExample, "--role-label", roleLabel, "--without", "zone=zone-b"}, wantCode: ExitViolations,
			wantOut: []string{"as if n3, n4 were gone", "no plan reaches compliance: the allowed zones can hold 8 of N=10 pods", "partial plan: 0 evictions, 1 failover; Redis made safer: MasterQuorum excess 5 → 4"}},
		{name: "plan --without n1,n3 → 3: two masters stuck", args: []string{"plan", "--snapshot", postScaleDownExample, "--role-label", roleLabel, "--without", "n1,n3"}, wantCode: ExitViolations,
			wantOut: []string{"! master redis/redis-s0-0: no replica on a node that stays can take over"}},
		{name: "plan --without zone= → 1", args: []string{"plan", "--snapshot", postScaleDownExample, "--without", "zone="}, wantCode: ExitError,
			wantErr: []string{"--without: one zone at most, and not empty"}},
	})
}

// TestPrepareDrainJSON checks the JSON contract of prepare-drain: moves of kind failover with
// from/to, like plan's, and each pod's fate.
func TestPrepareDrainJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "prepare-drain", "n1", "--snapshot", rebalancedExample, "--role-label", roleLabel, "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Nodes    []string
		DryRun   bool
		Safe     bool
		Clusters []struct {
			Namespace, Name string
			Moves           []struct{ Kind, From, To, ToNode string }
			Failovers       int
			QuorumHolds     bool
			Pods            []struct {
				Pod, Node, Role, Master, PodDisruptionBudget string
				ReturnsTo                                    []string
			}
			Safe    bool
			Reasons []string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Safe || !doc.DryRun || len(doc.Clusters) != 1 || !cmp.Equal(doc.Nodes, []string{"n1"}) {
		t.Fatalf("safe %v, dryRun %v, clusters %d, nodes %v; want safe, a dry run, 1 cluster, [n1]:\n%s", doc.Safe, doc.DryRun, len(doc.Clusters), doc.Nodes, out)
	}
	c := doc.Clusters[0]
	type mv struct{ Kind, From, To, ToNode string }
	var moves []mv
	for _, m := range c.Moves {
		moves = append(moves, mv(m))
	}
	want := []mv{{"failover", "redis/redis-s1-0", "redis/redis-s1-1", "n5"}, {"failover", "redis/redis-s0-0", "redis/redis-s0-1", "n3"}}
	if diff := cmp.Diff(want, moves); diff != "" || c.Failovers != 2 || !c.QuorumHolds || !c.Safe || len(c.Reasons) != 0 {
		t.Errorf("moves (-want +got):\n%s\nfailovers %d, quorumHolds %v, safe %v, reasons %v", diff, c.Failovers, c.QuorumHolds, c.Safe, c.Reasons)
	}
	var pods []string
	for _, p := range c.Pods {
		pods = append(pods, p.Pod+" "+p.Role+" "+p.Master+" "+p.PodDisruptionBudget)
		if len(p.ReturnsTo) == 0 {
			t.Errorf("%s: no node takes it back", p.Pod)
		}
	}
	wantPods := []string{"redis/redis-s0-0 replica redis/redis-s0-1 redis-s0", "redis/redis-s2-1 replica redis/redis-s2-0 redis-s2"}
	if diff := cmp.Diff(wantPods, pods); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
}
