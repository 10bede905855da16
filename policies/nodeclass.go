package policies

// NodeClass returns a fingerprint of node n as the rules and the filter see it for this cluster,
// apart from which members run on it: its zone; its domain for every topology key of a spread
// constraint or (anti-)affinity term other than the hostname; per spread constraint its
// eligibility and the matching non-member pods in its domain; its node-level, volume and
// existing-pod anti-affinity fitness for every member spec (node name included); whether
// non-member pods bind host ports or use inline disks of a member spec there; whether
// non-member pods matching the members' (anti-)affinity terms occupy its domains; how many pods
// of the largest member request fit beside the non-member pods (every requested resource:
// capped at two above the relaxed NodeLimit); and, per CSI driver of the members' volumes, how
// many volumes may still attach (capped alike) and whether a member's volume is attached there
// by a non-member; and whether it is being emptied (Node.Leaving). Nodes with
// equal fingerprints and equal members are interchangeable for the planner. Each part enters
// the fingerprint once, and counts that are zero on every node not at all, so that building the
// classes costs O(nodes × distinct parts).
func (c *Cluster) NodeClass(n int) uint64 {
	c.classOnce.Do(c.buildNodeClasses)
	return c.classPrints[c.classOf[n]]
}

// NodeClasses numbers the nodes by NodeClass: classOf[n] is node n's class, the classes numbered
// 0 to count-1 in order of their first node. classOf is shared: read only.
func (c *Cluster) NodeClasses() (classOf []int32, count int) {
	c.classOnce.Do(c.buildNodeClasses)
	return c.classOf, len(c.classPrints)
}

func (c *Cluster) buildNodeClasses() {
	c.read.Store(true)
	m := c.model
	hostname := m.domains[LabelHostname]
	// What tells nodes apart, each part once: the domains of every key but the hostname (a
	// spread constraint's or an affinity term's), the eligible-node sets, the node-level and
	// volume masks, and only the non-member counts that are not zero everywhere.
	var doms []*domainIndex
	var eligible [][]bool
	var spreadExt []*spreadInstance
	var statics, volumes [][]reasonCode
	var boolMasks [][]bool // host ports and inline disks of non-members
	var antis [][]domainRef
	var terms []*affinityTerm
	var affExt []map[int32]bool
	var affDoms []*domainIndex
	seenDom := map[*domainIndex]bool{hostname: true}
	seenElig := map[*bool]bool{}
	seenMask := map[*reasonCode]bool{}
	seenBool := map[*bool]bool{}
	addBool := func(mask []bool) {
		if len(mask) > 0 && !seenBool[&mask[0]] {
			seenBool[&mask[0]] = true
			boolMasks = append(boolMasks, mask)
		}
	}
	var maxScalar []int64 // by slot of c.scalars
	maxVols := 0          // the most CSI volumes of one spec
	rare := false
	seenAnti := map[*domainRef]bool{}
	seenTerm := map[*affinityTerm]bool{}
	addDom := func(d *domainIndex) {
		if !seenDom[d] {
			seenDom[d] = true
			doms = append(doms, d)
		}
	}
	for _, in := range c.spread {
		addDom(in.dom)
		if len(in.eligible) > 0 && !seenElig[&in.eligible[0]] {
			seenElig[&in.eligible[0]] = true
			eligible = append(eligible, in.eligible)
		}
		if len(in.external) > 0 {
			spreadExt = append(spreadExt, in)
		}
	}
	var maxReq resources
	for _, mem := range c.Members {
		for _, s := range []*podSpec{mem.cur, mem.next} {
			if len(s.static) > 0 && !seenMask[&s.static[0]] {
				seenMask[&s.static[0]] = true
				statics = append(statics, s.static)
			}
			if len(s.volume) > 0 && !seenMask[&s.volume[0]] {
				seenMask[&s.volume[0]] = true
				volumes = append(volumes, s.volume)
			}
			if len(s.extAnti) > 0 && !seenAnti[&s.extAnti[0]] {
				seenAnti[&s.extAnti[0]] = true
				antis = append(antis, s.extAnti)
			}
			for _, ts := range [][]*affinityTerm{s.anti, s.affinity} {
				for _, t := range ts {
					addDom(t.dom)
					if !seenTerm[t] && len(t.external) > 0 {
						seenTerm[t] = true
						terms = append(terms, t)
					}
				}
			}
			for k, ext := range s.affinityExt {
				if len(ext) > 0 {
					affExt = append(affExt, ext)
					affDoms = append(affDoms, s.affinity[k].dom)
				}
			}
			maxReq.cpu = max(maxReq.cpu, s.requests.cpu)
			maxReq.mem = max(maxReq.mem, s.requests.mem)
			maxReq.eph = max(maxReq.eph, s.requests.eph)
			maxReq.pods = max(maxReq.pods, s.requests.pods)
			addBool(s.portMask)
			addBool(s.diskMask)
			maxVols = max(maxVols, len(s.csi))
			rare = rare || s.scalars != nil
		}
	}
	var x *scalarIndex
	if rare {
		c.scalarOnce.Do(c.buildScalarIndex)
		x = c.scalars
		maxScalar = make([]int64, len(x.names))
		for _, mem := range c.Members {
			for _, s := range [2]*podSpec{mem.cur, mem.next} {
				for _, r := range s.scalars {
					k := x.slot(r.name)
					maxScalar[k] = max(maxScalar[k], r.qty)
				}
			}
		}
	}
	var vx *csiIndex
	var sharedOn map[int32]bool
	if maxVols > 0 {
		c.csiOnce.Do(c.buildCSIIndex)
		vx = c.csiIdx
		for nv := range vx.shared {
			if sharedOn == nil {
				sharedOn = map[int32]bool{}
			}
			sharedOn[nv.node] = true
		}
	}
	c.classOf = make([]int32, len(m.Nodes))
	index := map[uint64]int32{}
	fitCap := int64(min(len(c.Members), NodeLimit(c.N, true)+2))
	for n := range m.Nodes {
		h := fingerprint(0).add(int64(c.zoneID[n]))
		for _, d := range doms {
			h = h.add(int64(d.ofNode[n]))
		}
		for _, e := range eligible {
			h = h.add(int64(b2i(e[n])))
		}
		for _, in := range spreadExt {
			h = h.add(int64(in.external[in.dom.ofNode[n]]))
		}
		for _, s := range statics {
			h = h.add(int64(s[n]))
		}
		for _, v := range volumes {
			h = h.add(int64(v[n]))
		}
		for _, b := range boolMasks {
			h = h.add(int64(b2i(b[n])))
		}
		for _, refs := range antis {
			h = h.add(int64(b2i(inDomains(refs, n))))
		}
		for _, t := range terms {
			h = h.add(int64(b2i(t.external[t.dom.ofNode[n]])))
		}
		for k, ext := range affExt {
			h = h.add(int64(b2i(ext[affDoms[k].ofNode[n]])))
		}
		// How many pods of the largest member request fit beside the non-member pods, capped just
		// above what a compliant node holds: nodes with more room than that are interchangeable.
		free := m.allocatable[n].sub(m.usedByAll[n].sub(c.memberUse[n]))
		fit := fitCap
		if maxReq.pods > 0 {
			fit = min(fit, free.pods/maxReq.pods)
		}
		if maxReq.cpu > 0 {
			fit = min(fit, free.cpu/maxReq.cpu)
		}
		if maxReq.mem > 0 {
			fit = min(fit, free.mem/maxReq.mem)
		}
		if maxReq.eph > 0 {
			fit = min(fit, free.eph/maxReq.eph)
		}
		for k, q := range maxScalar {
			if q > 0 {
				fit = min(fit, x.free[k][n]/q)
			}
		}
		// How many volumes of each driver may still attach, capped alike, and whether a member's
		// volume is attached there by a non-member (then it is not new there).
		for k := range vx.driversOrNil() {
			h = h.add(int64(min(int64(vx.free[k][n]), fitCap*int64(maxVols)+1)))
		}
		h = h.add(int64(b2i(sharedOn[int32(n)])))
		if m.Nodes[n].Leaving != "" {
			// Its members may not become masters (State.Promotable).
			h = h.add(-2)
		}
		c.classOf[n] = firstSeen(index, &c.classPrints, uint64(h.add(max(fit, -1))))
	}
}

// fingerprint is a 64-bit hash of a sequence of numbers (each mixed in with SplitMix64's
// finalizer), for NodeClass.
type fingerprint uint64

func (f fingerprint) add(v int64) fingerprint {
	return fingerprint(mix(uint64(f)*0x9e3779b97f4a7c15 ^ uint64(v)))
}
