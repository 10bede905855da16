package soak

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Shrinking a failing seed: the soak runs again on subsequences of its events (each at its time,
// as the seed drew it; a kept event that needs a node an earlier event adds keeps that event too)
// until the shortest subsequence that still fails the same check, found by delta debugging
// (Zeller's ddmin: drop halves, then quarters, ... of the events while the failure stays), first
// trying the events active when the first failure happened. Each run is a whole soak on a fresh
// bed, so the shrinking makes at most -soak.shrink-runs of them.

// shrink returns the configuration of the shortest failing sequence it found (cfg itself when
// none is shorter).
func shrink(ctx context.Context, cfg Config, res *result, logf func(string, ...any)) Config {
	check := res.failures[0].check
	all := cfg.Only
	if len(all) == 0 {
		for _, e := range res.events {
			all = append(all, e.Index)
		}
	}
	byIndex := map[int]*Event{}
	for _, e := range res.events {
		byIndex[e.Index] = e
	}
	runs := 0
	fails := func(keep []int) bool {
		if runs >= *flagShrinkRuns || ctx.Err() != nil {
			return false
		}
		runs++
		c := cfg
		c.Only = withDeps(keep, byIndex)
		last := 0
		for _, i := range c.Only {
			if e := byIndex[i]; e != nil && int(e.At.Seconds())+1 > last {
				last = int(e.At.Seconds()) + 1
			}
		}
		c.Duration = min(cfg.Duration, secondsDuration(last))
		c.Out = filepath.Join(cfg.Out, fmt.Sprintf("shrink-%d", runs))
		if cfg.Out == "" {
			c.Out = ""
		}
		logf("shrinking, run %d: %s", runs, c.command())
		r, err := runSoak(ctx, c, nil)
		if err != nil {
			logf("shrinking, run %d could not run: %v", runs, err)
			return false
		}
		for _, f := range r.failures {
			if f.check == check {
				logf("shrinking, run %d fails %q again", runs, check)
				return true
			}
		}
		logf("shrinking, run %d passes %q", runs, check)
		return false
	}
	best := all
	if len(res.culprits) > 0 && len(res.culprits) < len(all) && fails(res.culprits) {
		best = res.culprits
	}
	// ddmin.
	n := 2
	for len(best) >= 2 && runs < *flagShrinkRuns {
		chunk := (len(best) + n - 1) / n
		reduced := false
		for i := 0; i < len(best) && !reduced; i += chunk {
			complement := slices.Concat(best[:i], best[min(i+chunk, len(best)):])
			if len(complement) > 0 && fails(complement) {
				best, n, reduced = complement, max(n-1, 2), true
			}
		}
		if !reduced {
			if n >= len(best) {
				break
			}
			n = min(2*n, len(best))
		}
	}
	out := cfg
	out.Only = withDeps(best, byIndex)
	return out
}

// withDeps returns keep with every event that adds a node a kept event disrupts, sorted.
func withDeps(keep []int, byIndex map[int]*Event) []int {
	out := slices.Clone(keep)
	for changed := true; changed; {
		changed = false
		for _, i := range out {
			e := byIndex[i]
			if e == nil {
				continue
			}
			for _, other := range byIndex {
				if other.Index < e.Index && !slices.Contains(out, other.Index) && overlaps(other.NewNodes, e.Nodes) {
					out = append(out, other.Index)
					changed = true
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func secondsDuration(s int) time.Duration { return time.Duration(s) * time.Second }
