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
}

// DeepCopyInto copies a into out.
func (a *RedisClusterBalanceArgs) DeepCopyInto(out *RedisClusterBalanceArgs) {
	*out = *a
	if a.Namespaces != nil {
		ns := &api.Namespaces{}
		a.Namespaces.DeepCopyInto(ns)
		out.Namespaces = ns
	}
	for _, d := range []struct{ in, out **metav1.Duration }{
		{&a.HealthGateTimeout, &out.HealthGateTimeout},
		{&a.RecreateTimeout, &out.RecreateTimeout},
		{&a.RejoinTimeout, &out.RejoinTimeout},
	} {
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
