package policies

import (
	"fmt"
	"strings"
)

// This file keeps the first form of spreadInfeasibility (before its counts were made once per
// cluster and per group of members: spreadBasis) as the reference the differential test
// (TestSpreadCountMatchesReference) compares the fast form with: it visits every node for every
// member, and counts in maps keyed by domain, which grow with the nodes of the whole snapshot.

// SpreadCounts returns what spreadInfeasibility finds for the cluster (got) and what the reference
// finds (want).
func (c *Cluster) SpreadCounts() (got, want []string) {
	return c.spreadInfeasibility(nil), c.spreadInfeasibilityRef()
}

// spreadInfeasibilityRef is the reference form of spreadInfeasibility.
func (c *Cluster) spreadInfeasibilityRef() []string {
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
		if w := c.spreadCountRef(in); w != "" {
			why = append(why, w)
		}
	}
	return why
}

// spreadCount judges one constraint instance by counting (spreadInfeasibility); "" when some
// counts may comply.
func (c *Cluster) spreadCountRef(in *spreadInstance) string {
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
