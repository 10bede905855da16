package bench

import (
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// TestSmoke runs what the benchmarks run on a tiny snapshot, so `make test` keeps them working.
// Nothing here is timed.
func TestSmoke(t *testing.T) {
	cfg := synth.Config{Seed: 3, Nodes: 30, Zones: 3, Namespaces: 3, Pods: 600, RedisClusters: 6, MinPods: 6, MaxPods: 18, DriftFraction: 0.7}
	snap, st := synth.GenerateWithStats(cfg)
	t.Log(st)
	_, a, err := Analyse(snap, PolicyOptions())
	if err != nil {
		t.Fatal(err)
	}
	drifted := 0
	for _, n := range st.Drifted {
		drifted += n
	}
	if a.Clusters != cfg.RedisClusters || a.NonCompliant != drifted {
		t.Errorf("analysis %+v, want %d clusters, %d non-compliant", a, cfg.RedisClusters, drifted)
	}
	_, p, err := Plan(snap, PolicyOptions(), plan.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Planned != a.NonCompliant {
		t.Errorf("planned %d clusters, want %d", p.Planned, a.NonCompliant)
	}
	t.Logf("plan: %+v", p)
	d, err := NewDescheduler(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n, err := d.Balance()
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.Balance()
	if err != nil || again != n {
		t.Errorf("second Balance evicted %d (%v), first %d: dry run must not change the objects", again, err, n)
	}
	t.Logf("descheduler: %d evictions (dry run)", n)
}
