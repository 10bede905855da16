package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

func TestExecutorConfig(t *testing.T) {
	p := v1alpha1.Default()
	p.Selection.Namespaces.Include = []string{"redis"}
	p.Limits.MaxNoOfPodsToEvictPerNode = 2
	p.Failover.Mode = v1alpha1.FailoverForce
	p.Windows.Windows = []v1alpha1.Window{{Schedule: "@daily", Duration: metav1.Duration{Duration: 2 * time.Hour}}}
	v1alpha1.ApplyLayout(p)
	cfg, err := executorConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{cfg.Selection.Namespace, cfg.Policy.ClusterLabel, cfg.Plan.MaxStates, cfg.MaxMoves, cfg.MaxParallelClusters,
		cfg.MaxPodsToEvictPerNode, cfg.MaxPodsToEvictPerNamespace, cfg.MaxPodsToEvictTotal, cfg.FailoverMode,
		cfg.FailoverTimeout, cfg.DrainQuiet, cfg.DrainTimeout, cfg.HealthTimeout, cfg.RecreateTimeout, cfg.RejoinTimeout, cfg.RequestTimeout, cfg.Window}
	want := []any{"redis", v1alpha1.DefaultClusterLabel, 200000, execute.DefaultMaxMoves, execute.DefaultMaxParallelClusters,
		ptr.To[uint](2), (*uint)(nil), (*uint)(nil), redisctl.FailoverForce,
		execute.DefaultFailoverTimeout, execute.DefaultDrainQuiet, execute.DefaultDrainTimeout, execute.DefaultHealthTimeout, execute.DefaultRecreateTimeout, execute.DefaultRejoinTimeout, execute.DefaultRequestTimeout,
		window.Config{StepEstimate: v1alpha1.DefaultStepEstimate, Windows: []window.Window{{Schedule: "@daily", Duration: 2 * time.Hour}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSecretValue(t *testing.T) {
	ref := v1alpha1.SecretKeyRef{Namespace: "redis", Name: "redis-auth", Key: "redis-password"}
	client := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "redis", Name: "redis-auth"},
		Data:       map[string][]byte{"redis-password": []byte("s3cret\n"), "other": []byte("x")},
	})
	got, err := secretValue(t.Context(), client, ref)
	if err != nil || got != "s3cret" {
		t.Errorf("secretValue = %q, %v; want s3cret", got, err)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace())
	}
	if diff := cmp.Diff([]string{"get secrets redis"}, verbs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	ref.Key = "password"
	if _, err := secretValue(t.Context(), client, ref); err == nil || err.Error() != `secret redis/redis-auth has no key "password" (keys: other, redis-password)` || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v, want the missing key named and the keys listed, never the value", err)
	}
	if _, err := secretValue(t.Context(), nil, ref); err == nil || !strings.Contains(err.Error(), "needs the API server") {
		t.Errorf("error %v, want: needs the API server", err)
	}
}

func TestRedisOptions(t *testing.T) {
	r := v1alpha1.Default().Redis
	r.Port, r.PasswordFile, r.UsernameEnv, r.MaxLagBytes = 7000, "/etc/redis/password", "REDIS_USER", 4096
	r.TLS = v1alpha1.RedisTLS{Enabled: true, CAFile: "ca.pem", CertFile: "tls.crt", KeyFile: "tls.key", ServerName: "redis"}
	want := redisctl.Options{
		Port: 7000, UsernameEnv: "REDIS_USER", PasswordFile: "/etc/redis/password",
		DialTimeout: v1alpha1.DefaultDialTimeout, ReadTimeout: v1alpha1.DefaultReadTimeout, WriteTimeout: v1alpha1.DefaultWriteTimeout,
		MaxLagBytes: 4096, MaxLastIOSeconds: v1alpha1.DefaultMaxLastIOSeconds,
		TLS: &redisctl.TLSOptions{CAFile: "ca.pem", CertFile: "tls.crt", KeyFile: "tls.key", ServerName: "redis"},
	}
	if diff := cmp.Diff(want, redisOptions(&r)); diff != "" {
		t.Errorf("TLS enabled (-want +got):\n%s", diff)
	}
	r.TLS.Enabled = false
	if got := redisOptions(&r); got.TLS != nil {
		t.Errorf("TLS disabled: options' TLS %+v, want nil (plain TCP)", got.TLS)
	}
}

// TestRuleSettings checks rules.enabled, rules.disabled and rules.soft converted into the
// rules' settings: the registry's defaults, "*" for every default rule, enabled winning over
// "*", and soft.
func TestRuleSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules v1alpha1.Rules
		// judged lists the rules judged, "~" before the soft ones, in the registry's order.
		judged []string
	}{
		{
			name:   "empty: the default rules, optional ones off",
			judged: []string{"ShardSeparation", "MaxPodsPerNode", "ZoneEvenSplit", "MaxPodsPerZone", "AllowedZones", "TopologySpread", "Unschedulable", "MasterQuorum", "~NodeSpread", "~ZoneBalance"},
		},
		{
			name:   "only TopologySpread: every default rule disabled, one enabled",
			rules:  v1alpha1.Rules{Disabled: []string{"*"}, Enabled: []string{"TopologySpread"}},
			judged: []string{"TopologySpread"},
		},
		{
			name:   "MaxPodsPerNode disabled, MasterQuorum soft, the soft spread enabled",
			rules:  v1alpha1.Rules{Disabled: []string{"MaxPodsPerNode"}, Soft: []string{"MasterQuorum"}, Enabled: []string{"SoftTopologySpread"}},
			judged: []string{"ShardSeparation", "ZoneEvenSplit", "MaxPodsPerZone", "AllowedZones", "TopologySpread", "Unschedulable", "~MasterQuorum", "~NodeSpread", "~ZoneBalance", "~SoftTopologySpread"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings := ruleSettings(&tc.rules)
			var judged []string
			for _, info := range policies.Rules() {
				s := settings[info.Name]
				switch {
				case !s.Enabled:
				case s.Soft:
					judged = append(judged, "~"+string(info.Name))
				default:
					judged = append(judged, string(info.Name))
				}
			}
			if diff := cmp.Diff(tc.judged, judged); diff != "" {
				t.Errorf("judged (-want +got):\n%s", diff)
			}
		})
	}
}
