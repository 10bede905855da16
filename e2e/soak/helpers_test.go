package soak

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// TestPlacementRuns: overlapping placement disruptions make one run, judged at its end; control
// events (serve, kube-apiserver, the guard) join none.
func TestPlacementRuns(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(i int, k Kind, from, to int) *Event {
		return &Event{Index: i, Kind: k, Started: at(from), Ended: at(to)}
	}
	events := []*Event{
		ev(1, KindDrainNode, 0, 100), ev(2, KindNodeLost, 50, 200), ev(3, KindGuardDown, 190, 400),
		ev(4, KindAutoscaler, 300, 350), ev(5, KindReplicaKilled, 340, 360), ev(6, KindLeaderKilled, 500, 520),
	}
	var got [][]int
	var ends []time.Time
	for _, r := range placementRuns(events) {
		got = append(got, indexes(r.events))
		ends = append(ends, r.end)
	}
	if diff := cmp.Diff([][]int{{1, 2}, {4, 5}}, got); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Time{at(200), at(360)}, ends); diff != "" {
		t.Errorf("ends (-want +got):\n%s", diff)
	}
}
