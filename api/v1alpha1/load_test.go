package v1alpha1

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const header = "apiVersion: rebalancer.redis.io/v1alpha1\nkind: RebalancerPolicy\n"

// policyWith returns the defaulted policy with mutations applied: the expected value of a test.
func policyWith(mutators ...func(*RebalancerPolicy)) *RebalancerPolicy {
	p := Default()
	for _, m := range mutators {
		m(p)
	}
	return p
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want *RebalancerPolicy
	}{
		{name: "apiVersion and kind only → every default", yaml: header, want: Default()},
		{name: "a leading ---, a trailing --- and comments → one document, accepted", yaml: "# policy\n---\n" + header + "---\n# end\n", want: Default()},
		{
			name: "legitimate schedules at the limits: @every 1s, February 29, CRON_TZ=UTC → kept",
			yaml: header + "schedule: \"@every 1s\"\nwindows: {windows: [{schedule: \"0 0 29 2 *\"}, {schedule: \"CRON_TZ=UTC 0 2 * * *\"}]}\n",
			want: policyWith(func(p *RebalancerPolicy) {
				p.Schedule = "@every 1s"
				p.Windows.Windows = []Window{
					{Schedule: "0 0 29 2 *", Duration: metav1.Duration{Duration: DefaultWindowDuration}},
					{Schedule: "CRON_TZ=UTC 0 2 * * *", Duration: metav1.Duration{Duration: DefaultWindowDuration}},
				}
			}),
		},
		{
			name: "a rule soft and enabled beside disabled \"*\" → kept",
			yaml: header + "rules: {soft: [TopologySpread], disabled: [\"*\"], enabled: [TopologySpread]}\n",
			want: policyWith(func(p *RebalancerPolicy) {
				p.Rules.Soft, p.Rules.Disabled, p.Rules.Enabled = []string{"TopologySpread"}, []string{"*"}, []string{"TopologySpread"}
			}),
		},
		{
			name: "fields set → kept, the rest defaulted",
			yaml: header + `
selection:
  namespaces: {include: [redis, cache]}
  labelSelector: {matchLabels: {app.kubernetes.io/name: redis}}
  clusterLabel: cloud.netease.com/cluster-name
limits:
  maxNoOfPodsToEvictPerNode: 1
  maxMovesPerCluster: 3
failover:
  timeout: 45s
redis:
  passwordSecretRef: {namespace: redis, name: redis-auth}
  tls: {enabled: true, caFile: /etc/redis/ca.crt}
windows:
  stepEstimate: p95
  windows:
  - schedule: "CRON_TZ=Europe/Paris 0 2 * * 1-5"
    duration: 2h
  - schedule: "@weekly"
schedule: "@every 30m"
output: table
`,
			want: policyWith(func(p *RebalancerPolicy) {
				p.Selection.Namespaces.Include = []string{"redis", "cache"}
				p.Selection.LabelSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "redis"}}
				p.Selection.ClusterLabel = "cloud.netease.com/cluster-name"
				p.Limits.MaxNoOfPodsToEvictPerNode, p.Limits.MaxMovesPerCluster = 1, 3
				p.Failover.Timeout.Duration = 45 * time.Second
				p.Redis.PasswordSecretRef.Namespace, p.Redis.PasswordSecretRef.Name = "redis", "redis-auth"
				p.Redis.TLS.Enabled, p.Redis.TLS.CAFile = true, "/etc/redis/ca.crt"
				p.Windows.StepEstimate = StepEstimateP95
				p.Windows.Windows = []Window{
					{Schedule: "CRON_TZ=Europe/Paris 0 2 * * 1-5", Duration: metav1.Duration{Duration: 2 * time.Hour}},
					{Schedule: "@weekly", Duration: metav1.Duration{Duration: DefaultWindowDuration}},
				}
				p.Schedule = "@every 30m"
				p.Output = OutputTable
			}),
		},
		{
			name: "guard fields set → kept, the rest of guard defaulted",
			yaml: header + "guard: {enabled: true, maxHold: 90s, failurePolicy: Fail, drainTaints: [example.com/draining]}\n",
			want: policyWith(func(p *RebalancerPolicy) {
				p.Guard.Enabled, p.Guard.MaxHold.Duration, p.Guard.FailurePolicy = true, 90*time.Second, FailurePolicyFail
				p.Guard.DrainTaints = []string{"example.com/draining"}
			}),
		},
		{
			name: "JSON → read as YAML is",
			yaml: `{"apiVersion": "rebalancer.redis.io/v1alpha1", "kind": "RebalancerPolicy", "plan": {"maxStates": 5000}}`,
			want: policyWith(func(p *RebalancerPolicy) { p.Plan.MaxStates = 5000 }),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		// want are the lines of the error after its first (each names a field); nil when the
		// error is not an *InvalidError, then wantText is in it.
		want     []string
		wantText string
	}{
		{
			name: "the issue's malformed policy (unknown field, bad cron, negative limit, unknown failover mode) → every field named",
			yaml: header + `
selection: {clusterLable: app}
limits: {maxNoOfPodsToEvictPerNode: -1}
failover: {mode: gentle}
windows:
  windows: [{schedule: "0 25 * * *"}]
`,
			want: []string{
				`failover.mode: Unsupported value: "gentle": supported values: "default", "force", "takeover"`,
				`limits.maxNoOfPodsToEvictPerNode: Invalid value: -1: must be greater than or equal to 0`,
				`selection.clusterLable: Forbidden: unknown field`,
				`windows.windows[0].schedule: Invalid value: "0 25 * * *": end of range (25) above maximum (23): 25`,
			},
		},
		{
			name: "values of the wrong type → each named, the rest still validated",
			yaml: header + `
failover: {timeout: 2 hours, drainQuiet: 1s}
timeouts: {recreate: -5m}
plan: {maxStates: many}
rules: {relaxedLimits: "yes"}
redis: {port: 70000}
`,
			want: []string{
				`failover.timeout: Invalid value: "2 hours": must be a duration such as 30s, 2m or 1h30m`,
				`plan.maxStates: Invalid value: "many": must be a whole number`,
				`redis.port: Invalid value: 70000: must be between 1 and 65535, inclusive`,
				`rules.relaxedLimits: Invalid value: "yes": must be true or false`,
				`timeouts.recreate: Invalid value: "-5m0s": must not be negative`,
			},
		},
		{
			name: "nested unknown fields, in a list too → each path",
			yaml: header + `
redis: {tls: {enable: true}}
windows: {windows: [{schedule: "@daily", length: 2h}]}
bogus: 1
`,
			want: []string{
				`bogus: Forbidden: unknown field`,
				`redis.tls.enable: Forbidden: unknown field`,
				`windows.windows[0].length: Forbidden: unknown field`,
			},
		},
		{
			name: "windows: @every, a window without schedule, an unknown estimate; a bad serve schedule → each",
			yaml: header + `
windows:
  stepEstimate: p50
  windows: [{schedule: "@every 1h"}, {duration: 1h}]
schedule: "every night"
`,
			want: []string{
				`schedule: Invalid value: "every night": expected exactly 5 fields, found 2: [every night]`,
				`windows.stepEstimate: Unsupported value: "p50": supported values: "bound", "p95"`,
				`windows.windows[0].schedule: Invalid value: "@every 1h": @every repeats relative to when a job starts, so it opens no window at a fixed time; use a cron expression or @daily, @weekly, ...`,
				`windows.windows[1].schedule: Required value: a cron expression`,
			},
		},
		{
			name: "selection: include and exclude, a bad namespace, a bad selector, a bad label key, layout, shard source and owner kind → each",
			yaml: header + `
selection:
  namespaces: {include: [redis], exclude: [Kube_System]}
  labelSelector: {matchExpressions: [{key: app, operator: Near}]}
  roleLabel: "role label"
  layout: helm
  shardSource: "statefulset"
  recreatingOwners: [InstanceSet, "apps/v1 Deployment"]
`,
			want: []string{
				`selection.labelSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`,
				`selection.layout: Unsupported value: "helm": supported values: "seed", "bitnami", "ot", "ucloud", "kubeblocks"`,
				`selection.namespaces: Forbidden: only one of include and exclude may be set`,
				`selection.namespaces.exclude[0]: Invalid value: "Kube_System": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`selection.recreatingOwners[1]: Invalid value: "apps/v1 Deployment": must be a kind: a CamelCase name of letters and digits, such as InstanceSet`,
				`selection.roleLabel: Invalid value: "role label": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`selection.shardSource: Invalid value: "statefulset": shard source "statefulset": must be auto, redis, owner or label:KEY`,
			},
		},
		{
			name: "credentials: a Secret without namespace, a password in two places, a certificate without key → each",
			yaml: header + `
redis:
  passwordSecretRef: {name: redis-auth}
  passwordFile: /etc/redis/password
  usernameSecretRef: {namespace: redis}
  tls: {certFile: /tls/client.crt}
`,
			want: []string{
				`redis.passwordFile: Forbidden: only one of passwordSecretRef, passwordFile and passwordEnv may be set`,
				`redis.passwordSecretRef.namespace: Required value: the Secret's namespace`,
				`redis.tls.keyFile: Required value: certFile needs its key`,
				`redis.usernameSecretRef.name: Required value: a Secret reference with a namespace needs a name`,
			},
		},
		{
			name: "rules: an unknown rule, a duplicate, \"*\" outside disabled, a rule both enabled and disabled, negative soft evictions → each",
			yaml: header + `
rules:
  enabled: [TopologySpread, "*"]
  disabled: [TopologySpread, MaxPodsPerRack]
  soft: [MasterQuorum, MasterQuorum]
plan: {softEvictions: -1}
`,
			want: []string{
				`plan.softEvictions: Invalid value: -1: must be greater than or equal to 0`,
				`rules.disabled[1]: Unsupported value: "MaxPodsPerRack": supported values: "ShardSeparation", "MaxPodsPerNode", "ZoneEvenSplit", "MaxPodsPerZone", "AllowedZones", "TopologySpread", "Unschedulable", "MasterQuorum", "NodeSpread", "ZoneBalance", "SoftTopologySpread", "PreferredAntiAffinity"`,
				`rules.enabled[0]: Invalid value: "TopologySpread": also listed in rules.disabled`,
				`rules.enabled[1]: Invalid value: "*": "*" is accepted in rules.disabled only`,
				`rules.soft[1]: Duplicate value: "MasterQuorum"`,
			},
		},
		{
			name: "another apiVersion, no kind, a bad output → each",
			yaml: "apiVersion: descheduler/v1alpha2\noutput: yaml\n",
			want: []string{
				`apiVersion: Unsupported value: "descheduler/v1alpha2": supported values: "rebalancer.redis.io/v1alpha1"`,
				`kind: Required value: must be RebalancerPolicy`,
				`output: Unsupported value: "yaml": supported values: "text", "table", "json"`,
			},
		},
		{
			name: "guard: a negative hold, an unknown failure policy, a timeout above 5 s, a bad name and taint key → each",
			yaml: header + "guard: {maxHold: -1s, failurePolicy: Retry, timeoutSeconds: 10, webhookConfigurationName: Guard_1, drainTaints: [\"bad key!\"]}\n",
			want: []string{
				`guard.drainTaints[0]: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`guard.failurePolicy: Unsupported value: "Retry": supported values: "Ignore", "Fail"`,
				`guard.maxHold: Invalid value: "-1s": must not be negative`,
				`guard.timeoutSeconds: Invalid value: 10: must be between 1 and 5`,
				`guard.webhookConfigurationName: Invalid value: "Guard_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			},
		},
		{
			name: "schedules that never fire or fire too often, a zone prefix naming no zone → each",
			yaml: header + `
schedule: "@every 0s"
windows:
  windows:
  - {schedule: "0 0 30 2 *"}
  - {schedule: "CRON_TZ= 0 2 * * *"}
`,
			want: []string{
				`schedule: Invalid value: "@every 0s": @every 0s never fires: the duration must be positive, at least 1s`,
				`windows.windows[0].schedule: Invalid value: "0 0 30 2 *": never fires: no time within 4 years matches it`,
				`windows.windows[1].schedule: Invalid value: "CRON_TZ= 0 2 * * *": the time zone prefix names no zone: write CRON_TZ=<IANA zone> (CRON_TZ=UTC for UTC), or leave the prefix out (UTC)`,
			},
		},
		{name: "schedule @every -1m → never fires", yaml: header + "schedule: \"@every -1m\"\n", want: []string{`schedule: Invalid value: "@every -1m": @every -1m0s never fires: the duration must be positive, at least 1s`}},
		{name: "schedule @every 500ms → too often", yaml: header + "schedule: \"@every 500ms\"\n", want: []string{`schedule: Invalid value: "@every 500ms": @every 500ms fires too often: at least @every 1s`}},
		{name: "schedule @every 1500ms → not whole seconds, named", yaml: header + "schedule: \"@every 1500ms\"\n", want: []string{`schedule: Invalid value: "@every 1500ms": @every 1.5s is not a whole number of seconds: robfig/cron would run it every 1s`}},
		{name: "schedule February 30 → never fires", yaml: header + "schedule: \"0 0 30 2 *\"\n", want: []string{`schedule: Invalid value: "0 0 30 2 *": never fires: no time within 4 years matches it`}},
		{name: "schedule @every 50000h → never fires within the horizon", yaml: header + "schedule: \"@every 50000h\"\n", want: []string{`schedule: Invalid value: "@every 50000h": never fires: no time within 4 years matches it`}},
		{name: "schedule TZ= with no zone → named", yaml: header + "schedule: \"TZ= @daily\"\n", want: []string{`schedule: Invalid value: "TZ= @daily": the time zone prefix names no zone: write CRON_TZ=<IANA zone> (CRON_TZ=UTC for UTC), or leave the prefix out (UTC)`}},
		{name: "schedule given empty → refused, not the default", yaml: header + "schedule: \"\"\n", want: []string{`schedule: Invalid value: "": empty: a schedule that never fires (leave the field out for its default, */10 * * * *)`}},
		{
			name: "a rule both soft and disabled, by name or by \"*\" → each",
			yaml: header + "rules: {soft: [MaxPodsPerNode, MasterQuorum], disabled: [MaxPodsPerNode]}\n",
			want: []string{`rules.soft[0]: Invalid value: "MaxPodsPerNode": also listed in rules.disabled: a disabled rule is not judged, soft or hard; list it in one of them`},
		},
		{
			name: "a soft rule that disabled \"*\" switches off → named",
			yaml: header + "rules: {soft: [MasterQuorum], disabled: [\"*\"], enabled: [TopologySpread]}\n",
			want: []string{`rules.soft[0]: Invalid value: "MasterQuorum": rules.disabled "*" disables it: list it in rules.enabled too to judge it as soft`},
		},
		{
			name: "zeros without a meaning: timeouts.fullSync, guard.maxHold, guard.timeoutSeconds → each",
			yaml: header + "timeouts: {fullSync: 0s}\nguard: {maxHold: 0s, timeoutSeconds: 0}\n",
			want: []string{
				`guard.maxHold: Invalid value: "0s": must be positive: 0 has no meaning here (leave the field out for its default)`,
				`guard.timeoutSeconds: Invalid value: 0: must be positive: 0 has no meaning here (leave the field out for its default)`,
				`timeouts.fullSync: Invalid value: "0s": must be positive: 0 has no meaning here (leave the field out for its default)`,
			},
		},
		{name: "a second YAML document → refused, its line named", yaml: header + "output: json\n---\nkind: ConfigMap\n", wantText: "a second YAML document at line 5: a policy file holds one RebalancerPolicy"},
		{name: "a second policy after --- with a comment → refused", yaml: header + "--- # the next one\n" + header, wantText: "a second YAML document at line 4"},
		{name: "a duplicate key → the YAML error", yaml: header + "output: json\noutput: text\n", wantText: `key "output" already set in map`},
		{name: "an empty document → not a policy", yaml: "", wantText: "a policy is a YAML mapping"},
		{name: "a list → not a policy", yaml: "- a\n- b\n", wantText: "a policy is a YAML mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Decode([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("Decode succeeded: %+v", p)
			}
			var inv *InvalidError
			if tc.want == nil {
				if errors.As(err, &inv) || !strings.Contains(err.Error(), tc.wantText) {
					t.Errorf("error %q, want a plain error with %q", err, tc.wantText)
				}
				return
			}
			if !errors.As(err, &inv) {
				t.Fatalf("error %q is no *InvalidError", err)
			}
			lines := strings.Split(err.Error(), "\n")
			for i := range lines {
				lines[i] = strings.TrimSpace(lines[i])
			}
			if diff := cmp.Diff(tc.want, lines[1:]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(header+"output: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(header+"output: xml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if p.Output != OutputJSON {
		t.Errorf("output %q, want json", p.Output)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), "policy "+bad+": invalid policy (1 problem):") {
		t.Errorf("error %v, want it to start with the file and the count", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("error %v, want no such file", err)
	}
	// A file over MaxPolicyBytes (a wrong file, /dev/zero) is refused after reading one byte more.
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(header+"# "+strings.Repeat("x", MaxPolicyBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "policy "+big+": larger than 1 MiB") {
		t.Errorf("error %v, want larger than 1 MiB", err)
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "policy /dev/zero: larger than 1 MiB") {
		t.Errorf("/dev/zero: error %v, want larger than 1 MiB", err)
	}
}

// TestCommentedDefault checks that the commented policy `policy default` prints is complete and
// right: it decodes (strictly) to Default(), and every field of the policy is written in it.
func TestCommentedDefault(t *testing.T) {
	got, err := Decode(CommentedDefault())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Default(), got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(CommentedDefault(), &doc); err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(t reflect.Type, doc map[string]any, path string)
	walk = func(t reflect.Type, doc map[string]any, path string) {
		for name, ft := range jsonFields(t) {
			v, ok := doc[name]
			if !ok {
				missing = append(missing, path+name)
				continue
			}
			if m, ok := v.(map[string]any); ok && followed(ft) && ft != reflect.TypeFor[metav1.LabelSelector]() {
				walk(ft, m, path+name+".")
			}
		}
	}
	walk(reflect.TypeFor[RebalancerPolicy](), doc, "")
	if len(missing) > 0 {
		t.Errorf("fields missing from the commented default: %v", missing)
	}
}
