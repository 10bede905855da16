package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
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
	v := reflect.ValueOf(p).Elem()
next:
	for _, name := range strings.Split(path, ".") {
		for i := 0; i < v.NumField(); i++ {
			if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); tag == name {
				v = v.Field(i)
				continue next
			}
		}
		t.Fatalf("no field %s in the policy", path)
	}
	return v
}

// TestFlagDefaultsAreThePolicys checks, for every command, that each flag bound to a policy field
// shows (in --help) the defaulted policy's value of that field: the defaults are written once, in
// api/v1alpha1/defaults.go.
func TestFlagDefaultsAreThePolicys(t *testing.T) {
	def := v1alpha1.Default()
	for _, cmd := range []*cobra.Command{newRunCommand(), newCheckCommand(), newPlanCommand(), newLintCommand()} {
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
			name: "a flag set to 0 → the field's default again; -n '' → every namespace; -o text",
			args: []string{"--policy", file, "--failover-timeout", "0", "-n", "", "-o", "text", "--selector", "app=redis"},
			want: withFile(func(p *policy) {
				p.Failover.Timeout.Duration = v1alpha1.DefaultFailoverTimeout
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
