package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// KwokNodeAnnotation marks a Node as managed by kwok (value "fake"). kwok nodes also carry
// fixture.KwokTaint, which pods tolerate with fixture.KwokToleration.
const KwokNodeAnnotation = fixture.KwokTaintKey

// Pod annotations that slow down a pod's simulated lifecycle. Their value is a Go duration
// ("1.5s") or an RFC 3339 time; without them every transition is immediate.
const (
	// PodReadyDelayAnnotation delays a pod's start: it stays Pending, without an IP, for the
	// duration after it has been scheduled, then becomes Running and Ready. It simulates a slow
	// container start, which makes a PodDisruptionBudget bite.
	PodReadyDelayAnnotation = "pod-ready.stage.kwok.x-k8s.io/delay"
	// PodDeleteDelayAnnotation delays a pod's disappearance after its deletion (eviction,
	// delete): it stays Running, with its deletionTimestamp set, for the duration. It simulates
	// a slow shutdown.
	PodDeleteDelayAnnotation = "pod-delete.stage.kwok.x-k8s.io/delay"
	// PodExitCodeAnnotation is the exit code of the container of a Job's pod (a number, "0"
	// without the annotation): kwok completes a Job's pod at once, Succeeded with exit code 0,
	// or Failed with this exit code (reason Error), as a container that exited with it.
	PodExitCodeAnnotation = "pod-complete.stage.kwok.x-k8s.io/exit-code"
)

// stageFiles are the Stage documents kwok runs with, relative to Binaries.KwokStages, and the
// annotation each takes its delay from ("" for none).
var stageFiles = []struct{ path, delayAnnotation string }{
	{"node/fast/node-initialize.yaml", ""},
	{"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml", ""},
	{"pod/fast/pod-ready.yaml", PodReadyDelayAnnotation},
	{"pod/fast/pod-complete.yaml", ""}, // with an exit code: withExitCode
	{"pod/fast/pod-delete.yaml", PodDeleteDelayAnnotation},
}

// writeKwokConfig concatenates the Stage documents from stageDir into one multi-document YAML
// file at path. The pod-ready and pod-delete stages (immediate in kwok's "fast" set) get a delay
// read from a pod annotation, zero when the annotation is absent.
func writeKwokConfig(path, stageDir string) error {
	var buf bytes.Buffer
	for _, s := range stageFiles {
		data, err := os.ReadFile(filepath.Join(stageDir, filepath.FromSlash(s.path)))
		if err != nil {
			return err
		}
		if s.delayAnnotation != "" {
			if data, err = withDelayFrom(data, s.delayAnnotation); err != nil {
				return fmt.Errorf("stage %s: %w", s.path, err)
			}
		}
		if s.path == "pod/fast/pod-complete.yaml" {
			if data, err = withExitCode(data); err != nil {
				return fmt.Errorf("stage %s: %w", s.path, err)
			}
		}
		buf.WriteString("---\n")
		buf.Write(bytes.TrimSpace(data))
		buf.WriteString("\n")
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// withDelayFrom returns the Stage document data with spec.delay set to take its duration from
// the pod annotation (zero when it is absent).
func withDelayFrom(data []byte, annotation string) ([]byte, error) {
	var stage map[string]any
	if err := yaml.Unmarshal(data, &stage); err != nil {
		return nil, err
	}
	spec, ok := stage["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no spec")
	}
	if _, ok := spec["delay"]; ok {
		return nil, fmt.Errorf("already has a delay")
	}
	spec["delay"] = map[string]any{
		"durationMilliseconds": 0,
		"durationFrom": map[string]any{
			"expressionFrom": fmt.Sprintf(".metadata.annotations[%q]", annotation),
		},
	}
	return yaml.Marshal(stage)
}

// withExitCode returns kwok's pod-complete Stage (which completes a Job's Running pod: phase
// Succeeded, every container terminated with exit code 0) with the exit code taken from the pod's
// PodExitCodeAnnotation: 0 or none, Succeeded as before; another, phase Failed and every container
// terminated with that exit code, reason Error.
func withExitCode(data []byte) ([]byte, error) {
	s := string(data)
	for _, r := range []struct{ old, new string }{
		// On the same line: a line of its own would break the block scalar's indentation.
		{"{{ $now := Now }}", "{{ $now := Now }}{{ $code := or ( index ( or .metadata.annotations dict ) \"" + PodExitCodeAnnotation + "\" ) \"0\" }}"},
		{"exitCode: 0", "exitCode: {{ $code }}"},
		{"reason: Completed", "reason: {{ if eq $code \"0\" }}Completed{{ else }}Error{{ end }}"},
		{"phase: Succeeded", "phase: {{ if eq $code \"0\" }}Succeeded{{ else }}Failed{{ end }}"},
	} {
		if strings.Count(s, r.old) != 1 {
			return nil, fmt.Errorf("want one %q, found %d", r.old, strings.Count(s, r.old))
		}
		s = strings.Replace(s, r.old, r.new, 1)
	}
	return []byte(s), nil
}

func (c *Cluster) startKwok(pt ports) (*component, error) {
	configPath := filepath.Join(c.workDir, "kwok.yaml")
	if err := writeKwokConfig(configPath, c.cfg.Binaries.KwokStages); err != nil {
		return nil, fmt.Errorf("localcluster: kwok config: %w", err)
	}
	return c.start("kwok", c.cfg.Binaries.Kwok, 5*time.Second,
		"--kubeconfig="+c.pki.adminKubeconfig,
		"--config="+configPath,
		"--manage-all-nodes=true",
		"--cidr="+c.cfg.PodNetwork+".0.0/16",
		fmt.Sprintf("--server-address=127.0.0.1:%d", pt.kwok),
		// A Lease per node, renewed every quarter of its duration, keeps the node lifecycle
		// controller from marking nodes and their pods NotReady.
		fmt.Sprintf("--node-lease-duration-seconds=%d", int(c.cfg.NodeLeaseDuration/time.Second)),
	)
}
