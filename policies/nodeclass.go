package policies

import (
	"encoding/binary"
	"hash/fnv"
)

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
