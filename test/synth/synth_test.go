package synth

import (
	"reflect"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// small is a configuration the unit tests can afford: few enough Redis pods that policies.Build
// takes a fraction of a second, and few enough nodes that some zones hold several pods of one
// cluster per node.
func small() Config {
	return Config{Seed: 7, Nodes: 45, Zones: 3, Namespaces: 4, Pods: 1500, RedisClusters: 12, MinPods: 6, MaxPods: 30, DriftFraction: 0.6}
}

func TestGenerateShape(t *testing.T) {
	cfg := small()
	snap, st := GenerateWithStats(cfg)
	if len(snap.Nodes) != cfg.Nodes {
		t.Errorf("nodes = %d, want %d", len(snap.Nodes), cfg.Nodes)
	}
	if len(snap.Pods) != cfg.Pods || st.Pods != cfg.Pods {
		t.Errorf("pods = %d (stats %d), want %d", len(snap.Pods), st.Pods, cfg.Pods)
	}
	if st.RedisPods+st.AppPods != len(snap.Pods) || st.AppPods == 0 {
		t.Errorf("redis %d + app %d pods != %d", st.RedisPods, st.AppPods, len(snap.Pods))
	}
	zones := map[string]int{}
	for _, n := range snap.Nodes {
		zones[n.Labels[policies.LabelZone]]++
		if n.Labels[policies.LabelHostname] != n.Name {
			t.Errorf("node %s: hostname label %q", n.Name, n.Labels[policies.LabelHostname])
		}
	}
	if len(zones) != cfg.Zones {
		t.Errorf("zones = %v, want %d", zones, cfg.Zones)
	}
	byCluster := map[string]int{}
	for _, p := range snap.Pods {
		if v, ok := p.Labels[policies.DefaultClusterLabel]; ok {
			byCluster[p.Namespace+"/"+v]++
		}
	}
	if len(byCluster) != cfg.RedisClusters || len(st.Clusters) != cfg.RedisClusters {
		t.Fatalf("redis clusters = %d (stats %d), want %d", len(byCluster), len(st.Clusters), cfg.RedisClusters)
	}
	shards := 0
	for _, c := range st.Clusters {
		n := byCluster[c.Namespace+"/"+c.Name]
		if n != c.N() || n < cfg.MinPods || n > cfg.MaxPods || c.Shards < 3 {
			t.Errorf("cluster %s/%s: %d pods, %d shards × %d, want %d–%d pods", c.Namespace, c.Name, n, c.Shards, c.PodsPerShard, cfg.MinPods, cfg.MaxPods)
		}
		shards += c.Shards
	}
	if len(snap.StatefulSets) != shards || len(snap.PodDisruptionBudgets) != shards {
		t.Errorf("statefulsets %d, pdbs %d, want one per shard (%d)", len(snap.StatefulSets), len(snap.PodDisruptionBudgets), shards)
	}
	if len(st.Drifted) == 0 {
		t.Errorf("no cluster drifted with DriftFraction %v", cfg.DriftFraction)
	}
	t.Log(st)
}

// Clusters without drift comply with every hard rule; every drifted one breaks one.
func TestGenerateDriftBreaksRules(t *testing.T) {
	snap, st := GenerateWithStats(small())
	m, err := policies.Build(snap, policies.Options{RoleLabel: scenario.RoleLabel})
	if err != nil {
		t.Fatal(err)
	}
	drift := map[string]Drift{}
	for _, c := range st.Clusters {
		drift[c.Namespace+"/"+c.Name] = c.Drift
	}
	if len(m.Clusters) != len(st.Clusters) {
		t.Fatalf("model has %d clusters, generated %d", len(m.Clusters), len(st.Clusters))
	}
	if len(st.Drifted) < 3 {
		t.Errorf("drift kinds %v, want at least 3 for this seed", st.Drifted)
	}
	for _, c := range m.Clusters {
		hard := policies.Hard(c.Evaluate(c.Current()))
		d := drift[c.Key()]
		if (d == DriftNone) != (len(hard) == 0) {
			t.Errorf("cluster %s (N=%d, Z=%d) drift %q: hard violations %+v", c.Key(), c.N, c.Z(), d, hard)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(small()), Generate(small())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two snapshots from the same Config differ")
	}
	cfg := small()
	cfg.Seed++
	if reflect.DeepEqual(a, Generate(cfg)) {
		t.Fatal("a different seed gave the same snapshot")
	}
}

func TestZoneName(t *testing.T) {
	for i, want := range map[int]string{0: "zone-a", 2: "zone-c", 25: "zone-z", 26: "zone-aa", 27: "zone-ab"} {
		if got := ZoneName(i); got != want {
			t.Errorf("ZoneName(%d) = %q, want %q", i, got, want)
		}
	}
}
