package app

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInputThatCannotBeRight checks that input that cannot describe a cluster is an error (exit
// 1, saying what is wrong), not a compliant answer.
func TestInputThatCannotBeRight(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The post-scale-down example without its nodes: every Running pod is bound to a node the
	// snapshot does not hold.
	noNodes := filepath.Join(dir, "no-nodes.yaml")
	if err := os.WriteFile(noNodes, []byte(`apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {topology.kubernetes.io/zone: zone-a}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p0, namespace: redis, labels: {app.kubernetes.io/instance: redis}}
  spec: {nodeName: n1, containers: [{name: redis}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: p1, namespace: redis, labels: {app.kubernetes.io/instance: redis}}
  spec: {nodeName: n2, containers: [{name: redis}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: p2, namespace: redis, labels: {app.kubernetes.io/instance: redis}}
  spec: {nodeName: n3, containers: [{name: redis}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: p3, namespace: redis, labels: {app.kubernetes.io/instance: redis}}
  spec: {nodeName: n3, containers: [{name: redis}]}
  status: {phase: Succeeded}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	example := "../../../examples/post-scale-down.yaml"
	runExitCases(t, []exitCase{
		{name: "empty snapshot file → 1, empty input", args: []string{"check", "--snapshot", empty}, wantCode: ExitError, wantErr: []string{"snapshot: empty input"}},
		{name: "plan on an empty snapshot → 1, empty input", args: []string{"plan", "--snapshot", empty}, wantCode: ExitError, wantErr: []string{"empty input"}},
		{name: "lint on an empty snapshot → 1, empty input", args: []string{"lint", "--snapshot", empty}, wantCode: ExitError, wantErr: []string{"empty input"}},
		{name: "pods bound to nodes the snapshot lacks → 1, the nodes named", args: []string{"check", "--snapshot", noNodes}, wantCode: ExitError,
			wantErr: []string{"2 pods are bound to 2 nodes it does not contain: n2 (1 pod), n3 (1 pod)"}},
		{name: "--max-plan-moves -1 → 1, the flag named", args: []string{"plan", "--snapshot", example, "--max-plan-moves", "-1"}, wantCode: ExitError, wantErr: []string{"plan.maxMoves (--max-plan-moves): Invalid value: -1"}},
		{name: "--max-plan-states -1 → 1, the flag named", args: []string{"plan", "--snapshot", example, "--max-plan-states", "-1"}, wantCode: ExitError, wantErr: []string{"plan.maxStates (--max-plan-states): Invalid value: -1"}},
		{name: "--chunk-size -5 → 1, the flag named", args: []string{"check", "--snapshot", example, "--chunk-size", "-5"}, wantCode: ExitError, wantErr: []string{"--chunk-size must not be negative"}},
		{name: "--redis-read-timeout -1s → 1, the flag named", args: []string{"check", "--snapshot", example, "--redis-read-timeout", "-1s"}, wantCode: ExitError, wantErr: []string{`redis.readTimeout (--redis-read-timeout): Invalid value: "-1s"`}},
		{name: "--kube-api-qps -1 → 1, the flag named", args: []string{"check", "--snapshot", example, "--kube-api-qps", "-1"}, wantCode: ExitError, wantErr: []string{"--kube-api-qps must not be negative"}},
		{name: "run --max-moves -2 → 1 before connecting, the flag named", args: []string{"run", "--kubeconfig", filepath.Join(dir, "none"), "--max-moves", "-2"}, wantCode: ExitError, wantErr: []string{"limits.maxMovesPerCluster (--max-moves): Invalid value: -2"}},
		{name: "constraints --shards -3 → 1, the flag named", args: []string{"constraints", "--shards", "-3", "--zones", "a,b,c"}, wantCode: ExitError, wantErr: []string{"--shards must not be negative"}},
		{name: "zero is not negative: --max-plan-moves 0 → the planner's default", args: []string{"plan", "--snapshot", example, "--max-plan-moves", "0", "--role-label", roleLabel}, wantCode: ExitOK},
	})
}
