package policies_test

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
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

// quorumOf returns, from Evaluate's hard violations, the MasterQuorum domains above their limit
// and the larger of the masters above the limits summed over nodes and over zones.
func quorumOf(vs []policies.Violation) (domains, excess int) {
	var node, zone int
	for _, v := range vs {
		if v.Rule != policies.MasterQuorum {
			continue
		}
		domains++
		if v.TopologyKey == policies.LabelHostname {
			node += v.Count - v.Limit
		} else {
			zone += v.Count - v.Limit
		}
	}
	return domains, max(node, zone)
}

// checkState compares what st answers with what EvaluateWith (with the state's masters) and
// Candidates compute from scratch on the same placement, and checks QuorumFix against every
// assignment of the masters to promotable members.
func checkState(t *testing.T, st *policies.State, what string) bool {
	t.Helper()
	c := st.Cluster()
	p := st.Placement().Clone()
	ms := st.Masters().Clone()
	hard := policies.Hard(c.EvaluateWith(p, ms))
	s := st.Summary()
	ok := true
	fail := func(format string, args ...any) {
		t.Errorf("%s, placement %v, masters %v: %s", what, p, ms, fmt.Sprintf(format, args...))
		ok = false
	}
	if s.Compliant != (len(hard) == 0) {
		fail("Summary().Compliant = %v, Evaluate has %d hard violations: %+v", s.Compliant, len(hard), hard)
	}
	domains, excess := quorumOf(hard)
	if s.Quorum != domains || st.QuorumExcess() != excess {
		fail("Summary().Quorum = %d, QuorumExcess %d; Evaluate has %d MasterQuorum violations, excess %d: %+v", s.Quorum, st.QuorumExcess(), domains, excess, hard)
	}
	if s.PodsCompliant != (len(hard) == domains) {
		fail("Summary().PodsCompliant = %v, Evaluate has %d hard violations, %d of MasterQuorum", s.PodsCompliant, len(hard), domains)
	}
	checkQuorumFix(st, fail)
	for _, leaving := range leavingSets(st) {
		checkHandOff(st, leaving, fail)
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
	if fresh := c.NewStateWith(p, ms); fresh.Key() != st.Key() {
		fail("key %x after the moves, %x when built afresh", st.Key(), fresh.Key())
	}
	return ok
}

// quorumStats counts what checkQuorumFix saw, so that TestStateMatchesEvaluate can tell it
// covered placements with MasterQuorum broken, fixable by failovers or not.
var quorumStats struct{ broken, fixed, unfixable int }

// checkQuorumFix compares st.QuorumFix with every assignment of each shard's masters to its
// promotable members (or a master not placed, which may stay): the fewest changes of master after which MasterQuorum holds (EvaluateWith),
// or none. Applying the fix must satisfy the rule.
func checkQuorumFix(st *policies.State, fail func(string, ...any)) {
	c := st.Cluster()
	p, ms := st.Placement(), st.Masters()
	fix, ok := st.QuorumFix()
	quorumHolds := func(m policies.Masters) bool {
		d, _ := quorumOf(policies.Hard(c.EvaluateWith(p, m)))
		return d == 0
	}
	// Every assignment: per shard, choose as many promotable members as it has masters.
	best := -1
	cur := make(policies.Masters, len(ms))
	var rec func(s int, changes int)
	rec = func(s, changes int) {
		if s == len(c.Shards) {
			if quorumHolds(cur) && (best < 0 || changes < best) {
				best = changes
			}
			return
		}
		var members, cand []int
		k := 0
		for _, j := range c.Shards[s].Members {
			members = append(members, j)
			if ms[j] {
				k++
			}
			if st.Promotable(j) || ms[j] && p[j] < 0 {
				cand = append(cand, j)
			}
		}
		if k == 0 {
			rec(s+1, changes)
			return
		}
		for mask := 0; mask < 1<<len(cand); mask++ {
			if bits.OnesCount(uint(mask)) != k {
				continue
			}
			moved := 0
			for _, j := range members {
				cur[j] = false
			}
			for b, j := range cand {
				if mask&(1<<b) != 0 {
					cur[j] = true
					if !ms[j] {
						moved++
					}
				}
			}
			rec(s+1, changes+moved)
		}
		for _, j := range members {
			cur[j] = false
		}
	}
	if !st.Quorum().Applies {
		if fix != nil || !ok {
			fail("QuorumFix = %v, %v where MasterQuorum does not apply", fix, ok)
		}
		return
	}
	rec(0, 0)
	if st.Summary().Quorum > 0 {
		quorumStats.broken++
		if ok && len(fix) > 0 {
			quorumStats.fixed++
		} else if !ok {
			quorumStats.unfixable++
		}
	}
	switch {
	case ok != (best >= 0):
		fail("QuorumFix ok = %v (%v), every assignment: fewest changes %d", ok, fix, best)
	case ok && len(fix) != best:
		fail("QuorumFix = %v (%d failovers), every assignment: fewest %d", fix, len(fix), best)
	case ok:
		after := ms.Clone()
		for _, f := range fix {
			if !after[f.From] || after[f.To] || c.Members[f.From].ShardIndex != c.Members[f.To].ShardIndex {
				fail("QuorumFix %v: failover %+v is not from a master to a member of its shard", fix, f)
				return
			}
			after[f.From], after[f.To] = false, true
		}
		if !quorumHolds(after) {
			fail("QuorumFix %v leaves MasterQuorum broken: %+v", fix, policies.Hard(c.EvaluateWith(p, after)))
		}
	}
}

// leavingSets returns the sets of nodes checkHandOff tries on st: the node of the first placed
// master, and every node of its zone.
func leavingSets(st *policies.State) []policies.Leaving {
	m := st.Cluster().Model()
	for j, is := range st.Masters() {
		n := st.Node(j)
		if !is || n < 0 {
			continue
		}
		node := make(policies.Leaving, len(m.Nodes))
		node[n] = true
		zone := make(policies.Leaving, len(m.Nodes))
		for _, o := range m.Nodes {
			zone[o.Index] = o.Zone == m.Nodes[n].Zone
		}
		return []policies.Leaving{node, zone}
	}
	return nil
}

// handOffStats counts what checkHandOff saw, so that TestStateMatchesEvaluate can tell it covered
// hand-offs with failovers, with masters stuck and with MasterQuorum left broken.
var handOffStats struct{ failovers, stuck, excess int }

// checkHandOff compares st.HandOff(leaving) with every assignment of each shard's masters to its
// members that may be master on a node that stays (promotable, or a master not placed), or to a
// master on a leaving node that stays there (stuck): the fewest stuck masters, then the fewest
// masters above Quorum's limits over the nodes that stay, then the fewest failovers. Applying the
// failovers must leave exactly the stuck masters on leaving nodes and the excess reported.
func checkHandOff(st *policies.State, leaving policies.Leaving, fail func(string, ...any)) {
	c := st.Cluster()
	p, ms := st.Placement(), st.Masters()
	h := st.HandOff(leaving)
	q := h.Quorum
	if !q.Applies {
		if h.Failovers != nil || h.Stuck != nil || h.QuorumExcess != 0 {
			fail("HandOff = %+v where MasterQuorum does not apply", h)
		}
		return
	}
	gone := func(j int) bool { return p[j] >= 0 && leaving[p[j]] }
	excess := func(masters policies.Masters) int {
		nodes, zones := map[int]int{}, map[string]int{}
		for j, is := range masters {
			if is && p[j] >= 0 && !gone(j) {
				nodes[p[j]]++
				if z := c.Model().Nodes[p[j]].Zone; q.ZoneLimit > 0 && z != "" {
					zones[z]++
				}
			}
		}
		e := 0
		for _, k := range nodes {
			e += max(k-q.NodeLimit, 0)
		}
		for _, k := range zones {
			e += max(k-q.ZoneLimit, 0)
		}
		return e
	}
	type cost struct{ stuck, excess, failovers int }
	less := func(a, b cost) bool {
		if a.stuck != b.stuck {
			return a.stuck < b.stuck
		}
		if a.excess != b.excess {
			return a.excess < b.excess
		}
		return a.failovers < b.failovers
	}
	best := cost{-1, 0, 0}
	cur := make(policies.Masters, len(ms))
	var rec func(s, stuck, moved int)
	rec = func(s, stuck, moved int) {
		if s == len(c.Shards) {
			if k := (cost{stuck, excess(cur), moved}); best.stuck < 0 || less(k, best) {
				best = k
			}
			return
		}
		var members, cand []int
		k := 0
		for _, j := range c.Shards[s].Members {
			members = append(members, j)
			if ms[j] {
				k++
			}
			if ms[j] && p[j] < 0 || ms[j] && gone(j) || st.Promotable(j) && !gone(j) {
				cand = append(cand, j)
			}
		}
		if k == 0 {
			rec(s+1, stuck, moved)
			return
		}
		for mask := 0; mask < 1<<len(cand); mask++ {
			if bits.OnesCount(uint(mask)) != k {
				continue
			}
			st, mv := 0, 0
			for _, j := range members {
				cur[j] = false
			}
			for b, j := range cand {
				if mask&(1<<b) != 0 {
					cur[j] = true
					if gone(j) {
						st++
					} else if !ms[j] {
						mv++
					}
				}
			}
			rec(s+1, stuck+st, moved+mv)
		}
		for _, j := range members {
			cur[j] = false
		}
	}
	rec(0, 0, 0)
	got := cost{len(h.Stuck), h.QuorumExcess, len(h.Failovers)}
	if got != best {
		fail("HandOff(%v) = %+v: (stuck, excess, failovers) %+v, every assignment: fewest %+v", leaving, h, got, best)
		return
	}
	after := ms.Clone()
	for _, f := range h.Failovers {
		if !after[f.From] || after[f.To] || c.Members[f.From].ShardIndex != c.Members[f.To].ShardIndex || gone(f.To) {
			fail("HandOff %+v: failover %+v is not from a master to a member of its shard on a node that stays", h, f)
			return
		}
		after[f.From], after[f.To] = false, true
	}
	var stuck []int
	for j, is := range after {
		if is && gone(j) {
			stuck = append(stuck, j)
		}
	}
	if !slices.Equal(stuck, h.Stuck) || excess(after) != h.QuorumExcess {
		fail("HandOff %+v: after its failovers the masters on leaving nodes are %v and the excess %d", h, stuck, excess(after))
	}
	if len(h.Failovers) > 0 {
		handOffStats.failovers++
	}
	if len(h.Stuck) > 0 {
		handOffStats.stuck++
	}
	if h.QuorumExcess > 0 {
		handOffStats.excess++
	}
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
		if st.IsMaster(i) && r.IntN(3) == 0 {
			// A failover to another member of its shard.
			sh := c.Shards[c.Members[i].ShardIndex].Members
			if to := sh[r.IntN(len(sh))]; !st.IsMaster(to) {
				st.Failover(i, to)
				if !checkState(t, st, fmt.Sprintf("%s step %d (failover %d → %d)", what, k, i, to)) {
					return
				}
				continue
			}
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
		for _, opts := range []policies.Options{{RoleLabel: scenario.RoleLabel}, {RelaxedLimits: true, RoleLabel: scenario.RoleLabel}, {}, {RoleLabel: scenario.RoleLabel, Rules: randomRuleSettings(r)}} {
			m, err := policies.Build(snap, opts)
			if err != nil {
				t.Fatal(err)
			}
			walk(t, r, m.Clusters[0], 30, fmt.Sprintf("redis case %d %+v", it, sc))
		}
	}
	t.Logf("MasterQuorum broken in %d states: %d fixed by failovers, %d not fixable by failovers alone", quorumStats.broken, quorumStats.fixed, quorumStats.unfixable)
	if quorumStats.fixed < 100 || quorumStats.unfixable < 20 {
		t.Errorf("the walks covered too few MasterQuorum cases: %+v", quorumStats)
	}
	t.Logf("hand-offs: %d with failovers, %d with masters stuck, %d with MasterQuorum broken over the nodes that stay", handOffStats.failovers, handOffStats.stuck, handOffStats.excess)
	if handOffStats.failovers < 100 || handOffStats.stuck < 20 || handOffStats.excess < 20 {
		t.Errorf("the walks covered too few hand-offs: %+v", handOffStats)
	}
}

// randomRuleSettings returns rule settings that disable about a quarter of the hard rules and
// judge another quarter as soft (the State must then leave them out of its verdict).
func randomRuleSettings(r *rand.Rand) map[policies.Rule]policies.RuleSetting {
	out := map[policies.Rule]policies.RuleSetting{}
	for _, info := range policies.Rules() {
		if info.Soft {
			continue
		}
		switch r.IntN(4) {
		case 0:
			out[info.Name] = policies.RuleSetting{}
		case 1:
			out[info.Name] = policies.RuleSetting{Enabled: true, Soft: true}
		}
	}
	return out
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
