package policies

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// StaticInfeasibility returns, in words, why no placement of the cluster's N pods can satisfy the
// hard rules on the nodes that exist (e.g. fewer than 6 nodes for N = 6, seed 000 §四), or "" when
// this quick count finds no obstacle. Nodes count as usable when the re-creation template of the
// cluster's first member passes their static checks (cordon, taints, node affinity).
func (c *Cluster) StaticInfeasibility() string {
	relaxed := c.model.Options.RelaxedLimits
	nodeLimit := NodeLimit(c.N, relaxed)
	cmp := "fewer than"
	if relaxed {
		cmp = "at most"
	}
	if nodeLimit == 0 {
		return fmt.Sprintf("with N=%d a node may hold %s N/3 pods, i.e. none: no placement can comply (MaxPodsPerNode)", c.N, cmp)
	}
	usable := c.Members[0].next.static
	nodesPerZone := map[string]int{}
	total := 0
	for n, node := range c.model.Nodes {
		if usable[n] == fitOK && (c.Z() == 0 || c.allowed[node.Zone]) {
			nodesPerZone[node.Zone]++
			total++
		}
	}
	var why []string
	if total*nodeLimit < c.N {
		why = append(why, fmt.Sprintf("N=%d pods at most %d per node (MaxPodsPerNode) need %d usable nodes, found %d", c.N, nodeLimit, (c.N+nodeLimit-1)/nodeLimit, total))
	}
	perShard := 0
	for _, s := range c.Shards {
		if s.StatefulSet != nil && s.StatefulSet.Spec.Replicas != nil {
			perShard = max(perShard, int(*s.StatefulSet.Spec.Replicas))
		} else {
			perShard = max(perShard, len(s.Members))
		}
	}
	switch z := c.Z(); {
	case z >= 2:
		withNodes := 0
		for _, zone := range c.AllowedZones {
			if nodesPerZone[zone] > 0 {
				withNodes++
			}
		}
		if perShard > withNodes {
			why = append(why, fmt.Sprintf("a shard of %d pods needs %d zones with usable nodes (ShardSeparation), found %d", perShard, perShard, withNodes))
		}
		if z >= 3 {
			zoneLimit := ZoneLimit(c.N, relaxed)
			capacity := 0
			for _, zone := range c.AllowedZones {
				capacity += min(zoneLimit, nodesPerZone[zone]*nodeLimit)
			}
			if capacity < c.N {
				why = append(why, fmt.Sprintf("the allowed zones can hold %d of N=%d pods (at most %d per zone, %d per node)", capacity, c.N, zoneLimit, nodeLimit))
			}
		} else {
			for _, zone := range c.AllowedZones {
				if nodesPerZone[zone]*nodeLimit < c.N/2 {
					why = append(why, fmt.Sprintf("zone %s must hold %d pods (ZoneEvenSplit) but its %d usable nodes hold at most %d", zone, c.N/2, nodesPerZone[zone], nodesPerZone[zone]*nodeLimit))
				}
			}
		}
	default:
		if perShard > total {
			why = append(why, fmt.Sprintf("a shard of %d pods needs %d usable nodes (ShardSeparation), found %d", perShard, perShard, total))
		}
	}
	return strings.Join(why, "; ")
}

// NodeClass returns a fingerprint of node n as the rules and the filter see it for this cluster,
// apart from which members run on it: its zone, the matching non-member pods in its domain of
// every spread constraint, and its static fitness and volume fitness for every member. Nodes with
// equal fingerprints and equal members are interchangeable for the planner.
func (c *Cluster) NodeClass(n int) uint64 {
	c.classOnce.Do(c.buildNodeClasses)
	return c.classes[n]
}

func (c *Cluster) buildNodeClasses() {
	masks := map[*reasonCode]bool{}
	var statics [][]reasonCode
	var volumes [][]bool
	vseen := map[*bool]bool{}
	for _, m := range c.Members {
		for _, s := range []*podSpec{m.cur, m.next} {
			if len(s.static) > 0 && !masks[&s.static[0]] {
				masks[&s.static[0]] = true
				statics = append(statics, s.static)
			}
			if len(s.volume) > 0 && !vseen[&s.volume[0]] {
				vseen[&s.volume[0]] = true
				volumes = append(volumes, s.volume)
			}
		}
	}
	c.classes = make([]uint64, len(c.model.Nodes))
	buf := make([]byte, 0, 64)
	for n, node := range c.model.Nodes {
		h := fnv.New64a()
		h.Write([]byte(node.Zone))
		buf = buf[:0]
		for _, in := range c.spread {
			d := in.dom.ofNode[n]
			e := 0
			if in.eligible[n] {
				e = 1
			}
			buf = fmt.Appendf(buf, "|%d,%d", e, in.external[d])
		}
		for _, s := range statics {
			buf = append(buf, byte(s[n]))
		}
		for _, v := range volumes {
			if v[n] {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
		}
		h.Write(buf)
		c.classes[n] = h.Sum64()
	}
}
