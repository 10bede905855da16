package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

var update = flag.Bool("update", false, "rewrite examples/*.yaml from test/scenario's suite")

const examplesDir = "../../examples"

// exampleWant is what a suite case must give.
type exampleWant struct {
	violations []string // "Rule domain", hard only, sorted
	moves      int      // planned evictions (minimal)
	firstPod   string   // when set, the pod the first move evicts (or the Pending pod's unblock)
	failovers  int      // evictions that fail a master over first
	// failoverSteps is the number of failover steps (after the evictions, minimal).
	failoverSteps int
	// pendingSteps is the number of pods the plan lets wait Pending.
	pendingSteps int
	// releases is the number of evictions that release the pod's claims.
	releases int
	// infeasible, when set, is a phrase the reason for "no plan" must contain.
	infeasible string
	// partial, with infeasible, is what the plan of failovers only does (failoverSteps of them);
	// nil: no failover makes Redis safer, the plan has no move.
	partial *plan.Partial
	// softEvictions and softAfter are the soft fix's evictions and the soft excess it leaves
	// (--soft-evictions).
	softEvictions, softAfter int
	// bestEffort is the penalty a best-effort plan reaches (--best-effort): moves and
	// failoverSteps count its steps.
	bestEffort *policies.Penalty
	// drain, when set, is a node whose drain's hand-off (plan.HandOff) must be handOff:
	// "from → to" failovers in order, MasterQuorum holding over the nodes that stay.
	drain   string
	handOff []string
	opts    policies.Options
	popts   plan.Options
}

var exampleWants = map[string]exampleWant{
	"seed-deadlock": {violations: []string{"Unschedulable "}, moves: 1, firstPod: "redis/redis-s1-1"},
	// n1 holds 4 of the 5 masters and zone-a all 5: the eviction of a master of n1 hands its slots
	// to its replica in zone-b, and two failovers move two more masters out of zone-a.
	"post-scale-down": {violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, failovers: 1, failoverSteps: 2},
	"single-zone":     {violations: []string{"MasterQuorum n1", "MaxPodsPerNode n1", "TopologySpread n1"}, moves: 1, failovers: 1},
	// n1's two masters break MasterQuorum (M=4: at most 1 per node): evicting one of them (its
	// replica takes over) fixes both rules, where evicting the replica s2-1 would need a failover.
	"two-zones":            {violations: []string{"MasterQuorum n1", "MaxPodsPerNode n1", "TopologySpread n1"}, moves: 1, failovers: 1, firstPod: "redis/redis-s1-0"},
	"node-readded":         {violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, failovers: 1, failoverSteps: 1},
	"too-few-nodes":        {violations: []string{"MaxPodsPerNode n1", "MaxPodsPerZone zone-a"}, infeasible: "need 6 usable nodes, found 5"},
	"tainted-and-cordoned": {violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, failovers: 1, failoverSteps: 2},
	// No plan: one failover alone makes MasterQuorum hold (partial).
	"min-domains":          {violations: []string{"MasterQuorum n1", "MaxPodsPerNode n1", "TopologySpread n1"}, infeasible: "need 6 usable nodes, found 5", failoverSteps: 1, partial: &plan.Partial{QuorumBefore: 1}},
	"excluded-zone":        {},
	"three-pods-per-shard": {violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "TopologySpread n1"}, moves: 1, failovers: 1, failoverSteps: 1},
	"zonal-volumes":        {violations: []string{"MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, infeasible: "zone zone-a holds 5 pods whose zonal PersistentVolumes keep them there", failoverSteps: 1, partial: &plan.Partial{QuorumBefore: 1}},
	"zonal-volumes/release-replica-claims": {
		violations: []string{"MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, failoverSteps: 1,
		firstPod: "redis/redis-s3-1", releases: 1, opts: policies.Options{ReleaseReplicaClaims: true},
	},
	"stayers-on-unusable-nodes": {violations: []string{"MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, firstPod: "redis/redis-s1-1"},
	"pending-step": {
		violations: []string{"ShardSeparation zone-a", "ShardSeparation zone-b"},
		infeasible: "every single eviction leaves its pod unplaceable (each evicted pod must be placed at once; searched ",
	},
	"pending-step/allow-pending-steps": {
		violations: []string{"ShardSeparation zone-a", "ShardSeparation zone-b"}, moves: 2, pendingSteps: 1,
		popts: plan.Options{AllowPendingSteps: true},
	},
	// Pods comply; n1 and zone-a hold 3 of the 5 masters: one failover, no eviction.
	"role-only": {violations: []string{"MasterQuorum n1", "MasterQuorum zone-a"}, failoverSteps: 1, firstPod: "redis/redis-s2-0"},
	// post-scale-down in Bitnami's and OT's layouts: shards and roles from CLUSTER NODES, the
	// same plan.
	"bitnami-post-scale-down": {violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, failovers: 1, failoverSteps: 2},
	"ot-post-scale-down":      {violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, failovers: 1, failoverSteps: 2},
	// Nodes announced at their LoadBalancers' IPs, matched to pods through the per-pod Services:
	// the same plan.
	"bitnami-external-access-post-scale-down": {violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, failovers: 1, failoverSteps: 2},
	// The chart's zonal volumes pin zone-a's five masters: no plan, unless claims may be released
	// (then the same plan as without volumes, its eviction releasing the claim of the master it
	// fails over first); three failovers alone make MasterQuorum hold (n1 and zone-a 2 masters).
	"bitnami-zonal-post-scale-down": {
		violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"},
		infeasible: "zone zone-a holds 5 pods whose zonal PersistentVolumes keep them there", failoverSteps: 3, partial: &plan.Partial{QuorumBefore: 5},
	},
	// --best-effort counts MasterQuorum's excess and failovers: an eviction within zone-a (n1 →
	// n2, its volume allows it) and two failovers take the excess from 8 to 1.
	"bitnami-zonal-post-scale-down/best-effort": {
		violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"},
		infeasible: "zone zone-a holds 5 pods whose zonal PersistentVolumes keep them there", moves: 1, failovers: 1, failoverSteps: 2,
		bestEffort: &policies.Penalty{Excess: 1}, popts: plan.Options{BestEffort: true},
	},
	"bitnami-zonal-post-scale-down/release-replica-claims": {
		violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"}, moves: 1, failovers: 1, failoverSteps: 2,
		releases: 1, opts: policies.Options{ReleaseReplicaClaims: true},
	},
	// Compliant; draining n1 (prepare-drain n1) makes room in zone-b, then hands n1's master off.
	"rebalanced": {drain: "n1", handOff: []string{"redis/redis-s1-0 → redis/redis-s1-1", "redis/redis-s0-0 → redis/redis-s0-1"}},
	// Every hard rule holds; the ScheduleAnyway zone constraint (zones 4, 4, 2) and ZoneBalance
	// are broken: one soft eviction, a pod of zone-a or zone-b to zone-c.
	"soft-spread": {},
	"soft-spread/soft-evictions": {
		softEvictions: 1, softAfter: 0,
		opts:  policies.Options{Rules: map[policies.Rule]policies.RuleSetting{policies.SoftTopologySpread: {Enabled: true, Soft: true}}},
		popts: plan.Options{SoftEvictions: 1},
	},
	// No placement keeps fewer than N/3 pods per node on 5 nodes: no plan, but two failovers make
	// MasterQuorum hold (partial); best effort moves two masters off n1 (each failed over first),
	// leaving one node above the limit.
	"best-effort": {
		violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"},
		infeasible: "need 6 usable nodes, found 5", failoverSteps: 2, partial: &plan.Partial{QuorumBefore: 4},
	},
	"best-effort/best-effort": {
		violations: []string{"MasterQuorum n1", "MasterQuorum zone-a", "MaxPodsPerNode n1", "MaxPodsPerZone zone-a", "TopologySpread n1"},
		infeasible: "need 6 usable nodes, found 5", moves: 2, failovers: 2,
		bestEffort: &policies.Penalty{Excess: 1}, popts: plan.Options{BestEffort: true},
	},
}

// redisNodesFile returns the --redis-nodes file of a suite case of the Bitnami or OT layout.
func redisNodesFile(c scenario.Case) string {
	return filepath.Join(examplesDir, "redis-nodes", observe.RedisNodesFile(c.Namespace, c.Cluster)+".txt")
}

// TestExamples writes (with -update) and checks every examples/*.yaml snapshot: its violations
// and its minimal plan, read from the file as `plan --snapshot` would.
func TestExamples(t *testing.T) {
	cases := scenario.Suite()
	if *update {
		for _, c := range cases {
			snap, err := c.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := observe.EncodeSnapshot(&buf, snap); err != nil {
				t.Fatal(err)
			}
			header := "# " + c.Name + ": " + c.Description + "\n# redis-rebalancer plan --snapshot examples/" + c.Name + ".yaml --role-label " + scenario.RoleLabel + flagsText(c) + "\n"
			if c.Layout != scenario.LayoutSeed {
				nodes := redisNodesFile(c)
				header = "# " + c.Name + ": " + c.Description + "\n# redis-rebalancer plan --snapshot examples/" + c.Name + ".yaml --redis-nodes " +
					strings.TrimPrefix(nodes, "../../") + " --layout " + string(c.Layout) + "\n"
				if err := os.MkdirAll(filepath.Dir(nodes), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(nodes, []byte(c.ClusterNodes()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(examplesDir, c.Name+".yaml"), append([]byte(header), buf.Bytes()...), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name] = true
	}
	files, _ := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if len(files) != len(cases) {
		t.Errorf("examples/ has %d files, the suite %d cases (run go test ./rebalancer/report -run TestExamples -update)", len(files), len(cases))
	}
	for key := range exampleWants {
		name, _, _ := cutSlash(key)
		if !names[name] {
			t.Errorf("expectation %q has no suite case", key)
		}
	}
	for _, c := range cases {
		for key, want := range exampleWants {
			if name, _, _ := cutSlash(key); name != c.Name {
				continue
			}
			t.Run(key, func(t *testing.T) {
				snap, _, err := observe.LoadSnapshotFile(filepath.Join(examplesDir, c.Name+".yaml"))
				if err != nil {
					t.Fatal(err)
				}
				opts := want.opts
				opts.RoleLabel = scenario.RoleLabel
				opts.ClusterLabel = c.ClusterLabel()
				m, err := policies.Build(snap, opts)
				if err != nil {
					t.Fatal(err)
				}
				if c.Layout != scenario.LayoutSeed {
					nodes, err := observe.LoadRedisNodes(redisNodesFile(c))
					if err != nil {
						t.Fatal(err)
					}
					if unused := observe.ApplyRedisNodes(m, nodes); len(unused) > 0 || m.Clusters[0].ShardSource.Kind != policies.ShardRedis || len(m.Clusters[0].Shards) != c.Shards {
						t.Fatalf("--redis-nodes: unused %v, shards from %s: %d, want %d from Redis", unused, m.Clusters[0].ShardSource, len(m.Clusters[0].Shards), c.Shards)
					}
				}
				a := Analyze(m, true, want.popts)
				if len(a.Clusters) != 1 {
					t.Fatalf("clusters = %d, want 1", len(a.Clusters))
				}
				ca := a.Clusters[0]
				var got []string
				for _, v := range policies.Hard(ca.Violations) {
					got = append(got, string(v.Rule)+" "+v.Domain)
				}
				sort.Strings(got)
				if diff := cmp.Diff(want.violations, got); diff != "" {
					t.Errorf("violations (-want +got):\n%s", diff)
				}
				if want.infeasible != "" && want.bestEffort != nil {
					if !strings.Contains(ca.Infeasible, want.infeasible) || ca.CompliantAfter || ca.BestEffort == nil {
						t.Fatalf("want a best-effort plan because %q; got compliantAfter %v, infeasible %q, bestEffort %+v", want.infeasible, ca.CompliantAfter, ca.Infeasible, ca.BestEffort)
					}
					if ca.BestEffort.After != *want.bestEffort || !ca.BestEffort.Minimal || ca.Evictions != want.moves || ca.Failovers != want.failoverSteps {
						t.Errorf("best effort %+v after %d evictions and %d failover steps, want %+v (minimal) after %d and %d", ca.BestEffort, ca.Evictions, ca.Failovers, *want.bestEffort, want.moves, want.failoverSteps)
					}
					logMoves(t, ca.Moves)
					return
				}
				if want.infeasible != "" {
					if !strings.Contains(ca.Infeasible, want.infeasible) || ca.CompliantAfter || ca.BestEffort != nil {
						t.Errorf("want no plan because %q; got compliantAfter %v, infeasible %q", want.infeasible, ca.CompliantAfter, ca.Infeasible)
					}
					t.Logf("infeasible: %s", ca.Infeasible)
					if diff := cmp.Diff(want.partial, ca.Partial); diff != "" {
						t.Errorf("partial plan (-want +got):\n%s", diff)
					}
					if ca.Evictions != 0 || ca.Failovers != want.failoverSteps || len(ca.Moves) != want.failoverSteps {
						t.Errorf("%d evictions, %d failover steps (%d moves), want %d failover steps only", ca.Evictions, ca.Failovers, len(ca.Moves), want.failoverSteps)
					}
					logMoves(t, ca.Moves)
					return
				}
				if !ca.CompliantAfter || !ca.Minimal || !ca.FailoversMinimal {
					t.Errorf("compliantAfter %v minimal %v failoversMinimal %v, want all (infeasible %q)", ca.CompliantAfter, ca.Minimal, ca.FailoversMinimal, ca.Infeasible)
				}
				if ca.Evictions != want.moves || ca.Failovers != want.failoverSteps || ca.SoftEvictions != want.softEvictions || len(ca.Moves) != want.moves+want.failoverSteps+want.softEvictions {
					t.Fatalf("%d evictions, %d failover steps and %d soft evictions (%d moves), want %d, %d and %d: %+v", ca.Evictions, ca.Failovers, ca.SoftEvictions, len(ca.Moves), want.moves, want.failoverSteps, want.softEvictions, ca.Moves)
				}
				if want.softEvictions > 0 && (ca.SoftFix == nil || ca.SoftFix.After != want.softAfter || !ca.SoftFix.Minimal) {
					t.Errorf("soft fix %+v, want soft excess %d after, minimal", ca.SoftFix, want.softAfter)
				}
				failovers := 0
				for _, mv := range ca.Moves {
					if mv.Kind == plan.KindEvict && mv.Failover {
						failovers++
					}
				}
				if failovers != want.failovers {
					t.Errorf("evictions of masters = %d, want %d", failovers, want.failovers)
				}
				if len(ca.PendingSteps) != want.pendingSteps {
					t.Errorf("pending steps = %+v, want %d", ca.PendingSteps, want.pendingSteps)
				}
				releases := 0
				for _, mv := range ca.Moves {
					if len(mv.ReleaseClaims) > 0 {
						releases++
						if mv.Kind != plan.KindEvict {
							t.Errorf("a %s step releases claims %v", mv.Kind, mv.ReleaseClaims)
						}
					}
				}
				if releases != want.releases {
					t.Errorf("evictions that release claims = %d, want %d", releases, want.releases)
				}
				if want.firstPod != "" && ca.Moves[0].Pod != want.firstPod {
					t.Errorf("first move evicts %s, want %s", ca.Moves[0].Pod, want.firstPod)
				}
				if want.drain != "" {
					leaving, err := m.LeavingNodes([]string{want.drain}, "")
					if err != nil {
						t.Fatal(err)
					}
					h := plan.HandOff(m.Clusters[0], leaving)
					var got []string
					for _, mv := range h.Moves {
						got = append(got, mv.From+" → "+mv.To)
					}
					if diff := cmp.Diff(want.handOff, got); diff != "" || !h.QuorumHolds || len(h.Stuck) > 0 {
						t.Errorf("hand-off of a drain of %s (-want +got):\n%s\nquorum holds %v, stuck %v", want.drain, diff, h.QuorumHolds, h.Stuck)
					}
				}
				logMoves(t, ca.Moves)
			})
		}
	}
}

// logMoves logs a plan's moves.
func logMoves(t *testing.T, moves []plan.Move) {
	for _, mv := range moves {
		if mv.Kind == plan.KindFailover {
			t.Logf("fail %s (%s) over to %s (%s): %s", mv.From, mv.Node, mv.To, mv.ToNode, mv.Reason)
			continue
		}
		t.Logf("evict %s from %s → %s (candidates %v; failover to %q; soft %v): %s", mv.Pod, mv.Node, mv.Expected, mv.CandidateNodes, mv.To, mv.Soft, mv.Reason)
	}
}

// flagsText returns a suite case's flags for the example's header command (" --best-effort"), ""
// without any.
func flagsText(c scenario.Case) string {
	if len(c.Flags) == 0 {
		return ""
	}
	return " " + strings.Join(c.Flags, " ")
}

func cutSlash(s string) (string, string, bool) { return strings.Cut(s, "/") }
