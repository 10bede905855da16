package bench

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// generated is the benchmarks' input, shared by the benchmarks of one run: the generated snapshot
// trimmed as redis-rebalancer holds what it reads (observe.Trim: what ReadSnapshot and
// DecodeSnapshot keep, serve's cache too), the whole objects dropped once trimmed.
var generated struct {
	once    sync.Once
	cfg     synth.Config
	snap    *policies.Snapshot
	stats   synth.Stats
	gen     time.Duration
	maxHeap uint64
	err     error
}

// configure reads the generator's configuration and the heap limit (once).
func configure(b *testing.B) synth.Config {
	b.Helper()
	f := &generated
	f.once.Do(func() {
		f.cfg, f.err = ConfigFromEnv()
		if f.err != nil {
			return
		}
		f.maxHeap, f.err = MaxHeapFromEnv()
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	return f.cfg
}

// whole generates (outside every timer) the snapshot ConfigFromEnv describes, with whole
// objects, as the API server would list them: the descheduler's input. Each call generates it
// anew, so that it is not kept alive beside the trimmed one.
func whole(b *testing.B) *policies.Snapshot {
	b.Helper()
	cfg := configure(b)
	start := time.Now()
	snap, st := synth.GenerateWithStats(cfg)
	fmt.Fprintf(os.Stderr, "bench: snapshot (seed %d, generated in %v): %v\n", cfg.Seed, time.Since(start).Round(time.Millisecond), st)
	return snap
}

// snapshot returns (generating it once, outside every timer) the snapshot ConfigFromEnv
// describes, trimmed as the commands hold it: redis-rebalancer's input.
func snapshot(b *testing.B) *policies.Snapshot {
	b.Helper()
	f := &generated
	if f.snap == nil {
		snap := whole(b)
		start := time.Now()
		f.snap = observe.Trim(snap)
		fmt.Fprintf(os.Stderr, "bench: snapshot trimmed in %v, as redis-rebalancer holds it\n", time.Since(start).Round(time.Millisecond))
	}
	return f.snap
}

// measure runs work b.N times, timing only work, and reports the heap metrics of the run: peak
// HeapInuse during work (StartPeakSampler, with MaxHeapFromEnv as its limit), the live heap after it
// (input snapshot plus what work retains, after a GC), the live heap before the first run (the
// input: the snapshot, and for the descheduler its clientset and informer caches), and the
// process's Sys. What work returns is kept alive until the heap after it is measured; an error
// ends the benchmark. It returns the live heap before the first run.
func measure(b *testing.B, work func() (keep any, err error)) (before uint64) {
	b.Helper()
	before, _ = LiveHeap()
	var peak, after, sys uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := StartPeakSampler(generated.maxHeap)
		keep, err := work()
		p := s.Stop()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, p)
		after, sys = LiveHeap()
		runtime.KeepAlive(keep)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(MiB(peak), "MiB-peak")
	b.ReportMetric(MiB(after), "MiB-heap")
	b.ReportMetric(MiB(before), "MiB-input")
	b.ReportMetric(MiB(sys), "MiB-sys")
	return before
}

// BenchmarkAnalyse measures policies.Build plus Evaluate of every cluster's current placement
// (the `check` command's work) on the whole snapshot. One iteration is one full pass.
func BenchmarkAnalyse(b *testing.B) {
	snap := snapshot(b)
	var a Analysis
	measure(b, func() (any, error) {
		m, res, err := Analyse(snap, PolicyOptions())
		a = res
		return m, err
	})
	b.ReportMetric(a.Build.Seconds(), "s-build")
	b.ReportMetric(float64(a.Clusters), "clusters")
	b.ReportMetric(float64(a.NonCompliant), "noncompliant")
	b.ReportMetric(float64(a.Hard), "hard-violations")
}

// slowPlan is the time above which logSlowPlan prints a plan: the planner's target for one
// cluster.
const slowPlan = 50 * time.Millisecond

// logSlowPlan prints the plans that took more than 50 ms (every plan with
// REBALANCER_BENCH_VERBOSE), so that a run shows where its time goes.
func logSlowPlan(c *policies.Cluster, p plan.Plan, took time.Duration) {
	if took <= slowPlan && os.Getenv(VerboseEnv) == "" {
		return
	}
	fmt.Fprintf(os.Stderr, "bench: plan.Compute %s (N=%d, Z=%d, %d hard violations before) took %v: %d evictions, %d placements searched, minimal %v, infeasible %q\n",
		c.Key(), c.N, c.Z(), len(policies.Hard(p.Before)), took.Round(time.Millisecond), p.Evictions, p.Searched, p.Minimal, p.Infeasible)
}

// BenchmarkDeschedulerTopologySpread measures the descheduler's
// RemovePodsViolatingTopologySpreadConstraint plugin's Balance over every node, in dry run, on
// the same objects. Loading the fake clientset and syncing the informers happens once, outside
// the timer (reported as s-setup); one iteration is one Balance.
func BenchmarkDeschedulerTopologySpread(b *testing.B) {
	snap := whole(b)
	base, _ := LiveHeap()
	d, err := NewDescheduler(snap)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	var evicted uint
	before := measure(b, func() (any, error) {
		n, err := d.Balance()
		evicted = n
		return nil, err
	})
	b.ReportMetric(d.Setup.Seconds(), "s-setup")
	b.ReportMetric(MiB(before-min(base, before)), "MiB-setup")
	b.ReportMetric(float64(evicted), "evictions")
}

// BenchmarkPlan measures policies.Build plus a plan for every non-compliant cluster
// (plan.ComputeAll: clusters in parallel, as the `plan` command plans them) with
// PlanOptionsFromEnv (the planner's defaults unless set). One iteration is one full pass; the
// slowest single cluster is logged and reported (ms-slowest).
func BenchmarkPlan(b *testing.B) {
	snap := snapshot(b)
	popts, err := PlanOptionsFromEnv()
	if err != nil {
		b.Fatal(err)
	}
	var p Planning
	measure(b, func() (any, error) {
		m, res, err := Plan(snap, PolicyOptions(), popts, logSlowPlan)
		p = res
		return m, err
	})
	b.Logf("PlanOptions %+v: %d clusters planned in %v (Build %v; %d break only MasterQuorum), %d evictions and %d failovers, %d reach compliance, %d minimal (%d with failovers proven minimal), %d infeasible, %d placements searched; slowest %v: %s",
		popts, p.Planned, p.Plan.Round(time.Millisecond), p.Build.Round(time.Millisecond), p.RolesOnly, p.Moves, p.Failovers, p.CompliantAfter, p.Minimal, p.FailoversMinimal, p.Infeasible, p.Searched, p.Slowest.Round(time.Millisecond), p.SlowestCluster)
	b.ReportMetric(p.Build.Seconds(), "s-build")
	b.ReportMetric(p.Plan.Seconds(), "s-plans")
	b.ReportMetric(float64(p.Slowest.Microseconds())/1000, "ms-slowest")
	b.ReportMetric(float64(p.Searched), "searched")
	b.ReportMetric(float64(p.Minimal), "minimal")
	b.ReportMetric(float64(p.FailoversMinimal), "failovers-minimal")
	b.ReportMetric(float64(p.Planned), "planned")
	b.ReportMetric(float64(p.Moves), "moves")
	b.ReportMetric(float64(p.Failovers), "failovers")
	b.ReportMetric(float64(p.CompliantAfter), "compliant-after")
}
