package redisclusterbalance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/descheduler/pkg/api"
	"sigs.k8s.io/descheduler/pkg/descheduler"
	"sigs.k8s.io/descheduler/pkg/framework/pluginregistry"
)

// TestPolicyArgs loads DeschedulerPolicy files through the descheduler's own loader
// (descheduler.LoadPolicyConfig: decoding, the registry's validator, then its defaulter) with the
// plugin registered as main registers it, and checks the args the plugin is built with.
func TestPolicyArgs(t *testing.T) {
	descheduler.SetupPlugins()
	Register(pluginregistry.PluginRegistry, Options{})
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	for _, tc := range []struct {
		name    string
		args    string // the RedisClusterBalance pluginConfig entry's args ("" for none)
		want    *RedisClusterBalanceArgs
		wantErr string
		named   []string // further phrases the error must hold
	}{
		{
			name: "no args: every field defaulted, the Lease serve's (its namespace filled in by New)",
			want: &RedisClusterBalanceArgs{ClusterLabel: "app.kubernetes.io/instance", RedisPort: 6379, MaxMovesPerCluster: 10,
				HealthGateTimeout: dur(2 * time.Minute), RecreateTimeout: dur(5 * time.Minute), RejoinTimeout: dur(5 * time.Minute),
				Lease: &LeaseArgs{Name: "redis-rebalancer", LeaseDuration: dur(15 * time.Second), RenewDeadline: dur(10 * time.Second), RetryPeriod: dur(2 * time.Second)}},
		},
		{
			name: "every field set: kept as given",
			args: "{namespaces: {include: [redis]}, allowEmpty: true, clusterLabel: app, redisPort: 7000, maxMovesPerCluster: 6, healthGateTimeout: 1m, recreateTimeout: 2m, rejoinTimeout: 90s, " +
				"lease: {namespace: ops, name: rr, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 5s}}",
			want: &RedisClusterBalanceArgs{Namespaces: &api.Namespaces{Include: []string{"redis"}}, AllowEmpty: true, ClusterLabel: "app", RedisPort: 7000, MaxMovesPerCluster: 6,
				HealthGateTimeout: dur(time.Minute), RecreateTimeout: dur(2 * time.Minute), RejoinTimeout: dur(90 * time.Second),
				Lease: &LeaseArgs{Namespace: "ops", Name: "rr", LeaseDuration: dur(30 * time.Second), RenewDeadline: dur(20 * time.Second), RetryPeriod: dur(5 * time.Second)}},
		},
		{
			name: "the Lease disabled: kept, the rest defaulted",
			args: "{lease: {disabled: true}}",
			want: &RedisClusterBalanceArgs{ClusterLabel: "app.kubernetes.io/instance", RedisPort: 6379, MaxMovesPerCluster: 10,
				HealthGateTimeout: dur(2 * time.Minute), RecreateTimeout: dur(5 * time.Minute), RejoinTimeout: dur(5 * time.Minute),
				Lease: &LeaseArgs{Disabled: true, Name: "redis-rebalancer", LeaseDuration: dur(15 * time.Second), RenewDeadline: dur(10 * time.Second), RetryPeriod: dur(2 * time.Second)}},
		},
		{
			name:    "namespaces both included and excluded, a bad port and label: rejected, every problem named",
			args:    "{namespaces: {include: [a], exclude: [b]}, redisPort: 70000, clusterLabel: 'a b', maxMovesPerCluster: -1, rejoinTimeout: -1s}",
			wantErr: "only one of include and exclude",
			named:   []string{"redisPort 70000", "clusterLabel", "maxMovesPerCluster -1", "rejoinTimeout -1s"},
		},
		{
			name:    "a Lease in a bad namespace, its renew deadline above its duration: rejected, both named",
			args:    "{lease: {namespace: 'Not_A_Namespace', renewDeadline: 20s}}",
			wantErr: `lease.namespace "Not_A_Namespace"`,
			named:   []string{"the renew deadline (20s) must be shorter than the lease duration (15s)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entry := "  - name: RedisClusterBalance\n"
			if tc.args != "" {
				entry += "    args: " + tc.args + "\n"
			}
			policy := "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: redis\n  pluginConfig:\n" + entry +
				"  plugins:\n    balance:\n      enabled: [RedisClusterBalance]\n"
			path := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := descheduler.LoadPolicyConfig(path, fake.NewClientset(), pluginregistry.PluginRegistry)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadPolicyConfig error = %v, want one containing %q", err, tc.wantErr)
				}
				for _, field := range tc.named {
					if !strings.Contains(err.Error(), field) {
						t.Errorf("LoadPolicyConfig error %q does not name %s", err, field)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var args *RedisClusterBalanceArgs
			for _, pc := range got.Profiles[0].PluginConfigs {
				if pc.Name == PluginName {
					args, _ = pc.Args.(*RedisClusterBalanceArgs)
				}
			}
			if diff := cmp.Diff(tc.want, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(args, args.DeepCopyObject()); diff != "" {
				t.Errorf("DeepCopyObject (-want +got):\n%s", diff)
			}
		})
	}
}
