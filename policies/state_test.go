package policies_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/internal/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/internal/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// excessOf returns the sums of Excess computed from Evaluate's hard violations.
func excessOf(vs []policies.Violation) policies.Excess {
	var e policies.Excess
	for _, v := range vs {
		switch v.Rule {
		case policies.MaxPodsPerNode:
			e.Node += v.Count - v.Limit
		case policies.MaxPodsPerZone:
			e.Zone += v.Count - v.Limit
		case policies.ShardSeparation:
			e.Shard += v.Count - v.Limit
		case policies.AllowedZones:
			e.Outside += v.Count
		case policies.ZoneEvenSplit:
			e.Split += (v.Count - v.Limit + 1) / 2
		}
	}
	return e
}

// checkState compares what st answers with what Evaluate and Candidates compute from scratch on
// the same placement.
func checkState(t *testing.T, st *policies.State, what string) bool {
	t.Helper()
	c := st.Cluster()
	p := st.Placement().Clone()
	hard := policies.Hard(c.Evaluate(p))
	s := st.Summary()
	ok := true
	fail := func(format string, args ...any) {
		t.Errorf("%s, placement %v: %s", what, p, fmt.Sprintf(format, args...))
		ok = false
	}
	if s.Compliant != (len(hard) == 0) {
		fail("Summary().Compliant = %v, Evaluate has %d hard violations: %+v", s.Compliant, len(hard), hard)
	}
	if diff := cmp.Diff(excessOf(hard), st.Excess()); diff != "" {
		fail("Excess (-evaluate +state):\n%s", diff)
	}
	named := map[string]bool{}
	for _, v := range hard {
		for _, pod := range v.Pods {
			named[pod] = true
		}
	}
	all := make([]int, len(c.Model().Nodes))
	for n := range all {
		all[n] = n
	}
	for i, mem := range c.Members {
		if p[i] >= 0 && named[mem.Key()] && !st.Involved(i) {
			fail("Involved(%s) = false, Evaluate names it", mem.Key())
		}
		if mem.Terminating {
			continue
		}
		want := c.Candidates(p, i)
		got := st.CandidatesIn(i, all, nil)
		if !slices.Equal(want, got) {
			fail("candidates of %s: Candidates %v, State %v", mem.Key(), want, got)
		}
	}
	if !slices.Equal(st.Placement(), p) {
		fail("CandidatesIn changed the placement to %v", st.Placement())
	}
	if fresh := c.NewState(p); fresh.Key() != st.Key() {
		fail("key %x after the moves, %x when built afresh", st.Key(), fresh.Key())
	}
	return ok
}

// walk moves random members of c to random nodes (or unplaces them) and checks the state after
// every move.
func walk(t *testing.T, r *rand.Rand, c *policies.Cluster, steps int, what string) {
	t.Helper()
	st := c.NewState(c.Current())
	if !checkState(t, st, what+" start") {
		return
	}
	for k := 0; k < steps; k++ {
		i := r.IntN(len(c.Members))
		if c.Members[i].Terminating {
			continue
		}
		n := r.IntN(len(c.Model().Nodes)+1) - 1
		if r.IntN(4) == 0 {
			n = c.Members[i].Node // back home: its own spec again
		}
		st.Set(i, n)
		if !checkState(t, st, fmt.Sprintf("%s step %d (member %d → %d)", what, k, i, n)) {
			return
		}
	}
}

// TestStateMatchesEvaluate checks the incremental State against Evaluate and Candidates on random
// walks: the filter's random snapshots (every plugin, bare pods), and Redis clusters built from
// StatefulSets (templates that differ from the running pods, cordoned and tainted nodes, zones
// without nodes, Pending pods).
func TestStateMatchesEvaluate(t *testing.T) {
	r := rand.New(rand.NewPCG(20261123, 7))
	for it := 0; it < 300; it++ {
		snap, _, desc := randomCase(r)
		m, err := policies.Build(snap, policies.Options{})
		if err != nil {
			t.Fatal(err)
		}
		walk(t, r, clusterNamed(m, "c1"), 20, fmt.Sprintf("random case %d\n%s", it, desc))
	}
	for it := 0; it < 150; it++ {
		sc, tweak := randomRedis(r)
		snap := sc.MustSnapshot()
		tweak(snap)
		for _, opts := range []policies.Options{{}, {RelaxedLimits: true}} {
			m, err := policies.Build(snap, opts)
			if err != nil {
				t.Fatal(err)
			}
			walk(t, r, m.Clusters[0], 30, fmt.Sprintf("redis case %d %+v", it, sc))
		}
	}
}

// randomRedis returns a random small Redis cluster: 1–4 zones (sometimes one more node without a zone
// a label), drifted and Pending pods, running pods with an older maxSkew, and a tweak that cordons
// or taints nodes that may hold pods, and sometimes drops the running pods' anti-affinity (the
// templates keep it).
func randomRedis(r *rand.Rand) (scenario.Scenario, func(*policies.Snapshot)) {
	zones := 1 + r.IntN(4)
	var zs []scenario.Zone
	node := 0
	for z := 0; z < zones; z++ {
		var nodes []string
		for k := 0; k < 1+r.IntN(3); k++ {
			node++
			nodes = append(nodes, fmt.Sprintf("n%d", node))
		}
		zs = append(zs, scenario.Zone{Name: fmt.Sprintf("zone-%c", 'a'+z), Nodes: nodes})
	}
	if r.IntN(6) == 0 {
		zs = append(zs, scenario.Zone{Name: "", Nodes: []string{"nz"}})
	}
	sc := scenario.Scenario{Zones: zs, Shards: 2 + r.IntN(3), PodsPerShard: 2, RoleLabels: true}
	if zones >= 3 && r.IntN(3) == 0 {
		sc.PodsPerShard = 3
	}
	if r.IntN(4) == 0 {
		sc.RunningMaxSkew = &[2]int32{int32(1 + r.IntN(3)), int32(1 + r.IntN(3))}
	}
	names := sc.NodeNames()
	sc.Placement = map[string]string{}
	for s := 0; s < sc.Shards; s++ {
		for o := 0; o < sc.PodsPerShard; o++ {
			if r.IntN(8) > 0 {
				sc.Placement[sc.PodName(s, o)] = names[min(r.IntN(len(names)), r.IntN(len(names)))]
			}
		}
	}
	// Running pods written by an older operator: no anti-affinity (the templates have it).
	oldPods := r.IntN(5) == 0
	var cordon, taint []string
	for _, n := range names {
		switch r.IntN(6) {
		case 0:
			cordon = append(cordon, n)
		case 1:
			taint = append(taint, n)
		}
	}
	return sc, func(snap *policies.Snapshot) {
		if oldPods {
			for _, p := range snap.Pods {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: p.Spec.Affinity.NodeAffinity}
			}
		}
		for _, n := range snap.Nodes {
			if slices.Contains(cordon, n.Name) {
				fixture.Cordoned()(n)
			}
			if slices.Contains(taint, n.Name) {
				fixture.Tainted("dedicated", "batch", corev1.TaintEffectNoSchedule)(n)
			}
		}
	}
}
