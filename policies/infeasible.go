package policies

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"
)

// StaticInfeasibility returns, in words, why no placement of the cluster's N pods can satisfy the
// hard rules on the nodes that exist (e.g. fewer than 6 nodes for N = 6, seed 000 §四), or "" when
// this quick count finds no obstacle. A node counts as usable when it passes the node-level checks
// (cordon, taints, node affinity) of some member's incoming spec (a Pending pod's own, otherwise
// its re-creation template's) and, with allowed zones, lies in one of them.
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
	nodesPerZone := map[string]int{}
	total := 0
	for zone, n := range c.usableIn {
		if c.Z() == 0 || c.allowed[zone] {
			nodesPerZone[zone] += n
			total += n
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
		why = append(why, c.pinnedByVolumes(z)...)
	default:
		if perShard > total {
			why = append(why, fmt.Sprintf("a shard of %d pods needs %d usable nodes (ShardSeparation), found %d", perShard, perShard, total))
		}
	}
	return strings.Join(why, "; ")
}

// pinnedByVolumes reports what the zonal PersistentVolumes forbid: members whose bound claims
// only fit nodes of one zone stay in that zone (unless Options.ReleaseReplicaClaims releases a
// replica's claims), so more pinned pods in one zone than MaxPodsPerZone allows (z ≥ 3), or two
// pinned pods of one shard in one zone (ShardSeparation), cannot be fixed by evictions.
func (c *Cluster) pinnedByVolumes(z int) []string {
	release := c.model.Options.ReleaseReplicaClaims
	pinned := map[string]int{}
	var zones []string // in order of first appearance
	byShard := map[[2]string]int{}
	for _, mem := range c.Members {
		s := mem.incoming()
		if s.volume == nil || release && mem.Role == RoleReplica {
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
		}
		pinned[zone]++
		byShard[[2]string{mem.Shard, zone}]++
	}
	hint := "; releasing replicas' claims (--release-replica-claims) lets a replica move and resync from its master"
	if release {
		hint = ""
	}
	var why []string
	limit := ZoneLimit(c.N, c.model.Options.RelaxedLimits)
	for _, zone := range zones {
		if z >= 3 && pinned[zone] > limit {
			why = append(why, fmt.Sprintf("zone %s holds %d pods whose zonal PersistentVolumes keep them there, more than the %d a zone may hold (MaxPodsPerZone)%s", zone, pinned[zone], limit, hint))
		}
	}
	for _, sh := range c.Shards {
		for _, zone := range zones {
			if byShard[[2]string{sh.Name, zone}] > 1 {
				why = append(why, fmt.Sprintf("shard %s has %d pods whose zonal PersistentVolumes keep them in zone %s (ShardSeparation)%s", sh.Name, byShard[[2]string{sh.Name, zone}], zone, hint))
			}
		}
	}
	return why
}

// NodeClass returns a fingerprint of node n as the rules and the filter see it for this cluster,
// apart from which members run on it: its zone; per spread constraint its eligibility, its
// domain (for keys other than the hostname) and the matching non-member pods there; its
// node-level, volume and existing-pod anti-affinity fitness for every member spec; the domains
// of the members' (anti-)affinity terms that non-member pods occupy; and how many pods of the
// largest member request fit beside the non-member pods (capped at two above the relaxed
// NodeLimit). Nodes with equal fingerprints and equal members are interchangeable for the
// planner.
func (c *Cluster) NodeClass(n int) uint64 {
	c.classOnce.Do(c.buildNodeClasses)
	return c.classes[n]
}

func (c *Cluster) buildNodeClasses() {
	m := c.model
	var statics, volumes [][]reasonCode
	var antis [][]domainRef
	var terms []*affinityTerm
	var affExt []map[int32]bool
	var affDoms []*domainIndex
	seenStatic := map[*reasonCode]bool{}
	seenTerm := map[*affinityTerm]bool{}
	var maxReq resources
	for _, mem := range c.Members {
		for _, s := range []*podSpec{mem.cur, mem.next} {
			if len(s.static) > 0 && !seenStatic[&s.static[0]] {
				seenStatic[&s.static[0]] = true
				statics = append(statics, s.static)
			}
			if len(s.volume) > 0 && !seenStatic[&s.volume[0]] {
				seenStatic[&s.volume[0]] = true
				volumes = append(volumes, s.volume)
			}
			if len(s.extAnti) > 0 {
				antis = append(antis, s.extAnti)
			}
			for _, t := range append(append([]*affinityTerm(nil), s.anti...), s.affinity...) {
				if !seenTerm[t] {
					seenTerm[t] = true
					terms = append(terms, t)
				}
			}
			for k, ext := range s.affinityExt {
				affExt = append(affExt, ext)
				affDoms = append(affDoms, s.affinity[k].dom)
			}
			maxReq.cpu = max(maxReq.cpu, s.requests.cpu)
			maxReq.mem = max(maxReq.mem, s.requests.mem)
			maxReq.pods = max(maxReq.pods, s.requests.pods)
		}
	}
	hostname := m.domains[LabelHostname]
	c.classes = make([]uint64, len(m.Nodes))
	buf := make([]byte, 0, 128)
	h := fnv.New64a()
	for n := range m.Nodes {
		buf = buf[:0]
		buf = append(buf, c.zones[n]...)
		buf = append(buf, 0)
		for _, in := range c.spread {
			d := in.dom.ofNode[n]
			if in.eligible[n] {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
			if in.dom != hostname {
				buf = binary.AppendVarint(buf, int64(d))
			}
			buf = binary.AppendVarint(buf, int64(in.external[d]))
		}
		for _, s := range statics {
			buf = append(buf, byte(s[n]))
		}
		for _, v := range volumes {
			buf = append(buf, byte(v[n]))
		}
		for _, refs := range antis {
			if inDomains(refs, n) {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
		}
		for _, t := range terms {
			d := t.dom.ofNode[n]
			if t.dom != hostname {
				buf = binary.AppendVarint(buf, int64(d))
			}
			if t.external[d] {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
		}
		for k, ext := range affExt {
			if ext[affDoms[k].ofNode[n]] {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
		}
		// How many pods of the largest member request fit beside the non-member pods, capped just
		// above what a compliant node holds: nodes with more room than that are interchangeable.
		free := m.allocatable[n].sub(m.usedByAll[n].sub(c.memberUse[n]))
		fit := int64(min(len(c.Members), NodeLimit(c.N, true)+2))
		if maxReq.pods > 0 {
			fit = min(fit, free.pods/maxReq.pods)
		}
		if maxReq.cpu > 0 {
			fit = min(fit, free.cpu/maxReq.cpu)
		}
		if maxReq.mem > 0 {
			fit = min(fit, free.mem/maxReq.mem)
		}
		buf = binary.AppendVarint(buf, max(fit, -1))
		h.Reset()
		h.Write(buf)
		c.classes[n] = h.Sum64()
	}
}
