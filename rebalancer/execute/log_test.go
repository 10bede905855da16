package execute

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// captureLogs sends klog's structured lines to a JSON logger for the rest of the test and returns
// the lines logged so far, each decoded.
func captureLogs(t *testing.T) func() []map[string]any {
	t.Helper()
	var (
		mu    sync.Mutex
		lines []map[string]any
	)
	klog.SetLogger(funcr.NewJSON(func(obj string) {
		var m map[string]any
		if err := json.Unmarshal([]byte(obj), &m); err != nil {
			t.Errorf("log line %q is not JSON: %v", obj, err)
		}
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, m)
	}, funcr.Options{}))
	t.Cleanup(klog.ClearLogger)
	return func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), lines...)
	}
}

// logged returns, for each line whose message is one of msgs, the message and the values of keys
// ("" when absent), in order.
func logged(lines []map[string]any, keys []string, msgs ...string) [][]string {
	var out [][]string
	for _, l := range lines {
		for _, m := range msgs {
			if l["msg"] != m {
				continue
			}
			row := []string{m}
			for _, k := range keys {
				v, _ := json.Marshal(l[k])
				if l[k] == nil {
					v = nil
				}
				row = append(row, string(v))
			}
			out = append(out, row)
		}
	}
	return out
}

func TestLogLines(t *testing.T) {
	keys := []string{"namespace", "cluster", "shard", "pod", "node", "step", "oldMaster", "newMaster", "stoppedBy"}
	events := []string{"Outside every maintenance window: observing only", "Move skipped", "Move aborted", "Master failed over", "Pod evicted", "Move done", "Cluster stopped"}
	move := func(msg, shard, pod, node, step string, rest ...string) []string {
		return append([]string{msg, `"redis"`, `"redis"`, `"` + shard + `"`, `"` + pod + `"`, `"` + node + `"`, `"` + step + `"`}, rest...)
	}
	for _, tc := range []struct {
		name   string
		setup  func(tb *testbed)
		change func(*Config)
		want   [][]string
	}{
		{
			name: "a master moved, then two failover steps → failover, eviction and the move's end, then each failover step's, each naming namespace, cluster, shard, pod, node and step",
			want: [][]string{
				move("Master failed over", "redis-s3", "redis-s3-0", "n1", "failover", `"redis-s3-0"`, `"redis-s3-1"`, ""),
				move("Pod evicted", "redis-s3", "redis-s3-0", "n1", "evict", "", "", ""),
				move("Move done", "redis-s3", "redis-s3-0", "n1", "reobserve", "", "", ""),
				move("Master failed over", "redis-s2", "redis-s2-0", "n1", "failover", `"redis-s2-0"`, `"redis-s2-1"`, ""),
				move("Move done", "redis-s2", "redis-s2-0", "n1", "reobserve", "", "", ""),
				move("Master failed over", "redis-s4", "redis-s4-0", "n2", "failover", `"redis-s4-0"`, `"redis-s4-1"`, ""),
				move("Move done", "redis-s4", "redis-s4-0", "n2", "reobserve", "", "", ""),
			},
		},
		{
			name: "a PodDisruptionBudget 429 at the dry run → the skip with its step, then the cluster's stop",
			setup: func(tb *testbed) {
				tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) { return dryRun, tooManyRequests() }
			},
			want: [][]string{
				move("Move skipped", "redis-s3", "redis-s3-0", "n1", "pdbDryRun", "", "", ""),
				{"Cluster stopped", `"redis"`, `"redis"`, "", "", "", "", "", "", `"pdbDryRun"`},
			},
		},
		{
			name: "outside every window → the window decision, then the cluster's stop by the window",
			change: func(c *Config) {
				c.Window = window.Config{Windows: []window.Window{{Schedule: "0 5 * * *", Duration: time.Hour}}}
			},
			want: [][]string{
				{"Outside every maintenance window: observing only", "", "", "", "", "", "", "", "", ""},
				{"Cluster stopped", `"redis"`, `"redis"`, "", "", "", "", "", "", `"window"`},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := captureLogs(t)
			tb := newTestbed(t, scenario.PostScaleDown())
			if tc.setup != nil {
				tc.setup(tb)
			}
			if _, err := runExecutor(t, tb, tc.change); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, logged(lines(), keys, events...)); diff != "" {
				t.Errorf("log lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLogEveryStep: with LogEveryStep and ProgressLog, a move logs one entry per step at level
// 0, each with namespace, cluster, shard, pod, node and step, and the progress goes to the log
// as "Progress" entries (a cluster's with its namespace and cluster), none to Out.
func TestLogEveryStep(t *testing.T) {
	lines := captureLogs(t)
	tb := newTestbed(t, scenario.PostScaleDown())
	if _, err := runExecutor(t, tb, func(c *Config) { c.LogEveryStep, c.ProgressLog = true, true }); err != nil {
		t.Fatal(err)
	}
	if tb.out.Len() != 0 {
		t.Errorf("Out got %d bytes with ProgressLog, want none:\n%s", tb.out.Len(), tb.out.String())
	}
	var steps []string
	progress := 0
	for _, l := range lines() {
		if l["msg"] == "Progress" {
			progress++
			if l["namespace"] != "redis" || l["cluster"] != "redis" || l["text"] == "" {
				t.Errorf("progress entry %v: want namespace, cluster and text", l)
			}
			continue
		}
		if l["step"] == nil {
			continue
		}
		for _, k := range []string{"namespace", "cluster", "shard", "pod", "node"} {
			if s, _ := l[k].(string); s == "" {
				t.Errorf("step entry %v: no %s", l, k)
			}
		}
		if l["pod"] == "redis-s3-0" {
			steps = append(steps, l["step"].(string))
		}
	}
	want := []string{"window", "healthGate", "placeable", "pdbDryRun", "failover", "drain", "roleCheck", "evict", "recreate", "rejoin", "reobserve"}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("the first move's step entries (-want +got):\n%s", diff)
	}
	if progress < 10 {
		t.Errorf("%d progress entries, want the maps and the steps' lines", progress)
	}
}
