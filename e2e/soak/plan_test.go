package soak

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testZones are the soak's zones as Plan takes them.
func testZones() map[string][]string {
	zones := map[string][]string{}
	for _, z := range soakZones {
		zones[z.Name] = z.Nodes
	}
	return zones
}

// TestPlan checks the sequences the seeds draw, without a bed: the same seed draws the same
// sequence; an event starts at least every 30 s; a 30-minute soak has at least 60 events of 8
// kinds or more, and the seeds together every kind; no two events disrupt a zone at once, and a zone drain, a pool scale-down or a
// rolling restart has the bed alone; a node an event disrupts exists then (the bed's, or one an
// earlier event added).
func TestPlan(t *testing.T) {
	cfg := planConfig{Duration: 30 * time.Minute, Zones: testZones(), Shards: 6, MinGap: 10 * time.Second, MaxGap: 30 * time.Second}
	all := map[Kind]bool{}
	for _, seed := range []uint64{1, 2, 3, 4, 5, 17, 42} {
		a, b := Plan(seed, cfg), Plan(seed, cfg)
		if diff := cmp.Diff(describe(a), describe(b)); diff != "" {
			t.Fatalf("seed %d: two draws differ (-first +second):\n%s", seed, diff)
		}
		if len(a) < 60 {
			t.Errorf("seed %d: %d events in 30 minutes, want at least 60", seed, len(a))
		}
		seen := map[Kind]bool{}
		prev := time.Duration(0)
		exists := map[string]bool{}
		for _, z := range soakZones {
			for _, n := range z.Nodes {
				exists[n] = true
			}
		}
		for _, e := range a {
			seen[e.Kind] = true
			if e.At-prev > 30*time.Second {
				t.Errorf("seed %d: %s starts %s after the event before it", seed, e, e.At-prev)
			}
			prev = e.At
			for _, n := range e.Nodes {
				if !exists[n] {
					t.Errorf("seed %d: %s disrupts %s, which no event has added", seed, e, n)
				}
			}
			for _, n := range e.NewNodes {
				exists[n] = true
			}
		}
		if len(seen) < 8 {
			t.Errorf("seed %d: %d kinds of the %d in 30 minutes, want at least 8", seed, len(seen), len(kinds))
		}
		for k := range seen {
			all[k] = true
		}
		// Node events in one zone never overlap (their reserved spans).
		for i, e := range a {
			for _, f := range a[i+1:] {
				if f.At >= e.At+span(e) {
					continue
				}
				heavy := func(k Kind) bool { return k == KindDrainZone || k == KindPoolScaleDown || k == KindRollingRestart }
				nodeKind := func(k Kind) bool {
					return heavy(k) || k == KindDrainNode || k == KindAutoscaler || k == KindKarpenter || k == KindNodeLost
				}
				if heavy(e.Kind) && nodeKind(f.Kind) || heavy(f.Kind) && nodeKind(e.Kind) {
					t.Errorf("seed %d: %s overlaps %s", seed, f, e)
				}
				if nodeKind(e.Kind) && nodeKind(f.Kind) && zoneOf(e) != "" && zoneOf(e) == zoneOf(f) {
					t.Errorf("seed %d: %s and %s disrupt zone %s at once", seed, e, f, zoneOf(e))
				}
			}
		}
	}
	for _, k := range kinds {
		if !all[k] {
			t.Errorf("no seed draws a %s in 30 minutes", k)
		}
	}
	for _, e := range Plan(1, planConfig{Duration: 3 * time.Minute, Zones: testZones(), Shards: 6, MinGap: 10 * time.Second, MaxGap: 30 * time.Second}) {
		t.Logf("seed 1, 3 minutes: %s", e)
	}
}

func zoneOf(e *Event) string {
	if e.Zone != "" {
		return e.Zone
	}
	if len(e.Nodes) == 1 {
		for _, z := range soakZones {
			for _, n := range z.Nodes {
				if n == e.Nodes[0] {
					return z.Name
				}
			}
		}
		if len(e.NewZones) > 0 {
			return e.NewZones[0]
		}
	}
	return ""
}

func describe(es []*Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.String())
	}
	return out
}
