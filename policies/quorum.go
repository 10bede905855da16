package policies

import (
	"fmt"
	"slices"
	"strings"
)

// MasterQuorum is about roles, not pods: Redis Cluster promotes a replica only when a majority of
// the masters that serve slots vote for it (cluster spec, "Replica election and promotion"), so a
// node or zone holding half of those masters or more takes the whole cluster down when it is
// lost, whatever the pod counts say. The rule reads the members' roles (Member.Role,
// Member.EmptyMaster) through Masters, which a plan's failovers change while the placement stays.

// Masters marks, by Member.Index, the members that are masters serving slots: the voters of a
// Redis replica election, which MasterQuorum counts. A failover moves a mark within a shard.
type Masters []bool

// Clone returns a copy.
func (ms Masters) Clone() Masters { return append(Masters(nil), ms...) }

// Count returns M: the number of members marked.
func (ms Masters) Count() int {
	n := 0
	for _, is := range ms {
		if is {
			n++
		}
	}
	return n
}

// CurrentMasters returns the masters as the members' roles say now: Role master, serving slots
// (not EmptyMaster). A terminating master still counts: Redis counts it until its replica takes
// over.
func (c *Cluster) CurrentMasters() Masters {
	ms := make(Masters, len(c.Members))
	for i, m := range c.Members {
		ms[i] = m.Role == RoleMaster && !m.EmptyMaster
	}
	return ms
}

// RolesKnown reports whether some member's Redis role is known (read from Redis live, or from
// Options.RoleLabel offline). MasterQuorum is skipped, never guessed, when none is.
func (c *Cluster) RolesKnown() bool {
	for _, m := range c.Members {
		if m.Role != RoleUnknown {
			return true
		}
	}
	return false
}

// Quorum is what MasterQuorum asks of a cluster with M masters serving slots. Its JSON form is
// part of the `check` and `plan` output contract.
type Quorum struct {
	// Applies is false when the rule is skipped: the roles are unknown, or no member is a master
	// serving slots (Note says which).
	Applies bool `json:"applies"`
	// Masters is M; Zones is Z, the number of allowed zones.
	Masters int `json:"masters"`
	Zones   int `json:"zones"`
	// NodeLimit is the most masters one node may hold: fewer than M/2, or, where no placement
	// can keep every node below M/2 (NodeBestEffort), ⌈M/nodes⌉ (masters spread evenly over
	// the nodes the cluster's pods may run on).
	NodeLimit      int  `json:"nodeLimit"`
	NodeBestEffort bool `json:"nodeBestEffort,omitempty"`
	// ZoneLimit is the most masters one allowed zone may hold with Z ≥ 3: fewer than M/2, or
	// ⌈M/Z⌉ where no placement can do that (ZoneBestEffort). 0 when the zone part does not
	// apply: with Z = 2 the loss of a zone always takes half of the masters, with Z ≤ 1 all.
	ZoneLimit      int  `json:"zoneLimit,omitempty"`
	ZoneBestEffort bool `json:"zoneBestEffort,omitempty"`
	// Note says in words, once per cluster, why the rule is skipped, or which loss the cluster
	// cannot survive whatever the placement and what would fix it ("" when it can survive the
	// loss of any node and, with Z ≥ 3, of any zone).
	Note string `json:"note,omitempty"`
}

// MasterQuorum returns what the MasterQuorum rule asks of the cluster with its current roles.
func (c *Cluster) MasterQuorum() Quorum { return c.quorumOf(c.CurrentMasters().Count()) }

// quorumOf returns the rule's limits for m masters, the rule skipped while the roles are unknown.
func (c *Cluster) quorumOf(m int) Quorum {
	if !c.RolesKnown() {
		return Quorum{Masters: m, Zones: c.Z(), Note: "MasterQuorum not checked: the members' Redis roles are unknown (they come from Redis live, from a role label offline)"}
	}
	return c.QuorumOf(m)
}

// enforcedQuorum returns quorumOf(m) when MasterQuorum is enforced (judged as a hard rule), and
// otherwise a Quorum that does not apply: the planner then fails no master over for it.
func (c *Cluster) enforcedQuorum(m int) Quorum {
	if !c.model.enforced(MasterQuorum) {
		return Quorum{Masters: m, Zones: c.Z(), Note: "MasterQuorum not enforced by the policy"}
	}
	return c.quorumOf(m)
}

// QuorumOf returns what MasterQuorum asks of the cluster with m masters serving slots, whatever
// its roles (lint asks it of one master per shard, templates carrying no roles).
func (c *Cluster) QuorumOf(m int) Quorum { return QuorumFor(m, c.Z(), c.quorumNodes()) }

// QuorumFor returns what MasterQuorum asks of m masters serving slots in z allowed zones, on
// nodes nodes that the cluster's pods may run on.
func QuorumFor(m, z, nodes int) Quorum {
	q := Quorum{Masters: m, Zones: z}
	if m == 0 {
		q.Note = "MasterQuorum not checked: no member is a master serving slots"
		return q
	}
	q.Applies = true
	strict := (m - 1) / 2 // the largest c with 2c < m
	nodes = max(nodes, 1)
	q.NodeLimit = strict
	if even := ceilDiv(m, nodes); even > strict {
		q.NodeLimit, q.NodeBestEffort = even, true
	}
	if z >= 3 {
		q.ZoneLimit = strict
		if even := ceilDiv(m, z); even > strict {
			q.ZoneLimit, q.ZoneBestEffort = even, true
		}
	}
	q.Note = quorumNote(q, nodes)
	return q
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// quorumNodes returns the number of nodes the cluster's masters may be on: the nodes of the
// allowed zones (with a zone list; otherwise every node) that are usable or run a member.
func (c *Cluster) quorumNodes() int {
	c.quorumOnce.Do(func() {
		allowed := func(n int) bool { return c.allowedID[c.zoneID[n]] || !c.ZoneList }
		for n := range c.model.Nodes {
			if allowed(n) && c.isUsable(n) {
				c.quorumNodeCount++
			}
		}
		// The nodes that run a member and are not usable, each once.
		var runs []int
		for _, mem := range c.Members {
			if n := mem.Node; n >= 0 && !mem.Terminating && allowed(n) && !c.isUsable(n) && !slices.Contains(runs, n) {
				runs = append(runs, n)
			}
		}
		c.quorumNodeCount += len(runs)
	})
	return c.quorumNodeCount
}

// quorumNote says which loss a cluster under q cannot survive whatever the placement, and what
// would fix it ("" when it survives the loss of any node and, with Z ≥ 3, any zone).
func quorumNote(q Quorum, nodes int) string {
	m := q.Masters
	limits := fmt.Sprintf("at most %d per node", q.NodeLimit)
	if q.ZoneLimit > 0 {
		limits = fmt.Sprintf("at most %d per zone and %d per node", q.ZoneLimit, q.NodeLimit)
	}
	best := "MasterQuorum asks for the best that exists: masters spread evenly, " + limits
	var parts []string
	switch {
	case m <= 2:
		masters := "masters"
		if m == 1 {
			masters = "master"
		}
		return fmt.Sprintf("with M=%d %s serving slots, losing any master leaves no majority to promote its replica: whatever the placement, the loss of a node or zone holding a master takes the whole cluster down; 3 or more masters (shards) would fix it. %s", m, masters, best)
	case q.ZoneBestEffort:
		parts = append(parts, fmt.Sprintf("with M=%d masters in %d zones, some zone holds %d of them whatever the placement, and Redis needs %d of %d to promote a replica: the loss of that zone takes the whole cluster down; %s would fix it",
			m, q.Zones, q.ZoneLimit, m/2+1, m, strings.Join(quorumFixes(m, q.Zones), ", or ")))
	case q.Zones == 2:
		parts = append(parts, fmt.Sprintf("with 2 zones, the loss of a zone always takes half of the M=%d masters or more, so no placement survives it and MasterQuorum checks nodes only; a third zone would fix it", m))
	}
	if q.NodeBestEffort {
		parts = append(parts, fmt.Sprintf("with M=%d masters on %d nodes, some node holds %d of them whatever the placement: the loss of that node takes the whole cluster down; %d or more nodes would fix it",
			m, nodes, q.NodeLimit, ceilDiv(m, (m-1)/2)))
	}
	if len(parts) == 0 {
		return ""
	}
	if q.ZoneBestEffort || q.NodeBestEffort {
		parts = append(parts, best)
	}
	return strings.Join(parts, ". ")
}

// quorumFixes lists what lets m masters in z zones keep every zone below m/2: the nearest
// numbers of masters, and the fewest zones.
func quorumFixes(m, z int) []string {
	ok := func(m, z int) bool { return m >= 3 && 2*ceilDiv(m, z) < m }
	var ms []string
	for d := 1; d <= m && len(ms) == 0; d++ {
		for _, m2 := range []int{m - d, m + d} {
			if ok(m2, z) {
				ms = append(ms, fmt.Sprint(m2))
			}
		}
	}
	var out []string
	if len(ms) > 0 {
		out = append(out, strings.Join(ms, " or ")+" masters (shards)")
	}
	for z2 := z + 1; z2 <= m; z2++ {
		if ok(m, z2) {
			out = append(out, fmt.Sprintf("%d zones", z2))
			break
		}
	}
	return out
}

// masterQuorum reports the nodes, and with Z ≥ 3 the zones, that hold more of the masters ms
// than the rule allows under p (MasterQuorum). Unplaced masters count in M only.
func (c *Cluster) masterQuorum(p Placement, ms Masters, brief bool) []Violation {
	q := c.quorumOf(ms.Count())
	if !q.Applies {
		return nil
	}
	var byNode [][2]int // (node, member), sorted
	for i, is := range ms {
		if is && p[i] >= 0 {
			byNode = append(byNode, [2]int{p[i], i})
		}
	}
	slices.SortFunc(byNode, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	var out []Violation
	byZone := map[string][]int{}
	var zones []string
	for k := 0; k < len(byNode); {
		n := byNode[k][0]
		var idx []int
		for ; k < len(byNode) && byNode[k][0] == n; k++ {
			idx = append(idx, byNode[k][1])
		}
		if z := c.zoneOfNode(n); q.ZoneLimit > 0 && z != "" {
			if byZone[z] == nil {
				zones = append(zones, z)
			}
			byZone[z] = append(byZone[z], idx...)
		}
		if len(idx) <= q.NodeLimit {
			continue
		}
		name := c.model.Nodes[n].Name
		v := Violation{Rule: MasterQuorum, Domain: name, TopologyKey: LabelHostname, Count: len(idx), Limit: q.NodeLimit}
		if !brief {
			v.Pods = c.podNames(idx)
			if q.NodeBestEffort {
				v.Message = fmt.Sprintf("node %s holds %d of the %d masters; no placement keeps every node below M/2, so masters spread evenly: at most %d per node", name, len(idx), q.Masters, q.NodeLimit)
			} else {
				v.Message = fmt.Sprintf("node %s holds %d of the %d masters: its loss would leave no majority of masters to promote replicas, and the whole cluster down; a node may hold fewer than M/2 (at most %d)", name, len(idx), q.Masters, q.NodeLimit)
			}
			if q.Zones == 2 {
				v.Message += "; with 2 zones only nodes are checked (a zone's loss always takes half of the masters or more)"
			}
		}
		out = append(out, v)
	}
	for _, z := range zones {
		idx := byZone[z]
		if len(idx) <= q.ZoneLimit {
			continue
		}
		v := Violation{Rule: MasterQuorum, Domain: z, TopologyKey: c.ZoneKey, Count: len(idx), Limit: q.ZoneLimit}
		if !brief {
			v.Pods = c.podNames(idx)
			if q.ZoneBestEffort {
				v.Message = fmt.Sprintf("zone %s holds %d of the %d masters; no placement keeps every zone below M/2 (%d masters in %d zones), so masters spread evenly: at most %d per zone", z, len(idx), q.Masters, q.Masters, q.Zones, q.ZoneLimit)
			} else {
				v.Message = fmt.Sprintf("zone %s holds %d of the %d masters: its loss would leave no majority of masters to promote replicas, and the whole cluster down; a zone may hold fewer than M/2 (at most %d)", z, len(idx), q.Masters, q.ZoneLimit)
			}
		}
		out = append(out, v)
	}
	return out
}

// Failover is one change of master a plan makes: member From, a master serving slots, hands its
// slots to member To, of the same shard (Member indexes).
type Failover struct {
	From, To int
}

// QuorumFix returns the fewest failovers after which MasterQuorum holds under the state's
// placement, and whether any do: each shard keeps as many masters as it has, each on a promotable
// member (Promotable) or a master that is not placed (it counts in M only), no node above the
// node limit, no zone above the zone limit, and as few shards as possible change master.
// Failovers are sorted by From. It is a min-cost flow (source → shard, capacity its masters;
// shard → node per promotable member, cost 1 unless the member is already master; node → zone,
// capacity the node limit; zone → sink, capacity the zone limit): the masters that may stay are
// routed first at cost 0, the others by successive shortest paths. nil, true when the rule holds
// or does not apply.
func (st *State) QuorumFix() ([]Failover, bool) {
	if !st.q.Applies || st.mNodeOver+st.mZoneOver == 0 {
		return nil, true
	}
	r := st.fewestFailovers(st.q, nil, false)
	if !r.routed {
		return nil, false
	}
	return r.failovers, true
}

// failoverFlow is what fewestFailovers found.
type failoverFlow struct {
	// routed is false when some shard's masters found no member to go to (without soft only).
	routed bool
	// failovers are sorted by From; stuck are the masters on gone nodes left where they are
	// (soft only), sorted; excess the masters routed above q's limits, nodes and zones summed
	// (soft only).
	failovers []Failover
	stuck     []int
	excess    int
}

// fewestFailovers is QuorumFix's min-cost flow under limits q, generalised for HandOff: gone,
// when not nil, marks the nodes whose members may not be master (their masters must hand their
// slots over); with soft, a node or zone may hold more masters than q allows at a cost above any
// number of failovers, and a master on a gone node whose shard has no member to take over stays
// where it is at a cost above any excess: the flow then always routes every master, and finds
// the fewest stuck masters, then the least excess, then the fewest failovers.
func (st *State) fewestFailovers(q Quorum, gone []bool, soft bool) failoverFlow {
	c, x := st.c, st.x
	fs := &st.fix
	if fs.nodeV == nil {
		fs.nodeV = make([]int32, len(c.model.Nodes))
		fs.zoneV = make([]int32, len(x.zoneNames))
	}
	g := &fs.g
	g.reset()
	src, sink := g.vertex(), g.vertex()
	// Costs of the soft mode: an excess master costs more than every failover together, a stuck
	// one more than every excess.
	overCost := len(c.Members) + 1
	stuckCost := overCost * (2*len(c.Members) + 1)
	var overEdges []int
	// Vertices of the nodes and zones met (0: none yet), and their edges out; the lists of those
	// met are the scratch's, kept for the next call.
	touched, zones := fs.touched[:0], fs.zones[:0]
	defer func() {
		for _, n := range touched {
			fs.nodeV[n] = 0
		}
		for _, z := range zones {
			fs.zoneV[z] = 0
		}
		fs.touched, fs.zones = touched[:0], zones[:0]
	}()
	nodeOut := func(n int) int { // the node's vertex; its edge out is the edge after its creation
		if v := fs.nodeV[n]; v > 0 {
			return int(v)
		}
		v := g.vertex()
		fs.nodeV[n] = int32(v)
		touched = append(touched, n)
		z := x.zoneID[n]
		if q.ZoneLimit > 0 && x.zoneNames[z] != "" {
			zv := int(fs.zoneV[z])
			if zv == 0 {
				zv = g.vertex()
				fs.zoneV[z] = int32(zv)
				zones = append(zones, z)
				g.out[zv] = g.edge(zv, sink, q.ZoneLimit, 0)
				if soft {
					overEdges = append(overEdges, g.edge(zv, sink, len(c.Members), overCost))
				}
			}
			g.out[v] = g.edge(v, zv, q.NodeLimit, 0)
			if soft {
				overEdges = append(overEdges, g.edge(v, zv, len(c.Members), overCost))
			}
		} else {
			g.out[v] = g.edge(v, sink, q.NodeLimit, 0)
			if soft {
				overEdges = append(overEdges, g.edge(v, sink, len(c.Members), overCost))
			}
		}
		return v
	}
	isGone := func(j int) bool { return gone != nil && st.p[j] >= 0 && gone[st.p[j]] }
	fs.choices, fs.keeps = fs.choices[:0], fs.keeps[:0]
	var stuckEdges [][2]int // (edge shard → sink, shard)
	need := 0
	for s, sh := range c.Shards {
		k, leaving := 0, false
		for _, j := range sh.Members {
			if st.masters[j] {
				k++
				leaving = leaving || isGone(j)
			}
		}
		if k == 0 {
			continue
		}
		need += k
		sv := g.vertex()
		se := g.edge(src, sv, k, 0)
		if soft && leaving {
			stuckEdges = append(stuckEdges, [2]int{g.edge(sv, sink, k, stuckCost), s})
		}
		for _, j := range sh.Members {
			if st.masters[j] && st.p[j] < 0 {
				// A master not placed counts in M only: it may stay master.
				e := g.edge(sv, sink, 1, 0)
				fs.choices = append(fs.choices, [2]int{e, j})
				fs.keeps = append(fs.keeps, [4]int{se, e, -1, -1})
				continue
			}
			if !st.Promotable(j) || isGone(j) {
				continue
			}
			nv := nodeOut(st.p[j])
			cost := 1
			if st.masters[j] {
				cost = 0
			}
			e := g.edge(sv, nv, 1, cost)
			fs.choices = append(fs.choices, [2]int{e, j})
			if st.masters[j] {
				k := [4]int{se, e, g.out[nv], -1}
				if zv := g.to[g.out[nv]]; zv != sink {
					k[3] = g.out[zv]
				}
				fs.keeps = append(fs.keeps, k)
			}
		}
	}
	sent := 0
	for _, k := range fs.keeps {
		if g.push(k[:]) {
			sent++
		}
	}
	if sent+g.minCostFlow(src, sink, need-sent) < need {
		return failoverFlow{}
	}
	r := failoverFlow{routed: true}
	for _, e := range overEdges {
		r.excess += g.flow(e)
	}
	chosen := fs.chosen[:0]
	for range c.Members {
		chosen = append(chosen, false)
	}
	fs.chosen = chosen
	for _, ch := range fs.choices {
		chosen[ch[1]] = g.flow(ch[0]) > 0
	}
	stuckIn := map[int]int{}
	for _, se := range stuckEdges {
		if f := g.flow(se[0]); f > 0 {
			stuckIn[se[1]] = f
		}
	}
	for s, sh := range c.Shards {
		var olds, news []int
		for _, j := range sh.Members {
			switch {
			case st.masters[j] && !chosen[j]:
				olds = append(olds, j)
			case !st.masters[j] && chosen[j]:
				news = append(news, j)
			}
		}
		// The masters leaving gone nodes hand over first; those left over stay (stuck).
		slices.SortStableFunc(olds, func(a, b int) int { return b2i(isGone(b)) - b2i(isGone(a)) })
		for k := range olds {
			if k < len(news) {
				r.failovers = append(r.failovers, Failover{From: olds[k], To: news[k]})
			} else if stuckIn[s] > 0 {
				r.stuck = append(r.stuck, olds[k])
			}
		}
	}
	slices.SortFunc(r.failovers, func(a, b Failover) int { return a.From - b.From })
	slices.Sort(r.stuck)
	return r
}

// quorumScratch is what QuorumFix reuses from one call to the next: its flow network, the
// vertices of the nodes and zones by index (0: none), and its lists.
type quorumScratch struct {
	g            flowGraph
	nodeV, zoneV []int32
	choices      [][2]int // (edge shard → node, member)
	keeps        [][4]int // a master's cost-0 path (-1: no more edges)
	chosen       []bool
	touched      []int   // the nodes given a vertex
	zones        []int32 // the zones given a vertex
}

// flowGraph is a small flow network for QuorumFix: edges in pairs (forward, residual), kept
// from one use to the next (reset).
type flowGraph struct {
	adj               [][]int // vertex → edges leaving it
	out               []int   // vertex → the edge QuorumFix routes a node or zone out through
	to, capLeft, cost []int
	initialCap        []int
	dist, prev        []int
	inQueue           []bool
	queue             []int
}

// reset empties the network, keeping its memory.
func (g *flowGraph) reset() {
	g.adj, g.out = g.adj[:0], g.out[:0]
	g.to, g.capLeft, g.cost, g.initialCap = g.to[:0], g.capLeft[:0], g.cost[:0], g.initialCap[:0]
}

func (g *flowGraph) vertex() int {
	if len(g.adj) < cap(g.adj) {
		g.adj = g.adj[:len(g.adj)+1]
		g.adj[len(g.adj)-1] = g.adj[len(g.adj)-1][:0]
	} else {
		g.adj = append(g.adj, nil)
	}
	g.out = append(g.out, -1)
	return len(g.adj) - 1
}

// edge adds u → v with capacity c and cost w, and returns its index.
func (g *flowGraph) edge(u, v, c, w int) int {
	e := len(g.to)
	g.to = append(g.to, v, u)
	g.capLeft = append(g.capLeft, c, 0)
	g.cost = append(g.cost, w, -w)
	g.initialCap = append(g.initialCap, c, 0)
	g.adj[u] = append(g.adj[u], e)
	g.adj[v] = append(g.adj[v], e+1)
	return e
}

// flow returns the flow on edge e.
func (g *flowGraph) flow(e int) int { return g.initialCap[e] - g.capLeft[e] }

// push sends one unit along path (edges from the source to the sink; -1 ends it early) when
// every edge has room, and reports whether it did.
func (g *flowGraph) push(path []int) bool {
	for _, e := range path {
		if e >= 0 && g.capLeft[e] == 0 {
			return false
		}
	}
	for _, e := range path {
		if e >= 0 {
			g.capLeft[e]--
			g.capLeft[e^1]++
		}
	}
	return true
}

// minCostFlow sends up to want more units from s to t along cheapest paths, starting from a
// flow of least cost for its value (push's paths of cost 0 are), and returns the units sent. The
// residual graph has negative costs: the shortest paths are found with a queue-based
// Bellman-Ford (SPFA).
func (g *flowGraph) minCostFlow(s, t, want int) int {
	sent := 0
	n := len(g.adj)
	grow := func(b []int) []int {
		if cap(b) < n {
			return make([]int, n)
		}
		return b[:n]
	}
	g.dist, g.prev = grow(g.dist), grow(g.prev)
	if cap(g.inQueue) < n {
		g.inQueue = make([]bool, n)
	}
	dist, prev, inQueue, queue := g.dist, g.prev, g.inQueue[:n], g.queue[:0]
	defer func() { g.queue = queue[:0] }()
	for sent < want {
		const inf = int(^uint(0) >> 2)
		for v := range dist {
			dist[v], prev[v] = inf, -1
		}
		dist[s] = 0
		// A FIFO queue read from head, its memory reused: emptied when read to its end.
		queue = append(queue[:0], s)
		inQueue[s] = true
		for head := 0; head < len(queue); {
			u := queue[head]
			if head++; head == len(queue) {
				queue, head = queue[:0], 0
			}
			inQueue[u] = false
			for _, e := range g.adj[u] {
				if v := g.to[e]; g.capLeft[e] > 0 && dist[u]+g.cost[e] < dist[v] {
					dist[v], prev[v] = dist[u]+g.cost[e], e
					if !inQueue[v] {
						inQueue[v] = true
						queue = append(queue, v)
					}
				}
			}
		}
		if dist[t] == inf {
			return sent
		}
		push := want - sent
		for v := t; v != s; v = g.to[prev[v]^1] {
			push = min(push, g.capLeft[prev[v]])
		}
		for v := t; v != s; v = g.to[prev[v]^1] {
			g.capLeft[prev[v]] -= push
			g.capLeft[prev[v]^1] += push
		}
		sent += push
	}
	return sent
}
