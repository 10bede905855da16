package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// TestPodCompleteStageExitCode renders kwok's pod-complete Stage as the cluster runs it
// (withExitCode) for a Job's pod with and without PodExitCodeAnnotation, through Go's text/template
// with stand-ins for kwok's functions: 0 or none completes the pod Succeeded, exit code 0; 3 fails
// it, exit code 3, reason Error. Every Stage document of the config stays valid YAML.
func TestPodCompleteStageExitCode(t *testing.T) {
	b, err := DefaultBinaries()
	if err != nil {
		t.Fatalf("the kwok stages are built by `make tools`: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kwok.yaml")
	if err := writeKwokConfig(path, b.KwokStages); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var stage struct {
			Metadata struct{ Name string }
			Spec     struct {
				Next struct{ StatusTemplate string }
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &stage); err != nil {
			t.Fatalf("stage document does not decode: %v\n%s", err, doc)
		}
		if stage.Metadata.Name == "pod-complete" {
			tmpl = stage.Spec.Next.StatusTemplate
		}
	}
	if tmpl == "" {
		t.Fatal("no pod-complete stage")
	}
	funcs := template.FuncMap{
		"Now": func() string { return "2026-11-26T00:00:00Z" },
		"Quote": func(s any) string {
			return `"` + strings.TrimSpace(strings.Trim(strings.TrimSpace(toString(s)), `"`)) + `"`
		},
		"dict": func() map[string]any { return map[string]any{} },
	}
	tp, err := template.New("status").Funcs(funcs).Parse(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]any
		wantPhase   string
		wantCode    int
	}{
		{"no annotation → Succeeded, exit 0", nil, "Succeeded", 0},
		{"exit code 0 → Succeeded", map[string]any{PodExitCodeAnnotation: "0"}, "Succeeded", 0},
		{"exit code 3 → Failed, exit 3", map[string]any{PodExitCodeAnnotation: "3"}, "Failed", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := map[string]any{
				"metadata": map[string]any{"annotations": tc.annotations},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}},
				"status":   map[string]any{"containerStatuses": []any{map[string]any{}}},
			}
			if tc.annotations == nil {
				delete(pod["metadata"].(map[string]any), "annotations")
			}
			var out bytes.Buffer
			if err := tp.Execute(&out, pod); err != nil {
				t.Fatal(err)
			}
			var status struct {
				Phase             string
				ContainerStatuses []struct {
					State struct {
						Terminated struct {
							ExitCode int
							Reason   string
						}
					}
				}
			}
			if err := yaml.Unmarshal(out.Bytes(), &status); err != nil {
				t.Fatalf("rendered status: %v\n%s", err, out.String())
			}
			if status.Phase != tc.wantPhase || len(status.ContainerStatuses) != 1 || status.ContainerStatuses[0].State.Terminated.ExitCode != tc.wantCode {
				t.Errorf("rendered %+v, want phase %s, exit code %d\n%s", status, tc.wantPhase, tc.wantCode, out.String())
			}
		})
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
