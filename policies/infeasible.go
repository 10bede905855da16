package policies

import (
	"fmt"
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
