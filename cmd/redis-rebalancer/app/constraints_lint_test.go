package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestConstraintsValuesPassLint: constraints and lint agree. For 1 to 7 shards of 1 or 2
// replicas, in one zone and in three, with a node for every pod and with fewer nodes than pods,
// the values `constraints --layout bitnami` prints (YAML, or -o json nested under an umbrella
// chart's key with --values-path) are rendered into the Bitnami layout's StatefulSet as the chart
// renders them (scenario.BitnamiValues), and `lint --layout bitnami` on that snapshot, its shards
// from the CLUSTER NODES the chart's redis-cli forms, finds nothing: exit 0, or exit 3 with
// MasterQuorum alone where the shards and zones leave a loss no placement survives (M ≤ 2
// masters, or ⌈M/Z⌉ ≥ M/2 in 3 zones), which no value can fix. The chart's default
// (cluster.nodes=6: 3 shards, 1 replica) and cluster.nodes=9 cluster.replicas=2 are among the rows.
func TestConstraintsValuesPassLint(t *testing.T) {
	for shards := 1; shards <= 7; shards++ {
		for replicas := 1; replicas <= 2; replicas++ {
			for _, zones := range []int{1, 3} {
				n := shards * (replicas + 1)
				for _, nodes := range []int{n + (zones-n%zones)%zones, n - 1} {
					if nodes < zones {
						continue // fewer nodes than zones: no such cluster
					}
					// Every other row goes through -o json, nested under an umbrella chart's key.
					umbrella := (shards+replicas)%2 == 0
					name := fmt.Sprintf("cluster.nodes=%d cluster.replicas=%d (%d shards), %d zones, %d nodes, json and --values-path %v",
						n, replicas, shards, zones, nodes, umbrella)
					t.Run(name, func(t *testing.T) {
						constraintsPassLint(t, shards, replicas, zones, nodes, umbrella)
					})
				}
			}
		}
	}
}

// constraintsPassLint is a row of TestConstraintsValuesPassLint.
func constraintsPassLint(t *testing.T, shards, replicas, zones, nodes int, umbrella bool) {
	t.Helper()
	const release, key = "redis-cluster", "redis-cluster"
	n := shards * (replicas + 1)
	sc := scenario.Scenario{Layout: scenario.LayoutBitnami, Cluster: release, Shards: shards, PodsPerShard: replicas + 1}
	var zoneNames, nodeNames []string
	for z := 0; z < zones; z++ {
		zone := scenario.Zone{Name: fmt.Sprintf("zone-%c", 'a'+z)}
		zoneNames = append(zoneNames, zone.Name)
		for k := z; k < nodes; k += zones {
			zone.Nodes = append(zone.Nodes, "n"+strconv.Itoa(k+1))
		}
		sc.Zones = append(sc.Zones, zone)
	}
	for _, z := range sc.Zones {
		nodeNames = append(nodeNames, z.Nodes...)
	}
	// Pod k (in shard order) on node k mod nodes: a shard's pods on different nodes.
	var placed [][]string
	k := 0
	for i := 0; i < shards; i++ {
		var shard []string
		for o := 0; o <= replicas; o++ {
			shard = append(shard, nodeNames[k%nodes])
			k++
		}
		placed = append(placed, shard)
	}
	sc = sc.Placed(placed)

	args := []string{"constraints", "--layout", "bitnami", "--cluster-name", release, "--shards", strconv.Itoa(shards),
		"--pods-per-shard", strconv.Itoa(replicas + 1), "--nodes", strconv.Itoa(nodes)}
	if zones > 1 {
		args = append(args, "--zones", strings.Join(zoneNames, ","))
	}
	if umbrella {
		args = append(args, "-o", "json", "--values-path", key)
	}
	out, errOut, code := runCLI(t, args...)
	if code != ExitOK {
		t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	values := out
	if umbrella {
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		sub, ok := v[key]
		if len(v) != 1 || !ok {
			t.Fatalf("-o json --values-path %s: keys %v, want %s alone", key, v, key)
		}
		b, err := yaml.Marshal(sub)
		if err != nil {
			t.Fatal(err)
		}
		values = string(b) // what the subchart sees
	}
	var preset struct {
		Redis struct {
			PodAntiAffinityPreset string `json:"podAntiAffinityPreset"`
		} `json:"redis"`
	}
	if err := yaml.Unmarshal([]byte(values), &preset); err != nil {
		t.Fatalf("values: %v\n%s", err, values)
	}
	if got, want := preset.Redis.PodAntiAffinityPreset == "hard", nodes >= n; got != want {
		t.Errorf("redis.podAntiAffinityPreset %q: hard %v, want %v (%d pods, %d nodes)", preset.Redis.PodAntiAffinityPreset, got, want, n, nodes)
	}
	sc.BitnamiValues = values
	t.Logf("values:\n%s", values)

	dir := t.TempDir()
	snap, err := sc.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	snapFile, nodesFile := writeOffline(t, dir, sc, snap)
	lintArgs := []string{"lint", "--snapshot", snapFile, "--redis-nodes", nodesFile, "--layout", "bitnami", "-o", "json"}
	if umbrella {
		lintArgs = append(lintArgs, "--values-path", key)
	}
	out, errOut, code = runCLI(t, lintArgs...)
	var doc struct {
		Findings []lint.Finding
		Notes    []string
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("lint: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	// M masters over Z zones leave a loss no placement survives when M ≤ 2 (a node holding one
	// of 2 masters), or, in 3 zones, when a zone must hold at least half of them.
	quorumLoss := shards <= 2 || zones >= 3 && 2*((shards+zones-1)/zones) >= shards
	var want []lint.Kind
	wantCode := ExitOK
	if quorumLoss {
		want, wantCode = []lint.Kind{lint.MasterQuorum}, ExitViolations
	}
	var got []lint.Kind
	for _, f := range doc.Findings {
		got = append(got, f.Kind)
		t.Logf("finding: %s: %s\n%s", f.Kind, f.Message, f.Values)
	}
	for _, note := range doc.Notes {
		t.Logf("note: %s", note)
	}
	if code != wantCode || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lint on the values constraints printed: exit %d, findings %v; want exit %d, findings %v", code, got, wantCode, want)
	}
}

// writeOffline writes snap (sc's snapshot, maybe changed) and sc's CLUSTER NODES into dir, as
// --snapshot and --redis-nodes take them, and returns their paths.
func writeOffline(t *testing.T, dir string, sc scenario.Scenario, snap *policies.Snapshot) (snapFile, nodesFile string) {
	t.Helper()
	var buf bytes.Buffer
	if err := observe.EncodeSnapshot(&buf, snap); err != nil {
		t.Fatal(err)
	}
	snapFile = filepath.Join(dir, "snapshot.yaml")
	nodesFile = filepath.Join(dir, observe.RedisNodesFile(snap.Pods[0].Namespace, snap.Pods[0].Labels[sc.ClusterLabel()])+".txt")
	if err := os.WriteFile(snapFile, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodesFile, []byte(sc.ClusterNodes()), 0o600); err != nil {
		t.Fatal(err)
	}
	return snapFile, nodesFile
}
