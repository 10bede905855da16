package redisclusterbalance

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// SetDefaults fills the unset fields of a *RedisClusterBalanceArgs with redis-rebalancer's
// defaults (the descheduler's PluginArgDefaulter).
func SetDefaults(obj runtime.Object) {
	a := obj.(*RedisClusterBalanceArgs)
	if a.ClusterLabel == "" {
		a.ClusterLabel = policies.DefaultClusterLabel
	}
	if a.RedisPort == 0 {
		a.RedisPort = redisctl.DefaultPort
	}
	if a.MaxMovesPerCluster == 0 {
		a.MaxMovesPerCluster = execute.DefaultMaxMoves
	}
	for _, d := range []struct {
		field **metav1.Duration
		def   time.Duration
	}{
		{&a.HealthGateTimeout, execute.DefaultHealthTimeout},
		{&a.RecreateTimeout, execute.DefaultRecreateTimeout},
		{&a.RejoinTimeout, execute.DefaultRejoinTimeout},
	} {
		if *d.field == nil {
			*d.field = &metav1.Duration{Duration: d.def}
		}
	}
}

// Validate checks a *RedisClusterBalanceArgs (the descheduler's PluginArgValidator): namespaces
// either included or excluded, not both; a valid label key; a port in 1..65535; no negative
// count or duration. It returns every problem, joined.
func Validate(obj runtime.Object) error {
	a := obj.(*RedisClusterBalanceArgs)
	var errs []error
	if a.Namespaces != nil && len(a.Namespaces.Include) > 0 && len(a.Namespaces.Exclude) > 0 {
		errs = append(errs, errors.New("namespaces: only one of include and exclude may be set"))
	}
	if a.ClusterLabel != "" {
		for _, msg := range validation.IsQualifiedName(a.ClusterLabel) {
			errs = append(errs, fmt.Errorf("clusterLabel %q: %s", a.ClusterLabel, msg))
		}
	}
	if a.RedisPort < 0 || a.RedisPort > 65535 {
		errs = append(errs, fmt.Errorf("redisPort %d: must be in 1..65535 (0: 6379)", a.RedisPort))
	}
	if a.MaxMovesPerCluster < 0 {
		errs = append(errs, fmt.Errorf("maxMovesPerCluster %d: must not be negative", a.MaxMovesPerCluster))
	}
	for _, d := range []struct {
		name string
		d    *metav1.Duration
	}{{"healthGateTimeout", a.HealthGateTimeout}, {"recreateTimeout", a.RecreateTimeout}, {"rejoinTimeout", a.RejoinTimeout}} {
		if d.d != nil && d.d.Duration < 0 {
			errs = append(errs, fmt.Errorf("%s %s: must not be negative", d.name, d.d.Duration))
		}
	}
	return errors.Join(errs...)
}
