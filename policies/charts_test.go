package policies

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestBitnamiRedisCluster tells the chart's pods by the labels and variable `helm template`
// renders (bitnami/redis-cluster 13.0.5): alone, with a nameOverride, under an alias; and not
// another chart's.
func TestBitnamiRedisCluster(t *testing.T) {
	chartSpec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "redis-cluster", Env: []corev1.EnvVar{{Name: "REDIS_NODES", Value: "web-sessions-0.web-sessions-headless "}}}}}
	other := &corev1.PodSpec{Containers: []corev1.Container{{Name: "redis"}}}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		spec   *corev1.PodSpec
		want   bool
	}{
		{"the chart alone → yes", map[string]string{LabelHelmChart: "redis-cluster-13.0.5", LabelAppName: "redis-cluster"}, chartSpec, true},
		{"nameOverride sessions (helm.sh/chart unchanged) → yes", map[string]string{LabelHelmChart: "redis-cluster-13.0.5", LabelAppName: "sessions"}, chartSpec, true},
		{"alias sessions (helm.sh/chart sessions-13.0.5) with REDIS_NODES → yes", map[string]string{LabelHelmChart: "sessions-13.0.5", LabelAppName: "sessions"}, chartSpec, true},
		{"another Bitnami chart named sessions, no REDIS_NODES → no", map[string]string{LabelHelmChart: "sessions-13.0.5", LabelAppName: "sessions"}, other, false},
		{"Bitnami's redis chart (not the cluster chart) → no", map[string]string{LabelHelmChart: "redis-21.2.3", LabelAppName: "redis"}, other, false},
		{"no chart label → no", map[string]string{LabelAppName: "redis-cluster"}, chartSpec, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BitnamiRedisCluster(tc.labels, tc.spec); got != tc.want {
				t.Errorf("BitnamiRedisCluster(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}
