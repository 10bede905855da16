package constraints

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// literalMaxSkew is the recommendation's wording taken literally: n/d, "minus 1 when d divides n"
// unless relaxed, at least 1.
func literalMaxSkew(n, d int, relaxed bool) int {
	s := n / d
	if n%d == 0 && !relaxed {
		s--
	}
	return max(s, 1)
}

// TestMaxSkewFollowsTheFormula checks that deriving the maxSkew from the rules' limits gives the
// written formula (literalMaxSkew) for every cluster size up to 300.
func TestMaxSkewFollowsTheFormula(t *testing.T) {
	for n := 0; n <= 300; n++ {
		for _, relaxed := range []bool{false, true} {
			if got, want := NodeMaxSkew(n, relaxed), literalMaxSkew(n, 3, relaxed); got != want {
				t.Errorf("NodeMaxSkew(%d, %v) = %d, want %d", n, relaxed, got, want)
			}
			if got, want := ZoneMaxSkew(n, relaxed), literalMaxSkew(n, 2, relaxed); got != want {
				t.Errorf("ZoneMaxSkew(%d, %v) = %d, want %d", n, relaxed, got, want)
			}
		}
	}
}

func TestGenerate(t *testing.T) {
	type spread struct {
		Key  string
		Skew int32
		Hard bool
	}
	input := func(mut ...func(*Input)) Input {
		in := Input{
			ClusterLabels: map[string]string{"cluster": "rc1"}, ShardLabels: map[string]string{"shard": "rc1-s0"},
			Shards: 5, PodsPerShard: 2, Zones: []string{"a", "b", "c"},
		}
		for _, m := range mut {
			m(&in)
		}
		return in
	}
	for _, tc := range []struct {
		name         string
		in           Input
		wantSpread   []spread
		wantAntiKey  string
		wantZoneTerm bool
		wantErr      bool
	}{
		{
			name: "N=10 over 3 zones → hostname 3, zone 4, soft 1 on both, anti-affinity on zone",
			in:   input(),
			wantSpread: []spread{
				{policies.LabelHostname, 3, true}, {policies.LabelZone, 4, true},
				{policies.LabelHostname, 1, false}, {policies.LabelZone, 1, false},
			},
			wantAntiKey: policies.LabelZone, wantZoneTerm: true,
		},
		{
			name: "N=9 relaxed over 3 zones with the legacy zone key → hostname 3, zone 4 on the legacy key",
			in: input(func(in *Input) {
				in.Shards, in.PodsPerShard, in.Relaxed, in.ZoneKey = 3, 3, true, policies.LabelZoneLegacy
			}),
			wantSpread: []spread{
				{policies.LabelHostname, 3, true}, {policies.LabelZoneLegacy, 4, true},
				{policies.LabelHostname, 1, false}, {policies.LabelZoneLegacy, 1, false},
			},
			wantAntiKey: policies.LabelZoneLegacy, wantZoneTerm: true,
		},
		{
			name:        "N=6 in one zone → hostname only, anti-affinity on hostname",
			in:          input(func(in *Input) { in.Shards, in.Zones = 3, nil }),
			wantSpread:  []spread{{policies.LabelHostname, 1, true}, {policies.LabelHostname, 1, false}},
			wantAntiKey: policies.LabelHostname,
		},
		{name: "no shards → error", in: input(func(in *Input) { in.Shards = 0 }), wantErr: true},
		{name: "no shard labels → error", in: input(func(in *Input) { in.ShardLabels = nil }), wantErr: true},
		{name: "more shards than hash slots → error", in: input(func(in *Input) { in.Shards = MaxShards + 1 }), wantErr: true},
		{name: "shards that overflow N → error", in: input(func(in *Input) { in.Shards = 1 << 62 }), wantErr: true},
		{name: "too many pods per shard → error", in: input(func(in *Input) { in.PodsPerShard = MaxPodsPerShard + 1 }), wantErr: true},
		{name: "an empty zone → error", in: input(func(in *Input) { in.Zones = []string{"a", ""} }), wantErr: true},
		{name: "a zone twice → error", in: input(func(in *Input) { in.Zones = []string{"a", "a"} }), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tsc, aff, err := Generate(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []spread
			for _, c := range tsc {
				got = append(got, spread{c.TopologyKey, c.MaxSkew, c.WhenUnsatisfiable == corev1.DoNotSchedule})
				if diff := cmp.Diff(tc.in.ClusterLabels, c.LabelSelector.MatchLabels); diff != "" {
					t.Errorf("spread selector (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantSpread, got); diff != "" {
				t.Errorf("spread constraints (-want +got):\n%s", diff)
			}
			terms := aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			if len(terms) != 1 || terms[0].TopologyKey != tc.wantAntiKey {
				t.Errorf("anti-affinity terms %+v, want one on %s", terms, tc.wantAntiKey)
			} else if diff := cmp.Diff(map[string]string{"cluster": "rc1", "shard": "rc1-s0"}, terms[0].LabelSelector.MatchLabels); diff != "" {
				t.Errorf("anti-affinity selector (-want +got):\n%s", diff)
			}
			if got := aff.NodeAffinity != nil; got != tc.wantZoneTerm {
				t.Errorf("node affinity present %v, want %v", got, tc.wantZoneTerm)
			}
		})
	}
}
