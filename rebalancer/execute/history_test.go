package execute

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// historyRef is the step history ConfigMap of the tests.
var historyRef = types.NamespacedName{Namespace: "redis-rebalancer", Name: "redis-rebalancer-history"}

// shippedTimeouts are the policy's default timeouts: a move's bound is then 17m45s.
func shippedTimeouts(c *Config) {
	c.HealthTimeout, c.RecreateTimeout, c.RejoinTimeout = v1alpha1.DefaultHealthTimeout, v1alpha1.DefaultRecreateTimeout, v1alpha1.DefaultRejoinTimeout
	c.RequestTimeout, c.FailoverTimeout, c.DrainTimeout = v1alpha1.DefaultRequestTimeout, v1alpha1.DefaultFailoverTimeout, v1alpha1.DefaultDrainTimeout
}

// fifteenSeconds is a history in which one move of redis/redis (a master failed over and
// evicted) took 15 s, its rejoin 12 s of them; failover steps took 2 s.
func fifteenSeconds() *StepHistory {
	return &StepHistory{
		Steps: map[string][]float64{
			report.StepWindow: {0}, report.StepHealthGate: {0.1}, report.StepPlaceable: {0.2}, report.StepPDBDryRun: {0.05},
			report.StepFailover: {0.2}, report.StepDrain: {1.6}, report.StepRoleCheck: {0.01}, report.StepEvict: {0.05},
			report.StepRecreate: {0.49}, report.StepReobserve: {0.3},
		},
		Resyncs: []Resync{{Seconds: 12, Bytes: 100 << 20}},
	}
}

// historyConfigMap returns the history ConfigMap holding hs by Redis cluster ("namespace/name").
func historyConfigMap(t *testing.T, hs map[string]*StepHistory) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: historyRef.Namespace, Name: historyRef.Name}, Data: map[string]string{}}
	for k, h := range hs {
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[HistoryKey(k)] = string(b)
	}
	return cm
}

// TestWindowLearnsFromHistory: with the shipped timeouts a move's bound is 17m45s, so a 2-minute
// window admits no move on bounds alone; with the p95 estimate and a history saying such a move
// took 15 s, the same window admits it, and the run adds what it measured to the history.
func TestWindowLearnsFromHistory(t *testing.T) {
	twoMinutes := func(c *Config) {
		shippedTimeouts(c)
		c.Window = window.Config{StepEstimate: v1alpha1.StepEstimateP95, Windows: []window.Window{{Schedule: "0 2 * * *", Duration: 2 * time.Minute}}}
		c.History = historyRef
	}
	opens := time.Date(2026, 3, 10, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		history     map[string]*StepHistory
		wantFirst   string // the window step's outcome and the end of its reason
		wantEvicted int
	}{
		{
			name:      "no history → every step counts its bound: 17m45s, the move is skipped",
			wantFirst: "skip: the move needs up to 17m45s (p95 estimate)",
		},
		{
			name:      "another cluster's history only → still the bounds: skipped",
			history:   map[string]*StepHistory{"other/redis": fifteenSeconds()},
			wantFirst: "skip: the move needs up to 17m45s (p95 estimate)",
		},
		{
			name:        "history says 15 s → the 2-minute window admits the move, and the failover steps after it",
			history:     map[string]*StepHistory{"redis/redis": fifteenSeconds()},
			wantFirst:   "continue: the move needs up to 15s (p95 estimate)",
			wantEvicted: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestbed(t, scenario.PostScaleDown())
			tb.clock.SetTime(opens)
			if tc.history != nil {
				if err := tb.client.Tracker().Add(historyConfigMap(t, tc.history)); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := runExecutor(t, tb, twoMinutes)
			if err != nil {
				t.Fatal(err)
			}
			cr := rep.Clusters[0]
			first := cr.Moves[0].Steps[0]
			if got := first.Outcome + ": " + first.Reason; !strings.HasSuffix(got, strings.TrimPrefix(tc.wantFirst, first.Outcome+": ")) || !strings.HasPrefix(tc.wantFirst, first.Outcome+":") {
				t.Errorf("window step %q, want %q", got, tc.wantFirst)
			}
			if got := len(tb.evicted()); got != tc.wantEvicted {
				t.Errorf("%d evictions, want %d", got, tc.wantEvicted)
			}
			if tc.wantEvicted > 0 && !cr.Compliant {
				t.Errorf("not compliant: stopped by %s: %s", cr.StoppedBy, cr.Stopped)
			}
			saved := loadHistory(t, tb)
			got := saved["redis/redis"]
			if tc.wantEvicted == 0 {
				// A skipped step is not a measure: nothing to save.
				if got != nil {
					t.Errorf("history of redis/redis %+v: want none (no step continued)", got)
				}
				if len(saved) != len(tc.history) {
					t.Errorf("history holds %d clusters, want the %d it held", len(saved), len(tc.history))
				}
				return
			}
			before := fifteenSeconds()
			if n, want := len(got.Steps[report.StepEvict]), len(before.Steps[report.StepEvict])+1; n != want {
				t.Errorf("history keeps %d evict durations, want %d (the earlier one and this run's)", n, want)
			}
			if n, want := len(got.Steps[report.StepFailover]), len(before.Steps[report.StepFailover])+3; n != want {
				t.Errorf("history keeps %d failover durations, want %d (this run: the master's and two failover steps)", n, want)
			}
			if len(got.Resyncs) != 2 || !got.Updated.Time.Equal(opens) {
				t.Errorf("history resyncs %+v, updated %s; want the earlier and this run's rejoin, updated at %s", got.Resyncs, got.Updated, opens)
			}
		})
	}
}

// loadHistory reads the history ConfigMap from the test bed's fake API server.
func loadHistory(t *testing.T, tb *testbed) map[string]*StepHistory {
	t.Helper()
	s := &historyStore{client: tb.client, ref: historyRef}
	hs, err := s.load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// TestHistoryUnavailable: a run whose ServiceAccount may not read or write the history ConfigMap
// logs it once and goes on with the bounds.
func TestHistoryUnavailable(t *testing.T) {
	lines := captureLogs(t)
	tb := newTestbed(t, scenario.PostScaleDown())
	calls := 0
	tb.client.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), historyRef.Name, nil)
	})
	rep, err := runExecutor(t, tb, func(c *Config) {
		c.History = historyRef
		c.Window = window.Config{StepEstimate: v1alpha1.StepEstimateP95, Windows: []window.Window{{Schedule: "0 2 * * *", Duration: time.Hour}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clusters[0].Compliant {
		t.Errorf("not compliant: %s", rep.Clusters[0].Stopped)
	}
	if calls != 1 {
		t.Errorf("%d configmap requests, want 1 (the load; no save once it failed)", calls)
	}
	if got := logged(lines(), nil, "Step history unavailable: the window estimates use this run's measures only"); len(got) != 1 {
		t.Errorf("%d 'Step history unavailable' lines, want 1", len(got))
	}
}

// TestHistoryDryRunSavesNothing: a dry run measures no step and writes no ConfigMap.
func TestHistoryDryRunSavesNothing(t *testing.T) {
	tb := newTestbed(t, scenario.PostScaleDown())
	if _, err := runExecutor(t, tb, func(c *Config) { c.History, c.DryRun = historyRef, true }); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.client.CoreV1().ConfigMaps(historyRef.Namespace).Get(context.Background(), historyRef.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("history ConfigMap after a dry run: %v, want NotFound", err)
	}
}

// TestStepHistoryKeepsNewest: a step keeps its newest MaxHistorySamples durations, a merge
// appends the later measures.
func TestStepHistoryKeepsNewest(t *testing.T) {
	h := &StepHistory{}
	for i := 1; i <= MaxHistorySamples+5; i++ {
		h.add(report.StepEvict, time.Duration(i)*time.Second, 0)
		h.add(report.StepRejoin, time.Duration(i)*time.Second, int64(i))
	}
	if got := h.Steps[report.StepEvict]; len(got) != MaxHistorySamples || got[0] != 6 || got[len(got)-1] != MaxHistorySamples+5 {
		t.Errorf("evict durations %v: want the newest %d, 6 to %d", got, MaxHistorySamples, MaxHistorySamples+5)
	}
	if got := h.Resyncs; len(got) != MaxHistorySamples || got[0] != (Resync{Seconds: 6, Bytes: 6}) {
		t.Errorf("resyncs %v: want the newest %d", got, MaxHistorySamples)
	}
	later := &StepHistory{Steps: map[string][]float64{report.StepEvict: {100}}}
	h.merge(later)
	if got := h.Steps[report.StepEvict]; got[len(got)-1] != 100 || got[0] != 7 {
		t.Errorf("after the merge %v: want 7 … 100", got)
	}
}

// TestTrimHistory: a ConfigMap over MaxHistoryBytes loses the Redis clusters updated longest ago,
// never the one being saved.
func TestTrimHistory(t *testing.T) {
	big := strings.Repeat("x", MaxHistoryBytes/3)
	entry := func(day int) string {
		b, _ := json.Marshal(StepHistory{Updated: metav1.NewTime(time.Date(2026, 3, day, 0, 0, 0, 0, time.UTC)), Steps: map[string][]float64{big: {1}}})
		return string(b)
	}
	data := map[string]string{"a.old": entry(1), "b.newer": entry(3), "c.saved": entry(2), "d.newest": entry(4)}
	trimHistory(data, "c.saved")
	if diff := cmp.Diff([]string{"c.saved", "d.newest"}, slices.Sorted(maps.Keys(data))); diff != "" {
		t.Errorf("keys kept (-want +got):\n%s", diff)
	}
}
