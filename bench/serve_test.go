package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// BenchmarkServePass measures serve's passes after start-up: serve's watched cache is started
// once on a fake clientset holding the snapshot (outside the timer: s-load, s-sync, and the
// start-up's LISTs, lists-startup), then one pass computes what a pass computes before it acts
// (ServePass: every cluster from its namespace's model, which the cache builds on the first pass
// and keeps while nothing changes, every verdict, every plan) and prints its figures. The first
// pass, which builds the models, is measured outside the timer (s-first-pass, models-built);
// each timed iteration is a later pass on the unchanged cluster (s-models, s-evaluate, s-plans,
// lists-pass: 0 when the cache works). Figures are printed, never asserted.
func BenchmarkServePass(b *testing.B) {
	snap := snapshot(b)
	w, err := StartWatched(snap)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	startup := w.Lists()
	popts, err := PlanOptionsFromEnv()
	if err != nil {
		b.Fatal(err)
	}
	seen := map[string]*policies.Model{}
	start := time.Now()
	first, err := ServePass(w, PolicyOptions(), popts, seen)
	if err != nil {
		b.Fatal(err)
	}
	firstTook := time.Since(start)
	fmt.Fprintf(os.Stderr, "bench: serve: cache loaded in %v, synced in %v with %d LISTs; first pass %v: %d models built in %v, %d clusters evaluated in %v, %d planned in %v (%d evictions, %d failovers), %d LISTs\n",
		w.Load.Round(time.Millisecond), w.Sync.Round(time.Millisecond), startup, firstTook.Round(time.Millisecond), first.Built, first.Models.Round(time.Millisecond),
		first.Clusters, first.Evaluate.Round(time.Millisecond), first.NonCompliant, first.Plans.Round(time.Millisecond), first.Moves, first.Failovers, first.Lists)
	var f PassFigures
	measure(b, func() (any, error) {
		var err error
		f, err = ServePass(w, PolicyOptions(), popts, seen)
		return nil, err
	})
	fmt.Fprintf(os.Stderr, "bench: serve: a later pass: %d models built, models %v, %d clusters evaluated in %v, %d non-compliant: %d planned, %d plans kept, in %v, %d LISTs\n",
		f.Built, f.Models.Round(time.Millisecond), f.Clusters, f.Evaluate.Round(time.Millisecond), f.NonCompliant, f.Planned, f.Reused, f.Plans.Round(time.Millisecond), f.Lists)
	// One cluster changed: a pod of the first non-compliant cluster gets a label.
	if err := w.Touch(context.Background(), first.Todo[0]); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	one, err := ServePass(w, PolicyOptions(), popts, seen)
	if err != nil {
		b.Fatal(err)
	}
	oneTook := time.Since(start)
	fmt.Fprintf(os.Stderr, "bench: serve: a pass after %s changed: %v: %d models built in %v, %d clusters evaluated in %v, %d planned and %d plans kept in %v\n",
		first.Todo[0], oneTook.Round(time.Millisecond), one.Built, one.Models.Round(time.Millisecond), one.Clusters, one.Evaluate.Round(time.Millisecond), one.Planned, one.Reused, one.Plans.Round(time.Millisecond))
	b.ReportMetric(w.Load.Seconds(), "s-load")
	b.ReportMetric(w.Sync.Seconds(), "s-sync")
	b.ReportMetric(float64(startup), "lists-startup")
	b.ReportMetric(firstTook.Seconds(), "s-first-pass")
	b.ReportMetric(float64(first.Built), "models-built-first")
	b.ReportMetric(float64(f.Built), "models-built")
	b.ReportMetric(f.Models.Seconds(), "s-models")
	b.ReportMetric(f.Evaluate.Seconds(), "s-evaluate")
	b.ReportMetric(f.Plans.Seconds(), "s-plans")
	b.ReportMetric(float64(f.Lists), "lists-pass")
	b.ReportMetric(float64(f.Planned), "planned-pass")
	b.ReportMetric(oneTook.Seconds(), "s-one-changed")
	b.ReportMetric(float64(one.Planned), "planned-one-changed")
}

// TestServePassSmoke runs BenchmarkServePass's work on a tiny snapshot: the cache syncs; a pass
// issues no LIST and finds what the plan pass finds; the first pass builds one model per
// namespace, a second one none.
func TestServePassSmoke(t *testing.T) {
	cfg := synth.Config{Seed: 3, Nodes: 30, Zones: 3, Namespaces: 3, Pods: 600, RedisClusters: 6, MinPods: 6, MaxPods: 18, DriftFraction: 0.7}
	snap := synth.Generate(cfg)
	w, err := StartWatched(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Lists() == 0 {
		t.Fatal("the cache's start-up made no LIST: the counter does not count")
	}
	popts, err := PlanOptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]*policies.Model{}
	first, err := ServePass(w, PolicyOptions(), popts, seen)
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := Plan(snap, PolicyOptions(), popts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Lists != 0 || first.Clusters != cfg.RedisClusters || first.NonCompliant != want.Planned || first.Moves != want.Moves || first.Built != cfg.Namespaces {
		t.Errorf("first pass %+v; want 0 LISTs, %d models built, and the plan pass's %d clusters, %d planned, %d moves", first, cfg.Namespaces, want.Clusters, want.Planned, want.Moves)
	}
	second, err := ServePass(w, PolicyOptions(), popts, seen)
	if err != nil {
		t.Fatal(err)
	}
	if second.Lists != 0 || second.Built != 0 || second.Moves != first.Moves || second.Planned != 0 || second.Reused != first.NonCompliant {
		t.Errorf("second pass %+v; want 0 LISTs, no model built, the same plans, every one kept (%d), none planned", second, first.NonCompliant)
	}
	// One cluster changed: its namespace's model is built again, and only that namespace's
	// non-compliant clusters are planned.
	touched := first.Todo[0]
	if err := w.Touch(context.Background(), touched); err != nil {
		t.Fatal(err)
	}
	third, err := ServePass(w, PolicyOptions(), popts, seen)
	if err != nil {
		t.Fatal(err)
	}
	ns, _, _ := strings.Cut(touched, "/")
	inNS := 0
	for _, k := range first.Todo {
		if strings.HasPrefix(k, ns+"/") {
			inNS++
		}
	}
	if third.Built != 1 || third.Planned != inNS || third.Reused != first.NonCompliant-inNS || third.Moves != first.Moves {
		t.Errorf("after %s changed: pass %+v; want 1 model built, %d planned (namespace %s's non-compliant clusters), %d kept, the same plans", touched, third, inNS, ns, first.NonCompliant-inNS)
	}
}
