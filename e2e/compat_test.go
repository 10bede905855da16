package e2e

import (
	"cmp"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
)

// Kubernetes versions. `make test` runs the suite on one control plane (the Makefile's
// K8S_VERSION); `make test-compat` (hack/test-compat.sh) runs a smoke set of it — this test,
// TestPostScaleDown, TestGuardDrain and TestJobOutcomes — once per supported minor, with
// K8S_VERSION set to each. README.md's compatibility table states the range, docs/testing.md the
// results.

// clientGoRE finds the client-go version go.mod requires.
var clientGoRE = regexp.MustCompile(`(?m)^\s*k8s\.io/client-go\s+(v\S+)`)

// minorOf returns the minor of a Kubernetes version (v1.37.2 → 37) or of a client library's
// (v0.36.1 → 36).
func minorOf(t *testing.T, version string) int {
	t.Helper()
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		t.Fatalf("version %q: want vMAJOR.MINOR[.PATCH]", version)
	}
	m, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Fatalf("version %q: minor: %v", version, err)
	}
	return m
}

// TestControlPlaneVersion checks that the test bed runs the Kubernetes version it was asked for
// ($K8S_VERSION, which make test and make test-compat set; localcluster.KubernetesVersion when
// unset): kube-apiserver's /version as served, and the --version of the kube-controller-manager
// and kube-scheduler binaries the bed started. It fails when the version skew between that
// control plane and the client libraries go.mod requires (client-go, whose minor is Kubernetes'
// own) is more than one minor, the skew client-go supports.
func TestControlPlaneVersion(t *testing.T) {
	b := bed(t)
	t.Parallel()
	want := cmp.Or(os.Getenv(localcluster.EnvK8sVersion), localcluster.KubernetesVersion)
	info, err := b.Cluster.Client().Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("kube-apiserver /version: %v", err)
	}
	if info.GitVersion != want {
		t.Errorf("kube-apiserver serves version %s, want %s: set %s and %s to one version (make does)", info.GitVersion, want, localcluster.EnvK8sVersion, localcluster.EnvK8sBinDir)
	}
	bins, err := localcluster.DefaultBinaries()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path string }{{"kube-controller-manager", bins.ControllerManager}, {"kube-scheduler", bins.Scheduler}} {
		out, err := exec.CommandContext(t.Context(), c.path, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", c.path, err)
		}
		if got := strings.TrimSpace(string(out)); got != "Kubernetes "+want {
			t.Errorf("%s --version = %q, want %q", c.path, got, "Kubernetes "+want)
		}
	}

	mod, err := os.ReadFile(repoPath("go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := clientGoRE.FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/client-go")
	}
	client := string(m[1])
	skew := minorOf(t, info.GitVersion) - minorOf(t, client)
	t.Logf("kube-apiserver %s, client-go %s: version skew %+d minor", info.GitVersion, client, skew)
	if skew < -1 || skew > 1 {
		t.Errorf("kube-apiserver %s with client-go %s: a skew of %+d minors; client-go supports one minor either way", info.GitVersion, client, skew)
	}
}
