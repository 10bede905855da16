package localcluster

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Versions of the binaries the cluster runs. They match the defaults of hack/build-tools.sh,
// which caches each build under a directory named after its version.
const (
	// KubernetesVersion is the version of kube-apiserver, kube-controller-manager and
	// kube-scheduler.
	KubernetesVersion = "v1.36.3"
	// EtcdVersion is the version of etcd.
	EtcdVersion = "v3.6.16"
	// KwokVersion is the version of kwok.
	KwokVersion = "v0.8.0"
)

// Environment variables naming the directories of the binaries (the Makefile sets them from the
// output of hack/build-tools.sh).
const (
	// EnvK8sBinDir names the directory holding kube-apiserver, kube-controller-manager and
	// kube-scheduler.
	EnvK8sBinDir = "K8S_BIN_DIR"
	// EnvEtcdBinDir names the directory holding etcd.
	EnvEtcdBinDir = "ETCD_BIN_DIR"
	// EnvKwokBinDir names the directory holding kwok and its stage directory.
	EnvKwokBinDir = "KWOK_BIN_DIR"
	// EnvToolsCache overrides the cache directory of hack/build-tools.sh.
	EnvToolsCache = "REBALANCER_TOOLS_CACHE"
	// EnvK8sVersion names the Kubernetes version (such as v1.37.2) whose cached build
	// DefaultBinaries takes when K8S_BIN_DIR is unset; KubernetesVersion when unset too. The
	// Makefile and hack/build-tools.sh read the same variable (make test-compat sets it per
	// version).
	EnvK8sVersion = "K8S_VERSION"
)

// buildHint tells how to build missing binaries.
const buildHint = "build them with `make tools` (or ./hack/build-tools.sh from the repository root; " +
	"about 10 min cold, cached afterwards)"

// Binaries locates the executables of a local cluster and kwok's Stage documents.
type Binaries struct {
	// Etcd is the etcd executable.
	Etcd string
	// APIServer is the kube-apiserver executable.
	APIServer string
	// ControllerManager is the kube-controller-manager executable.
	ControllerManager string
	// Scheduler is the kube-scheduler executable.
	Scheduler string
	// Kwok is the kwok executable.
	Kwok string
	// KwokStages is the directory copied from kwok's module (kustomize/stage); it holds
	// node/fast, node/heartbeat-with-lease and pod/fast.
	KwokStages string
}

// isZero reports whether no field of b is set.
func (b Binaries) isZero() bool { return b == Binaries{} }

// DefaultBinaries returns the binaries in the directories named by K8S_BIN_DIR, ETCD_BIN_DIR and
// KWOK_BIN_DIR, and, for each variable that is unset, in the cache of hack/build-tools.sh
// ($REBALANCER_TOOLS_CACHE, else $XDG_CACHE_HOME/redis-rebalancer, else
// ~/.cache/redis-rebalancer; one directory per version, such as k8s-v1.36.3, the Kubernetes
// version being $K8S_VERSION when set). It returns an error that names every missing file and
// the command that builds it.
func DefaultBinaries() (Binaries, error) {
	cache := os.Getenv(EnvToolsCache)
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return Binaries{}, fmt.Errorf("localcluster: binaries: %w", err)
		}
		cache = filepath.Join(dir, "redis-rebalancer")
	}
	dir := func(env, name string) string {
		if d := os.Getenv(env); d != "" {
			return d
		}
		return filepath.Join(cache, name)
	}
	k8s := dir(EnvK8sBinDir, "k8s-"+cmp.Or(os.Getenv(EnvK8sVersion), KubernetesVersion))
	etcd := dir(EnvEtcdBinDir, "etcd-"+EtcdVersion)
	kwok := dir(EnvKwokBinDir, "kwok-"+KwokVersion)
	b := Binaries{
		Etcd:              filepath.Join(etcd, "etcd"),
		APIServer:         filepath.Join(k8s, "kube-apiserver"),
		ControllerManager: filepath.Join(k8s, "kube-controller-manager"),
		Scheduler:         filepath.Join(k8s, "kube-scheduler"),
		Kwok:              filepath.Join(kwok, "kwok"),
		KwokStages:        filepath.Join(kwok, "stage"),
	}
	if err := b.Validate(); err != nil {
		return Binaries{}, err
	}
	return b, nil
}

// Validate checks that every executable exists and is executable and that KwokStages holds the
// Stage files the cluster uses. The error lists every problem and how to build the binaries.
func (b Binaries) Validate() error {
	var missing []string
	for _, f := range []struct{ name, path string }{
		{"etcd", b.Etcd},
		{"kube-apiserver", b.APIServer},
		{"kube-controller-manager", b.ControllerManager},
		{"kube-scheduler", b.Scheduler},
		{"kwok", b.Kwok},
	} {
		if f.path == "" {
			missing = append(missing, f.name+" (no path)")
			continue
		}
		st, err := os.Stat(f.path)
		switch {
		case err != nil:
			missing = append(missing, fmt.Sprintf("%s (%s: not found)", f.name, f.path))
		case st.IsDir() || st.Mode()&0o111 == 0:
			missing = append(missing, fmt.Sprintf("%s (%s: not an executable file)", f.name, f.path))
		}
	}
	for _, s := range stageFiles {
		p := filepath.Join(b.KwokStages, filepath.FromSlash(s.path))
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, fmt.Sprintf("kwok stage %s (%s: not found)", s.path, p))
		}
	}
	if len(missing) > 0 {
		return errors.New("localcluster: missing binaries: " + strings.Join(missing, "; ") + "; " + buildHint)
	}
	return nil
}
