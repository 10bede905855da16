package redisclusterbalance

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/descheduler/pkg/api"
)

// RedisClusterBalanceArgs configures the RedisClusterBalance plugin: the pluginConfig args of a
// DeschedulerPolicy profile. Every field is optional; SetDefaults fills the defaults, which are
// redis-rebalancer's (the RebalancerPolicy defaults of api/v1alpha1).
type RedisClusterBalanceArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Namespaces keeps the Redis clusters of the namespaces included, or drops those of the
	// namespaces excluded (the descheduler's namespaces filter; nil: every namespace).
	Namespaces *api.Namespaces `json:"namespaces,omitempty"`
	// AllowEmpty makes a cycle that finds no Redis cluster in the namespaces no error (by default
	// it is one, as for `redis-rebalancer run`: a namespace or label typo is named).
	AllowEmpty bool `json:"allowEmpty,omitempty"`
	// ClusterLabel is the pod label whose value names a pod's Redis cluster
	// (policies.DefaultClusterLabel when empty).
	ClusterLabel string `json:"clusterLabel,omitempty"`
	// RedisPort is the Redis client port of the pods (6379 when 0).
	RedisPort int32 `json:"redisPort,omitempty"`
	// MaxMovesPerCluster bounds the evictions of one descheduling cycle per Redis cluster
	// (redis-rebalancer's default, 10, when 0). The profile's evictor limits
	// (maxNoOfPodsToEvictPerNode, ...) still hold.
	MaxMovesPerCluster int32 `json:"maxMovesPerCluster,omitempty"`
	// HealthGateTimeout bounds the wait for a healthy Redis cluster before and after a move;
	// RecreateTimeout the wait for an evicted pod to be re-created, scheduled and Ready;
	// RejoinTimeout the wait for its Redis node to be an in-sync replica again (redis-rebalancer's
	// defaults when nil).
	HealthGateTimeout *metav1.Duration `json:"healthGateTimeout,omitempty"`
	RecreateTimeout   *metav1.Duration `json:"recreateTimeout,omitempty"`
	RejoinTimeout     *metav1.Duration `json:"rejoinTimeout,omitempty"`
	// Lease is the coordination.k8s.io Lease that redis-rebalancer's run and serve share (one
	// actor at a time, rebalancer/lease): the plugin holds it while it acts (fails over or
	// evicts) and skips a cycle while another process holds it (SetDefaults fills it).
	Lease *LeaseArgs `json:"lease,omitempty"`
}

// LeaseArgs names the Lease the plugin holds while it acts: serve's and run's, whose flags
// (--leader-elect-*) it mirrors. Every field is optional.
type LeaseArgs struct {
	// Disabled acts without the Lease (run's --leader-elect=false): only where no run nor serve
	// acts on the same Redis clusters.
	Disabled bool `json:"disabled,omitempty"`
	// Namespace is the Lease's namespace: serve's (its --leader-elect-resource-namespace, by
	// default its own namespace). Empty: the descheduler's own namespace in a cluster, else its
	// kubeconfig context's, as run's default.
	Namespace string `json:"namespace,omitempty"`
	// Name is the Lease's name (lease.DefaultName, "redis-rebalancer", when empty).
	Name string `json:"name,omitempty"`
	// LeaseDuration, RenewDeadline and RetryPeriod are the Lease's timings (15s, 10s and 2s when
	// nil, as serve's): a holder not renewed within LeaseDuration may be replaced; the plugin
	// stops acting when it cannot renew within RenewDeadline; it tries every RetryPeriod.
	LeaseDuration *metav1.Duration `json:"leaseDuration,omitempty"`
	RenewDeadline *metav1.Duration `json:"renewDeadline,omitempty"`
	RetryPeriod   *metav1.Duration `json:"retryPeriod,omitempty"`
}

// DeepCopyInto copies a into out.
func (a *RedisClusterBalanceArgs) DeepCopyInto(out *RedisClusterBalanceArgs) {
	*out = *a
	if a.Namespaces != nil {
		ns := &api.Namespaces{}
		a.Namespaces.DeepCopyInto(ns)
		out.Namespaces = ns
	}
	copyDurations([]struct{ in, out **metav1.Duration }{
		{&a.HealthGateTimeout, &out.HealthGateTimeout},
		{&a.RecreateTimeout, &out.RecreateTimeout},
		{&a.RejoinTimeout, &out.RejoinTimeout},
	})
	if a.Lease != nil {
		l := *a.Lease
		copyDurations([]struct{ in, out **metav1.Duration }{
			{&a.Lease.LeaseDuration, &l.LeaseDuration},
			{&a.Lease.RenewDeadline, &l.RenewDeadline},
			{&a.Lease.RetryPeriod, &l.RetryPeriod},
		})
		out.Lease = &l
	}
}

// copyDurations points each out at a copy of its in's duration (nil stays nil).
func copyDurations(ds []struct{ in, out **metav1.Duration }) {
	for _, d := range ds {
		if *d.in != nil {
			v := **d.in
			*d.out = &v
		}
	}
}

// DeepCopy returns a copy of a (nil for nil).
func (a *RedisClusterBalanceArgs) DeepCopy() *RedisClusterBalanceArgs {
	if a == nil {
		return nil
	}
	out := new(RedisClusterBalanceArgs)
	a.DeepCopyInto(out)
	return out
}

// DeepCopyObject returns a copy of a as a runtime.Object.
func (a *RedisClusterBalanceArgs) DeepCopyObject() runtime.Object {
	if c := a.DeepCopy(); c != nil {
		return c
	}
	return nil
}
