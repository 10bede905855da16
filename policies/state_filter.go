package policies

// The filter (kube-scheduler's Filter plugins, as fitter runs them) for one member under a
// State's placement, read from the State's counts instead of every member.

// Fits reports whether member i passes the filter on node n under the state's placement (as
// Cluster.Fits does; i's own node is ignored).
func (st *State) Fits(i, n int) bool {
	var one [1]int
	return len(st.CandidatesIn(i, []int{n}, one[:0])) == 1
}

// CandidatesIn appends to dst the nodes of among, in among's order, where member i passes the
// filter under the state's placement (as Cluster.CandidatesIn does; i's own node is ignored).
func (st *State) CandidatesIn(i int, among []int, dst []int) []int {
	if old := st.p[i]; old >= 0 {
		st.Set(i, -1)
		defer st.Set(i, old)
	}
	f := st.fitterFor(i)
	st.checks += len(among)
	for _, n := range among {
		if r, _ := f.check(n); r == fitOK {
			dst = append(dst, n)
		}
	}
	return dst
}

// FilterChecks returns the nodes the filter has checked under this state so far
// (Work.FilterChecks).
func (st *State) FilterChecks() int { return st.checks }

// domainsOf appends to dst, for each term t of ts, the domains (of t's key) of the members of
// lists[t] (member << 1 | labels kind) that are placed, run with that kind, and are not i.
func (st *State) domainsOf(dst []domainRef, i int, ts []int32, lists [][]int32) []domainRef {
	c, x := st.c, st.x
	for _, t := range ts {
		term := x.terms[t]
		for _, jk := range lists[t] {
			j, k := int(jk>>1), int(jk&1)
			if nj := st.p[j]; nj >= 0 && j != i && c.kind(j, nj) == k {
				if d := term.dom.ofNode[nj]; d >= 0 {
					dst = append(dst, domainRef{term.dom, d})
				}
			}
		}
	}
	return dst
}

// fitterFor returns member i's filter state (newFitter's) read from the counts: i must not be
// placed. The fitter is the state's own, valid until the next call.
func (st *State) fitterFor(i int) *fitter {
	c, x := st.c, st.x
	mem := c.Members[i]
	s := mem.incoming()
	f := &st.fit
	*f = fitter{
		c: c, i: i, spec: s, use: st.use,
		release: c.ClaimsReleasable(i),
		counts:  f.counts[:0], mins: f.mins[:0], self: f.self[:0],
		anti: f.anti[:0], existing: f.existing[:0],
	}
	// PodTopologySpread: the members' counts are the state's (i is not placed).
	for _, idx := range s.spread {
		in := c.spread[idx]
		f.counts = append(f.counts, st.inst[idx].members)
		f.mins = append(f.mins, st.minOf(int(idx)))
		f.self = append(f.self, b2i(in.selector.Matches(s.labels)))
	}
	// InterPodAffinity: the members that i's anti-affinity terms select, and the members whose
	// anti-affinity terms select i, through the precomputed matches.
	f.anti = st.domainsOf(f.anti, i, x.antiIn[i], x.matchers)
	f.existing = st.domainsOf(f.existing, i, x.selectedBy[i], x.carriers)
	// Host ports, scalar resources, inline disks, ReadWriteOncePod claims, CSI volumes: counted
	// from the placement, for the few pods that have any.
	f.addRareFrom(st.p)
	if ts := x.affIn[i]; len(ts) > 0 {
		f.preFilterInterPodAffinity()
		for j, nj := range st.p {
			if j == i || nj < 0 {
				continue
			}
			k := c.kind(j, nj)
			all := true
			for _, t := range ts {
				if !x.match[t][k][j] {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			for a, t := range ts {
				if d := x.terms[t].dom.ofNode[nj]; d >= 0 {
					f.affinity[a][d] = true
					f.affAny = true
				}
			}
		}
	}
	return f
}
