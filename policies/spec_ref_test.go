package policies

import (
	"fmt"
	"slices"
)

// ExtAntiMismatches recomputes, for every member's running pod and re-creation template, the
// domains where another pod's required anti-affinity term matches it (antiIndex.against, with a
// fresh builder) and returns the specs whose extAnti differs as a set: derivedSpec reuses the
// spec it derives from when the labels agree on the keys those terms read (antiIndex.keysFor).
func (c *Cluster) ExtAntiMismatches() []string {
	c.b = newBuilder(c.model)
	defer func() { c.b = nil }()
	key := func(rs []domainRef) []string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%p/%d", r.dom, r.id))
		}
		slices.Sort(out)
		return out
	}
	var bad []string
	for _, mem := range c.Members {
		for _, s := range [2]*podSpec{mem.cur, mem.next} {
			if got, want := key(s.extAnti), key(c.model.anti.against(c, s.podOf())); !slices.Equal(got, want) {
				bad = append(bad, fmt.Sprintf("%s (spec of %s): extAnti %v, want %v", mem.Key(), s.podOf().Name, got, want))
			}
		}
	}
	return bad
}
