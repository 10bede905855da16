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
	keys := []string{"cluster", "pod", "step", "oldMaster", "newMaster", "stoppedBy"}
	events := []string{"Outside every maintenance window: observing only", "Move skipped", "Move aborted", "Master failed over", "Pod evicted", "Move done", "Cluster stopped"}
	pod := `{"name":"redis-s3-0","namespace":"redis"}`
	for _, tc := range []struct {
		name   string
		setup  func(tb *testbed)
		change func(*Config)
		want   [][]string
	}{
		{
			name: "a master moved, then two failover steps → failover, eviction and the move's end, then each failover step's, each naming cluster and pod",
			want: [][]string{
				{"Master failed over", `"redis/redis"`, pod, "", `"redis-s3-0"`, `"redis-s3-1"`, ""},
				{"Pod evicted", `"redis/redis"`, pod, "", "", "", ""},
				{"Move done", `"redis/redis"`, pod, "", "", "", ""},
				{"Master failed over", `"redis/redis"`, `{"name":"redis-s2-0","namespace":"redis"}`, "", `"redis-s2-0"`, `"redis-s2-1"`, ""},
				{"Move done", `"redis/redis"`, `{"name":"redis-s2-0","namespace":"redis"}`, "", "", "", ""},
				{"Master failed over", `"redis/redis"`, `{"name":"redis-s4-0","namespace":"redis"}`, "", `"redis-s4-0"`, `"redis-s4-1"`, ""},
				{"Move done", `"redis/redis"`, `{"name":"redis-s4-0","namespace":"redis"}`, "", "", "", ""},
			},
		},
		{
			name: "a PodDisruptionBudget 429 at the dry run → the skip with its step, then the cluster's stop",
			setup: func(tb *testbed) {
				tb.onEviction = func(_ *policyv1.Eviction, dryRun bool) (bool, error) { return dryRun, tooManyRequests() }
			},
			want: [][]string{
				{"Move skipped", `"redis/redis"`, pod, `"pdbDryRun"`, "", "", ""},
				{"Cluster stopped", `"redis/redis"`, "", "", "", "", `"pdbDryRun"`},
			},
		},
		{
			name: "outside every window → the window decision, then the cluster's stop by the window",
			change: func(c *Config) {
				c.Window = window.Config{Windows: []window.Window{{Schedule: "0 5 * * *", Duration: time.Hour}}}
			},
			want: [][]string{
				{"Outside every maintenance window: observing only", "", "", "", "", "", ""},
				{"Cluster stopped", `"redis/redis"`, "", "", "", "", `"window"`},
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
