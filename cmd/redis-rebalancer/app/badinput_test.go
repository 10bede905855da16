package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
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
// negative value and, where 0 means nothing, 0 (a float NaN and +Inf too); every enumeration
// given a word it does not know, or ""; every field of v1alpha1.PositiveFields given 0 in a
// policy file; selections that match no Redis cluster; --redis-nodes files no Redis prints;
// windows that never stay open; constraints that overflow; and the hostile inputs of issue 29
// (hostileInputs). Every case must exit 1 with a message that names the culprit (the flag, the
// field, the object, the line, or what matched nothing), before anything is read from a cluster.
// A 0 the help documents, and the legitimate neighbours of the hostile inputs
// (legitimateNeighbours), are accepted. Its siblings TestBadInputFailFast (API servers and
// kubeconfigs) and TestBadInputServeStopsOnSIGTERM complete the matrix: -run TestBadInput runs
// the three, each logging its count.
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
			if strings.HasPrefix(f.Value.Type(), "float") {
				for _, v := range []string{"NaN", "+Inf"} {
					cases = append(cases, exitCase{
						name: fmt.Sprintf("%s --%s %s → 1, the flag named", cmd, f.Name, v),
						args: append(append([]string{cmd}, args...), "--"+f.Name+"="+v), wantCode: ExitError, wantErr: []string{"--" + f.Name + " must be a number, got " + v},
					})
				}
			}
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
			if _, ok := nonEmptyFlags[e.flag]; ok {
				cases = append(cases, exitCase{
					name: fmt.Sprintf("%s --%s '' → 1, empty is no format, not the default", cmd, e.flag),
					args: append(append([]string{cmd}, args...), "--"+e.flag, ""), wantCode: ExitError, wantErr: []string{"--" + e.flag},
				})
			}
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
	cases = append(cases, hostileInputs(t, dir, write)...)
	runExitCases(t, cases)
	good := legitimateNeighbours(t, dir, write)
	runExitCases(t, good)
	t.Logf("%d bad inputs, each refused with exit 1 naming its cause; %d zeros that the help documents and %d legitimate neighbours of bad inputs, accepted", len(cases), accepted, len(good))
}

// hostileInputs are the bad inputs of the hostile-input harness (issue 29): objects a snapshot
// lists twice, a policy file of two documents, CLUSTER NODES files no Redis prints, schedules
// that never fire or fire too often, rules both soft and disabled, Lease names, sizes that do not
// fit, constraints' labels, an unknown subcommand, empty files and inputs without end. Each
// is refused with exit 1 naming its culprit; write makes a file in dir.
func hostileInputs(t *testing.T, dir string, write func(name, content string) string) []exitCase {
	t.Helper()
	const example = "../../../examples/post-scale-down.yaml"
	const bitnami = "../../../examples/bitnami-post-scale-down.yaml"
	missing := filepath.Join(dir, "none")
	snap, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: n9}\n"
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p9, namespace: redis}\nspec: {nodeName: n9}\n"
	listTwice := write("list-twice.yaml", string(snap)+"\n---\n"+string(snap))
	podTwice := write("pod-twice.yaml", string(snap)+"---\n"+node+"---\n"+pod+"---\n"+pod)
	nodeTwice := write("node-twice.yaml", string(snap)+"---\n"+node+"---\n"+node)
	negative := write("negative-replicas.yaml", string(snap)+"---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: rc-s9, namespace: redis}\nspec: {replicas: -1}\n")
	header := "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\n"
	twoDocs := write("two-documents.yaml", header+"output: json\n---\n"+header)
	schedule := func(name, spec string) string {
		return write(name, header+fmt.Sprintf("schedule: %q\n", spec))
	}

	// CLUSTER NODES files of the Bitnami example's cluster, each with one thing no Redis prints.
	real, err := os.ReadFile("../../../examples/redis-nodes/bitnami_redis-cluster.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(real)), "\n")
	field := func(line, i int) string { return strings.Fields(lines[line])[i] }
	replace := func(line, i int, v string) []string {
		out := slices.Clone(lines)
		f := strings.Fields(out[line])
		f[i] = v
		out[line] = strings.Join(f, " ")
		return out
	}
	nodesDir := func(name string, ls []string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "bitnami_redis-cluster.txt"), []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Line 1 is the myself master, line 2 its replica, line 3 another master.
	absent := "0123456789abcdef0123456789abcdef01234567"
	redisNodes := []struct{ name, dir, want string }{
		{"two myself lines", nodesDir("two-myself", replace(2, 2, "myself,master")), "line 3: node " + field(2, 0) + ": a second myself line (the first on line 1)"},
		{"an unknown flag", nodesDir("unknown-flag", replace(2, 2, "master,primary")), `line 3: node ` + field(2, 0) + `: unknown flag "primary"`},
		{"a node ID of 39 characters", nodesDir("short-id", replace(2, 0, field(2, 0)[:39])), `line 3: bad node id "` + field(2, 0)[:39] + `": a node ID is 40 hexadecimal characters`},
		{"a replica of an absent master", nodesDir("absent-master", replace(1, 3, absent)), "line 2: node " + field(1, 0) + ": a replica of " + absent + ", which no line lists"},
		{"a replica of itself", nodesDir("replica-of-itself", replace(1, 3, field(1, 0))), "line 2: node " + field(1, 0) + ": a replica of itself"},
		{"a master with a master ID", nodesDir("master-with-master", replace(2, 3, field(0, 0))), "line 3: node " + field(2, 0) + ": a master with a master ID (" + field(0, 0) + ")"},
		{"a file over 16 MiB", nodesDir("huge", append(slices.Clone(lines), strings.Repeat("\n", observe.MaxRedisNodesBytes))), "larger than 16 MiB, the most a CLUSTER NODES file may hold"},
	}

	var cases []exitCase
	for _, cmd := range []string{"check", "plan", "lint"} {
		cases = append(cases,
			exitCase{name: cmd + " on the same List twice → 1, the objects named", args: []string{cmd, "--snapshot", listTwice}, wantCode: ExitError, wantErr: []string{"snapshot: 26 objects listed more than once: Node n1 (2 times)"}},
			exitCase{name: cmd + " on a snapshot listing a pod twice → 1, the pod named", args: []string{cmd, "--snapshot", podTwice}, wantCode: ExitError, wantErr: []string{"1 object listed more than once: Pod redis/p9 (2 times)"}},
			exitCase{name: cmd + " on a snapshot listing a node twice → 1, the node named", args: []string{cmd, "--snapshot", nodeTwice}, wantCode: ExitError, wantErr: []string{"Node n9 (2 times)"}},
			exitCase{name: cmd + " on a StatefulSet with replicas -1 → 1, the StatefulSet named", args: []string{cmd, "--snapshot", negative}, wantCode: ExitError, wantErr: []string{"StatefulSet redis/rc-s9: spec.replicas -1: must not be negative"}},
			exitCase{name: cmd + " --snapshot /dev/zero → 1, a line longer than 64 MiB, memory spared", args: []string{cmd, "--snapshot", "/dev/zero"}, wantCode: ExitError, wantErr: []string{"snapshot: document 1, line 1: a line longer than 64 MiB (input too large)"}},
			exitCase{name: cmd + " --policy /dev/zero → 1, larger than 1 MiB", args: []string{cmd, "--snapshot", example, "--policy", "/dev/zero"}, wantCode: ExitError, wantErr: []string{"policy /dev/zero: larger than 1 MiB"}},
			exitCase{name: cmd + " --policy with a second YAML document → 1, its line named", args: []string{cmd, "--snapshot", example, "--policy", twoDocs}, wantCode: ExitError, wantErr: []string{"a second YAML document at line 5"}},
			exitCase{name: cmd + " --snapshot '' → 1, the flag named", args: []string{cmd, "--snapshot", ""}, wantCode: ExitError, wantErr: []string{"--snapshot is empty"}},
			exitCase{name: cmd + " --policy '' → 1, the flag named, not the defaults", args: []string{cmd, "--snapshot", example, "--policy", ""}, wantCode: ExitError, wantErr: []string{"--policy is empty"}},
			exitCase{name: cmd + " --redis-nodes '' → 1, the flag named", args: []string{cmd, "--snapshot", example, "--redis-nodes", ""}, wantCode: ExitError, wantErr: []string{"--redis-nodes is empty"}},
			exitCase{name: cmd + " a rule both soft and disabled → 1, the rule named", args: []string{cmd, "--snapshot", example, "--soft-rules", "MaxPodsPerNode", "--disable-rules", "MaxPodsPerNode"}, wantCode: ExitError, wantErr: []string{`rules.soft[0] (--soft-rules): Invalid value: "MaxPodsPerNode": also listed in rules.disabled`}},
			exitCase{name: cmd + " a soft rule that disabled '*' switches off → 1, the rule named", args: []string{cmd, "--snapshot", example, "--soft-rules", "MaxPodsPerNode", "--disable-rules", "*", "--enable-rules", "TopologySpread"}, wantCode: ExitError, wantErr: []string{`"MaxPodsPerNode": rules.disabled "*" disables it`}},
		)
		for _, q := range []string{"log-json-info-buffer-size", "log-text-info-buffer-size"} {
			cases = append(cases, exitCase{name: cmd + " --" + q + " 1e30 → 1, not a size, the flag named", args: []string{cmd, "--snapshot", example, "--" + q, "1e30"}, wantCode: ExitError, wantErr: []string{"--" + q + " 1e30: not a size in bytes"}})
		}
		for _, rn := range redisNodes {
			cases = append(cases, exitCase{name: cmd + " --redis-nodes with " + rn.name + " → 1, the file and the cause named", args: []string{cmd, "--snapshot", bitnami, "--layout", "bitnami", "--redis-nodes", rn.dir}, wantCode: ExitError, wantErr: []string{"bitnami_redis-cluster.txt: ", rn.want}})
		}
	}
	for _, f := range []string{"policy validate FILE", "check --policy FILE"} {
		args := func(file string) []string {
			if strings.HasPrefix(f, "policy") {
				return []string{"policy", "validate", file}
			}
			return []string{"check", "--snapshot", example, "--policy", file}
		}
		for _, sc := range []struct{ spec, want string }{
			{"@every 0s", "@every 0s never fires: the duration must be positive, at least 1s"},
			{"@every -1s", "@every -1s never fires"},
			{"@every 500ms", "@every 500ms fires too often: at least @every 1s"},
			{"0 0 30 2 *", "never fires: no time within 4 years matches it"},
			{"", "empty: a schedule that never fires"},
			{"CRON_TZ= 0 2 * * *", "the time zone prefix names no zone"},
		} {
			cases = append(cases, exitCase{name: fmt.Sprintf("%s with schedule %q → 1, the field named", f, sc.spec), args: args(schedule("schedule-"+strconv.Itoa(len(cases))+".yaml", sc.spec)), wantCode: ExitError, wantErr: []string{"schedule: Invalid value", sc.want}})
		}
		cases = append(cases, exitCase{name: f + " with a second YAML document → 1, its line named", args: args(twoDocs), wantCode: ExitError, wantErr: []string{"a second YAML document at line 5: a policy file holds one RebalancerPolicy"}})
	}
	for _, sc := range []struct{ spec, want string }{
		{"@every 0s", "@every 0s never fires"},
		{"@every -5m", "@every -5m0s never fires"},
		{"@every 100ms", "@every 100ms fires too often"},
		{"0 0 30 2 *", "never fires"},
		{"CRON_TZ= @daily", "the time zone prefix names no zone"},
	} {
		cases = append(cases, exitCase{name: fmt.Sprintf("serve --schedule %q → 1, before connecting", sc.spec), args: []string{"serve", "--kubeconfig", missing, "--schedule", sc.spec}, wantCode: ExitError, wantErr: []string{"schedule (--schedule): Invalid value", sc.want}})
	}
	for _, cmd := range []string{"run", "serve"} {
		cases = append(cases,
			exitCase{name: cmd + ` --window "0 0 30 2 *" → 1, a window that never opens`, args: []string{cmd, "--kubeconfig", missing, "--window", "0 0 30 2 *|1h"}, wantCode: ExitError, wantErr: []string{"never fires"}},
			exitCase{name: cmd + ` --window "CRON_TZ= 0 2 * * *" → 1, no zone named`, args: []string{cmd, "--kubeconfig", missing, "--window", "CRON_TZ= 0 2 * * *|1h"}, wantCode: ExitError, wantErr: []string{"the time zone prefix names no zone"}},
			exitCase{name: cmd + " --leader-elect-resource-name Bad_Name → 1, not a Lease name", args: []string{cmd, "--kubeconfig", missing, "--leader-elect-resource-name", "Bad_Name"}, wantCode: ExitError, wantErr: []string{`--leader-elect-resource-name "Bad_Name": not a Lease name`}},
			exitCase{name: cmd + " --leader-elect-resource-name '' → 1, the flag named", args: []string{cmd, "--kubeconfig", missing, "--leader-elect-resource-name", ""}, wantCode: ExitError, wantErr: []string{"--leader-elect-resource-name is empty"}},
			exitCase{name: cmd + " --leader-elect-resource-namespace a.b → 1, not a namespace", args: []string{cmd, "--kubeconfig", missing, "--leader-elect-resource-namespace", "a.b"}, wantCode: ExitError, wantErr: []string{`--leader-elect-resource-namespace "a.b": not a namespace`}},
			exitCase{name: cmd + " --policy with a second YAML document → 1", args: []string{cmd, "--kubeconfig", missing, "--policy", twoDocs}, wantCode: ExitError, wantErr: []string{"a second YAML document at line 5"}},
		)
	}
	certs := guardCerts(t)
	cases = append(cases,
		exitCase{name: "serve --listen-address :99999 → 1, before connecting", args: []string{"serve", "--kubeconfig", missing, "--listen-address", ":99999"}, wantCode: ExitError, wantErr: []string{`--listen-address ":99999"`, "invalid port"}},
		exitCase{name: "serve --listen-address with no port → 1, before connecting", args: []string{"serve", "--kubeconfig", missing, "--listen-address", "localhost"}, wantCode: ExitError, wantErr: []string{`--listen-address "localhost"`, "missing port"}},
		exitCase{name: "serve --guard --guard-listen-address :99999 → 1, before connecting", args: []string{"serve", "--kubeconfig", missing, "--guard", "--guard-cert-dir", certs, "--guard-listen-address", ":99999"}, wantCode: ExitError, wantErr: []string{`--guard-listen-address ":99999"`, "invalid port"}},
		exitCase{name: "serve --guard with a missing cert dir → 1, the directory named, before connecting", args: []string{"serve", "--kubeconfig", missing, "--guard", "--guard-cert-dir", missing}, wantCode: ExitError, wantErr: []string{"--guard-cert-dir " + missing + ": no serving certificate", "or give --guard-self-signed"}},
		exitCase{name: "serve --guard with a cert dir without tls.key → 1, before connecting", args: []string{"serve", "--kubeconfig", missing, "--guard", "--guard-cert-dir", dir}, wantCode: ExitError, wantErr: []string{"--guard-cert-dir " + dir + ": no serving certificate"}},
		exitCase{name: "serve --guard --guard-self-signed with a missing cert dir → 1, before connecting", args: []string{"serve", "--kubeconfig", missing, "--guard", "--guard-self-signed", "--guard-cert-dir", missing}, wantCode: ExitError, wantErr: []string{"--guard-cert-dir " + missing, "where the Secret --guard-cert-secret is mounted"}},
		exitCase{name: "serve --guard --guard-self-signed --guard-service Guard_Svc → 1, not a Service name", args: []string{"serve", "--kubeconfig", missing, "--guard", "--guard-self-signed", "--guard-cert-dir", dir, "--guard-service", "Guard_Svc"}, wantCode: ExitError, wantErr: []string{`--guard-service "Guard_Svc": not a Service name`}},
		exitCase{name: "serve --guard-cert-dir '' → 1, the flag named", args: []string{"serve", "--kubeconfig", missing, "--guard-cert-dir", ""}, wantCode: ExitError, wantErr: []string{"--guard-cert-dir is empty"}},
		exitCase{name: "serve --guard on the port --listen-address holds → 1, the flag named, before connecting", args: []string{"serve", "--kubeconfig", missing, "--guard", "--guard-cert-dir", certs, "--listen-address", "127.0.0.1:18473", "--guard-listen-address", "127.0.0.1:18473"}, wantCode: ExitError, wantErr: []string{"--guard-listen-address: listen tcp 127.0.0.1:18473", "address already in use"}},
		exitCase{name: "prepare-drain n1 --snapshot '' → 1, not live", args: []string{"prepare-drain", "n1", "--snapshot", ""}, wantCode: ExitError, wantErr: []string{"--snapshot is empty: give a FILE (- for standard input), or leave the flag out to read the API server"}},
		exitCase{name: "prepare-drain n1 --snapshot /dev/zero → 1, memory spared", args: []string{"prepare-drain", "n1", "--snapshot", "/dev/zero"}, wantCode: ExitError, wantErr: []string{"a line longer than 64 MiB"}},
		exitCase{name: "policy default -o '' → 1, empty is no format", args: []string{"policy", "default", "-o", ""}, wantCode: ExitError, wantErr: []string{"--output is empty"}},
		exitCase{name: "policy validate -o '' → 1, empty is no format", args: []string{"policy", "validate", "-o", "", example}, wantCode: ExitError, wantErr: []string{"--output is empty"}},
		exitCase{name: "version -o '' → 1, empty is no format", args: []string{"version", "-o", ""}, wantCode: ExitError, wantErr: []string{"--output is empty"}},
		exitCase{name: "prepare-drain n1 -o '' → 1, empty is no format", args: []string{"prepare-drain", "n1", "--snapshot", example, "-o", ""}, wantCode: ExitError, wantErr: []string{"--output is empty"}},
		exitCase{name: "policy valdate → 1, the command it may mean named", args: []string{"policy", "valdate", example}, wantCode: ExitError, wantErr: []string{`unknown command "valdate" for "redis-rebalancer policy"; did you mean validate?`}},
		exitCase{name: "policy bogus → 1, unknown command", args: []string{"policy", "bogus"}, wantCode: ExitError, wantErr: []string{`unknown command "bogus" for "redis-rebalancer policy"`}},
		exitCase{name: "policy validate /dev/zero → 1, larger than 1 MiB", args: []string{"policy", "validate", "/dev/zero"}, wantCode: ExitError, wantErr: []string{"policy /dev/zero: larger than 1 MiB"}},
		exitCase{name: "constraints --cluster-label 'bad key!' → 1, not a label key", args: []string{"constraints", "--cluster-name", "rc", "--cluster-label", "bad key!"}, wantCode: ExitError, wantErr: []string{`--cluster-label "bad key!": not a label key`}},
		exitCase{name: "constraints --shard-label a/b/c → 1, not a label key", args: []string{"constraints", "--cluster-name", "rc", "--shard-label", "a/b/c"}, wantCode: ExitError, wantErr: []string{`--shard-label "a/b/c": not a label key`}},
		exitCase{name: "constraints --zone-key '' → 1, not a label key", args: []string{"constraints", "--cluster-name", "rc", "--zone-key", ""}, wantCode: ExitError, wantErr: []string{`--zone-key "": not a label key`}},
		exitCase{name: "constraints --cluster-name 'rc 1' → 1, not a label value", args: []string{"constraints", "--cluster-name", "rc 1"}, wantCode: ExitError, wantErr: []string{`--cluster-name "rc 1": not a label value`}},
		exitCase{name: "constraints --shard s/0 → 1, not a label value", args: []string{"constraints", "--cluster-name", "rc", "--shard", "s/0"}, wantCode: ExitError, wantErr: []string{`--shard "s/0": not a label value`}},
		exitCase{name: "constraints --zones 'zone a,b' → 1, the zone named", args: []string{"constraints", "--cluster-name", "rc", "--zones", "zone a,b"}, wantCode: ExitError, wantErr: []string{`--zones "zone a": not a label value`}},
		exitCase{name: "constraints --layout bitnami --cluster-name Redis_1 → 1, no release name", args: []string{"constraints", "--cluster-name", "Redis_1", "--layout", "bitnami"}, wantCode: ExitError, wantErr: []string{`--layout bitnami: --cluster-name "Redis_1": not a name the chart takes`}},
		exitCase{name: "constraints --layout bitnami over 16384 pods → 1, the count said, not 'want bitnami or ot'", args: []string{"constraints", "--cluster-name", "rc", "--layout", "bitnami", "--shards", "10000", "--pods-per-shard", "2"}, wantCode: ExitError, wantErr: []string{"--layout bitnami: 10000 shards × 2 pods = 20000 pods: the chart's constraints are written for at most 16384 pods"}},
		exitCase{name: "constraints --layout ot --shards 16385 → 1, the shard bound", args: []string{"constraints", "--cluster-name", "rc", "--layout", "ot", "--shards", "16385"}, wantCode: ExitError, wantErr: []string{"16385 shards: a Redis cluster has at most 16384"}},
	)
	return cases
}

// legitimateNeighbours are inputs next to the hostile ones that must be accepted: the real
// CLUSTER NODES of the Bitnami example with a noaddr and a handshake line, schedules at the
// limits (@every 1s, February 29, CRON_TZ=UTC), a policy file with a leading --- and a trailing
// one, a soft rule re-enabled beside disabled "*", "policy" alone, valid guard flags (which go
// on to the kubeconfig). Each exits as a good input does, no error naming what is tested.
func legitimateNeighbours(t *testing.T, dir string, write func(name, content string) string) []exitCase {
	t.Helper()
	const example = "../../../examples/post-scale-down.yaml"
	const bitnami = "../../../examples/bitnami-post-scale-down.yaml"
	missing := filepath.Join(dir, "none")
	real, err := os.ReadFile("../../../examples/redis-nodes/bitnami_redis-cluster.txt")
	if err != nil {
		t.Fatal(err)
	}
	nodes := filepath.Join(dir, "noaddr-handshake")
	if err := os.Mkdir(nodes, 0o755); err != nil {
		t.Fatal(err)
	}
	extra := "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f :0@0 master,fail,noaddr - 1426238318243 1426238318000 3 disconnected\n" +
		"8f4d5154d08e5db94a52b46cfeb75e57f0002c77 127.157.1.200:6379@16379 handshake - 0 0 0 disconnected\n"
	if err := os.WriteFile(filepath.Join(nodes, "bitnami_redis-cluster.txt"), append(real, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	header := "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\n"
	limits := write("schedules-at-the-limits.yaml", "---\n"+header+"schedule: \"@every 1s\"\nwindows: {windows: [{schedule: \"0 0 29 2 *\"}, {schedule: \"CRON_TZ=UTC 0 2 * * *\"}]}\n---\n")
	certs := guardCerts(t)
	return []exitCase{
		{name: "check --redis-nodes: the Bitnami example's real Redis 7 CLUSTER NODES with a noaddr and a handshake line → read (3: the placement's violations)", args: []string{"check", "--snapshot", bitnami, "--layout", "bitnami", "--redis-nodes", nodes}, wantCode: ExitViolations},
		{name: "policy validate: schedule @every 1s, a window on February 29 and one CRON_TZ=UTC, between --- → 0", args: []string{"policy", "validate", limits}, wantCode: ExitOK, wantOut: []string{"a valid RebalancerPolicy"}},
		{name: "serve --schedule '@every 1s' → accepted, on to the kubeconfig", args: []string{"serve", "--kubeconfig", missing, "--schedule", "@every 1s"}, wantCode: ExitError, wantErr: []string{"kubeconfig: stat"}},
		{name: "serve --schedule 'CRON_TZ=UTC 0 0 29 2 *' → accepted, on to the kubeconfig", args: []string{"serve", "--kubeconfig", missing, "--schedule", "CRON_TZ=UTC 0 0 29 2 *"}, wantCode: ExitError, wantErr: []string{"kubeconfig: stat"}},
		{name: "check with a rule soft and enabled beside disabled '*' → read (0: no hard rule left broken)", args: []string{"check", "--snapshot", example, "--disable-rules", "*", "--enable-rules", "TopologySpread", "--soft-rules", "TopologySpread"}, wantCode: ExitOK},
		{name: "policy alone → its help, 0", args: []string{"policy"}, wantCode: ExitOK, wantOut: []string{"redis-rebalancer policy [command]"}},
		{name: "serve --guard with a cert dir holding tls.crt and tls.key, ports 0 → accepted, on to the kubeconfig", args: []string{"serve", "--kubeconfig", missing, "--guard", "--guard-cert-dir", certs, "--listen-address", "127.0.0.1:0", "--guard-listen-address", "127.0.0.1:0"}, wantCode: ExitError, wantErr: []string{"kubeconfig: stat"}},
		{name: "serve --guard --guard-self-signed with an empty cert dir → accepted, on to the kubeconfig", args: []string{"serve", "--kubeconfig", missing, "--guard", "--guard-self-signed", "--guard-cert-dir", t.TempDir(), "--listen-address", "127.0.0.1:0", "--guard-listen-address", "127.0.0.1:0"}, wantCode: ExitError, wantErr: []string{"kubeconfig: stat"}},
		{name: "run --leader-elect-resource-name my.lease-1 → accepted, on to the kubeconfig", args: []string{"run", "--kubeconfig", missing, "--leader-elect-resource-name", "my.lease-1"}, wantCode: ExitError, wantErr: []string{"kubeconfig: stat"}},
		{name: "constraints --layout bitnami, 8192 shards × 2 pods (16384) → 0", args: []string{"constraints", "--cluster-name", "rc", "--layout", "bitnami", "--shards", "8192", "--pods-per-shard", "2"}, wantCode: ExitOK},
	}
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
