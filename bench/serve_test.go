package bench

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// BenchmarkServePass measures a serve pass after start-up: serve's watched cache is started once
// on a fake clientset holding the snapshot (outside the timer: s-load, s-sync and the start-up's
// LISTs, lists-startup), then one iteration is one pass's analysis read from the cache
// (ServePass: snapshot from the informers' stores, model, every verdict, every plan), with its
// LISTs (lists-pass, always 0 when the cache works). After the timed passes it measures, once,
// the executor's first observation of every cluster from the cache (ObserveEach: a model of the
// cluster's namespace per cluster), which a pass that acts adds per cluster
// (s-observe-each-cluster). Figures are printed, never asserted.
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
	var p Planning
	var lists int64
	measure(b, func() (any, error) {
		m, res, n, err := ServePass(w, PolicyOptions(), popts)
		p, lists = res, lists+n
		return m, err
	})
	clusters, took, observeLists, err := ObserveEach(w, PolicyOptions())
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "bench: serve pass from the watched cache: cache loaded in %v, synced in %v with %d LISTs; per pass %d LISTs, build %v, plans %v (%d clusters, %d planned); the executor's first observation of each of %d clusters: %v in all (%v each), %d LISTs\n",
		w.Load.Round(1e6), w.Sync.Round(1e6), startup, lists/int64(b.N), p.Build.Round(1e6), p.Plan.Round(1e6), p.Clusters, p.Planned,
		clusters, took.Round(1e6), (took / time.Duration(max(1, clusters))).Round(1e3), observeLists)
	b.ReportMetric(w.Load.Seconds(), "s-load")
	b.ReportMetric(w.Sync.Seconds(), "s-sync")
	b.ReportMetric(float64(startup), "lists-startup")
	b.ReportMetric(float64(lists)/float64(b.N), "lists-pass")
	b.ReportMetric(p.Build.Seconds(), "s-build")
	b.ReportMetric(p.Plan.Seconds(), "s-plans")
	b.ReportMetric(took.Seconds()/float64(max(clusters, 1)), "s-observe-each-cluster")
	b.ReportMetric(float64(observeLists), "lists-observe-each")
}

// TestServePassSmoke runs BenchmarkServePass's work on a tiny snapshot: the cache syncs, and
// neither a pass nor the per-cluster observations issue a LIST.
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
	_, p, lists, err := ServePass(w, PolicyOptions(), PlanOptionsFromEnvOrZero(t))
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := Plan(snap, PolicyOptions(), PlanOptionsFromEnvOrZero(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if lists != 0 || p.Clusters != cfg.RedisClusters || p.Planned != want.Planned || p.Moves != want.Moves {
		t.Errorf("pass from the cache: %d LISTs, %d clusters, %d planned, %d moves; want 0 LISTs and the plan pass's %d clusters, %d planned, %d moves", lists, p.Clusters, p.Planned, p.Moves, want.Clusters, want.Planned, want.Moves)
	}
	clusters, _, observeLists, err := ObserveEach(w, PolicyOptions())
	if err != nil || clusters != cfg.RedisClusters || observeLists != 0 {
		t.Errorf("observed %d clusters (%v) with %d LISTs, want %d and 0", clusters, err, observeLists, cfg.RedisClusters)
	}
}

// PlanOptionsFromEnvOrZero is PlanOptionsFromEnv, failing t on a bad value.
func PlanOptionsFromEnvOrZero(t *testing.T) plan.Options {
	t.Helper()
	o, err := PlanOptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return o
}
