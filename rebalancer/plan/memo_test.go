package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestMemo checks that the memo plans a cluster once and hands the plan out again for the same
// cluster object and options, plans again for another object of the same cluster (a model built
// again: objects or roles changed) or other options, and forgets what it is told to.
func TestMemo(t *testing.T) {
	build := func() *policies.Cluster {
		sc := scenario.PostScaleDown()
		sc.RoleLabels = true
		m, err := policies.Build(sc.MustSnapshot(), policies.Options{RoleLabel: scenario.RoleLabel})
		if err != nil {
			t.Fatal(err)
		}
		return m.Clusters[0]
	}
	c := build()
	var memo Memo
	counts := func(wantComputed, wantReused int) {
		t.Helper()
		if computed, reused := memo.Counts(); computed != wantComputed || reused != wantReused {
			t.Fatalf("computed %d, reused %d; want %d and %d", computed, reused, wantComputed, wantReused)
		}
	}
	want := Compute(c, Options{})
	if diff := cmp.Diff(want, memo.Compute(c, Options{})); diff != "" {
		t.Fatalf("first plan differs from Compute's (-want +got):\n%s", diff)
	}
	counts(1, 0)
	if diff := cmp.Diff(want, memo.Compute(c, Options{})); diff != "" {
		t.Fatalf("kept plan differs (-want +got):\n%s", diff)
	}
	counts(1, 1)
	memo.Compute(c, Options{MaxMoves: 3})
	counts(2, 1)
	memo.Compute(build(), Options{MaxMoves: 3}) // the same cluster, built again
	counts(3, 1)
	memo.Compute(c, Options{MaxMoves: 3}) // the first object again: the memo kept the newer one
	counts(4, 1)
	memo.Forget(c.Key())
	memo.Compute(c, Options{MaxMoves: 3})
	counts(5, 1)
	got := memo.ComputeAll([]*policies.Cluster{c}, Options{MaxMoves: 3})
	counts(5, 2)
	if len(got) != 1 || got[0].Plan.Evictions != want.Evictions {
		t.Fatalf("ComputeAll = %+v, want one plan of %d evictions", got, want.Evictions)
	}
}
