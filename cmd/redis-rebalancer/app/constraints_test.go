package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
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

func TestConstraintsCommandLayouts(t *testing.T) {
	type spread struct {
		Key      string
		Skew     int32
		Hard     bool
		Selector map[string]string
	}
	spreads := func(in []corev1.TopologySpreadConstraint) []spread {
		var out []spread
		for _, c := range in {
			out = append(out, spread{c.TopologyKey, c.MaxSkew, c.WhenUnsatisfiable == corev1.DoNotSchedule, c.LabelSelector.MatchLabels})
		}
		return out
	}
	want := func(sel map[string]string) []spread {
		return []spread{{corev1.LabelHostname, 3, true, sel}, {corev1.LabelTopologyZone, 4, true, sel},
			{corev1.LabelHostname, 1, false, sel}, {corev1.LabelTopologyZone, 1, false, sel}}
	}
	args := []string{"constraints", "--shards", "5", "--pods-per-shard", "2", "--zones", "a,b,c", "--cluster-name", "rc1"}

	t.Run("bitnami: the chart's redis values on the release's pods, podAntiAffinityPreset hard only with a node per pod", func(t *testing.T) {
		for _, tc := range []struct {
			nodes string
			hard  bool
		}{{"0", false}, {"9", false}, {"10", true}} {
			out, _, code := runCLI(t, append(args, "--layout", "bitnami", "--nodes", tc.nodes)...)
			if code != ExitOK {
				t.Fatalf("--nodes %s: exit %d", tc.nodes, code)
			}
			var v struct {
				Redis struct {
					TopologySpreadConstraints []corev1.TopologySpreadConstraint
					NodeAffinityPreset        struct {
						Type, Key string
						Values    []string
					}
					PodAntiAffinityPreset string
				}
			}
			if err := yaml.UnmarshalStrict([]byte(out), &v); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			sel := map[string]string{"app.kubernetes.io/name": "redis-cluster", "app.kubernetes.io/instance": "rc1"}
			if diff := cmp.Diff(want(sel), spreads(v.Redis.TopologySpreadConstraints)); diff != "" {
				t.Errorf("--nodes %s: redis.topologySpreadConstraints (-want +got):\n%s", tc.nodes, diff)
			}
			if p := v.Redis.NodeAffinityPreset; p.Type != "hard" || p.Key != corev1.LabelTopologyZone || !cmp.Equal(p.Values, []string{"a", "b", "c"}) {
				t.Errorf("--nodes %s: redis.nodeAffinityPreset %+v, want hard on the zones a, b, c", tc.nodes, p)
			}
			if got := v.Redis.PodAntiAffinityPreset == "hard"; got != tc.hard {
				t.Errorf("--nodes %s: podAntiAffinityPreset %q, want hard: %v", tc.nodes, v.Redis.PodAntiAffinityPreset, tc.hard)
			}
			if strings.Contains(out, "template:") {
				t.Errorf("--layout bitnami printed a StatefulSet fragment:\n%s", out)
			}
		}
	})
	t.Run("ot: the RedisCluster's leader and follower fields on cluster=<name>, the role anti-affinity annotation", func(t *testing.T) {
		out, _, code := runCLI(t, append(args, "--layout", "ot")...)
		if code != ExitOK {
			t.Fatalf("exit %d", code)
		}
		type role struct {
			TopologySpreadConstraints []corev1.TopologySpreadConstraint
			Affinity                  corev1.Affinity
		}
		var v struct {
			Metadata struct{ Annotations map[string]string }
			Spec     struct{ RedisLeader, RedisFollower role }
		}
		if err := yaml.UnmarshalStrict([]byte(out), &v); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		sel := map[string]string{"cluster": "rc1"}
		for name, r := range map[string]role{"redisLeader": v.Spec.RedisLeader, "redisFollower": v.Spec.RedisFollower} {
			if diff := cmp.Diff(want(sel), spreads(r.TopologySpreadConstraints)); diff != "" {
				t.Errorf("spec.%s.topologySpreadConstraints (-want +got):\n%s", name, diff)
			}
			if r.Affinity.NodeAffinity == nil || r.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
				t.Errorf("spec.%s.affinity: no required node affinity on the zones", name)
			}
		}
		if v.Metadata.Annotations[lint.OTAntiAffinityAnnotation] != "true" {
			t.Errorf("annotations %v, want %s: \"true\"", v.Metadata.Annotations, lint.OTAntiAffinityAnnotation)
		}
	})
	if _, _, code := runCLI(t, append(args, "--layout", "ucloud")...); code != ExitError {
		t.Errorf("--layout ucloud: exit %d, want %d", code, ExitError)
	}
	t.Run("bitnami -o json: the same values as JSON alone, the comments as notes on stderr; --values-path nests them, its last key the pods' app.kubernetes.io/name", func(t *testing.T) {
		yamlOut, _, code := runCLI(t, append(args, "--layout", "bitnami", "--nodes", "10")...)
		if code != ExitOK {
			t.Fatalf("exit %d", code)
		}
		jsonOut, errOut, code := runCLI(t, append(args, "--layout", "bitnami", "--nodes", "10", "-o", "json")...)
		var fromYAML, fromJSON map[string]any
		if err := yaml.Unmarshal([]byte(yamlOut), &fromYAML); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(jsonOut), &fromJSON); code != ExitOK || err != nil {
			t.Fatalf("-o json: exit %d, %v:\n%s", code, err, jsonOut)
		}
		if diff := cmp.Diff(fromYAML, fromJSON); diff != "" {
			t.Errorf("-o json values (-yaml +json):\n%s", diff)
		}
		if !strings.Contains(errOut, `note: Values of Bitnami's redis-cluster chart for release "rc1"`) || strings.Contains(jsonOut, "#") {
			t.Errorf("-o json: want the comments on stderr only:\n%s\n%s", errOut, jsonOut)
		}
		nested, _, code := runCLI(t, append(args, "--layout", "bitnami", "--nodes", "10", "--values-path", "web.sessions")...)
		var v struct {
			Web struct {
				Sessions struct {
					Redis struct {
						TopologySpreadConstraints []corev1.TopologySpreadConstraint
						PodAntiAffinityPreset     string
					}
				}
			}
		}
		if err := yaml.Unmarshal([]byte(nested), &v); code != ExitOK || err != nil {
			t.Fatalf("--values-path web.sessions: exit %d, %v\n%s", code, err, nested)
		}
		r := v.Web.Sessions.Redis
		if diff := cmp.Diff(want(map[string]string{"app.kubernetes.io/name": "sessions", "app.kubernetes.io/instance": "rc1"}), spreads(r.TopologySpreadConstraints)); diff != "" || r.PodAntiAffinityPreset != "hard" {
			t.Errorf("web.sessions.redis: preset %q, spread (-want +got):\n%s", r.PodAntiAffinityPreset, diff)
		}
		named, _, _ := runCLI(t, append(args, "--layout", "bitnami", "--values-path", "redis-cluster", "--chart-name", "cache")...)
		if !strings.Contains(named, "app.kubernetes.io/name: cache") || strings.Contains(named, "app.kubernetes.io/name: redis-cluster") {
			t.Errorf("--chart-name cache (nameOverride): the values select another name:\n%s", named)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"--values-path with --layout ot → refused: a RedisCluster's fields are no Helm values", []string{"--layout", "ot", "--values-path", "x"}, "--layout bitnami only"},
		{"--values-path without --layout → refused", []string{"--values-path", "x"}, "give --layout bitnami"},
		{"--chart-name without --layout → refused", []string{"--chart-name", "x"}, "give --layout bitnami"},
		{"--values-path with an empty key → refused", []string{"--layout", "bitnami", "--values-path", "a..b"}, "an empty key"},
		{"--chart-name that is no label value → refused", []string{"--layout", "bitnami", "--chart-name", "not a label"}, `--chart-name "not a label": not a label value`},
		{"--chart-name with --layout ot → refused", []string{"--layout", "ot", "--chart-name", "x"}, "--layout bitnami only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, append(args, tc.args...)...)
			if code != ExitError || !strings.Contains(errOut, tc.err) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, ExitError, tc.err)
			}
		})
	}
}
