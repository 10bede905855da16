package policies_test

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestMasterQuorum covers the MasterQuorum rule at its boundaries: M odd and even, Z = 2 (node
// part only), Z = 3 with M = 4 (no placement keeps a zone below M/2: the best that exists), M ≤ 2,
// masters without slots, and roles unknown (skipped, never guessed). Roles come from the role
// label: pod -0 is the master unless master names other ordinals.
func TestMasterQuorum(t *testing.T) {
	for _, tc := range []struct {
		name string
		sc   scenario.Scenario
		// master[s] is shard s's master ordinal (0 when absent); noRoles builds without the role
		// label; empty marks masters that serve no slot.
		master  map[int]int
		noRoles bool
		empty   []string
		want    []ruleHit // MasterQuorum only
		quorum  policies.Quorum
		// message and note: phrases of some violation's message and of Quorum.Note.
		message, note []string
	}{
		{
			name:    "post-scale-down: n1 holds 4 of 5 masters, zone-a 5 → MasterQuorum n1 4/2, zone-a 5/2",
			sc:      scenario.PostScaleDown(),
			want:    []ruleHit{{policies.MasterQuorum, "n1", 4, 2}, {policies.MasterQuorum, "zone-a", 5, 2}},
			quorum:  policies.Quorum{Applies: true, Masters: 5, Zones: 3, NodeLimit: 2, ZoneLimit: 2},
			message: []string{"node n1 holds 4 of the 5 masters", "fewer than M/2 (at most 2)"},
		},
		{
			name:   "role-only: pods comply, n1 and zone-a hold 3 of 5 masters → MasterQuorum n1 3/2, zone-a 3/2",
			sc:     scenario.RoleOnly(),
			want:   []ruleHit{{policies.MasterQuorum, "n1", 3, 2}, {policies.MasterQuorum, "zone-a", 3, 2}},
			quorum: policies.Quorum{Applies: true, Masters: 5, Zones: 3, NodeLimit: 2, ZoneLimit: 2},
		},
		{
			name:   "role-only with shard 0's master on n3 → holds (2 per node and zone at most)",
			sc:     scenario.RoleOnly(),
			master: map[int]int{0: 1},
			quorum: policies.Quorum{Applies: true, Masters: 5, Zones: 3, NodeLimit: 2, ZoneLimit: 2},
		},
		{
			name:    "Z=2, M=4, n1 holds 2 masters → MasterQuorum n1 2/1, node part only, said in the message and the note",
			sc:      scenario.TwoZones(),
			want:    []ruleHit{{policies.MasterQuorum, "n1", 2, 1}},
			quorum:  policies.Quorum{Applies: true, Masters: 4, Zones: 2, NodeLimit: 1},
			message: []string{"with 2 zones only nodes are checked"},
			note:    []string{"with 2 zones, the loss of a zone always takes half of the M=4 masters or more", "a third zone would fix it"},
		},
		{
			name: "M=4 in 3 zones: some zone holds 2 whatever the placement → zone limit 2 (the best that exists), node limit 1; the note names the loss and the fixes",
			sc: scenario.Scenario{Zones: scenario.ThreeZones(), Shards: 4, PodsPerShard: 2}.Placed([][]string{
				{"n1", "n3"}, {"n2", "n5"}, {"n4", "n6"}, {"n5", "n2"},
			}),
			quorum: policies.Quorum{Applies: true, Masters: 4, Zones: 3, NodeLimit: 1, ZoneLimit: 2, ZoneBestEffort: true},
			note: []string{"with M=4 masters in 3 zones, some zone holds 2 of them whatever the placement", "needs 3 of 4",
				"3 or 5 masters (shards), or 4 zones would fix it", "at most 2 per zone and 1 per node"},
		},
		{
			name: "M=4 in 3 zones, zone-a holds 3 masters → MasterQuorum zone-a 3/2 (best effort)",
			sc: scenario.Scenario{Zones: scenario.ThreeZones(), Shards: 4, PodsPerShard: 2}.Placed([][]string{
				{"n1", "n3"}, {"n2", "n5"}, {"n4", "n6"}, {"n5", "n2"},
			}),
			master:  map[int]int{3: 1},
			want:    []ruleHit{{policies.MasterQuorum, "n2", 2, 1}, {policies.MasterQuorum, "zone-a", 3, 2}},
			note:    []string{"some zone holds 2 of them whatever the placement"},
			quorum:  policies.Quorum{Applies: true, Masters: 4, Zones: 3, NodeLimit: 1, ZoneLimit: 2, ZoneBestEffort: true},
			message: []string{"no placement keeps every zone below M/2 (4 masters in 3 zones), so masters spread evenly: at most 2 per zone"},
		},
		{
			name:   "M=2: losing any master leaves no majority → at most 1 per node and per zone, the note says no placement survives",
			sc:     scenario.Scenario{Zones: scenario.ThreeZones(), Shards: 2, PodsPerShard: 2}.Placed([][]string{{"n1", "n3"}, {"n2", "n5"}}),
			want:   []ruleHit{{policies.MasterQuorum, "zone-a", 2, 1}},
			quorum: policies.Quorum{Applies: true, Masters: 2, Zones: 3, NodeLimit: 1, NodeBestEffort: true, ZoneLimit: 1, ZoneBestEffort: true},
			note:   []string{"with M=2 masters serving slots, losing any master leaves no majority", "3 or more masters (shards) would fix it"},
		},
		{
			name:   "a master without slots does not vote: M=4 instead of 5, n1 holds 3 of them → MasterQuorum n1 3/1",
			sc:     scenario.PostScaleDown(),
			empty:  []string{"redis-s0-0"},
			want:   []ruleHit{{policies.MasterQuorum, "n1", 3, 1}, {policies.MasterQuorum, "zone-a", 4, 2}},
			quorum: policies.Quorum{Applies: true, Masters: 4, Zones: 3, NodeLimit: 1, ZoneLimit: 2, ZoneBestEffort: true},
			note:   []string{"with M=4 masters in 3 zones"},
		},
		{
			name:    "roles unknown → skipped with a note, never guessed",
			sc:      scenario.PostScaleDown(),
			noRoles: true,
			quorum:  policies.Quorum{Zones: 3},
			note:    []string{"MasterQuorum not checked: the members' Redis roles are unknown"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tc.sc
			sc.RoleLabels = true
			snap := sc.MustSnapshot()
			for _, p := range snap.Pods {
				for s, o := range tc.master {
					switch p.Name {
					case sc.PodName(s, 0):
						p.Labels[scenario.RoleLabel] = "replica"
					case sc.PodName(s, o):
						p.Labels[scenario.RoleLabel] = "master"
					}
				}
			}
			opts := policies.Options{RoleLabel: scenario.RoleLabel}
			if tc.noRoles {
				opts.RoleLabel = ""
			}
			m, err := policies.Build(snap, opts)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			for _, mem := range c.Members {
				for _, e := range tc.empty {
					if mem.Name() == e {
						mem.EmptyMaster = true
					}
				}
			}
			vs := c.Evaluate(c.Current())
			var got []policies.Violation
			for _, v := range vs {
				if v.Rule == policies.MasterQuorum {
					got = append(got, v)
				}
			}
			if diff := gocmp.Diff(tc.want, hardHits(got)); diff != "" {
				t.Errorf("MasterQuorum violations (-want +got):\n%s", diff)
			}
			q := c.MasterQuorum()
			note := q.Note
			q.Note = ""
			if diff := gocmp.Diff(tc.quorum, q); diff != "" {
				t.Errorf("Quorum (-want +got):\n%s", diff)
			}
			for _, w := range tc.note {
				if !strings.Contains(note, w) {
					t.Errorf("note %q lacks %q", note, w)
				}
			}
			if len(tc.note) == 0 && note != "" {
				t.Errorf("note %q, want none", note)
			}
			for _, w := range tc.message {
				found := false
				for _, v := range got {
					found = found || strings.Contains(v.Message, w)
				}
				if !found {
					t.Errorf("violations %+v: no message says %q", got, w)
				}
			}
			for _, v := range got {
				if len(v.Pods) != v.Count {
					t.Errorf("%s %s: %d pods named, count %d", v.Rule, v.Domain, len(v.Pods), v.Count)
				}
			}
		})
	}
}
