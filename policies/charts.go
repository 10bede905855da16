package policies

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Labels and variables Bitnami's redis-cluster chart (13.x, with bitnami/common 2.x) writes on
// its pods.
const (
	// LabelHelmChart is bitnami/common's common.labels.standard "helm.sh/chart":
	// "<chart name>-<chart version>", the chart name being redis-cluster or its alias in an
	// umbrella chart.
	LabelHelmChart = "helm.sh/chart"
	// LabelAppName is "app.kubernetes.io/name": the chart's name, its alias, or its nameOverride.
	LabelAppName = "app.kubernetes.io/name"
	// BitnamiChartName is the chart's own name.
	BitnamiChartName = "redis-cluster"
	// BitnamiNodesEnv is the variable the chart gives its redis-cluster container: every node's
	// address (templates/redis-statefulset.yaml), which no other chart of Bitnami's sets. Its name
	// alone tells the chart (the snapshot keeps no value).
	BitnamiNodesEnv = "REDIS_NODES"
)

// BitnamiRedisCluster reports whether a pod (its labels and spec, or a StatefulSet's pod
// template's) was made by Bitnami's redis-cluster chart: helm.sh/chart "redis-cluster-<version>"
// (the chart installed alone, or with a nameOverride, which changes app.kubernetes.io/name
// only), or, under an alias in an umbrella chart, helm.sh/chart "<alias>-<version>" with
// app.kubernetes.io/name "<alias>" and a container given REDIS_NODES.
func BitnamiRedisCluster(labels map[string]string, spec *corev1.PodSpec) bool {
	chart := labels[LabelHelmChart]
	if strings.HasPrefix(chart, BitnamiChartName+"-") {
		return true
	}
	name := labels[LabelAppName]
	if name == "" || !strings.HasPrefix(chart, name+"-") || spec == nil {
		return false
	}
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if e.Name == BitnamiNodesEnv {
				return true
			}
		}
	}
	return false
}
