package plan

import (
	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// diagnosePending explains each unplaced member and, for one no node fits, looks for the
// smallest set of evictions that lets it (and every evicted pod) be placed.
func (pl *planner) diagnosePending(p policies.Placement) []PendingPod {
	c := pl.c
	var out []PendingPod
	for i, n := range p {
		mem := c.Members[i]
		if n >= 0 || mem.Terminating {
			continue
		}
		why, fits := c.ExplainSummary(p, i)
		pp := PendingPod{Pod: mem.Key(), Why: why}
		if fits == 0 {
			pp.Unblock = pl.unblock(i)
		}
		out = append(out, pp)
	}
	return out
}

// unblock finds the fewest evictions (up to 3) after which member target and every evicted
// member are placed, within a twentieth of Options.MaxStates placements (nil when none is found).
func (pl *planner) unblock(target int) []string {
	st := pl.st
	budget := pl.states + pl.opts.MaxStates/20
	var candidates []int
	for _, j := range pl.order {
		if pl.movable[j] && st.Node(j) >= 0 {
			candidates = append(candidates, j)
		}
	}
	for size := 1; size <= 3; size++ {
		var chosen []int
		var rec func(from int) bool
		rec = func(from int) bool {
			if len(chosen) == size {
				return pl.settle(nil, func([]placed) bool {
					pl.states++
					if st.Node(target) < 0 {
						return false
					}
					for _, j := range chosen {
						if st.Node(j) < 0 {
							return false
						}
					}
					return true
				})
			}
			for k := from; k < len(candidates) && pl.states < budget; k++ {
				j := candidates[k]
				n := st.Node(j)
				st.Set(j, -1)
				chosen = append(chosen, j)
				ok := rec(k + 1)
				st.Set(j, n)
				if ok {
					return true
				}
				chosen = chosen[:len(chosen)-1]
			}
			return false
		}
		if rec(0) {
			var names []string
			for _, j := range chosen {
				names = append(names, pl.c.Members[j].Key())
			}
			return names
		}
		if pl.states >= budget {
			return nil
		}
	}
	return nil
}
