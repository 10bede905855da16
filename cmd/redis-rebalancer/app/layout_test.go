package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// bitnamiFiles writes a snapshot of a Bitnami-style cluster (one StatefulSet rc of 6 pods,
// labelled app.kubernetes.io/instance=rc, on 3 zones × 3 nodes) whose master rc-0 and its
// replica rc-5 share zone-a, and the CLUSTER NODES file of its Redis (rc-0…rc-2 masters; rc-3
// replicates rc-1, rc-4 rc-2, rc-5 rc-0). It returns the snapshot's path and the files'
// directory.
func bitnamiFiles(t *testing.T) (snapFile, nodesDir string) {
	t.Helper()
	labels := map[string]string{policies.DefaultClusterLabel: "rc", "app.kubernetes.io/name": "redis-cluster"}
	sts := fixture.StatefulSet("rc", 6, labels, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "rc-headless" })
	snap := &policies.Snapshot{Nodes: fixture.ZonedNodes(3, "a", "b", "c"), StatefulSets: []*appsv1.StatefulSet{sts}}
	nodeOf := []string{"n1", "n4", "n5", "n7", "n8", "n2"}
	var lines []string
	slots := []redisctl.SlotRange{{Start: 0, End: 5460}, {Start: 5461, End: 10922}, {Start: 10923, End: 16383}}
	id := func(i int) string { return fmt.Sprintf("%040x", i+1) }
	for i := 0; i < 6; i++ {
		p := fixture.StatefulSetPod(sts, i, fixture.On(nodeOf[i]), fixture.Ready())
		p.Status.PodIP = fmt.Sprintf("10.0.0.%d", i+1)
		snap.Pods = append(snap.Pods, p)
		n := redisctl.Node{ID: id(i), IP: p.Status.PodIP, Port: 6379, BusPort: 16379, LinkState: redisctl.LinkConnected}
		if i < 3 {
			n.Flags, n.Slots = []string{redisctl.FlagMaster}, []redisctl.SlotRange{slots[i]}
		} else {
			n.Flags, n.MasterID = []string{redisctl.FlagReplica}, id((i-2)%3)
		}
		lines = append(lines, n.String())
	}
	dir := t.TempDir()
	snapFile = filepath.Join(dir, "snap.yaml")
	f, err := os.Create(snapFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := observe.EncodeSnapshot(f, snap); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	nodesDir = filepath.Join(dir, "nodes")
	if err := os.Mkdir(nodesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nodesDir, observe.RedisNodesFile(fixture.Namespace, "rc")+".txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return snapFile, nodesDir
}

// TestLayoutOffline plans a Bitnami-style cluster offline: with --layout bitnami the shards come
// from Redis's CLUSTER NODES (--redis-nodes), as they would live; without the file they are
// unknown and nothing is evicted; forced to the owner, the one StatefulSet is one impossible shard.
func TestLayoutOffline(t *testing.T) {
	snap, nodes := bitnamiFiles(t)
	runExitCases(t, []exitCase{
		{name: "--layout bitnami --redis-nodes → shards from Redis, evict the replica rc-5 out of its master's zone first", args: []string{"plan", "--snapshot", snap, "--layout", "bitnami", "--redis-nodes", nodes},
			wantCode: ExitOK, wantOut: []string{"6 pods (N=6), 3 shards", "shards from Redis", "rc-0 M", "rc-5 R", "ShardSeparation: shard slots-0-5460", "evict redis/rc-5 from n2 (R)", "compliant after: true"}},
		{name: "-o json → shardSource redis, no warnings", args: []string{"plan", "--snapshot", snap, "--layout", "bitnami", "--redis-nodes", nodes, "-o", "json"},
			wantCode: ExitOK, wantOut: []string{`"shardSource": "redis"`, `"warnings": []`, `"evictions": 2`}},
		{name: "--layout bitnami without --redis-nodes → 1: the shards cannot be known offline, never guessed nor judged compliant; says what to give", args: []string{"plan", "--snapshot", snap, "--layout", "bitnami"},
			wantCode: ExitError, wantErr: []string{"shards come from Redis", "no CLUSTER NODES was given for redis/rc", "--redis-nodes FILE|DIR", "--shard-source label:KEY"}},
		{name: "--layout bitnami --shard-source owner → the flag wins: one shard of 6 pods needs 6 zones", args: []string{"plan", "--snapshot", snap, "--layout", "bitnami", "--shard-source", "owner", "--redis-nodes", nodes},
			wantCode: ExitViolations, wantOut: []string{"1 shard,", "a shard of 6 pods needs 6 zones with usable nodes"}},
		{name: "--layout ot → its cluster label: no pod of this cluster has it → 1, the label named", args: []string{"check", "--snapshot", snap, "--layout", "ot"},
			wantCode: ExitError, wantErr: []string{"none of the 6 pods in every namespace carries the cluster label cluster"}},
		{name: "--layout ot --allow-empty → 0, no cluster", args: []string{"check", "--snapshot", snap, "--layout", "ot", "--allow-empty"},
			wantCode: ExitOK, wantOut: []string{"no Redis cluster found (no pod has the label cluster)"}},
		{name: "--redis-nodes live → error", args: []string{"check", "--redis-nodes", nodes, "--kubeconfig", filepath.Join(t.TempDir(), "none")},
			wantCode: ExitError, wantErr: []string{"--redis-nodes needs --snapshot"}},
		{name: "--shard-source bad → error naming the field and flag", args: []string{"check", "--snapshot", snap, "--shard-source", "sts"},
			wantCode: ExitError, wantErr: []string{`selection.shardSource (--shard-source): Invalid value: "sts"`}},
	})
}
