package app

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/test/pki"
	"github.com/redis-rebalancer/redis-rebalancer/test/proc"
)

// hangingAPIServer starts an API server that answers GET /version and leaves every other request
// (the informers' LISTs and WATCHes) unanswered until the client gives up: a cache on it never
// syncs, as with an overloaded server. It returns a kubeconfig naming it and the count of the
// requests left unanswered.
func hangingAPIServer(t *testing.T) (kubeconfig string, hanging *atomic.Int64) {
	t.Helper()
	hanging = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
			return
		}
		hanging.Add(1)
		<-r.Context().Done()
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return writeKubeconfig(t, srv.URL), hanging
}

// writeKubeconfig writes a kubeconfig naming server (no credentials, namespace default).
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	return writeFile(t, "kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
users: [{name: u, user: {}}]
`, server))
}

// guardCerts writes a serving certificate for 127.0.0.1 into a new directory, as tls.crt and
// tls.key (what --guard-cert-dir reads), and returns the directory.
func guardCerts(t *testing.T) string {
	t.Helper()
	ca, err := pki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "guard"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := kp.Write(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startChild runs redis-rebalancer with args in a child process (this test binary, TestMain),
// its output in the returned buffer; the child is killed when the test ends.
func startChild(t *testing.T, args ...string) (*proc.Process, *proc.Buffer) {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out := &proc.Buffer{}
	p, err := proc.Start(proc.Spec{Name: "redis-rebalancer", Path: os.Args[0], Env: []string{testMainArgs + "=" + string(a)}, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p, out
}

// gracePeriod is how long a pod has between SIGTERM and SIGKILL by default
// (terminationGracePeriodSeconds: 30); serve, with nothing in flight, must stop well within it.
const gracePeriod = 30 * time.Second

// TestBadInputServeStopsOnSIGTERM starts serve (a child process) against an API server whose
// LISTs never complete, waits until serve waits for its cache (the guard's start, or a pass's
// start), sends it SIGTERM, and checks that it exits within the grace period with status 0: no
// wait of the start or of a pass's start holds the graceful stop up (the guard's used to wait
// 2 minutes, a pass's for ever).
func TestBadInputServeStopsOnSIGTERM(t *testing.T) {
	cases := []struct {
		name string
		args []string
		// waiting reports, from the requests left hanging and serve's log, that serve waits.
		waiting func(hanging int64, log string) bool
	}{
		{
			name: "serve --guard waiting for its cache → SIGTERM → stopped within the grace period, exit 0",
			args: []string{"--guard", "--guard-cert-dir", guardCerts(t), "--guard-listen-address", "127.0.0.1:0", "--pass-on-start=false"},
			waiting: func(hanging int64, _ string) bool {
				return hanging >= 8 // every informer's LIST (the guard's wait follows at once)
			},
		},
		{
			name: "serve with a pass waiting for the cache → SIGTERM → stopped within the grace period, exit 0",
			args: []string{"--pass-on-start"},
			waiting: func(_ int64, log string) bool {
				return strings.Contains(log, "Pass starting")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kubeconfig, hanging := hangingAPIServer(t)
			args := append([]string{"serve", "--kubeconfig", kubeconfig, "--leader-elect=false", "--listen-address", "127.0.0.1:0", "--schedule", "@yearly"}, tc.args...)
			p, out := startChild(t, args...)
			err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				if exited, _ := p.Exited(); exited {
					return false, errors.New("exited")
				}
				return tc.waiting(hanging.Load(), out.String()), nil
			})
			if err != nil {
				t.Fatalf("serve did not reach its wait (%v):\n%s", err, out)
			}
			if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), gracePeriod)
			defer cancel()
			err = p.Wait(ctx)
			if ctx.Err() != nil {
				t.Fatalf("serve did not stop within %s of SIGTERM:\n%s", gracePeriod, out)
			}
			if err != nil {
				t.Errorf("exit: %v, want status 0 (a graceful stop):\n%s", err, out)
			}
			if !strings.Contains(out.String(), "Graceful stop") {
				t.Errorf("no graceful stop logged:\n%s", out)
			}
		})
	}
	t.Logf("%d serves stuck on an API server that never lists, each stopped by SIGTERM within %s", len(cases), gracePeriod)
}

// closedAddress returns a loopback address nothing listens on: connections are refused.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentAddress returns a loopback address that accepts connections and never answers.
func silentAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestBadInputFailFast is the bad-input matrix of the API server: an unreachable one (refused,
// or silent), one that refuses the credentials, no kubeconfig at all, in a cluster or not. Each
// command that connects names the real cause (the server's address, the missing token) within
// seconds, before anything else can blame a Lease or a cache.
func TestBadInputFailFast(t *testing.T) {
	refused, silent := "http://"+closedAddress(t), "http://"+silentAddress(t)
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	t.Cleanup(unauthorized.Close)
	certs := guardCerts(t)
	type row struct {
		name    string
		env     map[string]string // set for the row (KUBECONFIG, KUBERNETES_SERVICE_*)
		args    []string
		wantErr []string
		notErr  []string // what the error must not blame
	}
	kc := func(server string) string { return writeKubeconfig(t, server) }
	serveArgs := []string{"--listen-address", "127.0.0.1:0", "--leader-elect=false"}
	rows := []row{
		{name: "run against a refused API server → 1, the server named at once, not the Lease", args: []string{"run", "--kubeconfig", kc(refused)},
			wantErr: []string{"API server " + refused + " unreachable", "connection refused"}, notErr: []string{"lease", "Lease"}},
		{name: "run --dry-run against a refused API server → 1, the server named", args: []string{"run", "--dry-run", "--kubeconfig", kc(refused)},
			wantErr: []string{"API server " + refused + " unreachable"}},
		{name: "serve against a refused API server → 1, the server named", args: append([]string{"serve", "--kubeconfig", kc(refused)}, serveArgs...),
			wantErr: []string{"API server " + refused + " unreachable"}},
		{name: "serve --guard against a refused API server → 1, the server named at once, not the informers", args: append([]string{"serve", "--kubeconfig", kc(refused), "--guard", "--guard-cert-dir", certs, "--guard-listen-address", "127.0.0.1:0"}, serveArgs...),
			wantErr: []string{"API server " + refused + " unreachable"}, notErr: []string{"informers"}},
		{name: "check (live) against a refused API server → 1, the server named", args: []string{"check", "--kubeconfig", kc(refused)},
			wantErr: []string{"API server " + refused + " unreachable"}},
		{name: "prepare-drain n1 --dry-run against a refused API server → 1, the server named", args: []string{"prepare-drain", "n1", "--dry-run", "--kubeconfig", kc(refused)},
			wantErr: []string{"API server " + refused + " unreachable"}},
		{name: "run against an API server that refuses the credentials → 1, 401 named", args: []string{"run", "--kubeconfig", kc(unauthorized.URL)},
			wantErr: []string{"API server " + unauthorized.URL + " refuses the credentials (401 Unauthorized)"}, notErr: []string{"Lease"}},
		{name: "run against an API server that never answers → 1 after the probe's 10s, the server named", args: []string{"run", "--kubeconfig", kc(silent)},
			wantErr: []string{"API server " + silent + " did not answer within 10s: check the kubeconfig's server address and the network"}, notErr: []string{"Lease"}},
		{name: "run in a cluster without a service account token → 1, the token named, not KUBERNETES_MASTER",
			env:     map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBECONFIG": filepath.Join(t.TempDir(), "none")},
			args:    []string{"run"},
			wantErr: []string{"in a cluster (KUBERNETES_SERVICE_HOST is set) there is no service account token at " + serviceAccountTokenFile, "automountServiceAccountToken"}, notErr: []string{"KUBERNETES_MASTER"}},
		{name: "serve outside a cluster without a kubeconfig → 1, --kubeconfig asked for, not KUBERNETES_MASTER",
			env:     map[string]string{"KUBERNETES_SERVICE_HOST": "", "KUBERNETES_SERVICE_PORT": "", "KUBECONFIG": filepath.Join(t.TempDir(), "none")},
			args:    append([]string{"serve"}, serveArgs...),
			wantErr: []string{"kubeconfig: none found (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a cluster: give --kubeconfig FILE"}, notErr: []string{"KUBERNETES_MASTER"}},
		{name: "check with only KUBERNETES_SERVICE_HOST set → 1, the missing variable said",
			env:     map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "", "KUBECONFIG": filepath.Join(t.TempDir(), "none")},
			args:    []string{"check"},
			wantErr: []string{"only one is set"}, notErr: []string{"KUBERNETES_MASTER"}},
	}
	if _, err := os.Stat(serviceAccountTokenFile); err == nil {
		t.Fatalf("%s exists on this machine: the rows without a kubeconfig would reach a real API server", serviceAccountTokenFile)
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, errOut, code := runCLI(t, tc.args...)
			if code != ExitError {
				t.Errorf("exit %d, want %d:\n%s", code, ExitError, errOut)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			for _, w := range tc.notErr {
				if strings.Contains(errOut, w) {
					t.Errorf("stderr blames %q:\n%s", w, errOut)
				}
			}
		})
	}
	t.Logf("%d bad API servers and kubeconfigs, each named with exit 1 before anything else is tried", len(rows))
}
