package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestHandOff covers the hand-off plan of a drain: the fewest failovers taking every master off
// the leaving nodes while MasterQuorum holds over the nodes that stay, the room made on staying
// nodes first, zones counted lost when drained whole, masters stuck without a replica that stays,
// and MasterQuorum left broken when no failovers can keep it.
func TestHandOff(t *testing.T) {
	// spread: masters s0 and s3 on n1, s1 on n3, s2 on n5, s4 on n6 (at most 2 per node and
	// zone); s0's replica on n4, s3's on n2, s1's on n5.
	spread := scenario.Scenario{Zones: scenario.ThreeZones(), Shards: 5, PodsPerShard: 2}.Placed([][]string{
		{"n1", "n4"}, {"n3", "n5"}, {"n5", "n3"}, {"n1", "n2"}, {"n6", "n4"},
	})
	// crowded: draining n1 sends s0's master to n3, which already holds 2 masters (s1, s2), and
	// zone-c holds 2 (s3, s4): room has to be made on n3, then in zone-c.
	crowded := scenario.Scenario{Zones: scenario.ThreeZones(), Shards: 5, PodsPerShard: 2}.Placed([][]string{
		{"n1", "n3"}, {"n3", "n5"}, {"n3", "n6"}, {"n5", "n2"}, {"n6", "n2"},
	})
	type fo struct{ From, To, ToNode string }
	for _, tc := range []struct {
		name   string
		sc     scenario.Scenario
		nodes  []string
		zone   string
		want   []fo
		quorum policies.Quorum
		holds  bool
		stuck  []string
		unsafe string // a phrase of Unsafe ("" when safe)
	}{
		{
			name: "spread, drain n1 (2 masters) → 2 failovers to their replicas on n4 and n2, MasterQuorum holds over n2..n6",
			sc:   spread, nodes: []string{"n1"},
			want:   []fo{{"redis/redis-s0-0", "redis/redis-s0-1", "n4"}, {"redis/redis-s3-0", "redis/redis-s3-1", "n2"}},
			quorum: policies.Quorum{Applies: true, Masters: 5, Zones: 3, NodeLimit: 2, ZoneLimit: 2}, holds: true,
		},
		{
			name: "spread, drain n2 (no master) → nothing to do",
			sc:   spread, nodes: []string{"n2"},
			quorum: policies.Quorum{Applies: true, Masters: 5, Zones: 3, NodeLimit: 2, ZoneLimit: 2}, holds: true,
		},
		{
			name: "spread, drain zone-b (n3, n4) → s1 to n5; MasterQuorum over the 4 nodes and 2 zones that stay (nodes only, at most 2)",
			sc:   spread, zone: "zone-b",
			want:   []fo{{"redis/redis-s1-0", "redis/redis-s1-1", "n5"}},
			quorum: policies.Quorum{Applies: true, Masters: 5, Zones: 2, NodeLimit: 2}, holds: true,
		},
		{
			name: "crowded, drain n1 → room made on n3 (s1 to n5) and in zone-c (s3 to n2) first, then s0 to n3: 3 failovers",
			sc:   crowded, nodes: []string{"n1"},
			want: []fo{
				{"redis/redis-s1-0", "redis/redis-s1-1", "n5"}, {"redis/redis-s3-0", "redis/redis-s3-1", "n2"},
				{"redis/redis-s0-0", "redis/redis-s0-1", "n3"},
			},
			quorum: policies.Quorum{Applies: true, Masters: 5, Zones: 3, NodeLimit: 2, ZoneLimit: 2}, holds: true,
		},
		{
			name: "post-scale-down, drain n1 (4 masters, every replica in zone-b) → 4 failovers, zone-b then holds 4 of 5: unsafe",
			sc:   scenario.PostScaleDown(), nodes: []string{"n1"},
			want: []fo{
				{"redis/redis-s0-0", "redis/redis-s0-1", "n3"}, {"redis/redis-s1-0", "redis/redis-s1-1", "n3"},
				{"redis/redis-s2-0", "redis/redis-s2-1", "n4"}, {"redis/redis-s3-0", "redis/redis-s3-1", "n4"},
			},
			quorum: policies.Quorum{Applies: true, Masters: 5, Zones: 3, NodeLimit: 2, ZoneLimit: 2}, holds: false,
			unsafe: "at most 2 of the 5 masters per node and 2 per zone",
		},
		{
			name: "post-scale-down, drain n1 and n3 → s0 and s1 have no replica that stays (stuck); s2, s3 to n4",
			sc:   scenario.PostScaleDown(), nodes: []string{"n1", "n3"},
			want:   []fo{{"redis/redis-s2-0", "redis/redis-s2-1", "n4"}, {"redis/redis-s3-0", "redis/redis-s3-1", "n4"}},
			quorum: policies.Quorum{Applies: true, Masters: 5, Zones: 3, NodeLimit: 2, ZoneLimit: 2}, holds: true,
			stuck:  []string{"redis/redis-s0-0", "redis/redis-s1-0"},
			unsafe: "no replica on a node that stays can take over from master redis/redis-s0-0, redis/redis-s1-0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tc.sc
			sc.RoleLabels = true
			m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
			if err != nil {
				t.Fatal(err)
			}
			leaving, err := m.LeavingNodes(tc.nodes, tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			h := HandOff(m.Clusters[0], leaving)
			var got []fo
			for _, mv := range h.Moves {
				if mv.Kind != KindFailover || mv.Pod != mv.From || !mv.Failover {
					t.Errorf("move %+v is not a failover step of its From", mv)
				}
				got = append(got, fo{mv.From, mv.To, mv.ToNode})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("failovers (-want +got):\n%s", diff)
			}
			q := h.Quorum
			q.Note = ""
			if diff := cmp.Diff(tc.quorum, q); diff != "" {
				t.Errorf("quorum over the nodes that stay (-want +got):\n%s", diff)
			}
			if h.QuorumHolds != tc.holds {
				t.Errorf("QuorumHolds = %v, want %v", h.QuorumHolds, tc.holds)
			}
			if diff := cmp.Diff(tc.stuck, h.Stuck); diff != "" {
				t.Errorf("stuck (-want +got):\n%s", diff)
			}
			switch u := h.Unsafe(); {
			case tc.unsafe == "" && u != "":
				t.Errorf("Unsafe() = %q, want safe", u)
			case !strings.Contains(u, tc.unsafe):
				t.Errorf("Unsafe() = %q, want it to say %q", u, tc.unsafe)
			}
			if h.Done() != (len(tc.want) == 0 && tc.holds && len(tc.stuck) == 0) {
				t.Errorf("Done() = %v", h.Done())
			}
		})
	}
}

// TestLeavingNodes covers the names and zones a drain takes, and the errors naming what is not
// there.
func TestLeavingNodes(t *testing.T) {
	m, err := policies.Build(scenario.PostScaleDown().MustSnapshot(), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		nodes   []string
		zone    string
		want    []string
		wantErr string
	}{
		{name: "n1 → n1", nodes: []string{"n1"}, want: []string{"n1"}},
		{name: "zone-b and n1 → n1, n3, n4", nodes: []string{"n1"}, zone: "zone-b", want: []string{"n1", "n3", "n4"}},
		{name: "n9 → error naming n9", nodes: []string{"n1", "n9"}, wantErr: "no node n9 in the cluster"},
		{name: "zone-x → error naming the zone", zone: "zone-x", wantErr: `no node in zone "zone-x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := m.LeavingNodes(tc.nodes, tc.zone)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, l.Names(m)); diff != "" {
				t.Errorf("leaving (-want +got):\n%s", diff)
			}
		})
	}
}
