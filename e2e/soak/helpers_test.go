package soak

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

// TestWithFlags: the workloads' arguments with the soak's flags in place of the manifests'.
func TestWithFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args, over []string
		want       []string
	}{
		{"a flag given with = → replaced", []string{"serve", "--policy=/etc/p.yaml", "--namespace=redis"}, []string{"--policy=/tmp/p.yaml"}, []string{"serve", "--namespace=redis", "--policy=/tmp/p.yaml"}},
		{"a flag given with its value apart → both replaced", []string{"run", "--policy", "/etc/p.yaml", "-o", "json"}, []string{"--policy=/tmp/p.yaml"}, []string{"run", "-o", "json", "--policy=/tmp/p.yaml"}},
		{"a flag not there → appended", []string{"run"}, []string{"--kubeconfig=/tmp/k"}, []string{"run", "--kubeconfig=/tmp/k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withFlags(tc.args, tc.over...)); diff != "" {
				t.Errorf("withFlags (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlacementRuns: overlapping placement disruptions make one run, judged at its end, and so
// does one starting within quorumWithin (60 s) of a run's end; control events (serve,
// kube-apiserver, the guard) join none.
func TestPlacementRuns(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(i int, k Kind, from, to int) *Event {
		return &Event{Index: i, Kind: k, Started: at(from), Ended: at(to)}
	}
	events := []*Event{
		ev(1, KindDrainNode, 0, 100), ev(2, KindNodeLost, 50, 200), ev(3, KindGuardDown, 190, 400),
		ev(4, KindAutoscaler, 300, 350), ev(5, KindReplicaKilled, 340, 360), ev(6, KindLeaderKilled, 500, 520),
		ev(7, KindDrainNode, 380, 390), // 20 s after run {4, 5} ended: joins it
	}
	var got [][]int
	var ends []time.Time
	for _, r := range placementRuns(events) {
		got = append(got, indexes(r.events))
		ends = append(ends, r.end)
	}
	if diff := cmp.Diff([][]int{{1, 2}, {4, 5, 7}}, got); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Time{at(200), at(390)}, ends); diff != "" {
		t.Errorf("ends (-want +got):\n%s", diff)
	}
}

// TestLatestHold: a hold is judged against the eviction of the pod it held, not a later pod of
// the same name (seed 1's 30-minute soak: redis-cluster-7 held at +11m22s, evicted at +14m16s;
// its re-created pod evicted unheld at +20m45s was counted as held for 9m23s).
func TestLatestHold(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	holds := []hold{
		{at: at(682), pod: "redis/redis-cluster-7"},
		{at: at(840), pod: "redis/redis-cluster-1"},
		{at: at(1300), pod: "redis/redis-cluster-1"},
	}
	terms := []termination{
		{at: at(856), pod: "redis-cluster-7", uid: "a", reason: "EvictionByEvictionAPI"},
		{at: at(1245), pod: "redis-cluster-7", uid: "b", reason: "EvictionByEvictionAPI"},
		{at: at(895), pod: "redis-cluster-1", uid: "c", reason: "DeletionByTaintManager"},
		{at: at(1310), pod: "redis-cluster-1", uid: "d", reason: "EvictionByEvictionAPI"},
		{at: at(900), pod: "redis-cluster-3", uid: "e", reason: "EvictionByEvictionAPI"},
		{at: at(783), pod: "redis-cluster-5", uid: "f", reason: "EvictionByEvictionAPI"},
	}
	holds = append(holds, hold{at: at(398), pod: "redis/redis-cluster-5"})
	fos := []failover{{at: at(680), shard: 5, from: "redis-cluster-5", to: "redis-cluster-6"}}
	for _, tc := range []struct {
		name string
		term int
		want *time.Time
	}{
		{"the pod held, then evicted → its hold", 0, ptr.To(at(682))},
		{"the pod re-created under the name, evicted unheld → no hold (the earlier one held the pod before)", 1, nil},
		{"a hold of the re-created pod → that hold, not the earlier pod's", 3, ptr.To(at(1300))},
		{"a pod never held → no hold", 4, nil},
		{"a master held, then failed over, then evicted as a replica → no hold (seed 3: held +6m38s, failed over +11m20s, evicted +13m1s)", 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *time.Time
			if h := latestHold(holds, terms, fos, terms[tc.term]); h != nil {
				got = &h.at
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("latest hold (-want +got):\n%s", diff)
			}
		})
	}
}
