package app

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// malformedPolicy has four faults that loading must report together: an unknown field, a bad
// cron, a negative limit, an unknown failover mode.
const malformedPolicy = `apiVersion: rebalancer.redis.io/v1alpha1
kind: RebalancerPolicy
selection: {clusterLable: app.kubernetes.io/instance}
limits: {maxNoOfPodsToEvictTotal: -3}
failover: {mode: gentle}
windows: {windows: [{schedule: "0 2 * * MON-SUN-X", duration: 2h}]}
`

// malformedFields are the fields the error must name.
var malformedFields = []string{"invalid policy (4 problems)", "selection.clusterLable: Forbidden: unknown field", "limits.maxNoOfPodsToEvictTotal: Invalid value: -3", `failover.mode: Unsupported value: "gentle"`, "windows.windows[0].schedule: Invalid value:"}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPolicyCommand(t *testing.T) {
	def := writeFile(t, "default.yaml", string(v1alpha1.CommentedDefault()))
	bad := writeFile(t, "bad.yaml", malformedPolicy)
	runExitCases(t, []exitCase{
		{name: "policy default → 0, the commented complete policy", args: []string{"policy", "default"}, wantCode: ExitOK, wantOut: []string{"apiVersion: rebalancer.redis.io/v1alpha1", "# maxMovesPerCluster is the most evictions", "maxMovesPerCluster: 10"}},
		{name: "policy validate on the default → 0", args: []string{"policy", "validate", def}, wantCode: ExitOK, wantOut: []string{def + ": a valid RebalancerPolicy rebalancer.redis.io/v1alpha1"}},
		{name: "policy validate on a malformed policy → 1, every bad field named", args: []string{"policy", "validate", bad}, wantCode: ExitError, wantErr: append([]string{"policy " + bad + ": "}, malformedFields...)},
		{name: "policy validate on a missing file → 1", args: []string{"policy", "validate", "does-not-exist.yaml"}, wantCode: ExitError, wantErr: []string{"policy: open does-not-exist.yaml"}},
		{name: "policy default -o json → 0, the complete policy as one object", args: []string{"policy", "default", "-o", "json"}, wantCode: ExitOK, wantOut: []string{`"apiVersion": "rebalancer.redis.io/v1alpha1"`, `"maxMovesPerCluster": 10`}},
		{name: "policy default -o yaml → 1, text or json", args: []string{"policy", "default", "-o", "yaml"}, wantCode: ExitError, wantErr: []string{`--output "yaml": text or json`}},
		{name: "policy validate -o json on the default → 0, valid", args: []string{"policy", "validate", "-o", "json", def}, wantCode: ExitOK, wantOut: []string{`"valid": true`, `"errors": []`}},
		{name: "policy validate -o json on a malformed policy → 1, every bad field an error", args: []string{"policy", "validate", "-o", "json", bad}, wantCode: ExitError, wantOut: []string{`"valid": false`, `"selection.clusterLable: Forbidden: unknown field"`, `"failover.mode: Unsupported value: \"gentle\"`}},
		{name: "version -o json → 0, version, revision and goVersion", args: []string{"version", "-o", "json"}, wantCode: ExitOK, wantOut: []string{`"version": "dev"`, `"revision": `, `"goVersion": "go`}},
		{name: "version → 0, the version first", args: []string{"version"}, wantCode: ExitOK, wantOut: []string{"redis-rebalancer dev\nrevision "}},
		{name: "policy validate without a file → 1", args: []string{"policy", "validate"}, wantCode: ExitError, wantErr: []string{"accepts 1 arg(s)"}},
	})
	out, _, _ := runCLI(t, "policy", "default")
	if out != string(v1alpha1.CommentedDefault()) {
		t.Errorf("policy default printed something else than v1alpha1.CommentedDefault()")
	}
}

// TestMalformedPolicyTouchesNothing runs the commands with the malformed policy against an API
// server that counts requests: each exits 1 naming every bad field, and the server sees none. The
// same commands with a valid policy do reach it (the counter counts).
func TestMalformedPolicyTouchesNothing(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
	}))
	defer srv.Close()
	kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	bad := writeFile(t, "bad.yaml", malformedPolicy)
	good := writeFile(t, "good.yaml", "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\n")
	for _, cmd := range [][]string{{"run"}, {"run", "--dry-run"}, {"check"}, {"plan"}, {"lint"}} {
		name := strings.Join(cmd, " ")
		t.Run(name+" with a malformed policy → 1, every field named, no request", func(t *testing.T) {
			requests.Store(0)
			_, errOut, code := runCLI(t, append(cmd, "--policy", bad, "--kubeconfig", kubeconfig)...)
			if code != ExitError {
				t.Errorf("exit %d, want %d", code, ExitError)
			}
			for _, w := range malformedFields {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests reached the API server, want none", n)
			}
		})
		t.Run(name+" with a valid policy → it asks the API server", func(t *testing.T) {
			requests.Store(0)
			if _, errOut, code := runCLI(t, append(cmd, "--policy", good, "--kubeconfig", kubeconfig)...); code != ExitError {
				t.Errorf("exit %d, want %d (the server answers 404)\n%s", code, ExitError, errOut)
			}
			if requests.Load() == 0 {
				t.Error("no request reached the API server")
			}
		})
	}
}
