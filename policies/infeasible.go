package policies

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// StaticInfeasibility returns, in words, why no placement of the cluster's N pods that evictions
// can reach satisfies the hard rules on the nodes that exist (e.g. fewer than 6 nodes for N = 6,
// where the 1/3 rule cannot hold at all), or "" when this quick count finds no obstacle. A pod that
// is placed needs a usable node: one that passes the node-level checks (cordon, taints, node
// affinity) of some member's incoming spec (a Pending pod's own, otherwise its re-creation
// template's). A pod that stays keeps its node whatever that node's schedulability, so a node that
// is not usable still holds the members running on it now (up to the node limit). With a zone list
// (AllowedZones) only nodes of the allowed zones count; without one, nodes without a zone label
// count too (each its own domain for ShardSeparation, in no zone for the zone rules). w, when not
// nil, counts the nodes visited.
func (c *Cluster) StaticInfeasibility(w *Work) string {
	m := c.model
	relaxed := m.Options.RelaxedLimits
	nodeRule := m.enforced(MaxPodsPerNode)
	nodeLimit := NodeLimit(c.N, relaxed)
	if !nodeRule {
		nodeLimit = max(c.N, 1) // a node may hold every pod
	}
	cmp := "fewer than"
	if relaxed {
		cmp = "at most"
	}
	if nodeLimit == 0 {
		return fmt.Sprintf("with N=%d a node may hold %s N/3 pods, i.e. none: no placement can comply (MaxPodsPerNode)", c.N, cmp)
	}
	counts := func(n int) bool { // whether node n may hold pods of the cluster at all
		z := c.zoneID[n]
		return c.allowedID[z] || !c.ZoneList && c.zoneName[z] == ""
	}
	// Members that may stay where they run: bound, not terminating, on a node that counts.
	stayOn := map[int][]int{} // node → members
	for i, mem := range c.Members {
		if mem.Node >= 0 && !mem.Terminating && counts(mem.Node) {
			stayOn[mem.Node] = append(stayOn[mem.Node], i)
		}
	}
	// Capacity per node: the node limit on a usable node, else the members that stay there.
	capZone := make([]int, len(c.zoneName)) // by zone id; nodes without a zone under ""'s id
	usable, stayers, total := 0, 0, 0
	w.visit(len(c.model.Nodes))
	for n := range c.model.Nodes {
		if !counts(n) {
			continue
		}
		cp := 0
		if c.isUsable(n) {
			cp = nodeLimit
			usable++
		} else if k := len(stayOn[n]); k > 0 {
			cp = min(k, nodeLimit)
			stayers += cp
		}
		capZone[c.zoneID[n]] += cp
		total += cp
	}
	capOf := func(zone string) int {
		if id := slices.Index(c.zoneName, zone); id >= 0 {
			return capZone[id]
		}
		return 0
	}
	var why []string
	if total < c.N && nodeRule {
		if stayers == 0 {
			why = append(why, fmt.Sprintf("N=%d pods at most %d per node (MaxPodsPerNode) need %d usable nodes, found %d", c.N, nodeLimit, (c.N+nodeLimit-1)/nodeLimit, usable))
		} else {
			why = append(why, fmt.Sprintf("N=%d pods at most %d per node (MaxPodsPerNode) need room for %d, found %d: %d on %d usable nodes and %d staying where they run on nodes no pod can be placed on now (cordoned, tainted or not selected)", c.N, nodeLimit, c.N, total, usable*nodeLimit, usable, stayers))
		}
	}
	if m.enforced(ShardSeparation) {
		why = append(why, c.shardDomains(stayOn, counts, w)...)
	}
	switch z := c.Z(); {
	case z >= 3 && m.enforced(MaxPodsPerZone):
		zoneLimit := ZoneLimit(c.N, relaxed)
		capacity := capOf("")
		for _, zone := range c.AllowedZones {
			capacity += min(zoneLimit, capOf(zone))
		}
		if capacity < c.N {
			why = append(why, fmt.Sprintf("the allowed zones can hold %d of N=%d pods (at most %d per zone, %d per node)", capacity, c.N, zoneLimit, nodeLimit))
		}
	case z == 2 && m.enforced(ZoneEvenSplit):
		// The two zones differ by at most N mod 2 pods; nodes without a zone take the rest.
		a, b := c.AllowedZones[0], c.AllowedZones[1]
		lo := min(capOf(a), capOf(b))
		pair := 2 * lo
		if capOf(a) != capOf(b) {
			pair += c.N % 2
		}
		if pair+capOf("") < c.N {
			found := false
			for _, zone := range c.AllowedZones {
				if need := (c.N - capOf("")) / 2; capOf(zone) < need {
					why = append(why, fmt.Sprintf("zone %s must hold %s (ZoneEvenSplit) but its nodes hold at most %d", zone, Plural(need, "pod"), capOf(zone)))
					found = true
				}
			}
			if !found {
				why = append(why, fmt.Sprintf("zones %s and %s hold at most %d and %d pods, and N=%d split within %d needs %d in one of them (ZoneEvenSplit)", a, b, capOf(a), capOf(b), c.N, c.N%2, (c.N-capOf("")+1)/2))
			}
		}
	}
	if c.Z() >= 2 {
		why = append(why, c.pinnedByVolumes(c.Z())...)
	}
	if m.enforced(TopologySpread) {
		why = append(why, c.spreadInfeasibility(w)...)
	}
	return strings.Join(why, "; ")
}

// shardDomains reports the shards that cannot have their pods in distinct domains
// (ShardSeparation): zones with Z ≥ 2 (a node without a zone is its own domain), nodes otherwise.
// A domain counts for a shard when it has a usable node, or when a pod of the shard stays there.
func (c *Cluster) shardDomains(stayOn map[int][]int, counts func(int) bool, w *Work) []string {
	byZone := c.Z() >= 2
	// A domain's number: a zone id, or len(zoneName)+node for a node that is its own domain.
	domain := func(n int) int {
		if z := c.zoneID[n]; byZone && c.zoneName[z] != "" {
			return int(z)
		}
		return len(c.zoneName) + n
	}
	open := make([]bool, len(c.zoneName)+len(c.model.Nodes)) // domains with a usable node
	opened := 0
	w.visit(len(c.model.Nodes))
	for n := range c.model.Nodes {
		if d := domain(n); counts(n) && !open[d] && c.isUsable(n) {
			open[d] = true
			opened++
		}
	}
	what := "usable nodes"
	if byZone {
		what = "zones with usable nodes"
	}
	var why []string
	worst, worstNeed, worstFound := "", 0, 0
	for si, sh := range c.Shards {
		need := len(sh.Members)
		if sh.StatefulSet != nil && sh.StatefulSet.Spec.Replicas != nil {
			need = int(*sh.StatefulSet.Spec.Replicas)
		}
		found := opened
		extra := map[int]bool{}
		for n, members := range stayOn {
			if d := domain(n); !open[d] && !extra[d] {
				for _, i := range members {
					if c.Members[i].ShardIndex == si {
						extra[d] = true
						found++
						break
					}
				}
			}
		}
		if need > found && need-found > worstNeed-worstFound {
			worst, worstNeed, worstFound = sh.Name, need, found
		}
	}
	if worst != "" {
		why = append(why, fmt.Sprintf("a shard of %d pods needs %d %s (ShardSeparation), found %d (shard %s)", worstNeed, worstNeed, what, worstFound, worst))
	}
	return why
}

// pinnedByVolumes reports what the zonal PersistentVolumes forbid: members whose bound claims
// only fit nodes of one zone stay in that zone (unless their claims may be released:
// ClaimsReleasable), so more pinned pods in one zone than MaxPodsPerZone allows (z ≥ 3), or two
// pinned pods of one shard in one zone (ShardSeparation), cannot be fixed by evictions.
func (c *Cluster) pinnedByVolumes(z int) []string {
	release := c.model.Options.ReleaseReplicaClaims
	pinned := map[string]int{}
	var zones []string // in order of first appearance
	byShard := map[[2]string]int{}
	kept := map[string]string{} // zone → why the first pinned member's claims are kept
	for i, mem := range c.Members {
		s := mem.incoming()
		if s.volume == nil || c.ClaimsReleasable(i) {
			continue
		}
		zone, one := "", true
		for n, r := range s.volume {
			if r != fitOK {
				continue
			}
			if zone == "" {
				zone = c.zones[n]
			} else if c.zones[n] != zone {
				one = false
				break
			}
		}
		if zone == "" || !one {
			continue
		}
		if pinned[zone] == 0 {
			zones = append(zones, zone)
			kept[zone] = fmt.Sprintf("; %s keeps its claims: %s", mem.Name(), c.ClaimsKept(i))
		}
		pinned[zone]++
		byShard[[2]string{mem.Shard, zone}]++
	}
	hint := func(zone string) string {
		if release {
			return kept[zone]
		}
		return "; releasing their claims (--release-replica-claims) lets a pod move, failed over first when it is a master, and resync in full from its shard's master"
	}
	var why []string
	limit := ZoneLimit(c.N, c.model.Options.RelaxedLimits)
	for _, zone := range zones {
		if z >= 3 && pinned[zone] > limit && c.model.enforced(MaxPodsPerZone) {
			why = append(why, fmt.Sprintf("zone %s holds %s whose zonal PersistentVolumes keep %s there, more than the %d a zone may hold (MaxPodsPerZone)%s", zone, Plural(pinned[zone], "pod"), Agree(pinned[zone], "it", "them"), limit, hint(zone)))
		}
	}
	for _, sh := range c.Shards {
		for _, zone := range zones {
			if byShard[[2]string{sh.Name, zone}] > 1 && c.model.enforced(ShardSeparation) {
				why = append(why, fmt.Sprintf("shard %s has %d pods whose zonal PersistentVolumes keep them in zone %s (ShardSeparation)%s", sh.Name, byShard[[2]string{sh.Name, zone}], zone, hint(zone)))
			}
		}
	}
	return why
}

// spreadInfeasibility reports the DoNotSchedule constraints that no placement the evictions can
// reach keeps within maxSkew, found by counting (no search): per eligible domain, the matching
// pods that are there whatever the plan (pods of other workloads, and members that cannot leave:
// not evictable, or fitting no node of another domain) and the most its nodes can hold (each
// node: the members on it now, or as many as its allocatable CPU, memory and pods leave room
// for beside the pods of other workloads, whichever is more); then whether some global minimum
// lets every domain's count lie within maxSkew of it while the pods add up. Only the
// constraints in effect whatever the plan are judged (surelyInEffect), and only when the
// members' labels match the constraint's selector alike before and after a re-creation.
//
// What every constraint shares is computed once (spreadBasis): each node's room, and the
// members grouped by the nodes they may be placed on (their incoming spec's node-level and
// volume masks), so that a constraint visits each node once per group of members, not once per
// member, and counts in slices indexed by domain, never in maps that grow with the nodes.
func (c *Cluster) spreadInfeasibility(w *Work) []string {
	evictable := false
	for _, mem := range c.Members {
		evictable = evictable || mem.NotEvictable() == ""
	}
	if !evictable {
		return nil // the planner says so in its own words: no pod may be evicted
	}
	var b *spreadBasis
	var why []string
	sc := spreadScratchPool.Get().(*spreadScratch)
	defer spreadScratchPool.Put(sc)
	for idx, in := range c.spread {
		if !c.surelyInEffect(idx) {
			continue
		}
		if b == nil {
			b = c.newSpreadBasis(sc, w)
		}
		if s := c.spreadCount(in, b, sc, w); s != "" {
			why = append(why, s)
		}
	}
	return why
}

// surelyInEffect reports whether DoNotSchedule instance idx is in effect in every placement the
// planner may reach: a member bound now (not terminating) carries it as it runs and as it would
// be re-created. Such a member is placed in every such placement: it stays, or, evicted, it is
// placed at once (in the Pending-step model it may wait, but a plan never ends with it Pending
// while Unschedulable is judged).
func (c *Cluster) surelyInEffect(idx int) bool {
	for _, mem := range c.Members {
		if mem.Node >= 0 && !mem.Terminating && slices.Contains(mem.cur.spread, idx) && (mem.NotEvictable() != "" || slices.Contains(mem.next.spread, idx)) {
			return true
		}
	}
	return false
}

// spreadBasis is what spreadCount reads for every constraint of a cluster, computed once per
// StaticInfeasibility.
type spreadBasis struct {
	// hold[n] is the most members node n can hold: the members on it now, or as many of the
	// smallest member request as its allocatable leaves room for beside the pods of other
	// workloads, whichever is more.
	hold []int
	// groups are the members that are not terminating, grouped by the nodes their incoming spec
	// may be placed on.
	groups []landingGroup
}

// spreadScratch holds spreadCount's per-domain counts, reused from one constraint (and one
// cluster: spreadScratchPool) to the next, so that counting over thousands of domains allocates
// nothing once warm.
type spreadScratch struct {
	pos, doms, mark, lands       []int32
	fixed, free, capacity, upper []int
	kinds                        []domainBounds
	// hold is the basis's spreadBasis.hold, by node; bounds counts domains by (lo, hi)
	// (spreadCount's kinds).
	hold   []int
	bounds []int32
}

// spreadScratchPool recycles spreadScratch between the clusters planned.
var spreadScratchPool = sync.Pool{New: func() any { return new(spreadScratch) }}

// zeroed returns s resized to n elements, all zero, reusing its array when it is large enough.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// landingGroup is a set of members whose incoming specs pass the same nodes: the same node-level
// mask (static) and the same volume mask (nil when no volume restricts, or the member's claims
// may be released).
type landingGroup struct {
	static, volume []reasonCode
	members        []int
}

// newSpreadBasis computes the basis: one pass over the members and one over the nodes. Its hold
// is sc's (valid while sc is not put back).
func (c *Cluster) newSpreadBasis(sc *spreadScratch, w *Work) *spreadBasis {
	m := c.model
	sc.hold = zeroed(sc.hold, len(m.Nodes))
	b := &spreadBasis{hold: sc.hold}
	minReq := resources{pods: 1, cpu: -1, mem: -1}
	type key struct{ static, volume *reasonCode }
	group := map[key]int{}
	release := m.Options.ReleaseReplicaClaims
	for j, mem := range c.Members {
		if mem.Terminating {
			continue
		}
		if mem.Node >= 0 {
			b.hold[mem.Node]++ // the members on it now, until the room is known
		}
		s := mem.incoming()
		if minReq.cpu < 0 || s.requests.cpu < minReq.cpu {
			minReq.cpu = s.requests.cpu
		}
		if minReq.mem < 0 || s.requests.mem < minReq.mem {
			minReq.mem = s.requests.mem
		}
		var k key
		var vol []reasonCode
		if len(s.static) > 0 {
			k.static = &s.static[0]
		}
		if s.volume != nil && !(release && mem.Role == RoleReplica) {
			vol = s.volume
			k.volume = &vol[0]
		}
		g, ok := group[k]
		if !ok {
			g = len(b.groups)
			group[k] = g
			b.groups = append(b.groups, landingGroup{static: s.static, volume: vol})
		}
		b.groups[g].members = append(b.groups[g].members, j)
	}
	w.visit(len(m.Nodes))
	for n := range m.Nodes {
		room := m.allocatable[n].sub(m.usedByAll[n].sub(c.memberUse[n]))
		fit := room.pods
		if minReq.cpu > 0 {
			fit = min(fit, room.cpu/minReq.cpu)
		}
		if minReq.mem > 0 {
			fit = min(fit, room.mem/minReq.mem)
		}
		b.hold[n] = max(int(fit), b.hold[n], 0)
	}
	return b
}

// spreadCount judges one constraint instance by counting (spreadInfeasibility); "" when some
// counts may comply.
func (c *Cluster) spreadCount(in *spreadInstance, b *spreadBasis, sc *spreadScratch, w *Work) string {
	// The eligible domains, in order of their first node; pos maps a domain id to its
	// position (-1: no eligible node).
	pos := zeroed(sc.pos, len(in.dom.names))
	sc.pos = pos
	for d := range pos {
		pos[d] = -1
	}
	doms := sc.doms[:0]
	w.visit(len(in.eligible))
	for n, e := range in.eligible {
		if d := in.dom.ofNode[n]; e && d >= 0 && pos[d] < 0 {
			pos[d] = int32(len(doms))
			doms = append(doms, d)
		}
	}
	sc.doms = doms
	if len(doms) == 0 {
		return ""
	}
	// posOf returns the position of node n's domain when n is eligible, else -1.
	posOf := func(n int) int {
		if d := in.dom.ofNode[n]; in.eligible[n] && d >= 0 {
			return int(pos[d])
		}
		return -1
	}
	for _, g := range b.groups {
		for _, j := range g.members {
			if in.matchCur[j] != in.matchNext[j] {
				return "" // its labels change with a re-creation: not judged by counting
			}
		}
	}
	fixed := zeroed(sc.fixed, len(doms)) // matching pods there whatever the plan
	free := zeroed(sc.free, len(doms))   // members that may be there (and elsewhere)
	capacity := zeroed(sc.capacity, len(doms))
	sc.fixed, sc.free, sc.capacity = fixed, free, capacity
	for d, k := range in.external {
		if d >= 0 && int(d) < len(pos) && pos[d] >= 0 {
			fixed[pos[d]] += k
		}
	}
	mustCount, mayCount, pinnedMembers := 0, 0, 0
	// mark[i] == stamp: domain i is one the current group's members may be placed in.
	mark := zeroed(sc.mark, len(doms))
	sc.mark = mark
	lands := sc.lands[:0]
	defer func() { sc.lands = lands[:0] }()
	for gi, g := range b.groups {
		stamp := int32(gi + 1)
		lands = lands[:0]  // the domains the group may land in
		uncounted := false // whether it may land on a node this constraint does not count
		started := false
		mayLand := 0 // members that may land in every domain of lands
		for _, j := range g.members {
			if !in.matchCur[j] {
				continue
			}
			if !started {
				started = true
				w.visit(len(g.static))
				for n, r := range g.static {
					if r != fitOK || g.volume != nil && g.volume[n] != fitOK {
						continue
					}
					if i := posOf(n); i < 0 {
						uncounted = true
					} else if mark[i] != stamp {
						mark[i] = stamp
						lands = append(lands, int32(i))
					}
				}
			}
			mem := c.Members[j]
			cur := -1
			if mem.Node >= 0 {
				cur = posOf(mem.Node)
			}
			stays := len(lands) == 0 || len(lands) == 1 && cur >= 0 && mark[cur] == stamp && !uncounted
			switch {
			case mem.Node >= 0 && (mem.NotEvictable() != "" || stays):
				// Stays in its domain (or uncounted where it is).
				if cur >= 0 {
					fixed[cur]++
					mustCount++
					pinnedMembers++
				}
				continue
			}
			mayUncounted := uncounted || cur < 0 // a Pending pod may stay Pending; a member off the counted nodes may stay there
			if cur >= 0 && mark[cur] != stamp {
				free[cur]++
			}
			mayLand++
			mayCount++
			if !mayUncounted {
				mustCount++
			}
		}
		if mayLand > 0 {
			for _, i := range lands {
				free[i] += mayLand
			}
		}
	}
	// The most members each domain's nodes can hold.
	for n, e := range in.eligible {
		if i := posOf(n); e && i >= 0 {
			capacity[i] += b.hold[n]
		}
	}
	ext := 0
	for _, k := range in.external {
		ext += k
	}
	totalMin, totalMax := ext+mustCount, ext+pinnedMembers+mayCount
	// upper[i]: the most matching pods domain i can count. Domains with the same least and most
	// counts are judged together.
	upper := zeroed(sc.upper, len(doms))
	kinds := sc.kinds[:0]
	sc.upper = upper
	defer func() { sc.kinds = kinds[:0] }()
	top := 0
	for i := range doms {
		upper[i] = min(fixed[i]+free[i], fixed[i]+capacity[i])
		top = max(top, upper[i])
	}
	kinds, sc.bounds = boundKinds(kinds, sc.bounds, fixed, upper)
	lows := []int{0}
	if in.numDomains >= in.minDomains {
		lows = lows[:0]
		for g := 0; g <= top; g++ {
			lows = append(lows, g)
		}
	}
	bestFit, anyWindow := -1, false
	for _, g := range lows {
		sumLo, sumHi, ok := 0, 0, true
		for _, k := range kinds {
			lo, hi := max(g, k.lo), min(g+in.maxSkew, k.hi)
			if lo > hi {
				ok = false
				break
			}
			sumLo += lo * k.n
			sumHi += hi * k.n
		}
		if !ok {
			continue
		}
		anyWindow = true
		if sumLo <= totalMax && sumHi >= totalMin {
			return ""
		}
		if sumLo <= totalMax {
			bestFit = max(bestFit, sumHi)
		}
	}
	what := fmt.Sprintf("TopologySpread %s maxSkew %d: no placement of its %d matching pods over its %d domains keeps the skew within %d", in.constraint.TopologyKey, in.maxSkew, totalMin, len(doms), in.maxSkew)
	if totalMax > totalMin {
		what = fmt.Sprintf("TopologySpread %s maxSkew %d: no placement of its %d to %d matching pods over its %d domains keeps the skew within %d", in.constraint.TopologyKey, in.maxSkew, totalMin, totalMax, len(doms), in.maxSkew)
	}
	switch {
	case !anyWindow:
		what += " (pods that cannot leave their domain skew it already)"
	case bestFit >= 0:
		what += fmt.Sprintf(" (at most %d fit within it)", bestFit)
	}
	var parts []string
	for i, d := range doms {
		if i == maxDomainsNamed {
			parts = append(parts, fmt.Sprintf("%d more", len(doms)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s at least %d, at most %d", in.dom.names[d], fixed[i], upper[i]))
	}
	return what + ": " + strings.Join(parts, "; ") + " (at least: pods of other workloads and pods that cannot leave it; at most: what its nodes can hold)"
}

// domainBounds are the least (lo) and the most (hi) matching pods of n domains.
type domainBounds struct{ lo, hi, n int }

// maxBoundCells is the most (lo, hi) cells boundKinds counts in a table; beyond, it sorts.
const maxBoundCells = 1 << 16

// boundKinds returns in ks (emptied) the domains' bounds (lo[i], hi[i]) with the domains of equal
// bounds merged (n: how many), ordered by lo then hi. Bounds within a small range are counted in
// a table (cells, reused: returned), others sorted and compacted.
func boundKinds(ks []domainBounds, cells []int32, lo, hi []int) ([]domainBounds, []int32) {
	ks = ks[:0]
	if len(lo) == 0 {
		return ks, cells
	}
	minLo, maxLo, minHi, maxHi := lo[0], lo[0], hi[0], hi[0]
	for i := range lo {
		minLo, maxLo = min(minLo, lo[i]), max(maxLo, lo[i])
		minHi, maxHi = min(minHi, hi[i]), max(maxHi, hi[i])
	}
	rows, width := maxLo-minLo+1, maxHi-minHi+1
	if rows*width > maxBoundCells {
		for i := range lo {
			ks = append(ks, domainBounds{lo[i], hi[i], 1})
		}
		slices.SortFunc(ks, func(a, b domainBounds) int { return cmp.Or(a.lo-b.lo, a.hi-b.hi) })
		return compactBounds(ks), cells
	}
	cells = zeroed(cells, rows*width)
	for i := range lo {
		cells[(lo[i]-minLo)*width+hi[i]-minHi]++
	}
	for k, n := range cells {
		if n > 0 {
			ks = append(ks, domainBounds{k/width + minLo, k%width + minHi, int(n)})
		}
	}
	return ks, cells
}

// compactBounds merges the sorted entries with equal lo and hi, summing their n.
func compactBounds(ks []domainBounds) []domainBounds {
	out := ks[:0]
	for _, k := range ks {
		if l := len(out); l > 0 && out[l-1].lo == k.lo && out[l-1].hi == k.hi {
			out[l-1].n += k.n
			continue
		}
		out = append(out, k)
	}
	return out
}

// maxDomainsNamed is how many domains spreadCount names before it only counts the rest.
const maxDomainsNamed = 6
