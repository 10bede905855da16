// Package bench is the scale benchmark: redis-rebalancer's analysis and planner
// on a synthetic snapshot (test/synth: 5,000 nodes, 150,000 pods, 1,000 Redis clusters at
// full size), measured side by side with the descheduler's
// RemovePodsViolatingTopologySpreadConstraint plugin run in dry-run mode on the same objects
// through a client-go fake clientset. The benchmarks are in bench_test.go; this file holds what
// they run, so that a quick test can run it all on a tiny snapshot.
//
// redis-rebalancer's benchmarks take the snapshot as the commands hold what they read: trimmed
// (observe.Trim, as ReadSnapshot, DecodeSnapshot and serve's cache keep objects), the whole
// objects dropped; the descheduler's benchmark takes whole objects, as it lists them.
//
// Every benchmark iteration is one full pass over the snapshot (generated once, outside the
// timers), so -benchtime 1x or 3x is enough:
//
//	go test -run '^$' -bench . -benchtime 3x -benchmem -timeout 60m ./bench
//
// They run in the order Analyse, DeschedulerTopologySpread, Plan, so the side-by-side figures are
// printed before the planner's pass, the longest. Figures are printed, never asserted.
//
// Environment (read by ConfigFromEnv, PlanOptionsFromEnv and MaxHeapFromEnv):
//
//	REBALANCER_BENCH_SCALE       multiplies the snapshot's nodes, pods, clusters and namespaces
//	                             (default 1: the full size); cluster sizes stay 6–120
//	REBALANCER_BENCH_SEED        the generator's seed (default 1)
//	REBALANCER_BENCH_MAX_MOVES   plan.Options.MaxMoves (default 0: the planner's own)
//	REBALANCER_BENCH_MAX_STATES  plan.Options.MaxStates (default 0: the planner's 200000)
//	REBALANCER_BENCH_VERBOSE     when set, prints every plan with its time (otherwise only those
//	                             taking more than 50 ms)
//	REBALANCER_BENCH_MAX_HEAP_MIB ends the run (status 2) when the heap in use grows beyond it
//	                             (default 8192; 0: no limit)
//
// It may import test/synth and test/scenario (the snapshot), policies and rebalancer (what
// is measured), and the descheduler with client-go's fake clientset (what it is compared with).
package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"
	"sigs.k8s.io/descheduler/pkg/framework/plugins/defaultevictor"
	"sigs.k8s.io/descheduler/pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint"
	frameworktesting "sigs.k8s.io/descheduler/pkg/framework/testing"
	frameworktypes "sigs.k8s.io/descheduler/pkg/framework/types"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// Environment variables the benchmarks read (package doc).
const (
	// ScaleEnv scales the snapshot (1: full size).
	ScaleEnv = "REBALANCER_BENCH_SCALE"
	// SeedEnv is the generator's seed.
	SeedEnv = "REBALANCER_BENCH_SEED"
	// MaxMovesEnv sets plan.Options.MaxMoves.
	MaxMovesEnv = "REBALANCER_BENCH_MAX_MOVES"
	// MaxStatesEnv sets plan.Options.MaxStates.
	MaxStatesEnv = "REBALANCER_BENCH_MAX_STATES"
	// VerboseEnv, when set, has the Plan benchmark print every plan.
	VerboseEnv = "REBALANCER_BENCH_VERBOSE"
	// MaxHeapEnv is the heap limit in MiB (0: none).
	MaxHeapEnv = "REBALANCER_BENCH_MAX_HEAP_MIB"
)

// ConfigFromEnv returns synth.Scaled(REBALANCER_BENCH_SCALE) with REBALANCER_BENCH_SEED.
func ConfigFromEnv() (synth.Config, error) {
	scale, seed := 1.0, uint64(1)
	if v := os.Getenv(ScaleEnv); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return synth.Config{}, fmt.Errorf("%s=%q: want a positive number", ScaleEnv, v)
		}
		scale = f
	}
	if v := os.Getenv(SeedEnv); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return synth.Config{}, fmt.Errorf("%s=%q: %w", SeedEnv, v, err)
		}
		seed = s
	}
	cfg := synth.Scaled(scale)
	cfg.Seed = seed
	return cfg, nil
}

// PlanOptionsFromEnv returns the planner bounds from REBALANCER_BENCH_MAX_MOVES and
// REBALANCER_BENCH_MAX_STATES (zero values, i.e. the planner's defaults, when unset).
func PlanOptionsFromEnv() (plan.Options, error) {
	var o plan.Options
	for _, e := range []struct {
		name string
		dst  *int
	}{{MaxMovesEnv, &o.MaxMoves}, {MaxStatesEnv, &o.MaxStates}} {
		if v := os.Getenv(e.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return o, fmt.Errorf("%s=%q: want a non-negative integer", e.name, v)
			}
			*e.dst = n
		}
	}
	return o, nil
}

// PolicyOptions are the options the benchmarks build the model with: the defaults, with roles
// read from test/scenario's role label (as the generator writes it), so the planner prefers
// replicas as it would with roles from Redis.
func PolicyOptions() policies.Options {
	return policies.Options{RoleLabel: scenario.RoleLabel}
}

// Analysis is what one analysis pass found.
type Analysis struct {
	// Clusters is the number of Redis clusters; NonCompliant those breaking a hard rule.
	Clusters, NonCompliant int
	// Violations counts every violation (hard and soft), Hard the hard ones.
	Violations, Hard int
	// Build is the time policies.Build took.
	Build time.Duration

	noncompliant []*policies.Cluster // in model order
}

// Analyse builds the model of snap and evaluates every cluster's current placement: what the
// `check` command does. The model is returned so the caller can measure what it retains.
func Analyse(snap *policies.Snapshot, opts policies.Options) (*policies.Model, Analysis, error) {
	start := time.Now()
	m, err := policies.Build(snap, opts)
	if err != nil {
		return nil, Analysis{}, err
	}
	a := Analysis{Clusters: len(m.Clusters), Build: time.Since(start)}
	for _, c := range m.Clusters {
		vs := c.Evaluate(c.Current())
		hard := len(policies.Hard(vs))
		a.Violations += len(vs)
		a.Hard += hard
		if hard > 0 {
			a.NonCompliant++
			a.noncompliant = append(a.noncompliant, c)
		}
	}
	return m, a, nil
}

// Planning is what one planning pass found.
type Planning struct {
	Analysis
	// Planned is the number of clusters planned (the non-compliant ones).
	Planned int
	// Moves is the total number of planned evictions; Failovers of planned failover steps
	// (MasterQuorum); RolesOnly the clusters planned that break only MasterQuorum.
	Moves, Failovers, RolesOnly int
	// CompliantAfter, Minimal, FailoversMinimal and Infeasible count the plans reaching
	// compliance, proven minimal (evictions; and failovers), and found infeasible.
	CompliantAfter, Minimal, FailoversMinimal, Infeasible int
	// Searched is the total number of placements the searches visited.
	Searched int
	// Plan is the time the plans took (wall clock, clusters planned in parallel); Slowest the
	// longest single plan.Compute and SlowestCluster its cluster ("namespace/name", N).
	Plan, Slowest  time.Duration
	SlowestCluster string
}

// Plan builds the model of snap, evaluates every cluster and plans every non-compliant one with
// plan.ComputeAll (clusters in parallel, up to GOMAXPROCS at a time): what the `plan` command
// does. progress, when not nil, is called once the plans are made, for each plan with the
// cluster, its plan and the time plan.Compute took for it.
func Plan(snap *policies.Snapshot, opts policies.Options, popts plan.Options, progress func(c *policies.Cluster, p plan.Plan, took time.Duration)) (*policies.Model, Planning, error) {
	m, a, err := Analyse(snap, opts)
	if err != nil {
		return nil, Planning{}, err
	}
	p := Planning{Analysis: a}
	start := time.Now()
	todo := a.noncompliant
	working.Store(fmt.Sprintf("plan.ComputeAll of %d clusters since %s", len(todo), start.Format(time.TimeOnly)))
	results := plan.ComputeAll(todo, popts)
	working.Store("the rest")
	for k, r := range results {
		c, pl, took := todo[k], r.Plan, r.Took
		if took > p.Slowest {
			p.Slowest, p.SlowestCluster = took, fmt.Sprintf("%s (N=%d, Z=%d)", c.Key(), c.N, c.Z())
		}
		p.Planned++
		p.Moves += pl.Evictions
		p.Failovers += pl.Failovers
		rolesOnly := true
		for _, v := range policies.Hard(pl.Before) {
			rolesOnly = rolesOnly && v.Rule == policies.MasterQuorum
		}
		if rolesOnly {
			p.RolesOnly++
		}
		p.Searched += pl.Searched
		if pl.CompliantAfter {
			p.CompliantAfter++
		}
		if pl.Minimal {
			p.Minimal++
		}
		if pl.FailoversMinimal {
			p.FailoversMinimal++
		}
		if pl.Infeasible != "" {
			p.Infeasible++
		}
		if progress != nil {
			progress(c, pl, took)
		}
	}
	p.Plan = time.Since(start)
	return m, p, nil
}

// Descheduler is the descheduler's RemovePodsViolatingTopologySpreadConstraint plugin with its
// default arguments (DoNotSchedule constraints, topologyBalanceNodeFit true), on a framework
// handle built as the descheduler's own tests build it (frameworktesting.InitFrameworkHandle):
// a client-go fake clientset holding the snapshot's objects, a started pod informer, the
// DefaultEvictor with its default arguments, and a PodEvictor in dry-run mode. Evictions reach
// the fake clientset, where a reactor accepts them without changing anything, so every Balance
// sees the same objects.
type Descheduler struct {
	// Nodes are passed to Balance (the snapshot's nodes: all Ready, none excluded).
	Nodes []*corev1.Node
	// Setup is the time NewDescheduler took (clientset, informer sync, plugin).
	Setup time.Duration

	client  *fake.Clientset
	evictor *evictions.PodEvictor
	plugin  frameworktypes.BalancePlugin
	cancel  context.CancelFunc
}

// NewDescheduler loads snap into a fake clientset and builds the plugin. Close releases the
// informers.
func NewDescheduler(snap *policies.Snapshot) (*Descheduler, error) {
	start := time.Now()
	objs := make([]k8sruntime.Object, 0, len(snap.Nodes)+len(snap.Pods)+len(snap.StatefulSets)+len(snap.PodDisruptionBudgets)+64)
	// The pods' namespaces, unless the snapshot holds them.
	namespaces := map[string]bool{}
	for _, ns := range snap.Namespaces {
		namespaces[ns.Name] = true
	}
	for _, p := range snap.Pods {
		if !namespaces[p.Namespace] {
			namespaces[p.Namespace] = true
			objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}})
		}
	}
	for _, o := range snap.Objects() {
		objs = append(objs, o)
	}
	// NewSimpleClientset, as the plugin's own tests use: NewClientset's field-managed tracker
	// adds nothing the plugin reads and costs more to load 150,000 pods into.
	client := fake.NewSimpleClientset(objs...)
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		return a.GetSubresource() == "eviction", nil, nil // dry run: accept, change nothing
	})
	ctx, cancel := context.WithCancel(context.Background())
	handle, evictor, err := frameworktesting.InitFrameworkHandle(ctx, client,
		evictions.NewOptions().WithDryRun(true), defaultevictor.DefaultEvictorArgs{}, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("descheduler framework handle: %w", err)
	}
	args := &removepodsviolatingtopologyspreadconstraint.RemovePodsViolatingTopologySpreadConstraintArgs{}
	removepodsviolatingtopologyspreadconstraint.SetDefaults_RemovePodsViolatingTopologySpreadConstraintArgs(args)
	plugin, err := removepodsviolatingtopologyspreadconstraint.New(ctx, args, handle)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("descheduler plugin: %w", err)
	}
	return &Descheduler{
		Nodes: snap.Nodes, Setup: time.Since(start),
		client: client, evictor: evictor, plugin: plugin.(frameworktypes.BalancePlugin), cancel: cancel,
	}, nil
}

// Balance runs the plugin once over every node and returns the number of pods it evicted (in
// dry run: would evict). The eviction counters are reset first.
func (d *Descheduler) Balance() (uint, error) {
	d.evictor.ResetCounters()
	if st := d.plugin.Balance(context.Background(), d.Nodes); st != nil && st.Err != nil {
		return 0, st.Err
	}
	return d.evictor.TotalEvicted(), nil
}

// Close stops the informers.
func (d *Descheduler) Close() { d.cancel() }

// HeapInuse returns the bytes in in-use heap spans now, like runtime.MemStats.HeapInuse, read
// through runtime/metrics (no stop-the-world).
func HeapInuse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

// LiveHeap collects garbage and returns runtime.MemStats.HeapInuse and Sys: the heap that is
// live now, and the memory the process has obtained from the OS so far.
func LiveHeap() (heapInuse, sys uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.Sys
}

// DefaultMaxHeapMiB is the heap limit of the benchmarks when REBALANCER_BENCH_MAX_HEAP_MIB is
// unset: a third of a 24 GiB machine shared with other work.
const DefaultMaxHeapMiB = 8 << 10

// MaxHeapFromEnv returns the heap limit in bytes from REBALANCER_BENCH_MAX_HEAP_MIB (0: none).
func MaxHeapFromEnv() (uint64, error) {
	v := os.Getenv(MaxHeapEnv)
	if v == "" {
		return DefaultMaxHeapMiB << 20, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want a number of MiB (0: no limit)", MaxHeapEnv, v)
	}
	return n << 20, nil
}

// working says what Plan is doing, for the heap guard's message.
var working atomic.Value

func init() { working.Store("the benchmark") }

// PeakSampler records the largest HeapInuse seen while it runs, sampling every 5 ms.
type PeakSampler struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	peak  uint64
	limit uint64
}

// StartPeakSampler starts sampling. When limit is not 0 and the heap grows beyond it, the sampler
// prints why and ends the process with status 2: a benchmark must not exhaust a shared machine's
// memory (the planner's caches are unbounded).
func StartPeakSampler(limit uint64) *PeakSampler {
	s := &PeakSampler{stop: make(chan struct{}), peak: HeapInuse(), limit: limit}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				h := HeapInuse()
				s.peak = max(s.peak, h)
				if s.limit > 0 && h > s.limit {
					fmt.Fprintf(os.Stderr, "bench: heap in use %.0f MiB exceeds the limit of %.0f MiB (%s) during %v; stopping\n", MiB(h), MiB(s.limit), MaxHeapEnv, working.Load())
					os.Exit(2)
				}
			}
		}
	}()
	return s
}

// Stop stops sampling and returns the peak HeapInuse in bytes.
func (s *PeakSampler) Stop() uint64 {
	close(s.stop)
	s.wg.Wait()
	return max(s.peak, HeapInuse())
}

// MiB converts bytes to mebibytes.
func MiB(b uint64) float64 { return float64(b) / (1 << 20) }
