package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// bruteForce is an exhaustive search for the plan with the fewest evictions, then the fewest
// failovers, after which a cluster complies, written without any of the planner's code or
// shortcuts (no policies.State, no node classes, no lower bound, no move ordering, no flow):
// breadth-first over every placement and every set of masters, judged by
// policies.Cluster.CompliantWith (the rules) and policies.Cluster.Candidates (the filter, checked
// against kube-scheduler's plugins). A step evicts any pod of a StatefulSet; a master first hands
// its slots to another member of its shard that may take them (takers); the scheduler then
// places each pod that is not placed, in any order, on any node the filter allows, until it can
// place none. By default the evicted pod must then be placed; with pending, it may also be the
// only pod left unplaced (it waits Pending, at most one at a time). After the evictions, any
// failovers: for each shard, any takers for its masters (each changed master one failover).
// interleaved (bruteForce.general) allows the failovers between the evictions as well.
type bruteForce struct {
	c       *policies.Cluster
	pending bool
}

// bfState is a placement and its masters.
type bfState struct {
	p  policies.Placement
	ms policies.Masters
}

func (b bruteForce) key(s bfState) string {
	buf := make([]byte, 2*len(s.p))
	for i, n := range s.p {
		buf[i] = byte(n + 1)
		if s.ms[i] {
			buf[len(s.p)+i] = 1
		}
	}
	return string(buf)
}

// takers returns the members of i's shard that may take master i's slots under s: placed, not
// masters, not on a node being emptied (beingEmptied: the drain evicts them next), and of the
// shard in Redis (their role known, or re-created by the plan, so they rejoin as replicas), not a
// master without slots where they run.
func (b bruteForce) takers(s bfState, i int) []int {
	var out []int
	for _, j := range b.c.Shards[b.c.Members[i].ShardIndex].Members {
		mem := b.c.Members[j]
		if j == i || s.ms[j] || s.p[j] < 0 || beingEmptied(b.c.Model().Nodes[s.p[j]].Obj) {
			continue
		}
		if s.p[j] != mem.Node || mem.Role == policies.RoleReplica || mem.Role == policies.RoleMaster && !mem.EmptyMaster {
			out = append(out, j)
		}
	}
	return out
}

// beingEmptied reports whether node is being emptied as SPEC.md defines it ("Disruptions the
// rebalancer does not make"): cordoned, or tainted with one of the policy's default
// guard.drainTaints (node.kubernetes.io/unschedulable, ToBeDeletedByClusterAutoscaler,
// karpenter.sh/disrupted). Nodes being emptied are never failover targets.
func beingEmptied(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return true
	}
	for _, t := range node.Spec.Taints {
		if slices.Contains(v1alpha1.DefaultGuardDrainTaints, t.Key) {
			return true
		}
	}
	return false
}

// settle adds to out every placement the scheduler may reach from p.
func (b bruteForce) settle(p policies.Placement, seen map[string]bool, out map[string]policies.Placement) {
	k := b.key(bfState{p, make(policies.Masters, len(p))})
	if seen[k] {
		return
	}
	seen[k] = true
	placedAny := false
	for i, n := range p {
		if n >= 0 || b.c.Members[i].Terminating {
			continue
		}
		for _, node := range b.c.Candidates(p, i) {
			next := p.Clone()
			next[i] = node
			placedAny = true
			b.settle(next, seen, out)
		}
	}
	if !placedAny {
		out[k] = p
	}
}

// unplaced counts the members neither placed nor terminating.
func (b bruteForce) unplaced(p policies.Placement) int {
	n := 0
	for i, node := range p {
		if node < 0 && !b.c.Members[i].Terminating {
			n++
		}
	}
	return n
}

// evictions returns the states one eviction leads to from s.
func (b bruteForce) evictions(s bfState) []bfState {
	var out []bfState
	for i, n := range s.p {
		if n < 0 || b.c.Members[i].NotEvictable() != "" {
			continue
		}
		tos := []int{-1}
		if s.ms[i] {
			tos = b.takers(s, i)
		}
		ev := s.p.Clone()
		ev[i] = -1
		after := map[string]policies.Placement{}
		b.settle(ev, map[string]bool{}, after)
		for _, q := range after {
			if q[i] < 0 && !(b.pending && b.unplaced(q) == 1) {
				continue
			}
			for _, to := range tos {
				ms := s.ms
				if to >= 0 {
					ms = s.ms.Clone()
					ms[i], ms[to] = false, true
				}
				out = append(out, bfState{q, ms})
			}
		}
	}
	return out
}

// failovers returns the fewest failovers after which s complies (any takers for each shard's
// masters; a master not placed may stay), -1 when none does.
func (b bruteForce) failovers(s bfState) int {
	// Only a placement whose rules about pods hold can comply.
	for _, v := range policies.Hard(b.c.EvaluateWith(s.p, s.ms)) {
		if v.Rule != policies.MasterQuorum {
			return -1
		}
	}
	best := -1
	ms := s.ms.Clone()
	var rec func(shard, changes int)
	rec = func(shard, changes int) {
		if best >= 0 && changes >= best {
			return
		}
		if shard == len(b.c.Shards) {
			if b.c.CompliantWith(s.p, ms) {
				best = changes
			}
			return
		}
		var masters []int
		for _, j := range b.c.Shards[shard].Members {
			if s.ms[j] {
				masters = append(masters, j)
			}
		}
		if len(masters) != 1 {
			rec(shard+1, changes) // the scenarios have one master per shard, or none
			return
		}
		m := masters[0]
		rec(shard+1, changes) // keep it
		for _, t := range b.takers(s, m) {
			ms[m], ms[t] = false, true
			rec(shard+1, changes+1)
			ms[m], ms[t] = true, false
		}
	}
	rec(0, 0)
	return best
}

// start returns the states the scheduler may reach before any eviction.
func (b bruteForce) start() map[string]bfState {
	leaves := map[string]policies.Placement{}
	b.settle(b.c.Current(), map[string]bool{}, leaves)
	out := map[string]bfState{}
	ms := b.c.CurrentMasters()
	for _, p := range leaves {
		s := bfState{p, ms}
		out[b.key(s)] = s
	}
	return out
}

// minMoves returns the fewest evictions to compliance and, for that many, the fewest failovers
// after them; -1, -1 when none within limit.
func (b bruteForce) minMoves(limit int) (int, int) {
	return b.minMovesFrom(b.start(), limit)
}

// minMovesFrom is minMoves from any state of frontier.
func (b bruteForce) minMovesFrom(frontier map[string]bfState, limit int) (int, int) {
	seen := map[string]bool{}
	for depth := 0; depth <= limit; depth++ {
		next := map[string]bfState{}
		best := -1
		for k, s := range frontier {
			if seen[k] {
				continue
			}
			seen[k] = true
			if f := b.failovers(s); f >= 0 && (best < 0 || f < best) {
				best = f
			}
			if depth == limit {
				continue
			}
			for _, q := range b.evictions(s) {
				next[b.key(q)] = q
			}
		}
		if best >= 0 {
			return depth, best
		}
		frontier = next
	}
	return -1, -1
}

// general returns the fewest evictions, then the fewest failovers, to compliance when failovers
// may come anywhere (before, between and after the evictions), -1, -1 when none within limit
// evictions: a Dijkstra search on (evictions, failovers) over every state, with a failover (any
// master to any of its takers) as a step of its own. It checks that planning the failovers after
// the evictions loses nothing.
func (b bruteForce) general(limit int) (int, int) {
	type entry struct {
		s    bfState
		e, f int
	}
	better := func(a, c entry) bool { return a.e < c.e || a.e == c.e && a.f < c.f }
	dist := map[string]entry{}
	var queue []entry
	push := func(x entry) {
		k := b.key(x.s)
		if d, ok := dist[k]; ok && !better(x, d) {
			return
		}
		dist[k] = x
		queue = append(queue, x)
	}
	for _, s := range b.start() {
		push(entry{s, 0, 0})
	}
	done := map[string]bool{}
	for len(queue) > 0 {
		bi := 0
		for i := range queue {
			if better(queue[i], queue[bi]) {
				bi = i
			}
		}
		x := queue[bi]
		queue = slices.Delete(queue, bi, bi+1)
		k := b.key(x.s)
		if done[k] || better(dist[k], x) {
			continue
		}
		done[k] = true
		if b.c.CompliantWith(x.s.p, x.s.ms) {
			return x.e, x.f
		}
		for i, is := range x.s.ms {
			if !is {
				continue
			}
			for _, t := range b.takers(x.s, i) {
				ms := x.s.ms.Clone()
				ms[i], ms[t] = false, true
				push(entry{bfState{x.s.p, ms}, x.e, x.f + 1})
			}
		}
		if x.e < limit {
			for _, q := range b.evictions(x.s) {
				push(entry{q, x.e + 1, x.f})
			}
		}
	}
	return -1, -1
}

// replay checks a plan with the rules, the filter and the brute force alone: each eviction's pod
// is placed (a master hands its slots to the member the plan names, which may take them); its
// candidates are the nodes the filter allows, and a candidate is on track exactly when the brute
// force reaches compliance from it in the evictions the plan has left; each eviction's pod and the
// pods it places go where the plan says and pass the filter there; the scheduler can place
// nothing more after a move (the plan does not leave a placeable pod Pending); at most one pod is
// unplaced after a move with Pending steps; each failover step moves a master to a member of its
// shard that may take it; and the end complies.
func replay(c *policies.Cluster, p Plan, pending bool) error {
	nodeIndex := func(name string) int { return c.Model().NodeIndex(name) }
	member := func(key string) int {
		for i, m := range c.Members {
			if m.Key() == key {
				return i
			}
		}
		return -1
	}
	b := bruteForce{c: c, pending: pending}
	names := func(idx []int) []string {
		out := []string{}
		for _, n := range idx {
			out = append(out, c.Model().Nodes[n].Name)
		}
		return out
	}
	// The scheduler's own placements before the first move: the plan starts from one of them.
	var errs []string
	for _, start := range b.start() {
		cur, ms := start.p.Clone(), start.ms.Clone()
		err := func() error {
			evictions := 0
			for k, mv := range p.Moves {
				i := member(mv.Pod)
				if cur[i] != nodeIndex(mv.Node) {
					return fmt.Errorf("move %d: %s is on %v, the plan says %s", k+1, mv.Pod, cur[i], mv.Node)
				}
				if (mv.To != "") != ms[i] || mv.Failover != ms[i] {
					return fmt.Errorf("move %d: %s is master %v, the plan names failover %v to %q", k+1, mv.Pod, ms[i], mv.Failover, mv.To)
				}
				if ms[i] {
					to := member(mv.To)
					if mv.From != mv.Pod || !slices.Contains(b.takers(bfState{cur, ms}, i), to) {
						return fmt.Errorf("move %d: failover from %s to %s, which cannot take its slots (takers %v)", k+1, mv.From, mv.To, b.takers(bfState{cur, ms}, i))
					}
					ms[i], ms[to] = false, true
				}
				if mv.Kind == KindFailover {
					if k < p.Evictions {
						return fmt.Errorf("move %d: a failover before the last eviction", k+1)
					}
					continue
				}
				if mv.Kind != KindEvict || k >= p.Evictions {
					return fmt.Errorf("move %d: kind %q, %d evictions planned", k+1, mv.Kind, p.Evictions)
				}
				evictions++
				cur[i] = -1
				cands := c.Candidates(cur, i)
				// A pod whose claims may be released releases them exactly when the node it ends on
				// is one its volumes do not allow; keeping them, its candidates are the nodes they
				// allow.
				if end := nodeIndex(mv.Expected); !mv.WaitsPending {
					release := c.ClaimsReleasable(i) && !c.VolumesAllow(i, end)
					if got := len(mv.ReleaseClaims) > 0; got != release {
						return fmt.Errorf("move %d: releases claims %v, want release %v (expected node %s)", k+1, mv.ReleaseClaims, release, mv.Expected)
					}
					if release && !slices.Equal(mv.ReleaseClaims, c.ReleasableClaims(i)) {
						return fmt.Errorf("move %d: releases %v, the pod's releasable claims are %v", k+1, mv.ReleaseClaims, c.ReleasableClaims(i))
					}
				}
				if c.ClaimsReleasable(i) && len(mv.ReleaseClaims) == 0 {
					cands = slices.DeleteFunc(cands, func(n int) bool { return !c.VolumesAllow(i, n) })
				}
				if got, want := append([]string{}, mv.CandidateNodes...), names(cands); !slices.Equal(got, want) {
					return fmt.Errorf("move %d: candidates %v, the filter allows %v", k+1, got, want)
				}
				for x, n := range cands {
					q := cur.Clone()
					q[i] = n
					leaves := map[string]policies.Placement{}
					b.settle(q, map[string]bool{}, leaves)
					front := map[string]bfState{}
					for _, l := range leaves {
						s := bfState{l, ms.Clone()}
						front[b.key(s)] = s
					}
					want := false
					if d, _ := b.minMovesFrom(front, p.Evictions-k-1); d >= 0 {
						want = true
					}
					if mv.Candidates[x].OnTrack != want {
						return fmt.Errorf("move %d: candidate %s on track %v, brute force %v", k+1, mv.Candidates[x].Node, mv.Candidates[x].OnTrack, want)
					}
				}
				places := mv.Places
				if !mv.WaitsPending {
					places = append([]Placed{{Pod: mv.Pod, Node: mv.Expected}}, places...)
				} else if !pending {
					return fmt.Errorf("move %d waits Pending in the default model", k+1)
				}
				// The placements may come in any order: place whichever fits, until none is left.
				left := slices.Clone(places)
				for len(left) > 0 {
					progressed := false
					for x, pl := range left {
						j, n := member(pl.Pod), nodeIndex(pl.Node)
						if cur[j] < 0 && slices.Contains(c.Candidates(cur, j), n) {
							cur[j] = n
							left = slices.Delete(left, x, x+1)
							progressed = true
							break
						}
					}
					if !progressed {
						return fmt.Errorf("move %d: %v do not pass the filter", k+1, left)
					}
				}
				for j, n := range cur {
					if n < 0 && !c.Members[j].Terminating && len(c.Candidates(cur, j)) > 0 {
						return fmt.Errorf("move %d leaves %s Pending though it fits %v", k+1, c.Members[j].Key(), c.Candidates(cur, j))
					}
				}
				if mv.WaitsPending && b.unplaced(cur) != 1 {
					return fmt.Errorf("move %d leaves %d pods unplaced", k+1, b.unplaced(cur))
				}
			}
			if evictions != p.Evictions || len(p.Moves)-evictions != p.Failovers {
				return fmt.Errorf("%d moves, %d of them evictions; the plan counts %d evictions and %d failovers", len(p.Moves), evictions, p.Evictions, p.Failovers)
			}
			if !c.CompliantWith(cur, ms) {
				return fmt.Errorf("the plan ends in %v with masters %v, which breaks %v", cur, ms, policies.Hard(c.EvaluateWith(cur, ms)))
			}
			return nil
		}()
		if err == nil {
			return nil
		}
		errs = append(errs, err.Error())
	}
	return fmt.Errorf("no start of the plan replays: %s", strings.Join(errs, "; "))
}

// checkAgainstBruteForce compares the planner in both models with the brute force on c,
// plans of at most limit evictions. It returns the brute force's answers (default, pending):
// evictions, and failovers in the default model (-1 without a plan).
func checkAgainstBruteForce(t *testing.T, c *policies.Cluster, limit int, what string) (int, int, int) {
	t.Helper()
	var wants [2]int
	wantFailovers := -1
	for k, pending := range []bool{false, true} {
		want, wantF := bruteForce{c: c, pending: pending}.minMoves(limit)
		wants[k] = want
		if !pending {
			wantFailovers = wantF
		}
		p := Compute(c, Options{MaxMoves: limit, AllowPendingSteps: pending})
		got, gotF := p.Evictions, p.Failovers
		if !p.CompliantAfter {
			got, gotF = -1, -1
		}
		mode := "default"
		if pending {
			mode = "pending steps"
		}
		if got != want || gotF != wantF {
			t.Errorf("%s (%s): planner %d evictions and %d failovers (infeasible %q), brute force %d and %d", what, mode, got, gotF, p.Infeasible, want, wantF)
			continue
		}
		if got >= 0 && (!p.Minimal || !p.FailoversMinimal) {
			t.Errorf("%s (%s): plan of %d evictions and %d failovers not marked minimal (%v, failovers %v)", what, mode, got, gotF, p.Minimal, p.FailoversMinimal)
		}
		if got > 0 || gotF > 0 {
			if err := replay(c, p, pending); err != nil {
				t.Errorf("%s (%s): %v", what, mode, err)
			}
		}
		if got < 0 && (p.Infeasible == "" || p.LimitedBy == "") {
			t.Errorf("%s (%s): no plan, but no reason (%q, limitedBy %q)", what, mode, p.Infeasible, p.LimitedBy)
		}
		// A search that found nothing names its model.
		model := "each evicted pod must be placed at once"
		if pending {
			model = "an evicted pod may wait Pending, one at a time"
		}
		if got < 0 && (p.LimitedBy == LimitMaxMoves || p.LimitedBy == LimitPendingSteps) && !strings.HasPrefix(p.Infeasible, "at least") && !strings.Contains(p.Infeasible, "("+model+"; searched ") {
			t.Errorf("%s (%s): %q does not name the model searched", what, mode, p.Infeasible)
		}
		if !pending && got < 0 {
			// The default model's answer names the plan with Pending steps exactly when one exists.
			alt := -1
			if p.WithPendingSteps != nil {
				alt = p.WithPendingSteps.Moves
			}
			if pw, _ := (bruteForce{c: c, pending: true}).minMoves(limit); alt != pw {
				t.Errorf("%s: no plan; with Pending steps the planner names %d moves, brute force %d (%q)", what, alt, pw, p.Infeasible)
			} else if pw > 0 && (p.LimitedBy != LimitPendingSteps || !strings.Contains(p.Infeasible, "--allow-pending-steps")) {
				t.Errorf("%s: a plan with Pending steps exists, but the answer says %q (limitedBy %q)", what, p.Infeasible, p.LimitedBy)
			}
		}
	}
	return wants[0], wants[1], wantFailovers
}

// TestPlanIsMinimal checks the planner in both models against the brute-force search on every
// small case of the suite; the cases on zonal volumes also with their claims releasable (a
// master of the README's drift then moves after a failover, its claim released).
func TestPlanIsMinimal(t *testing.T) {
	for _, c := range scenario.Suite() {
		if c.N() > 10 {
			continue
		}
		releases := []bool{false}
		if c.Claims != nil {
			releases = append(releases, true)
		}
		for _, release := range releases {
			name := c.Name
			if release {
				name += "/release-replica-claims"
			}
			t.Run(name, func(t *testing.T) {
				snap, err := c.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel, ClusterLabel: c.ClusterLabel(), ReleaseReplicaClaims: release})
				if err != nil {
					t.Fatal(err)
				}
				if c.Layout != scenario.LayoutSeed {
					m.Clusters[0].ApplyRedis(c.RedisNodes()) // shards and roles from Redis
				}
				e, _, f := checkAgainstBruteForce(t, m.Clusters[0], 3, name)
				t.Logf("%s: %d evictions, %d failover steps", name, e, f)
				if c.N() <= 6 {
					checkGeneral(t, m.Clusters[0], 3, name)
				}
			})
		}
	}
}

// checkGeneral compares the planner's fewest evictions and failovers (default model) with the
// general search, where failovers may come anywhere: planning them after the evictions loses
// nothing.
func checkGeneral(t *testing.T, c *policies.Cluster, limit int, what string) {
	t.Helper()
	wantE, wantF := bruteForce{c: c}.general(limit)
	p := Compute(c, Options{MaxMoves: limit})
	gotE, gotF := p.Evictions, p.Failovers
	if !p.CompliantAfter {
		gotE, gotF = -1, -1
	}
	if gotE != wantE || gotF != wantF {
		t.Errorf("%s: planner %d evictions and %d failovers, the general search (failovers anywhere) %d and %d", what, gotE, gotF, wantE, wantF)
	}
}

// randomPlacement is one random small placement of TestPlanIsMinimalRandom.
type randomPlacement struct {
	sc            scenario.Scenario
	cordon, taint []string // nodes cordoned, or tainted NoSchedule (not tolerated: taintOf)
	holding       bool     // a cordoned or tainted node runs a pod of the cluster
	pendingPods   int      // pods left Pending
	together      bool     // built with shards' pods together in one zone (Pending-step cases)
	// masters: built with each shard's pods in two zones and the masters in zone-a where they
	// can be (MasterQuorum cases); swapRoles lists the shards whose pod -1 is the master.
	masters   bool
	swapRoles []int
	// zonal: built with every pod's data on a PersistentVolume pinned to its zone (a
	// volumeClaimTemplate), most masters in zone-a and their replicas elsewhere; release: with
	// claims releasable (Options.ReleaseReplicaClaims), so that a master may move only after a
	// failover, with its claim released. releasedMasters counts the default plan's evictions that
	// fail a master over and release its claim.
	zonal, release  bool
	releasedMasters int
	relaxedSkew     bool // running pods carry an older, larger maxSkew
	barred          bool // a replica on a node being emptied while MasterQuorum is broken (barred)
	limit           int  // plans of at most limit moves
	description     string
	defaultMoves    int  // the brute force's answers, filled in by the test: evictions,
	withPendingMov  int  // evictions with Pending steps,
	failovers       int  // and failover steps in the default model
	general         bool // also checked against the general search (failovers anywhere)
}

// randomPlacements returns n random small placements: N 4–10 (2–5 shards of 2, or 3 of 3), 1–4
// zones of 1–3 nodes, pods placed with a bias towards the first nodes (drift), some Pending,
// cordoned or tainted nodes (often holding pods), running pods with an older maxSkew, and a
// share built as the Pending-step case (each shard's pods together in one zone, the
// zones full).
func randomPlacements(r *rand.Rand, n int) []*randomPlacement {
	var out []*randomPlacement
	for k := 0; k < n; k++ {
		rp := &randomPlacement{limit: 3}
		zones := 1 + r.IntN(4)
		perZone := 1 + r.IntN(3)
		if zones == 1 {
			perZone = 4 + r.IntN(3)
		}
		shards, perShard := 2+r.IntN(4), 2
		rp.together = k%4 == 0
		if rp.together {
			zones, perZone, shards = 2, 2+r.IntN(2), 2
		}
		if zones >= 3 && r.IntN(3) == 0 {
			shards, perShard = 3, 3
		}
		rp.masters = k%8 == 2
		if rp.masters {
			zones, perZone, shards, perShard = 3, 2, 3+r.IntN(3), 2
		}
		var zs []scenario.Zone
		node := 0
		for z := 0; z < zones; z++ {
			var nodes []string
			for j := 0; j < perZone+r.IntN(2); j++ {
				node++
				nodes = append(nodes, fmt.Sprintf("n%d", node))
			}
			zs = append(zs, scenario.Zone{Name: fmt.Sprintf("zone-%c", 'a'+z), Nodes: nodes})
		}
		sc := scenario.Scenario{Name: fmt.Sprintf("random-%d", k), Zones: zs, Shards: shards, PodsPerShard: perShard, RoleLabels: true}
		if sc.N() > 8 {
			rp.limit = 2 // the brute force's frontier grows fast with N
		}
		names := sc.NodeNames()
		sc.Placement = map[string]string{}
		for s := 0; s < shards; s++ {
			for o := 0; o < perShard; o++ {
				if o > 0 && r.IntN(10) == 0 {
					rp.pendingPods++
					continue // Pending
				}
				if rp.together {
					// Shard s in zone s mod 2, on distinct nodes there.
					z := zs[s%2].Nodes
					sc.Placement[sc.PodName(s, o)] = z[(o+r.IntN(2))%len(z)]
					continue
				}
				if rp.masters {
					continue // below
				}
				sc.Placement[sc.PodName(s, o)] = names[min(r.IntN(len(names)), r.IntN(len(names)))]
			}
		}
		if rp.masters {
			// Each shard's pods in two distinct zones, its master in zone-a when it has a pod there.
			rp.pendingPods = 0
			for s := 0; s < shards; s++ {
				a := r.IntN(3)
				b := (a + 1 + r.IntN(2)) % 3
				za, zb := zs[a].Nodes, zs[b].Nodes
				sc.Placement[sc.PodName(s, 0)] = za[r.IntN(len(za))]
				sc.Placement[sc.PodName(s, 1)] = zb[r.IntN(len(zb))]
				if b == 0 {
					rp.swapRoles = append(rp.swapRoles, s)
				}
			}
		}
		if r.IntN(5) == 0 {
			sc.RunningMaxSkew = &[2]int32{int32(2 + r.IntN(2)), int32(2 + r.IntN(2))}
			rp.relaxedSkew = true
		}
		used := map[string]bool{}
		for _, nd := range sc.Placement {
			used[nd] = true
		}
		for _, nd := range names {
			switch x := r.IntN(10); {
			case x == 0 || x == 1 && used[nd]:
				rp.cordon = append(rp.cordon, nd)
				rp.holding = rp.holding || used[nd]
			case x == 2 || x == 3 && used[nd]:
				rp.taint = append(rp.taint, nd)
				rp.holding = rp.holding || used[nd]
			}
		}
		rp.sc = sc
		var tainted []string
		for k, nd := range rp.taint {
			tainted = append(tainted, nd+"="+taintOf(k))
		}
		rp.description = fmt.Sprintf("%s zones=%v placement=%v cordoned=%v tainted=%v runningMaxSkew=%v masters-1=%v zonal=%v release=%v", sc.Name, sc.Zones, sc.Placement, rp.cordon, tainted, sc.RunningMaxSkew, rp.swapRoles, rp.zonal, rp.release)
		out = append(out, rp)
	}
	return out
}

// zonalPlacements returns n random small placements on zonal volumes: 3 zones of 2–3 nodes, 3 or
// 4 shards of 2 pods (N 6–8), every pod's data on a PersistentVolume pinned to its zone (a
// volumeClaimTemplate), each shard's master in zone-a three times in four and its replica in
// another zone, claims releasable three times in four: a master of zone-a then moves only after
// a failover, with its claim released.
func zonalPlacements(r *rand.Rand, n int) []*randomPlacement {
	var out []*randomPlacement
	for k := 0; k < n; k++ {
		rp := &randomPlacement{limit: 3, zonal: true, release: r.IntN(4) != 0}
		shards := 3 + r.IntN(2)
		var zs []scenario.Zone
		node := 0
		for z := 0; z < 3; z++ {
			var nodes []string
			for j := 0; j < 2+r.IntN(2); j++ {
				node++
				nodes = append(nodes, fmt.Sprintf("n%d", node))
			}
			zs = append(zs, scenario.Zone{Name: fmt.Sprintf("zone-%c", 'a'+z), Nodes: nodes})
		}
		sc := scenario.Scenario{Name: fmt.Sprintf("zonal-%d", k), Zones: zs, Shards: shards, PodsPerShard: 2, RoleLabels: true,
			Claims: &scenario.ClaimTemplate{}, Placement: map[string]string{}}
		for s := 0; s < shards; s++ {
			a := 0
			if r.IntN(4) == 0 {
				a = 1
			}
			b := (a + 1 + r.IntN(2)) % 3
			za, zb := zs[a].Nodes, zs[b].Nodes
			sc.Placement[sc.PodName(s, 0)] = za[r.IntN(len(za))]
			sc.Placement[sc.PodName(s, 1)] = zb[r.IntN(len(zb))]
		}
		rp.sc = sc
		rp.description = fmt.Sprintf("%s zones=%v placement=%v zonal volumes, claims releasable=%v", sc.Name, sc.Zones, sc.Placement, rp.release)
		out = append(out, rp)
	}
	return out
}

// taintOf returns the key of the NoSchedule taint on the k-th tainted node of a random
// placement: one the pods do not tolerate ("dedicated") on every other node, otherwise the
// taint cluster-autoscaler's scale-down or Karpenter's disruption puts on a node it empties (a
// node being emptied: its members never become masters).
func taintOf(k int) string {
	return []string{"dedicated", "ToBeDeletedByClusterAutoscaler", "dedicated", "karpenter.sh/disrupted"}[k%4]
}

// barred reports whether some member of c that is not a master runs on a node being emptied
// (beingEmptied) while MasterQuorum is broken: a failover could promote it, but must not.
func barred(c *policies.Cluster) bool {
	broken := false
	for _, v := range policies.Hard(c.Evaluate(c.Current())) {
		broken = broken || v.Rule == policies.MasterQuorum
	}
	ms := c.CurrentMasters()
	for i, m := range c.Members {
		if broken && !ms[i] && m.Node >= 0 && beingEmptied(c.Model().Nodes[m.Node].Obj) {
			return true
		}
	}
	return false
}

// cluster builds the placement's model.
func (rp *randomPlacement) cluster() (*policies.Cluster, error) {
	snap := rp.sc.MustSnapshot()
	for _, p := range snap.Pods {
		for _, s := range rp.swapRoles {
			switch p.Name {
			case rp.sc.PodName(s, 0):
				p.Labels[scenario.RoleLabel] = "replica"
			case rp.sc.PodName(s, 1):
				p.Labels[scenario.RoleLabel] = "master"
			}
		}
	}
	for _, n := range snap.Nodes {
		if slices.Contains(rp.cordon, n.Name) {
			fixture.Cordoned()(n)
		}
		if k := slices.Index(rp.taint, n.Name); k >= 0 {
			fixture.Tainted(taintOf(k), "", corev1.TaintEffectNoSchedule)(n)
		}
	}
	m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel, ReleaseReplicaClaims: rp.release})
	if err != nil {
		return nil, err
	}
	return m.Clusters[0], nil
}

// TestPlanIsMinimalRandom compares the planner, in the default model and with Pending steps,
// with the brute-force search on 320 random small placements (fixed seed; evictions, then
// failovers), the small ones also with the general search (failovers anywhere), and reports how
// many of them belong to each class the issues name: cordoned or tainted nodes holding pods
// (some tainted as being emptied), replicas on nodes being emptied while MasterQuorum is broken
// (never failover targets), Pending pods, placements that only a plan through a Pending pod
// fixes, plans with failover steps, and plans of failovers only.
func TestPlanIsMinimalRandom(t *testing.T) {
	const cases, zonalCases = 320, 48
	rps := append(randomPlacements(rand.New(rand.NewPCG(12, 2026)), cases), zonalPlacements(rand.New(rand.NewPCG(18, 2026)), zonalCases)...)
	var wg sync.WaitGroup
	work := make(chan *randomPlacement)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rp := range work {
				c, err := rp.cluster()
				if err != nil {
					t.Error(err)
					continue
				}
				rp.barred = barred(c)
				rp.defaultMoves, rp.withPendingMov, rp.failovers = checkAgainstBruteForce(t, c, rp.limit, rp.description)
				if rp.zonal && rp.defaultMoves > 0 {
					for _, mv := range Compute(c, Options{MaxMoves: rp.limit}).Moves {
						if mv.Failover && len(mv.ReleaseClaims) > 0 {
							rp.releasedMasters++
						}
					}
				}
				if rp.sc.N() <= 6 && rp.pendingPods == 0 {
					rp.general = true
					checkGeneral(t, c, rp.limit, rp.description)
				}
			}
		}()
	}
	for _, rp := range rps {
		work <- rp
	}
	close(work)
	wg.Wait()
	var holding, pendingPods, pendingStep, multi, noPlan, fixedWithHolding, withFailovers, onlyFailovers, general int
	var zonal, zonalKept, zonalReleased, releasedMasters, barredReplicas int
	for _, rp := range rps {
		if rp.barred {
			barredReplicas++
		}
		if rp.zonal {
			zonal++
			if !rp.release && rp.defaultMoves < 0 {
				zonalKept++
			}
			if rp.releasedMasters > 0 {
				zonalReleased++
			}
			releasedMasters += rp.releasedMasters
		}
		if rp.failovers > 0 {
			withFailovers++
			if rp.defaultMoves == 0 {
				onlyFailovers++
			}
		}
		if rp.general {
			general++
		}
		if rp.holding {
			holding++
			if rp.defaultMoves >= 0 {
				fixedWithHolding++
			}
		}
		if rp.pendingPods > 0 {
			pendingPods++
		}
		if rp.defaultMoves < 0 && rp.withPendingMov > 0 {
			pendingStep++
		}
		if rp.defaultMoves >= 2 {
			multi++
		}
		if rp.defaultMoves < 0 {
			noPlan++
		}
	}
	t.Logf("%d random placements: %d with cordoned or tainted nodes holding pods (%d of them with a plan), %d with Pending pods, %d fixed only through a Pending pod, %d needing 2 or more evictions, %d without a plan in the default model, %d with failover steps (%d of them without an eviction), %d also checked with failovers anywhere; %d with a replica on a node being emptied while MasterQuorum is broken; %d on zonal volumes (%d without a plan while claims are kept, %d whose plan fails a master over and releases its claim: %d such evictions)",
		len(rps), holding, fixedWithHolding, pendingPods, pendingStep, multi, noPlan, withFailovers, onlyFailovers, general, barredReplicas, zonal, zonalKept, zonalReleased, releasedMasters)
	// The classes must really be covered, or the comparison proves little.
	for _, c := range []struct {
		what     string
		got, min int
	}{{"cordoned or tainted nodes holding pods", holding, 60}, {"such placements with a plan", fixedWithHolding, 30}, {"Pending pods", pendingPods, 30}, {"Pending-step cases", pendingStep, 10}, {"plans of 2 or more evictions", multi, 20},
		{"plans with failover steps", withFailovers, 30}, {"plans of failovers only", onlyFailovers, 10}, {"checks with failovers anywhere", general, 50},
		{"a replica on a node being emptied while MasterQuorum is broken", barredReplicas, 50},
		{"zonal volumes", zonal, 30}, {"zonal volumes without a plan while claims are kept", zonalKept, 3}, {"plans failing a master over to release its claim", zonalReleased, 10}} {
		if c.got < c.min {
			t.Errorf("only %d random placements with %s, want at least %d", c.got, c.what, c.min)
		}
	}
}
