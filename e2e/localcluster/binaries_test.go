package localcluster

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultBinariesK8sVersion checks which cached Kubernetes build DefaultBinaries takes when
// K8S_BIN_DIR is unset: k8s-$K8S_VERSION (make test-compat sets it per version), else
// k8s-KubernetesVersion.
func TestDefaultBinariesK8sVersion(t *testing.T) {
	for _, tc := range []struct {
		name, version, wantDir string
	}{
		{"K8S_VERSION set → its build", "v1.37.2", "k8s-v1.37.2"},
		{"K8S_VERSION unset → KubernetesVersion's build", "", "k8s-" + KubernetesVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			t.Setenv(EnvToolsCache, cache)
			t.Setenv(EnvK8sBinDir, "")
			t.Setenv(EnvK8sVersion, tc.version)
			_, err := DefaultBinaries()
			if err == nil {
				t.Fatal("DefaultBinaries with an empty cache: no error")
			}
			if want := filepath.Join(cache, tc.wantDir, "kube-apiserver"); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		})
	}
}
