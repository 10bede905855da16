package redisclusterbalance

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	componentbaseconfig "k8s.io/component-base/config"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/lease"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// SetDefaults fills the unset fields of a *RedisClusterBalanceArgs with redis-rebalancer's
// defaults (the descheduler's PluginArgDefaulter), the Lease's included (serve's: lease's
// defaults; its namespace is filled in by New).
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
	if a.Lease == nil {
		a.Lease = &LeaseArgs{}
	}
	l := a.Lease
	if l.Name == "" {
		l.Name = lease.DefaultName
	}
	for _, d := range []struct {
		field **metav1.Duration
		def   time.Duration
	}{
		{&l.LeaseDuration, lease.DefaultLeaseDuration},
		{&l.RenewDeadline, lease.DefaultRenewDeadline},
		{&l.RetryPeriod, lease.DefaultRetryPeriod},
	} {
		if *d.field == nil {
			*d.field = &metav1.Duration{Duration: d.def}
		}
	}
}

// Validate checks a *RedisClusterBalanceArgs (the descheduler's PluginArgValidator): namespaces
// either included or excluded, not both; a valid label key; a port in 1..65535; no negative
// count or duration; a Lease (unless disabled) with a valid namespace and name and timings as
// run's and serve's (lease.ValidateLeaderElection: the renew deadline shorter than the lease
// duration, the retry period positive and shorter than the renew deadline). It returns every
// problem, joined.
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
	if l := a.Lease; l != nil && !l.Disabled {
		if l.Namespace != "" {
			for _, msg := range validation.IsDNS1123Label(l.Namespace) {
				errs = append(errs, fmt.Errorf("lease.namespace %q: %s", l.Namespace, msg))
			}
		}
		if l.Name != "" {
			for _, msg := range validation.IsDNS1123Subdomain(l.Name) {
				errs = append(errs, fmt.Errorf("lease.name %q: %s", l.Name, msg))
			}
		}
		// The timings' rules are run's and serve's (the descheduler validates before it
		// defaults: an unset timing is checked as its default).
		le := leaderElection(l, "namespace-filled-in-later")
		if le.ResourceName == "" {
			le.ResourceName = lease.DefaultName
		}
		if err := lease.ValidateLeaderElection(le); err != nil {
			errs = append(errs, fmt.Errorf("lease: %w", err))
		}
	}
	return errors.Join(errs...)
}

// leaderElection is the Lease l names as rebalancer/lease reads it, in namespace when l names
// none; an unset timing is its default.
func leaderElection(l *LeaseArgs, namespace string) componentbaseconfig.LeaderElectionConfiguration {
	le := lease.DefaultLeaderElection(namespace)
	if l.Namespace != "" {
		le.ResourceNamespace = l.Namespace
	}
	le.ResourceName = l.Name
	for _, d := range []struct {
		field *metav1.Duration
		arg   *metav1.Duration
	}{{&le.LeaseDuration, l.LeaseDuration}, {&le.RenewDeadline, l.RenewDeadline}, {&le.RetryPeriod, l.RetryPeriod}} {
		if d.arg != nil {
			*d.field = *d.arg
		}
	}
	return le
}
