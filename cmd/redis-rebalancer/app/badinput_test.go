package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// numericTypes are the pflag types of number and duration flags.
var numericTypes = []string{"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "duration"}

// commandFlags returns, per subcommand of the root command (its name), its flags (inherited
// persistent flags included) in name order.
func commandFlags(t *testing.T) map[string][]*pflag.Flag {
	t.Helper()
	out := map[string][]*pflag.Flag{}
	root := NewRootCommand()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c != root {
			var fs []*pflag.Flag
			c.Flags().VisitAll(func(f *pflag.Flag) { fs = append(fs, f) })
			c.InheritedFlags().VisitAll(func(f *pflag.Flag) { fs = append(fs, f) })
			slices.SortFunc(fs, func(a, b *pflag.Flag) int { return strings.Compare(a.Name, b.Name) })
			out[strings.TrimPrefix(c.CommandPath(), root.Name()+" ")] = fs
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return out
}

// zeroMeaningful reports whether f's 0 means something its help says: a flag bound to a field
// that is not one of v1alpha1.PositiveFields, or a flag marked zeroMeansAnnotation.
func zeroMeaningful(f *pflag.Flag) bool {
	if path, ok := f.Annotations[policyFieldAnnotation]; ok {
		return !v1alpha1.IsPositiveField(path[0])
	}
	_, ok := f.Annotations[zeroMeansAnnotation]
	return ok
}

// TestBadInput is the bad-input matrix: every number and duration flag of every command given a
// negative value and, where 0 means nothing, 0; every enumeration given a word it does not know;
// every field of v1alpha1.PositiveFields given 0 in a policy file; selections that match no Redis
// cluster; --redis-nodes files no Redis prints; windows that never stay open; constraints that
// overflow. Every case must exit 1 with a message that names the culprit (the flag, the field,
// or what matched nothing), before anything is read from a cluster. And a 0 the help documents is
// accepted.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const example = "../../../examples/post-scale-down.yaml"
	missing := filepath.Join(dir, "none")
	// Each command's arguments that get it past everything but the input under test: offline
	// for the commands that read a snapshot, a kubeconfig that does not exist for run and serve
	// (a good input then fails on the kubeconfig, never on the input).
	base := map[string][]string{
		"check": {"--snapshot", example}, "plan": {"--snapshot", example}, "lint": {"--snapshot", example},
		"run": {"--kubeconfig", missing}, "serve": {"--kubeconfig", missing},
		"constraints": {"--cluster-name", "rc"},
	}
	var cases []exitCase
	accepted := 0
	for cmd, flags := range commandFlags(t) {
		args, ok := base[cmd]
		if !ok {
			continue
		}
		for _, f := range flags {
			if !slices.Contains(numericTypes, f.Value.Type()) {
				continue
			}
			cases = append(cases, exitCase{
				name: fmt.Sprintf("%s --%s -1 → 1, the flag named", cmd, f.Name),
				args: append(append([]string{cmd}, args...), "--"+f.Name+"=-1"), wantCode: ExitError, wantErr: []string{"--" + f.Name},
			})
			if zeroMeaningful(f) {
				// Accepted: whatever the command ends with, no error names the flag.
				t.Run(fmt.Sprintf("%s --%s 0 → accepted, as its help says", cmd, f.Name), func(t *testing.T) {
					_, errOut, _ := runCLI(t, append(append([]string{cmd}, args...), "--"+f.Name+"=0")...)
					if strings.Contains(errOut, "--"+f.Name) {
						t.Errorf("0 is refused, yet its help says what 0 means (%q):\n%s", f.Usage, errOut)
					}
				})
				accepted++
				continue
			}
			cases = append(cases, exitCase{
				name: fmt.Sprintf("%s --%s 0 → 1, the flag named", cmd, f.Name),
				args: append(append([]string{cmd}, args...), "--"+f.Name+"=0"), wantCode: ExitError, wantErr: []string{"--" + f.Name, "must be positive"},
			})
		}
		for _, e := range []struct{ flag, value string }{
			{"output", "xml"}, {"layout", "helm"}, {"shard-source", "sts"}, {"failover-mode", "fast"}, {"window-step-estimate", "p50"},
			{"logging-format", "yaml"},
		} {
			if !slices.ContainsFunc(flags, func(f *pflag.Flag) bool { return f.Name == e.flag }) {
				continue
			}
			cases = append(cases, exitCase{
				name: fmt.Sprintf("%s --%s %s → 1, the value named", cmd, e.flag, e.value),
				args: append(append([]string{cmd}, args...), "--"+e.flag, e.value), wantCode: ExitError, wantErr: []string{e.value},
			})
		}
	}

	// A policy file giving 0 to each field whose 0 means nothing.
	for _, path := range v1alpha1.PositiveFields {
		doc := zeroPolicy(path)
		file := write(strings.NewReplacer(".", "_", "[]", "").Replace(path)+".yaml", doc)
		want := strings.ReplaceAll(path, "[]", "[0]") + ": Invalid value"
		cases = append(cases,
			exitCase{name: "policy validate with " + path + ": 0 → 1, the field named", args: []string{"policy", "validate", file}, wantCode: ExitError, wantErr: []string{want, "must be positive"}},
			exitCase{name: "check --policy with " + path + ": 0 → 1, the field named", args: []string{"check", "--policy", file, "--snapshot", example}, wantCode: ExitError, wantErr: []string{want}},
		)
	}

	// Selections that match nothing, and inputs no cluster or Redis gives.
	emptyList := write("empty-list.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
	real, err := os.ReadFile("../../../redisctl/testdata/clusternodes/redis7.0.15-master.txt")
	if err != nil {
		t.Fatal(err)
	}
	firstLine, _, _ := strings.Cut(string(real), "\n")
	dupNodes := filepath.Join(dir, "dup")
	overlap := filepath.Join(dir, "overlap")
	for _, d := range []string{dupNodes, overlap} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dupNodes, "redis_redis.txt"), []byte(string(real)+firstLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(firstLine)
	if err := os.WriteFile(filepath.Join(overlap, "redis_redis.txt"), []byte(strings.Join(append(f[:8:8], "0-5000"), " ")+"\n"+string(real)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check", "plan", "lint"} {
		cases = append(cases,
			exitCase{name: cmd + " on an empty List → 1, no pod at all", args: []string{cmd, "--snapshot", emptyList}, wantCode: ExitError, wantErr: []string{"no Redis cluster: there is no pod at all"}},
			exitCase{name: cmd + " -n typo → 1, the namespace named", args: []string{cmd, "--snapshot", example, "-n", "rediss"}, wantCode: ExitError, wantErr: []string{`no pod in namespace "rediss"`}},
			exitCase{name: cmd + " --cluster-label typo → 1, the label named", args: []string{cmd, "--snapshot", example, "--cluster-label", "app.kubernetes.io/instanse"}, wantCode: ExitError, wantErr: []string{"carries the cluster label app.kubernetes.io/instanse"}},
			exitCase{name: cmd + " -l typo → 1, the selector named", args: []string{cmd, "--snapshot", example, "-l", "app=redsi"}, wantCode: ExitError, wantErr: []string{`the label selector "app=redsi"`}},
			exitCase{name: cmd + " --redis-nodes with a node ID twice → 1, the lines named", args: []string{cmd, "--snapshot", example, "--redis-nodes", dupNodes}, wantCode: ExitError, wantErr: []string{"on lines 1 and 7: a node ID is listed once"}},
			exitCase{name: cmd + " --redis-nodes with a slot served twice → 1, the ranges named", args: []string{cmd, "--snapshot", example, "--redis-nodes", overlap}, wantCode: ExitError, wantErr: []string{"overlap: a slot is served by one master"}},
		)
	}
	for _, cmd := range []string{"run", "serve"} {
		cases = append(cases,
			exitCase{name: cmd + ` --window "@daily|0s" → 1, a window that never stays open`, args: []string{cmd, "--kubeconfig", missing, "--window", "@daily|0s"}, wantCode: ExitError, wantErr: []string{`window "@daily|0s": duration 0s: must be positive`}},
			exitCase{name: cmd + ` --window "@daily|-1h" → 1`, args: []string{cmd, "--kubeconfig", missing, "--window", "@daily|-1h"}, wantCode: ExitError, wantErr: []string{"must be positive"}},
			exitCase{name: cmd + " --leader-elect-renew-deadline longer than the lease → 1, before connecting", args: []string{cmd, "--kubeconfig", missing, "--leader-elect-renew-deadline", "20s"}, wantCode: ExitError, wantErr: []string{"the renew deadline (20s) must be shorter than the lease duration (15s)"}},
		)
	}
	cases = append(cases,
		exitCase{name: "constraints --shards 4611686018427387904 → 1, no overflow", args: []string{"constraints", "--cluster-name", "rc", "--shards", "4611686018427387904"}, wantCode: ExitError, wantErr: []string{"4611686018427387904 shards: a Redis cluster has at most 16384"}},
		exitCase{name: "constraints --shards 16385 → 1", args: []string{"constraints", "--cluster-name", "rc", "--shards", "16385"}, wantCode: ExitError, wantErr: []string{"at most 16384"}},
		exitCase{name: "constraints --pods-per-shard 1025 → 1", args: []string{"constraints", "--cluster-name", "rc", "--pods-per-shard", "1025"}, wantCode: ExitError, wantErr: []string{"1025 pods per shard: at most 1024"}},
		exitCase{name: "constraints --zones a,,b → 1, the empty zone", args: []string{"constraints", "--cluster-name", "rc", "--zones", "a,,b"}, wantCode: ExitError, wantErr: []string{"an empty zone name"}},
		exitCase{name: "constraints --zones a,a → 1, the zone named", args: []string{"constraints", "--cluster-name", "rc", "--zones", "a,a"}, wantCode: ExitError, wantErr: []string{"zone a listed twice"}},
		exitCase{name: "run --max-parallel-clusters=0 → 1, not 1 in disguise", args: []string{"run", "--kubeconfig", missing, "--max-parallel-clusters=0"}, wantCode: ExitError, wantErr: []string{"limits.maxParallelClusters (--max-parallel-clusters): Invalid value"}},
	)
	runExitCases(t, cases)
	t.Logf("%d bad inputs, each refused with exit 1 naming its cause; %d zeros that the help documents, accepted", len(cases), accepted)
}

// zeroPolicy is a policy file that gives 0 to the field at path (one of v1alpha1.PositiveFields;
// "windows.windows[].duration" in a window of its own).
func zeroPolicy(path string) string {
	doc := "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\n"
	if path == "windows.windows[].duration" {
		return doc + "windows: {windows: [{schedule: \"@daily\", duration: 0s}]}\n"
	}
	section, name, _ := strings.Cut(path, ".")
	value := "0"
	switch name {
	case "timeout", "drainQuiet", "drainTimeout", "healthGate", "recreate", "rejoin", "fullSync", "maxHold", "request", "dialTimeout", "readTimeout", "writeTimeout", "rolesInterval", "quorumPassInterval":
		value = "0s"
	}
	return doc + section + ": {" + name + ": " + value + "}\n"
}
