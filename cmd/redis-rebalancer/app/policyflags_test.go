package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// fieldAt returns the field of p at a JSON path ("limits.maxMovesPerCluster").
func fieldAt(t *testing.T, p *policy, path string) reflect.Value {
	t.Helper()
	v, ok := lookupField(p, path)
	if !ok {
		t.Fatalf("no field %s in the policy", path)
	}
	return v
}

// lookupField returns the field of p at a JSON path, found by the fields' json tags; false when
// the policy has none there.
func lookupField(p *policy, path string) (reflect.Value, bool) {
	v := reflect.ValueOf(p).Elem()
next:
	for _, name := range strings.Split(path, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		for i := 0; i < v.NumField(); i++ {
			if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); tag == name {
				v = v.Field(i)
				continue next
			}
		}
		return reflect.Value{}, false
	}
	return v, true
}

// leafTypes are the struct types of the policy a flag sets whole.
var leafTypes = map[reflect.Type]bool{
	reflect.TypeFor[metav1.Duration]():      true,
	reflect.TypeFor[metav1.LabelSelector](): true,
}

// leafPaths returns the JSON paths of every field of t that is no struct (or is one of
// leafTypes), under prefix; apiVersion and kind (the inline TypeMeta) are the decoder's.
func leafPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			continue
		}
		path := prefix + name
		if f.Type.Kind() == reflect.Struct && !leafTypes[f.Type] {
			out = append(out, leafPaths(f.Type, path+".")...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// fileOnlyFields are the fields of the policy no flag sets: only a policy file sets them.
var fileOnlyFields = map[string]string{
	"failover.drainQuiet":   "the drain's tuning",
	"failover.drainTimeout": "the drain's tuning",
	// A Secret reference: the flags take a credential from a file or an environment variable.
	"redis.usernameSecretRef.namespace": "Secret reference",
	"redis.usernameSecretRef.name":      "Secret reference",
	"redis.usernameSecretRef.key":       "Secret reference",
	"redis.passwordSecretRef.namespace": "Secret reference",
	"redis.passwordSecretRef.name":      "Secret reference",
	"redis.passwordSecretRef.key":       "Secret reference",
	// The eviction guard's webhook configuration is installed apart; the policy says it alike.
	"guard.failurePolicy":            "the webhook configuration's",
	"guard.timeoutSeconds":           "the webhook configuration's",
	"guard.webhookConfigurationName": "the webhook configuration's",
	"guard.drainTaints":              "the guard's tuning",
}

// TestPolicyFlagTable checks the table that ties flags to the policy's fields: each row's path
// names a field and the row's pointer is that field (a typo in either fails); every field of the
// policy has a flag, through its path or a parent's, or is listed in fileOnlyFields (a field
// added to the API without either fails); flag names are unique; and some command binds every
// row, marked with its path.
func TestPolicyFlagTable(t *testing.T) {
	p := v1alpha1.Default()
	names := map[string]bool{}
	for _, f := range policyFlagTable {
		if names[f.name] {
			t.Errorf("--%s: two rows", f.name)
		}
		names[f.name] = true
		field, ok := lookupField(p, f.path)
		if !ok {
			t.Errorf("--%s: no field %s in the policy", f.name, f.path)
			continue
		}
		ptr := reflect.ValueOf(f.field(p))
		if ptr.Kind() != reflect.Pointer || ptr.Pointer() != field.Addr().Pointer() {
			t.Errorf("--%s: its pointer is not the policy's field %s", f.name, f.path)
			continue
		}
		// The pointer may be typed as what the flag binds: a duration's time.Duration, an
		// enumeration's string.
		switch elem := ptr.Type().Elem(); {
		case elem == field.Type():
		case field.Type() == reflect.TypeFor[metav1.Duration]() && elem == reflect.TypeFor[time.Duration]():
		case field.Kind() == reflect.String && elem == reflect.TypeFor[string]():
		default:
			t.Errorf("--%s: points to a %s, the field %s is a %s", f.name, elem, f.path, field.Type())
		}
	}

	covered := func(leaf string) bool {
		for _, f := range policyFlagTable {
			if leaf == f.path || strings.HasPrefix(leaf, f.path+".") {
				return true
			}
		}
		return false
	}
	leaves := leafPaths(reflect.TypeFor[policy](), "")
	for _, leaf := range leaves {
		_, fileOnly := fileOnlyFields[leaf]
		switch {
		case covered(leaf) && fileOnly:
			t.Errorf("%s: has a flag and is listed in fileOnlyFields", leaf)
		case !covered(leaf) && !fileOnly:
			t.Errorf("%s: no flag sets it; add a row to policyFlagTable, or list it in fileOnlyFields with the reason", leaf)
		}
	}
	for path := range fileOnlyFields {
		if !slices.Contains(leaves, path) {
			t.Errorf("fileOnlyFields lists %s, no field of the policy", path)
		}
	}

	bound := map[string]string{} // flag → annotated path
	for _, cmd := range []*cobra.Command{newRunCommand(), newServeCommand(), newCheckCommand(), newPlanCommand(), newLintCommand()} {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if a, ok := f.Annotations[policyFieldAnnotation]; ok {
				bound[f.Name] = strings.Join(a, ",")
			}
		})
	}
	for _, f := range policyFlagTable {
		if got, ok := bound[f.name]; !ok || got != f.path {
			t.Errorf("--%s: bound by the commands with the annotation %q, want %q", f.name, got, f.path)
		}
	}
}

// TestFlagDefaultsAreThePolicys checks, for every command, that each flag bound to a policy field
// shows (in --help) the defaulted policy's value of that field: the defaults are written once, in
// api/v1alpha1/defaults.go.
func TestFlagDefaultsAreThePolicys(t *testing.T) {
	def := v1alpha1.Default()
	for _, cmd := range []*cobra.Command{newRunCommand(), newServeCommand(), newCheckCommand(), newPlanCommand(), newLintCommand()} {
		n := 0
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			path := map[string]string{}
			for p, names := range PolicyFlags() {
				for _, name := range names {
					path[strings.TrimPrefix(name, "--")] = p
				}
			}
			p, ok := path[f.Name]
			if !ok {
				return
			}
			n++
			var want string
			switch v := fieldAt(t, def, p).Interface().(type) {
			case metav1.Duration:
				want = v.Duration.String()
			case v1alpha1.Namespaces, metav1.LabelSelector: // --namespace, --selector: all
				want = ""
			case []v1alpha1.Window: // --window: none
				want = "[]"
			default:
				want = fmt.Sprint(v)
			}
			if f.DefValue != want {
				t.Errorf("%s --%s: default %q, want the policy's %s %q", cmd.Name(), f.Name, f.DefValue, p, want)
			}
		})
		if n < 10 {
			t.Errorf("%s: only %d policy flags checked", cmd.Name(), n)
		}
	}
}

// parseRun binds run's flags, parses args and resolves the policy as run does.
func parseRun(t *testing.T, args ...string) (*policy, error) {
	t.Helper()
	o := newRunOptions()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o.resolve(fs)
}

func TestFlagsOverrideTheFile(t *testing.T) {
	file := writeFile(t, "policy.yaml", `apiVersion: rebalancer.redis.io/v1alpha1
kind: RebalancerPolicy
selection: {namespaces: {include: [a, b]}, clusterLabel: cloud.netease.com/cluster-name}
limits: {maxMovesPerCluster: 3, maxNoOfPodsToEvictPerNode: 1}
failover: {timeout: 45s}
windows: {windows: [{schedule: "@daily", duration: 2h}]}
output: json
`)
	withFile := func(mutators ...func(*policy)) *policy {
		p, err := v1alpha1.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mutators {
			m(p)
		}
		v1alpha1.ApplyLayout(p)
		return p
	}
	otFile := writeFile(t, "ot.yaml", "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\nselection: {layout: ot, roleLabel: role}\n")
	for _, tc := range []struct {
		name string
		args []string
		want *policy
	}{
		{name: "no flag → the file as it is", args: []string{"--policy", file}, want: withFile()},
		{
			name: "flags given → they replace their fields, the file keeps the rest (not the flags' defaults)",
			args: []string{"--policy", file, "--max-moves", "5", "-n", "redis", "--window", "@weekly|1h", "--redis-port", "7000"},
			want: withFile(func(p *policy) {
				p.Limits.MaxMovesPerCluster = 5
				p.Selection.Namespaces = v1alpha1.Namespaces{Include: []string{"redis"}}
				p.Windows.Windows = []v1alpha1.Window{{Schedule: "@weekly", Duration: metav1.Duration{Duration: time.Hour}}}
				p.Redis.Port = 7000
			}),
		},
		{
			name: "-n '' → every namespace; -o text; 0 where it means no limit → no limit",
			args: []string{"--policy", file, "--max-pods-to-evict-per-node", "0", "-n", "", "-o", "text", "--selector", "app=redis"},
			want: withFile(func(p *policy) {
				p.Limits.MaxNoOfPodsToEvictPerNode = 0
				p.Selection.Namespaces = v1alpha1.Namespaces{}
				p.Output = v1alpha1.OutputText
				p.Selection.LabelSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "redis"}}
			}),
		},
		{
			name: "no file → the defaults and the flags",
			args: []string{"--max-pods-to-evict-total", "4", "--window", "@daily", "--window-duration", "90m"},
			want: func() *policy {
				p := v1alpha1.Default()
				p.Limits.MaxNoOfPodsToEvictTotal = 4
				p.Windows.Windows = []v1alpha1.Window{{Schedule: "@daily", Duration: metav1.Duration{Duration: 90 * time.Minute}}}
				v1alpha1.ApplyLayout(p)
				return p
			}(),
		},
		{
			name: "--layout bitnami → its cluster label, shard source and password key; a file's clusterLabel wins over it",
			args: []string{"--policy", file, "--layout", "bitnami"},
			want: withFile(func(p *policy) {
				p.Selection.Layout = v1alpha1.LayoutBitnami
				p.Selection.ShardSource = "redis"
			}),
		},
		{
			name: "a file's layout ot → its fields but the file's roleLabel; --shard-source and --recreating-owners beside it win",
			args: []string{"--policy", otFile, "--shard-source", "owner", "--recreating-owners", "RedisCluster,InstanceSet"},
			want: func() *policy {
				p := v1alpha1.Default()
				p.Selection.Layout, p.Selection.RoleLabel = v1alpha1.LayoutOT, "role"
				p.Selection.ClusterLabel, p.Selection.ShardSource = "cluster", "owner"
				p.Selection.RecreatingOwners = []string{"RedisCluster", "InstanceSet"}
				p.Selection.WorkloadSelector.MatchLabels = map[string]string{"redis_setup_type": "cluster"}
				p.Redis.UsernameSecretRef.Key, p.Redis.PasswordSecretRef.Key = "redis-username", "password"
				return p
			}(),
		},
		{
			name: "--layout kubeblocks → InstanceSet re-creates pods, the account Secret's keys, roles from kubeblocks.io/role",
			args: []string{"--layout", "kubeblocks"},
			want: func() *policy {
				p := v1alpha1.Default()
				p.Selection = v1alpha1.Selection{
					Layout: v1alpha1.LayoutKubeBlocks, ClusterLabel: "app.kubernetes.io/instance", ShardSource: "auto",
					RoleLabel: "kubeblocks.io/role", RecreatingOwners: []string{"InstanceSet"},
				}
				p.Redis.UsernameSecretRef.Key, p.Redis.PasswordSecretRef.Key = "username", "password"
				return p
			}(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRun(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicyErrorsNameTheFlag(t *testing.T) {
	file := writeFile(t, "policy.yaml", "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\nlimits: {maxMovesPerCluster: 3}\n")
	_, err := parseRun(t, "--policy", file, "--max-moves", "-1", "--max-lag-bytes", "-5", "--selector", "a in (b")
	if err == nil || !strings.Contains(err.Error(), "--selector: ") {
		t.Fatalf("error %v, want the selector's first (it is no field value)", err)
	}
	_, err = parseRun(t, "--policy", file, "--max-moves", "-1", "--max-lag-bytes", "-5")
	want := "flags: invalid policy (2 problems):\n" +
		"  limits.maxMovesPerCluster (--max-moves): Invalid value: -1: must be greater than or equal to 0\n" +
		"  redis.maxLagBytes (--max-lag-bytes): Invalid value: -5: must be greater than or equal to 0"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestLoggingFormat checks --logging-format: json makes klog's lines JSON on the command's
// standard error (stdout keeps the reports), an unknown format is refused, and a second command
// in the same process (as e2e runs them) logs to its own standard error with the same flags and
// is refused other ones.
func TestLoggingFormat(t *testing.T) {
	t.Cleanup(func() {
		if err := logsapi.ResetForTest(nil); err != nil {
			t.Error(err)
		}
	})
	// Start from logging as no command has set it up: a test run before this one (go test
	// -shuffle) may have left its options applied.
	if err := logsapi.ResetForTest(nil); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "version", "--logging-format", "xml")
	if code != ExitError || !strings.Contains(errOut, `format: Invalid value: "xml": Unsupported log format`) {
		t.Errorf("exit %d, stderr %q; want 1 and the unsupported format", code, errOut)
	}

	if err := logsapi.ResetForTest(nil); err != nil {
		t.Fatal(err)
	}
	// run executes the root command with args (no reset of the logging in between) and logs one
	// line after it, as a command's code would.
	run := func(args ...string) (stdout, stderr string, code int) {
		var out, errOut bytes.Buffer
		cmd := NewRootCommand()
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		code = exitCode(cmd)
		klog.InfoS("Pod evicted", "cluster", "redis/redis", "pod", klog.KRef("redis", "redis-s3-0"))
		klog.Flush()
		return out.String(), errOut.String(), code
	}
	for i := range 2 {
		stdout, stderr, code := run("version", "--logging-format", "json")
		if code != ExitOK {
			t.Fatalf("command %d: exit %d: %s", i, code, stderr)
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(stderr), &line); err != nil {
			t.Fatalf("command %d: stderr %q is no JSON line: %v", i, stderr, err)
		}
		if line["msg"] != "Pod evicted" || line["cluster"] != "redis/redis" || !reflect.DeepEqual(line["pod"], map[string]any{"name": "redis-s3-0", "namespace": "redis"}) {
			t.Errorf("command %d: log line %v", i, line)
		}
		if strings.Contains(stdout, "Pod evicted") {
			t.Errorf("command %d: a log line reached stdout: %q", i, stdout)
		}
	}
	if _, stderr, code := run("version", "--logging-format", "text"); code != ExitError || !strings.Contains(stderr, "logging: the logging configuration should not be changed") {
		t.Errorf("another format in the same process: exit %d, stderr %q; want 1, refused", code, stderr)
	}
}
