package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestConstraintsCommand(t *testing.T) {
	out, _, code := runCLI(t, "constraints", "--shards", "5", "--pods-per-shard", "2", "--zones", "a,b,c", "--cluster-name", "rc1", "--shard", "rc1-s0")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var frag struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec
			}
		}
	}
	if err := yaml.Unmarshal([]byte(out), &frag); err != nil {
		t.Fatal(err)
	}
	type c struct {
		Key  string
		Skew int32
		Hard bool
	}
	var got []c
	for _, t := range frag.Spec.Template.Spec.TopologySpreadConstraints {
		got = append(got, c{t.TopologyKey, t.MaxSkew, t.WhenUnsatisfiable == corev1.DoNotSchedule})
	}
	want := []c{{corev1.LabelHostname, 3, true}, {corev1.LabelTopologyZone, 4, true}, {corev1.LabelHostname, 1, false}, {corev1.LabelTopologyZone, 1, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("N=10 constraints (-want +got):\n%s", diff)
	}
	if !strings.Contains(out, "# Note: scheduling constraints place pods, not roles") || strings.Contains(out, "# MasterQuorum:") {
		t.Errorf("5 shards in 3 zones: want the note on roles and no MasterQuorum comment:\n%s", out)
	}
	out, _, _ = runCLI(t, "constraints", "--shards", "4", "--zones", "a,b,c", "--cluster-name", "rc1")
	if !strings.Contains(out, "# MasterQuorum: 4 shards, one master each: with M=4 masters in 3 zones") {
		t.Errorf("4 shards in 3 zones: want the MasterQuorum comment:\n%s", out)
	}
	// -o json: the same fragment as JSON alone, its comments as note lines on stderr.
	jsonOut, errOut, code := runCLI(t, "constraints", "--shards", "4", "--zones", "a,b,c", "--cluster-name", "rc1", "-o", "json")
	var yamlFrag, jsonFrag map[string]any
	if err := yaml.Unmarshal([]byte(out), &yamlFrag); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(jsonOut), &jsonFrag); code != ExitOK || err != nil {
		t.Fatalf("-o json: exit %d, %v:\n%s", code, err, jsonOut)
	}
	if diff := cmp.Diff(yamlFrag, jsonFrag); diff != "" {
		t.Errorf("-o json fragment (-yaml +json):\n%s", diff)
	}
	if !strings.Contains(errOut, "note: MasterQuorum: 4 shards, one master each") || !strings.Contains(errOut, "note: scheduling constraints place pods, not roles") {
		t.Errorf("-o json: want the comments as notes on stderr:\n%s", errOut)
	}
	if _, _, code := runCLI(t, "constraints", "--shards", "3"); code != ExitError {
		t.Errorf("without --cluster-name: exit %d, want %d", code, ExitError)
	}
}
