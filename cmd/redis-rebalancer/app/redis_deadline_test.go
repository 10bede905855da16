package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// hangingCheck is a live `check` setup: an API server (httptest) serving n Redis clusters of
// test/synth whose pods' IPs are loopback addresses where Redis accepts connections and never
// answers, and the Secret redis/redis-password (key redis-password). It returns the kubeconfig,
// the Redis port, the snapshot and the count of GETs of that Secret.
func hangingCheck(t testing.TB, n int) (kubeconfig string, port int, snap *policies.Snapshot, secretGets *atomic.Int32) {
	t.Helper()
	snap = synth.Generate(synth.Config{Seed: 5, Nodes: 60, Zones: 3, Namespaces: 4, Pods: 12 * n, RedisClusters: n, MinPods: 6, MaxPods: 12})
	var ips []string
	for i, p := range snap.Pods {
		if p.Spec.NodeName == "" {
			continue
		}
		p.Status.PodIP = fmt.Sprintf("127.78.%d.%d", 1+i/250, 1+i%250)
		ips = append(ips, p.Status.PodIP)
	}
	h := redistest.StartHanging(t, ips)
	lists := map[string]runtime.Object{
		"/api/v1/nodes": &corev1.NodeList{}, "/api/v1/pods": &corev1.PodList{},
		"/apis/apps/v1/statefulsets": &appsv1.StatefulSetList{}, "/apis/policy/v1/poddisruptionbudgets": &policyv1.PodDisruptionBudgetList{},
		"/api/v1/persistentvolumeclaims": &corev1.PersistentVolumeClaimList{}, "/api/v1/persistentvolumes": &corev1.PersistentVolumeList{},
		"/apis/storage.k8s.io/v1/csinodes": &storagev1.CSINodeList{}, "/api/v1/services": &corev1.ServiceList{},
	}
	for _, o := range snap.Nodes {
		l := lists["/api/v1/nodes"].(*corev1.NodeList)
		l.Items = append(l.Items, *o)
	}
	for _, o := range snap.Pods {
		l := lists["/api/v1/pods"].(*corev1.PodList)
		l.Items = append(l.Items, *o)
	}
	for _, o := range snap.StatefulSets {
		l := lists["/apis/apps/v1/statefulsets"].(*appsv1.StatefulSetList)
		l.Items = append(l.Items, *o)
	}
	for _, o := range snap.PodDisruptionBudgets {
		l := lists["/apis/policy/v1/poddisruptionbudgets"].(*policyv1.PodDisruptionBudgetList)
		l.Items = append(l.Items, *o)
	}
	lists[hangingSecretPath] = &corev1.Secret{Data: map[string][]byte{"redis-password": []byte("pw")}}
	secretGets = new(atomic.Int32)
	body := map[string][]byte{}
	for path, l := range lists {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		body[path] = b
	}
	// An API server answers /version (the commands ask it first).
	body["/version"] = []byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
	// One page per list: the server ignores limit, as an API server may.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == hangingSecretPath {
			secretGets.Add(1)
		}
		b, ok := body[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n", srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, h.Port, snap, secretGets
}

// hangingSecretPath is the Redis password's Secret hangingCheck serves.
const hangingSecretPath = "/api/v1/namespaces/redis/secrets/redis-password"

// TestCheckHangingRedis runs `check` live over 100 Redis clusters whose Redis accepts
// connections and never answers. Each node's read alone would take an hour:
// only --redis-deadline can end the roles and the health passes, so the command returning at all
// shows that they are bounded. Every cluster's roles are unknown, with the reason on stderr, and
// its health is unhealthy with the timeout as the reason.
func TestCheckHangingRedis(t *testing.T) {
	kubeconfig, port, _, _ := hangingCheck(t, 100)
	start := time.Now()
	out, errOut, code := runCLI(t, "check", "--kubeconfig", kubeconfig, "--redis-port", strconv.Itoa(port),
		"--redis-read-timeout", "1h", "--redis-deadline", "1s", "-o", "json")
	t.Logf("check over 100 clusters whose Redis hangs: exit %d after %v", code, time.Since(start).Round(time.Millisecond))
	if code != ExitViolations {
		t.Errorf("exit code %d, want %d (unhealthy)\nstderr:\n%s", code, ExitViolations, errOut)
	}
	var a struct {
		Clusters []struct {
			Namespace, Name string
			Health          struct {
				State   string   `json:"state"`
				Reasons []string `json:"reasons"`
			} `json:"health"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("check's JSON: %v\n%s", err, out)
	}
	if len(a.Clusters) != 100 {
		t.Fatalf("%d clusters, want 100", len(a.Clusters))
	}
	for _, c := range a.Clusters {
		key := c.Namespace + "/" + c.Name
		if !strings.Contains(errOut, "warning: "+key+": roles unknown: no Redis node answered") {
			t.Errorf("%s: no warning that its roles are unknown, and why", key)
		}
		if c.Health.State != "unhealthy" || !strings.Contains(strings.Join(c.Health.Reasons, " "), "timeout") && !strings.Contains(strings.Join(c.Health.Reasons, " "), "deadline") {
			t.Errorf("%s: health %+v, want unhealthy because Redis timed out", key, c.Health)
		}
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", errOut)
	}
}

// TestCheckReadsRedisSecretOnce: live, check reads the roles and then the health of Redis with
// one client, so the policy's Redis Secret is read once, not once per pass.
func TestCheckReadsRedisSecretOnce(t *testing.T) {
	kubeconfig, port, _, secretGets := hangingCheck(t, 1)
	policy := writeFile(t, "policy.yaml", "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\nredis:\n  passwordSecretRef: {namespace: redis, name: redis-password}\n")
	_, errOut, code := runCLI(t, "check", "--kubeconfig", kubeconfig, "--policy", policy, "--redis-port", strconv.Itoa(port),
		"--redis-read-timeout", "1h", "--redis-deadline", "200ms", "-o", "json")
	if code != ExitViolations {
		t.Errorf("exit code %d, want %d (unhealthy)\nstderr:\n%s", code, ExitViolations, errOut)
	}
	if got := secretGets.Load(); got != 1 {
		t.Errorf("the Redis Secret was read %d times, want 1", got)
	}
}

// TestRedisRolesOffShardsFromRedis: live with --redis-roles=false, shards that come from Redis are
// not known, as offline without --redis-nodes: check and lint say so and exit 1 instead of judging
// every pod a shard of its own (lint used to read Redis regardless of --redis-roles).
func TestRedisRolesOffShardsFromRedis(t *testing.T) {
	kubeconfig, port, _, _ := hangingCheck(t, 1)
	want := []string{"shards come from Redis", "Redis is not read (--redis-roles=false)", "give --redis-roles or --shard-source label:KEY"}
	var cases []exitCase
	for _, command := range []string{"check", "plan", "lint"} {
		cases = append(cases, exitCase{name: command + " --redis-roles=false --shard-source redis → 1, says what to give",
			args:     []string{command, "--kubeconfig", kubeconfig, "--redis-port", strconv.Itoa(port), "--redis-roles=false", "--shard-source", "redis"},
			wantCode: ExitError, wantErr: want})
	}
	runExitCases(t, cases)
}

// BenchmarkCheckHangingRedis prints how long `check` takes over 100 Redis clusters whose Redis
// hangs, with the commands' defaults (read timeout 3s, --redis-deadline 10s).
func BenchmarkCheckHangingRedis(b *testing.B) {
	kubeconfig, port, _, _ := hangingCheck(b, 100)
	for range b.N {
		var out, errOut bytes.Buffer
		cmd := NewRootCommand()
		cmd.SetArgs([]string{"check", "--kubeconfig", kubeconfig, "--redis-port", strconv.Itoa(port), "-o", "json"})
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		if code := exitCode(cmd); code != ExitViolations {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
}
