package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// zoneNodes returns nodes named names, labelled zone=zones[i] (a custom key: the rules' zones
// stay unset), with pods allocatable each.
func zoneNodes(names, zones []string, pods int64) []*corev1.Node {
	var out []*corev1.Node
	for i, n := range names {
		out = append(out, fixture.Node(n, fixture.NodeLabel("zone", zones[i]), fixture.Allocatable("32", "256Gi", pods)))
	}
	return out
}

// cluster builds Redis cluster "tsc" of pods (labelled foo=bar, controlled by ReplicaSet rs,
// which re-creates them) on nodes, judged under rules.
func cluster(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, rules map[policies.Rule]policies.RuleSetting) *policies.Cluster {
	t.Helper()
	for _, p := range pods {
		p.Labels["foo"] = "bar"
		p.Labels[policies.DefaultClusterLabel] = "tsc"
	}
	m, err := policies.Build(&policies.Snapshot{Nodes: nodes, Pods: pods}, policies.Options{RecreatingOwners: []string{"ReplicaSet"}, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return m.Clusters[0]
}

// settings returns rule settings: the ones listed enabled (soft as the registry says), the
// others disabled.
func settings(rules ...policies.Rule) map[policies.Rule]policies.RuleSetting {
	out := map[policies.Rule]policies.RuleSetting{}
	for _, info := range policies.Rules() {
		out[info.Name] = policies.RuleSetting{Enabled: slices.Contains(rules, info.Name), Soft: info.Soft}
	}
	return out
}

// TestSoftFix checks the soft fix: with Options.SoftEvictions the plan adds, after the hard
// rules hold, the fewest evictions that lower the soft excess the most within that many, each
// keeping every hard rule; without it soft violations are only reported.
func TestSoftFix(t *testing.T) {
	anyway := fixture.SpreadOn("zone", 1, map[string]string{"foo": "bar"}, fixture.ScheduleAnyway())
	twoZones := zoneNodes([]string{"n1", "n2"}, []string{"zoneA", "zoneB"}, 110)
	for _, tc := range []struct {
		name          string
		cluster       func(t *testing.T) *policies.Cluster
		softEvictions int
		want          []string // the soft moves' pods
		before, after int      // soft excess
	}{
		{
			name: "ScheduleAnyway [3,1], one soft eviction allowed: one pod of zoneA moves, [2,2]",
			cluster: func(t *testing.T) *policies.Cluster {
				return cluster(t, twoZones, fixture.ReplicaSetPods([]string{"n1", "n2"}, []int{3, 1}, anyway), settings(policies.SoftTopologySpread))
			},
			softEvictions: 1, want: []string{"redis/pod-0"}, before: 1, after: 0,
		},
		{
			name: "ScheduleAnyway [3,1] without soft evictions: reported only",
			cluster: func(t *testing.T) *policies.Cluster {
				return cluster(t, twoZones, fixture.ReplicaSetPods([]string{"n1", "n2"}, []int{3, 1}, anyway), settings(policies.SoftTopologySpread))
			},
			before: 1, after: 1,
		},
		{
			name: "ScheduleAnyway [5,0], one soft eviction allowed of the three needed: [4,1]",
			cluster: func(t *testing.T) *policies.Cluster {
				return cluster(t, twoZones, fixture.ReplicaSetPods([]string{"n1"}, []int{5}, anyway), settings(policies.SoftTopologySpread))
			},
			softEvictions: 1, want: []string{"redis/pod-0"}, before: 4, after: 2,
		},
		{
			name: "ScheduleAnyway [5,0], three soft evictions allowed: [3,2]",
			cluster: func(t *testing.T) *policies.Cluster {
				return cluster(t, twoZones, fixture.ReplicaSetPods([]string{"n1"}, []int{5}, anyway), settings(policies.SoftTopologySpread))
			},
			softEvictions: 3, want: []string{"redis/pod-0", "redis/pod-1"}, before: 4, after: 0,
		},
		{
			name: "ScheduleAnyway [5,2] over 4 nodes of at most 2 pods each (MaxPodsPerNode, N=7): moving a pod to zoneB's full node would break it, nothing is planned",
			cluster: func(t *testing.T) *policies.Cluster {
				nodes := zoneNodes([]string{"n1", "n2", "n3", "n4"}, []string{"zoneA", "zoneA", "zoneA", "zoneB"}, 110)
				return cluster(t, nodes, fixture.ReplicaSetPods([]string{"n1", "n2", "n3", "n4"}, []int{2, 2, 1, 2}, anyway), settings(policies.SoftTopologySpread, policies.MaxPodsPerNode))
			},
			softEvictions: 3, before: 2, after: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cluster(t)
			p := Compute(c, Options{SoftEvictions: tc.softEvictions})
			if !p.CompliantAfter || len(policies.Hard(p.After)) > 0 {
				t.Fatalf("compliantAfter %v, after %+v", p.CompliantAfter, p.After)
			}
			var got []string
			for _, mv := range p.Moves {
				if !mv.Soft {
					t.Errorf("move %s is not soft: the cluster complies", mv.Pod)
				}
				got = append(got, mv.Pod)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("soft moves (-want +got):\n%s", diff)
			}
			if p.SoftEvictions != len(tc.want) {
				t.Errorf("SoftEvictions = %d, want %d", p.SoftEvictions, len(tc.want))
			}
			before, after := policies.SoftExcess(p.Before), policies.SoftExcess(p.Before)
			if p.Soft != nil {
				before, after = p.Soft.Before, p.Soft.After
				if !p.Soft.Minimal {
					t.Error("soft fix not exhaustive")
				}
			}
			if before != tc.before || after != tc.after {
				t.Errorf("soft excess %d → %d, want %d → %d", before, after, tc.before, tc.after)
			}
			if len(p.Moves) > 0 {
				if got := policies.SoftExcess(p.After); got != tc.after {
					t.Errorf("After's soft excess = %d, plan.Soft.After %d", got, tc.after)
				}
				if !slices.ContainsFunc(p.Moves[0].Candidates, func(cd Candidate) bool { return cd.Node == p.Moves[0].Expected && cd.OnTrack }) {
					t.Errorf("the first soft move's expected node %s is not an on-track candidate: %+v", p.Moves[0].Expected, p.Moves[0].Candidates)
				}
			}
		})
	}
}

// TestBestEffort checks best-effort plans: where no placement complies (the descheduler's case
// "only move 1 pod since pods with nodeSelector and nodeAffinity aren't evicted": three of four
// pods cannot leave zoneA), the default plan has no move and best effort plans the fewest
// evictions to the lowest penalty, labelled as such.
func TestBestEffort(t *testing.T) {
	spread := fixture.SpreadOn("zone", 1, map[string]string{"foo": "bar"})
	twoZones := zoneNodes([]string{"n1", "n2"}, []string{"zoneA", "zoneB"}, 110)
	pinned := func(t *testing.T) *policies.Cluster {
		pods := fixture.ReplicaSetPods([]string{"n1"}, []int{2}, spread, fixture.NodeSelector("zone", "zoneA"))
		pods = append(pods, fixture.Pod("pod-2", fixture.On("n1"), fixture.ControlledBy("apps/v1", "ReplicaSet", "rs"), spread, fixture.RequiredIn("foo", "bar")))
		pods = append(pods, fixture.Pod("pod-3", fixture.On("n1"), fixture.ControlledBy("apps/v1", "ReplicaSet", "rs"), spread))
		return cluster(t, twoZones, pods, settings(policies.TopologySpread))
	}
	for _, tc := range []struct {
		name          string
		cluster       func(t *testing.T) *policies.Cluster
		bestEffort    bool
		want          []string
		before, after policies.Penalty
	}{
		{
			name: "[4,0], three pods pinned: no plan without best effort", cluster: pinned,
		},
		{
			name: "[4,0], three pods pinned, best effort: the free pod moves, skew 4 → 2", cluster: pinned, bestEffort: true,
			want: []string{"redis/pod-3"}, before: policies.Penalty{Excess: 3}, after: policies.Penalty{Excess: 1},
		},
		{
			name: "[3,0], every pod pinned (the constraint counts zoneB: nodeAffinityPolicy Ignore), best effort: nothing lowers the penalty, no move", bestEffort: true,
			cluster: func(t *testing.T) *policies.Cluster {
				ignore := fixture.SpreadOn("zone", 1, map[string]string{"foo": "bar"}, fixture.NodeAffinityPolicy(corev1.NodeInclusionPolicyIgnore))
				return cluster(t, twoZones, fixture.ReplicaSetPods([]string{"n1"}, []int{3}, ignore, fixture.NodeSelector("zone", "zoneA")), settings(policies.TopologySpread))
			},
			before: policies.Penalty{Excess: 2}, after: policies.Penalty{Excess: 2},
		},
		{
			name: "[0,1,40] over 3 nodes of 10 pods, best effort: capacity rules compliance out before any search; the search lowers the skew within its budget", bestEffort: true,
			cluster: func(t *testing.T) *policies.Cluster {
				nodes := zoneNodes([]string{"n1", "n2", "n3"}, []string{"zoneA", "zoneB", "zoneC"}, 10)
				return cluster(t, nodes, fixture.ReplicaSetPods([]string{"n2", "n3"}, []int{1, 40}, spread), settings(policies.TopologySpread))
			},
			before: policies.Penalty{Excess: 39},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cluster(t)
			p := Compute(c, Options{BestEffort: tc.bestEffort, MaxStates: 20000})
			if p.Infeasible == "" || p.CompliantAfter {
				t.Fatalf("infeasible %q, compliantAfter %v: want no compliant plan", p.Infeasible, p.CompliantAfter)
			}
			t.Logf("infeasible (%s): %s", p.LimitedBy, p.Infeasible)
			if !tc.bestEffort {
				if p.BestEffort != nil || len(p.Moves) > 0 {
					t.Errorf("best effort off: bestEffort %+v, %d moves", p.BestEffort, len(p.Moves))
				}
				return
			}
			if p.BestEffort == nil {
				t.Fatal("no best-effort plan")
			}
			var got []string
			for _, mv := range p.Moves {
				got = append(got, mv.Pod)
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("moves (-want +got):\n%s", diff)
				}
			}
			if p.BestEffort.Before != tc.before {
				t.Errorf("penalty before %+v, want %+v", p.BestEffort.Before, tc.before)
			}
			if tc.after != (policies.Penalty{}) && p.BestEffort.After != tc.after {
				t.Errorf("penalty after %+v, want %+v", p.BestEffort.After, tc.after)
			}
			if len(p.Moves) > 0 && !p.BestEffort.After.Less(p.BestEffort.Before) {
				t.Errorf("moves that lower nothing: %+v", p.BestEffort)
			}
			if len(p.Moves) != p.Evictions+p.Failovers {
				t.Errorf("%d moves, %d evictions and %d failovers", len(p.Moves), p.Evictions, p.Failovers)
			}
			if strings.HasPrefix(tc.name, "[0,1,40]") && (p.LimitedBy != LimitStatic || !strings.Contains(p.Infeasible, "at most")) {
				t.Errorf("want the static reason, got %s: %s", p.LimitedBy, p.Infeasible)
			}
		})
	}
}

// TestBestEffortCountsFailovers checks that a best-effort plan weighs MasterQuorum's excess with
// the masters as they are, and takes failovers as its steps: on zonal volumes with n2 cordoned,
// zone-a's pods cannot move (their volumes keep them in zone-a, whose other node takes none), so
// no eviction lowers the violations, yet one failover takes zone-a's third master out.
func TestBestEffortCountsFailovers(t *testing.T) {
	c := scenario.ZonalVolumes()
	c.RoleLabels = true
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range snap.Nodes {
		if n.Name == "n2" {
			fixture.Cordoned()(n)
		}
	}
	m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	p := Compute(m.Clusters[0], Options{BestEffort: true})
	if p.BestEffort == nil || p.Evictions != 0 || p.Failovers != 1 || len(p.Moves) != 1 || p.Moves[0].Kind != KindFailover {
		t.Fatalf("best effort %+v, %d evictions, %d failovers, moves %+v; want one failover step and no eviction", p.BestEffort, p.Evictions, p.Failovers, p.Moves)
	}
	if got, want := p.BestEffort.Before.Excess-p.BestEffort.After.Excess, 1; got != want {
		t.Errorf("best effort %+v lowers the excess by %d, want %d (zone-a's MasterQuorum excess)", p.BestEffort, got, want)
	}
	for _, v := range p.After {
		if v.Rule == policies.MasterQuorum {
			t.Errorf("after the plan: %s", v.Message)
		}
	}
}
