package policies

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// zoneOf returns a node's zone: LabelZone, else LabelZoneLegacy, else "".
func zoneOf(n *corev1.Node) string {
	if z, ok := n.Labels[LabelZone]; ok {
		return z
	}
	return n.Labels[LabelZoneLegacy]
}

// isZoneKey reports whether key is LabelZone or LabelZoneLegacy.
func isZoneKey(key string) bool { return key == LabelZone || key == LabelZoneLegacy }

// findZones sets ZoneKey, the allowed zones, and the usable nodes per zone.
func (c *Cluster) findZones() {
	m := c.model
	// The reference specs: each distinct re-creation template (the operator's current intent),
	// by the parts read here (zone key and list, node affinity mask: its specCore), in member
	// order.
	var refs []*specCore
	for _, mem := range c.Members {
		if s := mem.next.specCore; !slices.Contains(refs, s) {
			refs = append(refs, s)
		}
	}
	c.ZoneKey = ""
	for _, s := range refs {
		if k := s.zoneKey; k != "" {
			c.ZoneKey = k
			break
		}
	}
	if c.ZoneKey == "" {
		c.ZoneKey = m.zoneKey
	}
	x := 0
	if c.ZoneKey == LabelZoneLegacy {
		x = 1
	}
	c.zones, c.zoneID, c.zoneName = m.zoneNames[x], m.zoneIDs[x], m.zoneIDNames[x]
	c.allowed = map[string]bool{}
	for _, s := range refs {
		if s.zoneList != nil {
			c.ZoneList = true
			for _, z := range s.zoneList {
				c.allowed[z] = true
			}
		}
	}
	if !c.ZoneList {
		for _, s := range refs {
			for _, z := range c.b.zonesAdmitted(s.affinityMask, c.ZoneKey == LabelZoneLegacy) {
				c.allowed[z] = true
			}
		}
	}
	for z := range c.allowed {
		c.AllowedZones = append(c.AllowedZones, z)
	}
	sort.Strings(c.AllowedZones)
	c.allowedID = make([]bool, len(c.zoneName))
	for id, z := range c.zoneName {
		c.allowedID[id] = c.allowed[z]
	}

	// Usable nodes: those passing the node-level checks of some member's incoming spec.
	var keys [][2]int32
	for _, mem := range c.Members {
		s := mem.incoming()
		if k := [2]int32{s.aff, s.tol}; !slices.Contains(keys, k) {
			keys = append(keys, k)
			c.usable = append(c.usable, s.static)
		}
	}
	c.usableIn = c.b.usableCounts(c, keys)
}

// isUsable reports whether node n passes the node-level checks (cordon, taints, node affinity)
// of some member's incoming spec.
func (c *Cluster) isUsable(n int) bool {
	for _, s := range c.usable {
		if s[n] == fitOK {
			return true
		}
	}
	return false
}

// usableCounts returns the usable nodes per zone for a set of node-level masks (by their
// (affinity, tolerations) ids), cached.
func (b *builder) usableCounts(c *Cluster, keys [][2]int32) map[string]int {
	m := b.m
	sort.Slice(keys, func(a, b int) bool {
		if keys[a][0] != keys[b][0] {
			return keys[a][0] < keys[b][0]
		}
		return keys[a][1] < keys[b][1]
	})
	sb := &b.sig
	sb.reset()
	sb.str(c.ZoneKey)
	for _, k := range keys {
		sb.num(int64(k[0]))
		sb.num(int64(k[1]))
	}
	if counts, ok := b.usableIn[string(sb.b)]; ok {
		return counts
	}
	key := string(sb.b)
	counts := map[string]int{}
	for n := range m.Nodes {
		if c.isUsable(n) {
			counts[c.zones[n]]++
		}
	}
	b.usableIn[key] = counts
	return counts
}

// zonesAdmitted returns the zones (read GA-first, or legacy-first) of the nodes that mask admits,
// cached per mask.
func (b *builder) zonesAdmitted(mask []bool, legacyFirst bool) []string {
	m := b.m
	if len(mask) == 0 {
		return nil
	}
	zones := m.zoneNames[0]
	if legacyFirst {
		zones = m.zoneNames[1]
	}
	key := zoneSetKey{&mask[0], legacyFirst}
	if z, ok := b.zoneSets[key]; ok {
		return z
	}
	z := collectZones(mask, zones)
	b.zoneSets[key] = z
	return z
}

type zoneSetKey struct {
	mask        *bool
	legacyFirst bool
}

func collectZones(mask []bool, zones []string) []string {
	set := map[string]bool{}
	var out []string
	for i, ok := range mask {
		if ok && zones[i] != "" && !set[zones[i]] {
			set[zones[i]] = true
			out = append(out, zones[i])
		}
	}
	sort.Strings(out)
	return out
}

// zoneList returns the zones a pod's nodeSelector and required node affinity permit through
// `In` requirements on a zone key (the allowed zones): per node selector term, the
// intersection of its zone requirements; over the terms, the union; intersected with a zone
// nodeSelector. It returns ok=false when some term (or the pod as a whole) admits any zone, and
// the key the list was written with.
func zoneList(p *corev1.Pod) (zones []string, key string, ok bool) {
	var fromSelector map[string]bool
	for _, k := range []string{LabelZone, LabelZoneLegacy} {
		if z, has := p.Spec.NodeSelector[k]; has {
			if fromSelector == nil {
				fromSelector = map[string]bool{z: true}
				key = k
			} else if !fromSelector[z] {
				fromSelector = map[string]bool{} // two different zones required: none
			}
		}
	}
	var fromAffinity map[string]bool
	if na := requiredNodeAffinity(p); na != nil && len(na.NodeSelectorTerms) > 0 {
		fromAffinity = map[string]bool{}
		for _, term := range na.NodeSelectorTerms {
			var termSet map[string]bool
			for _, r := range term.MatchExpressions {
				if !isZoneKey(r.Key) || r.Operator != corev1.NodeSelectorOpIn {
					continue
				}
				if key == "" {
					key = r.Key
				}
				vals := map[string]bool{}
				for _, v := range r.Values {
					if termSet == nil || termSet[v] {
						vals[v] = true
					}
				}
				termSet = vals
			}
			if termSet == nil {
				fromAffinity = nil // this term admits any zone
				break
			}
			for z := range termSet {
				fromAffinity[z] = true
			}
		}
	}
	var set map[string]bool
	switch {
	case fromSelector != nil && fromAffinity != nil:
		set = map[string]bool{}
		for z := range fromSelector {
			if fromAffinity[z] {
				set[z] = true
			}
		}
	case fromSelector != nil:
		set = fromSelector
	case fromAffinity != nil:
		set = fromAffinity
	default:
		return nil, "", false
	}
	zones = make([]string, 0, len(set))
	for z := range set {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	return zones, key, true
}
