package policies

import (
	"fmt"
	"slices"
	"strings"
)

// StaticInfeasibility returns, in words, why no placement of the cluster's N pods that evictions
// can reach satisfies the hard rules on the nodes that exist (e.g. fewer than 6 nodes for N = 6,
// where the 1/3 rule cannot hold at all), or "" when this quick count finds no obstacle. A pod that
// is placed needs a usable node: one that passes the node-level checks (cordon, taints, node
// affinity) of some member's incoming spec (a Pending pod's own, otherwise its re-creation
// template's). A pod that stays keeps its node whatever that node's schedulability, so a node that
// is not usable still holds the members running on it now (up to the node limit). With a zone list
// (AllowedZones) only nodes of the allowed zones count; without one, nodes without a zone label
// count too (each its own domain for ShardSeparation, in no zone for the zone rules).
func (c *Cluster) StaticInfeasibility() string {
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
		why = append(why, c.shardDomains(stayOn, counts)...)
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
		why = append(why, c.spreadInfeasibility()...)
	}
	return strings.Join(why, "; ")
}

// shardDomains reports the shards that cannot have their pods in distinct domains
// (ShardSeparation): zones with Z ≥ 2 (a node without a zone is its own domain), nodes otherwise.
// A domain counts for a shard when it has a usable node, or when a pod of the shard stays there.
func (c *Cluster) shardDomains(stayOn map[int][]int, counts func(int) bool) []string {
	byZone := c.Z() >= 2
	domain := func(n int) int { // a zone id, or -(node+1)
		if z := c.zoneID[n]; byZone && c.zoneName[z] != "" {
			return int(z)
		}
		return -n - 1
	}
	open := map[int]bool{} // domains with a usable node
	for n := range c.model.Nodes {
		if counts(n) && c.isUsable(n) {
			open[domain(n)] = true
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
		found := len(open)
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
func (c *Cluster) spreadInfeasibility() []string {
	evictable := false
	for _, mem := range c.Members {
		evictable = evictable || mem.NotEvictable() == ""
	}
	if !evictable {
		return nil // the planner says so in its own words: no pod may be evicted
	}
	var why []string
	for idx, in := range c.spread {
		if !c.surelyInEffect(idx) {
			continue
		}
		if w := c.spreadCount(in); w != "" {
			why = append(why, w)
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

// spreadCount judges one constraint instance by counting (spreadInfeasibility); "" when some
// counts may comply.
func (c *Cluster) spreadCount(in *spreadInstance) string {
	m := c.model
	// The domains of the eligible nodes, by id.
	var doms []int32
	index := map[int32]int{}
	for n, e := range in.eligible {
		if d := in.dom.ofNode[n]; e && d >= 0 {
			if _, ok := index[d]; !ok {
				index[d] = len(doms)
				doms = append(doms, d)
			}
		}
	}
	if len(doms) == 0 {
		return ""
	}
	fixed := make([]int, len(doms)) // matching pods there whatever the plan
	free := make([]int, len(doms))  // members that may be there (and elsewhere)
	capacity := make([]int, len(doms))
	for d, k := range in.external {
		if i, ok := index[d]; ok {
			fixed[i] += k
		}
	}
	minReq := resources{pods: 1, cpu: -1, mem: -1}
	onNode := map[int]int{}
	mustCount, mayCount, pinnedMembers := 0, 0, 0
	for j, mem := range c.Members {
		if mem.Terminating {
			continue
		}
		if mem.Node >= 0 {
			onNode[mem.Node]++
		}
		s := mem.incoming()
		if minReq.cpu < 0 || s.requests.cpu < minReq.cpu {
			minReq.cpu = s.requests.cpu
		}
		if minReq.mem < 0 || s.requests.mem < minReq.mem {
			minReq.mem = s.requests.mem
		}
		if !in.matchCur[j] && !in.matchNext[j] {
			continue
		}
		if in.matchCur[j] != in.matchNext[j] {
			return "" // its labels change with a re-creation: not judged by counting
		}
		// The domains a re-placed member may land in, and whether it may land uncounted.
		placeable := map[int]bool{}
		uncounted := false
		release := m.Options.ReleaseReplicaClaims && mem.Role == RoleReplica
		for n := range m.Nodes {
			if s.static[n] != fitOK || s.volume != nil && !release && s.volume[n] != fitOK {
				continue
			}
			if i, ok := index[in.dom.ofNode[n]]; ok && in.eligible[n] {
				placeable[i] = true
			} else {
				uncounted = true
			}
		}
		cur := -1
		if mem.Node >= 0 && in.eligible[mem.Node] {
			cur = index[in.dom.ofNode[mem.Node]]
		}
		switch {
		case mem.Node >= 0 && (mem.NotEvictable() != "" || len(placeable) == 0 || len(placeable) == 1 && placeable[cur] && !uncounted):
			// Stays in its domain (or uncounted where it is).
			if cur >= 0 {
				fixed[cur]++
				mustCount++
				pinnedMembers++
			}
			continue
		case mem.Node >= 0 && cur < 0:
			uncounted = true
		case mem.Node >= 0:
			placeable[cur] = true
		case mem.Node < 0:
			uncounted = true // a Pending pod may stay Pending
		}
		for i := range placeable {
			free[i]++
		}
		mayCount++
		if !uncounted {
			mustCount++
		}
	}
	// The most members each domain's nodes can hold.
	for n, e := range in.eligible {
		i, ok := index[in.dom.ofNode[n]]
		if !e || !ok {
			continue
		}
		room := m.allocatable[n].sub(m.usedByAll[n].sub(c.memberUse[n]))
		fit := room.pods
		if minReq.cpu > 0 {
			fit = min(fit, room.cpu/minReq.cpu)
		}
		if minReq.mem > 0 {
			fit = min(fit, room.mem/minReq.mem)
		}
		capacity[i] += max(int(fit), onNode[n], 0)
	}
	ext := 0
	for _, k := range in.external {
		ext += k
	}
	totalMin, totalMax := ext+mustCount, ext+pinnedMembers+mayCount
	// upper[i]: the most matching pods domain i can count.
	upper := make([]int, len(doms))
	for i := range doms {
		upper[i] = min(fixed[i]+free[i], fixed[i]+capacity[i])
	}
	lows := []int{0}
	if in.numDomains >= in.minDomains {
		lows = lows[:0]
		top := 0
		for i := range doms {
			top = max(top, upper[i])
		}
		for g := 0; g <= top; g++ {
			lows = append(lows, g)
		}
	}
	bestFit, anyWindow := -1, false
	for _, g := range lows {
		sumLo, sumHi, ok := 0, 0, true
		for i := range doms {
			lo, hi := max(g, fixed[i]), min(g+in.maxSkew, upper[i])
			if lo > hi {
				ok = false
				break
			}
			sumLo += lo
			sumHi += hi
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

// maxDomainsNamed is how many domains spreadCount names before it only counts the rest.
const maxDomainsNamed = 6
