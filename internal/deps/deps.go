//go:build deps

// Package deps pins the project's dependencies in go.mod while the packages that use them are
// being written (go mod tidy keeps modules imported under any build tag). Remove it once every
// dependency below is imported by real code.
package deps

import (
	_ "github.com/go-redis/redis/v8"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/robfig/cron/v3"
	_ "github.com/spf13/cobra"
	_ "k8s.io/api/policy/v1"
	_ "k8s.io/apimachinery/pkg/util/wait"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/component-base/logs"
	_ "k8s.io/component-helpers/scheduling/corev1"
	_ "k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	_ "k8s.io/klog/v2"
	_ "k8s.io/utils/clock"
	_ "sigs.k8s.io/descheduler/pkg/descheduler/evictions"
	_ "sigs.k8s.io/descheduler/pkg/descheduler/node"
	_ "sigs.k8s.io/descheduler/pkg/features"
	_ "sigs.k8s.io/descheduler/pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint"
	_ "sigs.k8s.io/yaml"
)
