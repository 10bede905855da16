// Package synth generates a large synthetic cluster snapshot for the scale benchmark (bench):
// thousands of zoned nodes, Redis clusters built the way test/scenario builds one (one
// StatefulSet per shard carrying the recommended constraints from constraints.Generate, a
// PodDisruptionBudget per shard), and ordinary application pods filling the rest of the cluster.
//
// # Shape (Default())
//
//   - Nodes: 5,000, round-robin over 3 zones ("zone-a", "zone-b", ...), named "node-00000"…,
//     labelled kubernetes.io/hostname, topology.kubernetes.io/zone, topology.kubernetes.io/region,
//     node.kubernetes.io/instance-type, kubernetes.io/os and kubernetes.io/arch, Ready, with the
//     allocatable of one of three instance types (16 CPU/64Gi, 32 CPU/128Gi, 64 CPU/256Gi), 110 pods
//     each. No taints.
//   - Namespaces: 100 ("ns-000"…); Redis clusters and Deployments are spread over them.
//   - Redis clusters: 1,000 ("redis-0000"…, unique over all namespaces), each with 2 or 3 pods per
//     shard and at least 3 shards, so N is between MinPods and MaxPods (6–120, about 62 on
//     average). About 80 % of them are allowed three zones (all of them with 3 zones, three
//     picked at random with more), 15 % two zones (then 2 pods per shard), 5 % one. Pods are
//     labelled and constrained as test/scenario does (app.kubernetes.io/name=redis,
//     app.kubernetes.io/instance=<cluster>, the shard label, the role label: ordinal 0 master),
//     request 100m CPU and 128Mi, and have no volumes.
//   - Compliant placement: pod o of shard s goes to allowed zone (s+o) mod Z, on a random node of
//     that zone that no other pod of the cluster uses and has room (when every node of the zone
//     holds one already, as in small configurations: the least loaded one without a pod of the
//     shard), so every hard rule holds.
//   - Drift: a DriftFraction of the clusters (20 % by default) then drifts in one of four ways,
//     picked at random, each breaking at least one hard rule:
//     DriftNode stacks NodeLimit(N)+1 pods of distinct shards of one zone on one node;
//     DriftZone moves pods of other zones into one zone until it holds more than the zone rule
//     allows (one pod past an even split with Z = 2), usually breaking ShardSeparation on the
//     way, like pods re-placed after a zone outage; with Z = 1 it is DriftOutside instead: one
//     pod runs in a zone outside the allowed one;
//     DriftPending leaves one or two replicas Pending with PodScheduled=False/Unschedulable;
//     DriftScaleDown is a scale-down: the running pods keep the maxSkew written for two more
//     shards while the StatefulSet templates carry the current N, plus a DriftNode stack.
//   - Application pods: the rest of Pods belong to Deployments of 1–40 replicas (one ReplicaSet
//     owner reference, labels app=<name> and pod-template-hash), requesting 50m–500m CPU and
//     64Mi–1Gi, bound to random nodes with room (Pending Unschedulable if none has). 15 % of the
//     Deployments carry a zone topology spread constraint (maxSkew 1, DoNotSchedule) and are
//     placed round-robin over the zones so it holds; 10 % a hostname one (maxSkew 1,
//     ScheduleAnyway); 10 % a preferred pod anti-affinity on the hostname. App pods never carry
//     the Redis cluster label.
//
// With Default() (seed 1) that is 61,756 Redis pods (63 Pending) in 26,592 StatefulSets (and as
// many PDBs), 88,244 app pods in 4,291 Deployments (1,088 with a spread constraint), and 190
// drifted clusters (node 50, zone 56, outside-zones 3, pending 40, scale-down 41).
//
// Everything is deterministic for a Config: math/rand/v2 with a PCG seeded from Config.Seed, no
// map iteration order, fixed timestamps.
//
// It owns the generator only: Redis clusters come from test/scenario, nodes and application
// pods from test/fixture's builders. It may import those two, policies (the snapshot type and
// the rules' limits) and the Kubernetes API types.
package synth

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// Config is the shape of a generated snapshot. Zero fields take Default()'s values, except
// DriftFraction (0 means no drift) and Seed (0 is a valid seed).
type Config struct {
	// Seed seeds the generator: equal Configs give equal snapshots.
	Seed uint64
	// Nodes is the number of nodes (5,000), spread round-robin over Zones zones (at least 3).
	Nodes, Zones int
	// Namespaces is the number of namespaces the clusters and Deployments are spread over (100).
	Namespaces int
	// Pods is the total number of pods, Redis and application (150,000). When the Redis clusters
	// alone need more, there are no application pods and the total is theirs.
	Pods int
	// RedisClusters is the number of Redis clusters (1,000).
	RedisClusters int
	// MinPods and MaxPods bound a Redis cluster's N (6 and 120). Clusters have at least 3 shards.
	MinPods, MaxPods int
	// PodsPerShard is 2 or 3 for every cluster; 0 picks 2 or 3 per cluster at random (two-zone
	// clusters always get 2, as a third pod of a shard would need a third zone).
	PodsPerShard int
	// DriftFraction is the fraction of Redis clusters whose placement drifts out of compliance
	// (Default: 0.2).
	DriftFraction float64
}

// Default returns the benchmark's full-size configuration.
func Default() Config {
	return Config{
		Seed: 1, Nodes: 5000, Zones: 3, Namespaces: 100, Pods: 150000, RedisClusters: 1000,
		MinPods: 6, MaxPods: 120, DriftFraction: 0.2,
	}
}

// Scaled returns Default() with Nodes, Pods, RedisClusters and Namespaces multiplied by f
// (at least 6 nodes, 1 cluster, 1 namespace); cluster sizes stay 6–120.
func Scaled(f float64) Config {
	c := Default()
	c.Nodes = max(int(float64(c.Nodes)*f), 6)
	c.Pods = int(float64(c.Pods) * f)
	c.RedisClusters = max(int(float64(c.RedisClusters)*f), 1)
	c.Namespaces = max(int(float64(c.Namespaces)*f), 1)
	return c
}

func (c Config) withDefaults() Config {
	d := Default()
	if c.Nodes <= 0 {
		c.Nodes = d.Nodes
	}
	if c.Zones < 3 {
		c.Zones = d.Zones
	}
	if c.Namespaces <= 0 {
		c.Namespaces = d.Namespaces
	}
	if c.Pods <= 0 {
		c.Pods = d.Pods
	}
	if c.RedisClusters <= 0 {
		c.RedisClusters = d.RedisClusters
	}
	if c.MinPods <= 0 {
		c.MinPods = d.MinPods
	}
	if c.MaxPods <= 0 {
		c.MaxPods = d.MaxPods
	}
	return c
}

// Drift is how a Redis cluster's placement was made to drift.
type Drift string

// The drift kinds (package doc, "Drift").
const (
	// DriftNone: the placement complies.
	DriftNone Drift = ""
	// DriftNode: NodeLimit(N)+1 pods stacked on one node.
	DriftNode Drift = "node"
	// DriftZone: one zone holds more pods than the zone rules allow.
	DriftZone Drift = "zone"
	// DriftOutside: one pod runs outside the allowed zone (Z = 1).
	DriftOutside Drift = "outside-zones"
	// DriftPending: one or two replicas Pending Unschedulable.
	DriftPending Drift = "pending"
	// DriftScaleDown: running pods carry an older, larger maxSkew, plus a DriftNode stack.
	DriftScaleDown Drift = "scale-down"
)

// ClusterInfo describes one generated Redis cluster.
type ClusterInfo struct {
	// Namespace and Name identify the cluster (Name is the value of policies.DefaultClusterLabel).
	Namespace, Name string
	// Shards × PodsPerShard = N.
	Shards, PodsPerShard int
	// Zones are the allowed zones.
	Zones []string
	// Drift is how the placement drifted (DriftNone: compliant).
	Drift Drift
}

// N returns the cluster's size.
func (c ClusterInfo) N() int { return c.Shards * c.PodsPerShard }

// Stats summarises a generated snapshot.
type Stats struct {
	// Nodes, Zones and Namespaces are the counts generated.
	Nodes, Zones, Namespaces int
	// Pods = RedisPods + AppPods; PendingPods are the Redis pods left Pending.
	Pods, RedisPods, AppPods, PendingPods int
	// Deployments is the number of application Deployments, SpreadDeployments those with their
	// own topology spread constraint.
	Deployments, SpreadDeployments int
	// StatefulSets and PodDisruptionBudgets are the Redis objects (one each per shard).
	StatefulSets, PodDisruptionBudgets int
	// Clusters describe the Redis clusters in generation order.
	Clusters []ClusterInfo
	// Drifted counts the clusters per drift kind.
	Drifted map[Drift]int
}

// String renders the stats on one line.
func (s Stats) String() string {
	return fmt.Sprintf("%d nodes in %d zones, %d namespaces, %d pods (%d Redis in %d clusters, %d of them Pending; %d app in %d Deployments, %d with spread constraints), %d StatefulSets, %d PDBs, drift %v",
		s.Nodes, s.Zones, s.Namespaces, s.Pods, s.RedisPods, len(s.Clusters), s.PendingPods, s.AppPods, s.Deployments, s.SpreadDeployments,
		s.StatefulSets, s.PodDisruptionBudgets, map[Drift]int(s.Drifted))
}

// Generate returns the snapshot for cfg (see the package doc for its shape).
func Generate(cfg Config) *policies.Snapshot {
	snap, _ := GenerateWithStats(cfg)
	return snap
}

// GenerateWithStats is Generate, also returning what was generated. It panics when the
// StatefulSets cannot be built (constraints.Generate rejects the input), which a valid Config
// never causes.
func GenerateWithStats(cfg Config) (*policies.Snapshot, Stats) {
	cfg = cfg.withDefaults()
	g := &gen{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, 0x5eed_2ed15)),
		snap: &policies.Snapshot{},
		stats: Stats{Nodes: cfg.Nodes, Zones: cfg.Zones, Namespaces: cfg.Namespaces,
			Drifted: map[Drift]int{}},
	}
	g.nodes()
	g.redis()
	g.apps()
	g.stats.Pods = len(g.snap.Pods)
	g.stats.StatefulSets = len(g.snap.StatefulSets)
	g.stats.PodDisruptionBudgets = len(g.snap.PodDisruptionBudgets)
	return g.snap, g.stats
}

// Namespace returns the name of namespace i.
func Namespace(i int) string { return fmt.Sprintf("ns-%03d", i) }

// ZoneName returns the name of zone i ("zone-a", …, "zone-z", "zone-aa", …).
func ZoneName(i int) string {
	s := ""
	for {
		s = string(rune('a'+i%26)) + s
		i = i/26 - 1
		if i < 0 {
			return "zone-" + s
		}
	}
}

type instanceType struct {
	name     string
	cpu, mem int64 // millicores, bytes
}

var instanceTypes = []instanceType{
	{"m.4xlarge", 16000, 64 << 30},
	{"m.8xlarge", 32000, 128 << 30},
	{"m.16xlarge", 64000, 256 << 30},
}

const maxPodsPerNode = 110

// node is a generated node's remaining room.
type node struct {
	name     string
	zone     int
	cpu, mem int64
	pods     int
}

type gen struct {
	cfg    Config
	rng    *rand.Rand
	snap   *policies.Snapshot
	stats  Stats
	room   []node
	byZone [][]int // zone → node indices
}

var created = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

func (g *gen) nodes() {
	g.byZone = make([][]int, g.cfg.Zones)
	for i := 0; i < g.cfg.Nodes; i++ {
		name := fmt.Sprintf("node-%05d", i)
		z := i % g.cfg.Zones
		it := instanceTypes[g.rng.IntN(len(instanceTypes))]
		alloc := corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewMilliQuantity(it.cpu, resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(it.mem, resource.BinarySI),
			corev1.ResourcePods:             *resource.NewQuantity(maxPodsPerNode, resource.DecimalSI),
			corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		}
		g.snap.Nodes = append(g.snap.Nodes, fixture.Node(name,
			fixture.InZone(ZoneName(z)),
			fixture.NodeLabel(corev1.LabelTopologyRegion, "region-1"),
			fixture.NodeLabel(corev1.LabelInstanceTypeStable, it.name),
			fixture.NodeLabel(corev1.LabelOSStable, "linux"),
			fixture.NodeLabel(corev1.LabelArchStable, "amd64"),
			func(n *corev1.Node) {
				n.CreationTimestamp = metav1.NewTime(created)
				n.Status.Capacity, n.Status.Allocatable = alloc.DeepCopy(), alloc
				n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			}))
		g.room = append(g.room, node{name: name, zone: z, cpu: it.cpu, mem: it.mem, pods: maxPodsPerNode})
		g.byZone[z] = append(g.byZone[z], i)
	}
}

// Redis pods' requests, as test/scenario writes them.
const (
	redisCPU = 100
	redisMem = 128 << 20
)

func (n *node) fits(cpu, mem int64) bool { return n.pods > 0 && n.cpu >= cpu && n.mem >= mem }

func (n *node) take(cpu, mem int64) { n.pods--; n.cpu -= cpu; n.mem -= mem }

// pickNode returns a random node of zone z (any zone when z < 0) with room for the request and
// not in avoid, or -1.
func (g *gen) pickNode(z int, cpu, mem int64, avoid map[int]bool) int {
	cands := g.byZone
	if z >= 0 {
		cands = g.byZone[z : z+1]
	}
	total := 0
	for _, c := range cands {
		total += len(c)
	}
	at := func(k int) int {
		for _, c := range cands {
			if k < len(c) {
				return c[k]
			}
			k -= len(c)
		}
		return -1
	}
	for try := 0; try < 16; try++ {
		i := at(g.rng.IntN(total))
		if !avoid[i] && g.room[i].fits(cpu, mem) {
			return i
		}
	}
	start := g.rng.IntN(total)
	for k := 0; k < total; k++ {
		i := at((start + k) % total)
		if !avoid[i] && g.room[i].fits(cpu, mem) {
			return i
		}
	}
	return -1
}

func (g *gen) redis() {
	cfg := g.cfg
	for ci := 0; ci < cfg.RedisClusters; ci++ {
		info := ClusterInfo{Namespace: Namespace(ci % cfg.Namespaces), Name: fmt.Sprintf("redis-%04d", ci)}
		// Zones: 80 % three (all of 3, or three of more), 15 % two, 5 % one.
		z := 3
		switch r := g.rng.Float64(); {
		case r < 0.05:
			z = 1
		case r < 0.20:
			z = 2
		}
		zones := g.rng.Perm(cfg.Zones)[:z]
		slices.Sort(zones)
		for _, zi := range zones {
			info.Zones = append(info.Zones, ZoneName(zi))
		}
		info.PodsPerShard = cfg.PodsPerShard
		if info.PodsPerShard == 0 {
			info.PodsPerShard = 2 + g.rng.IntN(2)
		}
		if z == 2 {
			info.PodsPerShard = 2
		}
		lo := max(3, (cfg.MinPods+info.PodsPerShard-1)/info.PodsPerShard)
		hi := max(lo, cfg.MaxPods/info.PodsPerShard)
		info.Shards = lo + g.rng.IntN(hi-lo+1)
		if g.rng.Float64() < cfg.DriftFraction {
			kinds := []Drift{DriftNode, DriftZone, DriftPending, DriftScaleDown}
			info.Drift = kinds[g.rng.IntN(len(kinds))]
			if info.Drift == DriftZone && z == 1 {
				info.Drift = DriftOutside
			}
		}
		g.cluster(info, zones)
	}
}

// cluster places one Redis cluster, drifts it, and appends its objects.
func (g *gen) cluster(info ClusterInfo, zones []int) {
	sc := scenario.Scenario{
		Namespace: info.Namespace, Cluster: info.Name,
		Shards: info.Shards, PodsPerShard: info.PodsPerShard, RoleLabels: true,
	}
	for _, name := range info.Zones {
		sc.Zones = append(sc.Zones, scenario.Zone{Name: name})
	}
	type slot struct{ shard, ord, node int }
	var pods []slot
	used := map[int]bool{}
	perNode := map[int]int{} // node → the cluster's pods on it
	for s := 0; s < info.Shards; s++ {
		var shardNodes []int
		for o := 0; o < info.PodsPerShard; o++ {
			z := zones[(s+o)%len(zones)]
			n := g.pickNode(z, redisCPU, redisMem, used)
			if n < 0 {
				// Every node of the zone holds a pod of the cluster already (small
				// configurations): the least loaded one without a pod of this shard.
				n = g.leastLoaded(z, perNode, shardNodes)
			}
			if n >= 0 {
				used[n] = true
				perNode[n]++
				shardNodes = append(shardNodes, n)
				g.room[n].take(redisCPU, redisMem)
			}
			pods = append(pods, slot{s, o, n})
		}
	}
	nodeLimit := policies.NodeLimit(info.N(), false)
	// stack moves k pods of distinct shards, all in one zone, onto one node of that zone.
	stack := func() {
		count := make([]int, g.cfg.Zones)
		for _, p := range pods {
			if p.node >= 0 {
				count[g.room[p.node].zone]++
			}
		}
		zb := zones[0]
		for _, zi := range zones {
			if count[zi] > count[zb] {
				zb = zi
			}
		}
		var in []int // indices into pods, distinct shards
		shardSeen := map[int]bool{}
		for _, k := range g.rng.Perm(len(pods)) {
			p := pods[k]
			if p.node >= 0 && g.room[p.node].zone == zb && !shardSeen[p.shard] {
				shardSeen[p.shard] = true
				in = append(in, k)
			}
		}
		k := min(nodeLimit+1, len(in))
		target := pods[in[0]].node
		for _, j := range in[1:k] {
			if !g.room[target].fits(redisCPU, redisMem) {
				break
			}
			g.room[target].take(redisCPU, redisMem)
			g.release(pods[j].node)
			pods[j].node = target
		}
	}
	switch info.Drift {
	case DriftNode:
		stack()
	case DriftScaleDown:
		old := info.N() + 2*info.PodsPerShard
		sc.RunningMaxSkew = &[2]int32{int32(constraints.NodeMaxSkew(old, false)), int32(constraints.ZoneMaxSkew(old, false))}
		stack()
	case DriftZone:
		zb := zones[g.rng.IntN(len(zones))]
		count := 0
		for _, p := range pods {
			if p.node >= 0 && g.room[p.node].zone == zb {
				count++
			}
		}
		want := policies.ZoneLimit(info.N(), false) + 1
		if len(zones) == 2 {
			want = count + 1 // Z = 2: one pod more than its half breaks ZoneEvenSplit (N even)
		}
		for _, k := range g.rng.Perm(len(pods)) {
			if count >= want {
				break
			}
			p := &pods[k]
			if p.node < 0 || g.room[p.node].zone == zb {
				continue
			}
			if n := g.pickNode(zb, redisCPU, redisMem, used); n >= 0 {
				used[n] = true
				g.room[n].take(redisCPU, redisMem)
				g.release(p.node)
				p.node = n
				count++
			}
		}
	case DriftOutside:
		var others []int
		for zi := 0; zi < g.cfg.Zones; zi++ {
			if zi != zones[0] {
				others = append(others, zi)
			}
		}
		p := &pods[g.rng.IntN(len(pods))]
		if n := g.pickNode(others[g.rng.IntN(len(others))], redisCPU, redisMem, used); n >= 0 && p.node >= 0 {
			g.room[n].take(redisCPU, redisMem)
			g.release(p.node)
			p.node = n
		}
	case DriftPending:
		k := 1 + g.rng.IntN(2)
		for _, j := range g.rng.Perm(len(pods)) {
			if k == 0 {
				break
			}
			if pods[j].ord > 0 && pods[j].node >= 0 {
				g.release(pods[j].node)
				pods[j].node = -1
				k--
			}
		}
	}
	sc.Placement = map[string]string{}
	for _, p := range pods {
		if p.node >= 0 {
			sc.Placement[sc.PodName(p.shard, p.ord)] = g.room[p.node].name
		} else {
			g.stats.PendingPods++
		}
	}
	snap := sc.MustSnapshot()
	g.snap.StatefulSets = append(g.snap.StatefulSets, snap.StatefulSets...)
	g.snap.PodDisruptionBudgets = append(g.snap.PodDisruptionBudgets, snap.PodDisruptionBudgets...)
	g.snap.Pods = append(g.snap.Pods, snap.Pods...)
	g.stats.RedisPods += len(snap.Pods)
	g.stats.Clusters = append(g.stats.Clusters, info)
	if info.Drift != DriftNone {
		g.stats.Drifted[info.Drift]++
	}
}

// leastLoaded returns the node of zone z with room for a Redis pod that holds the fewest pods of
// the cluster (perNode) and none of exclude, or -1.
func (g *gen) leastLoaded(z int, perNode map[int]int, exclude []int) int {
	best := -1
	for _, n := range g.byZone[z] {
		if !g.room[n].fits(redisCPU, redisMem) || slices.Contains(exclude, n) {
			continue
		}
		if best < 0 || perNode[n] < perNode[best] {
			best = n
		}
	}
	return best
}

// release gives a Redis pod's room on node n back.
func (g *gen) release(n int) {
	if n < 0 {
		return
	}
	g.room[n].pods++
	g.room[n].cpu += redisCPU
	g.room[n].mem += redisMem
}

var (
	appCPU = []int64{50, 100, 200, 250, 500}
	appMem = []int64{64 << 20, 128 << 20, 256 << 20, 512 << 20, 1 << 30}
)

// apps fills the rest of the pod budget with Deployments' pods.
func (g *gen) apps() {
	left := g.cfg.Pods - g.stats.RedisPods
	for d := 0; left > 0; d++ {
		replicas := min(1+g.rng.IntN(40), left)
		left -= replicas
		ns := Namespace(g.rng.IntN(g.cfg.Namespaces))
		name := fmt.Sprintf("app-%05d", d)
		hash := fmt.Sprintf("%08x", g.rng.Uint32())[:8]
		rsName := name + "-" + hash
		cpu, mem := appCPU[g.rng.IntN(len(appCPU))], appMem[g.rng.IntN(len(appMem))]
		lbl := map[string]string{"app": name, appsv1.DefaultDeploymentUniqueLabelKey: hash}
		var spread []corev1.TopologySpreadConstraint
		var aff *corev1.Affinity
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
		spreadZones := false
		switch r := g.rng.Float64(); {
		case r < 0.15:
			spreadZones = true
			spread = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
		case r < 0.25:
			spread = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel}}
		case r < 0.35:
			aff = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: corev1.LabelHostname},
				}},
			}}
		}
		g.stats.Deployments++
		if spread != nil {
			g.stats.SpreadDeployments++
		}
		zoneStart := g.rng.IntN(g.cfg.Zones)
		for j := 0; j < replicas; j++ {
			z := -1
			if spreadZones {
				z = (zoneStart + j) % g.cfg.Zones
			}
			n := g.pickNode(z, cpu, mem, nil)
			if n < 0 {
				n = g.pickNode(-1, cpu, mem, nil)
			}
			p := fixture.Pod(fmt.Sprintf("%s-%05d", rsName, j), fixture.InNamespace(ns),
				fixture.CreatedAt(created.Add(time.Duration(d)*time.Minute)), func(p *corev1.Pod) {
					p.Labels = copyLabels(lbl)
					p.OwnerReferences = []metav1.OwnerReference{{
						APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: types.UID("rs-" + rsName), Controller: ptr.To(true),
					}}
					p.Spec = corev1.PodSpec{
						Affinity:                  aff,
						TopologySpreadConstraints: spread,
						Containers: []corev1.Container{{
							Name: "app", Image: "registry.example/app:1.0",
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
								corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
							}},
						}},
					}
				})
			if n >= 0 {
				g.room[n].take(cpu, mem)
				fixture.On(g.room[n].name)(p)
				fixture.Ready()(p)
			} else {
				fixture.Unschedulable()(p)
			}
			g.snap.Pods = append(g.snap.Pods, p)
			g.stats.AppPods++
		}
	}
}

func copyLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
