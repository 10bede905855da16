package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTable(t *testing.T) {
	cfg := defaultConfig()
	for _, tc := range []struct {
		name string
		r    Result
		want string
	}{
		{
			name: "compliant, survived → yes, yes",
			r: Result{Scenario: "s", Tool: toolRebalancer, Compliant: true, Reached: 11460 * time.Millisecond, Evictions: 1,
				Acked: 3295, LostNode: "n1", LostMasters: 1, Survived: true, SurviveNote: "ok after 4.4s"},
			want: "| s | redis-rebalancer | yes | 11.5s | 1 | 0 | 0 of 3295 | 0 | n1: yes (1 masters; ok after 4.4s) |",
		},
		{
			name: "never compliant → no, with the rules broken",
			r: Result{Scenario: "s", Tool: toolDescheduler, Broken: []string{"MaxPodsPerNode", "Unschedulable"}, Evictions: 2, MastersEvicted: 1,
				Acked: 90, WriteErrors: 10, LostWrites: 3, LostNode: "n6", LostMasters: 1, SurviveNote: "after 8s: cluster_state:fail"},
			want: "| s | descheduler | no (MaxPodsPerNode, Unschedulable) | never | 2 | 1 | 10 of 100 | 3 | n6: no (1 masters; after 8s: cluster_state:fail) |",
		},
		{
			name: "the descheduler with RedisClusterBalance → its own row",
			r: Result{Scenario: "s", Tool: toolPlugin, Compliant: true, Reached: 9 * time.Second, Evictions: 1,
				Acked: 3000, LostNode: "n3", LostMasters: 1, Survived: true, SurviveNote: "ok after 4.2s"},
			want: "| s | descheduler + RedisClusterBalance | yes | 9s | 1 | 0 | 0 of 3000 | 0 | n3: yes (1 masters; ok after 4.2s) |",
		},
		{
			name: "a drain row → how long the drain took beside the tool",
			r: Result{Scenario: "drain", Tool: toolDrainGuard, Compliant: true, Reached: 8 * time.Second, DrainTook: 19430 * time.Millisecond, Evictions: 2,
				Acked: 2065, LostNode: "n3", LostMasters: 2, Survived: true, SurviveNote: "ok after 4.8s"},
			want: "| drain | kubectl drain + guard (drained in 19.4s) | yes | 8s | 2 | 0 | 0 of 2065 | 0 | n3: yes (2 masters; ok after 4.8s) |",
		},
		{
			name: "measurement failed → the error's first line, pipes escaped",
			r:    Result{Scenario: "s", Tool: toolDescheduler, Err: errors.New("a|b\nsecond line")},
			want: "| s | descheduler | measurement failed: a/b | | | | | | |",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := strings.Split(table([]Result{tc.r}, cfg), "\n")
			if diff := cmp.Diff(tc.want, lines[2]); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := defaultConfig()
	cfg.Descheduler = "/bin/true"
	cfg.Rebalancer = "/bin/true"
	if err := cfg.validate(); err != nil {
		t.Errorf("defaults with binaries: %v", err)
	}
	bad := cfg
	bad.Scenarios = []string{"nope"}
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Errorf("unknown scenario: got %v", err)
	}
	bad = cfg
	bad.Descheduler = ""
	if err := bad.validate(); err == nil {
		t.Error("no descheduler: no error")
	}
	bad = cfg
	bad.DeschedulerPlugin = "/nonexistent/descheduler-redis"
	if err := bad.validate(); err == nil {
		t.Error("a descheduler-plugin binary that does not exist: no error")
	}
}

func TestNamespaceFor(t *testing.T) {
	for _, tc := range []struct{ scenario, tool, want string }{
		{"post-scale-down", toolRebalancer, "post-scale-down-redis-rebalancer"},
		{"drain", toolDrainGuard, "drain-kubectl-drain-guard"},
		{"post-scale-down", toolDeschedulerGuard, "post-scale-down-descheduler-guard"},
		{"template-only-constraints", toolPlugin, "template-only-constraints-descheduler-redisclusterbalance"},
	} {
		if got := namespaceFor(tc.scenario, tc.tool); got != tc.want {
			t.Errorf("namespaceFor(%q, %q) = %q, want %q", tc.scenario, tc.tool, got, tc.want)
		}
	}
}
