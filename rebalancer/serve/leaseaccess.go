package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// LeaseAccessInterval is how often a replica checks again that it may take part in the leader
// election (its readiness follows).
const LeaseAccessInterval = 30 * time.Second

// leaseAccessInterval is LeaseAccessInterval; tests shorten it.
var leaseAccessInterval = LeaseAccessInterval

// leaseAccess says why this process cannot take part in the leader election on the Lease
// namespace/name, or "" when it can: it may get and update the Lease, and create it when it does
// not exist yet. It asks the API server with SelfSubjectAccessReviews (which every authenticated
// identity may create), so that a replica without the RBAC is told before it tries. An error is a
// review that could not be made.
func leaseAccess(ctx context.Context, s *server) (string, error) {
	le := s.cfg.LeaderElection
	attrs := []authorizationv1.ResourceAttributes{
		{Namespace: le.ResourceNamespace, Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: le.ResourceName},
		{Namespace: le.ResourceNamespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: le.ResourceName},
	}
	if _, err := s.cfg.Client.CoordinationV1().Leases(le.ResourceNamespace).Get(ctx, le.ResourceName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		attrs = append(attrs, authorizationv1.ResourceAttributes{Namespace: le.ResourceNamespace, Verb: "create", Group: "coordination.k8s.io", Resource: "leases"})
	}
	var denied []string
	for _, a := range attrs {
		r, err := s.cfg.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("serve: lease access review: %w", err)
		}
		if !r.Status.Allowed {
			denied = append(denied, a.Verb)
		}
	}
	if len(denied) == 0 {
		return "", nil
	}
	return fmt.Sprintf("leader election: may not %s Lease %s/%s (RBAC: coordination.k8s.io leases get and update by name, create in the namespace)",
		strings.Join(denied, ", "), le.ResourceNamespace, le.ResourceName), nil
}

// checkLeaseAccess sets the readiness the leader election gives (s.leaseDenied) now, then every
// LeaseAccessInterval until ctx ends, logging each change. A review that fails keeps the last
// verdict.
func (s *server) checkLeaseAccess(ctx context.Context) {
	last := "unchecked"
	check := func(ctx context.Context) {
		why, err := leaseAccess(ctx, s)
		if err != nil {
			klog.InfoS("Lease access not checked", "err", err.Error())
			return
		}
		s.leaseDenied.Store(why)
		if why == last {
			return
		}
		switch {
		case why != "":
			klog.InfoS("Not ready: this replica cannot take part in the leader election", "reason", why)
		case last != "unchecked":
			klog.InfoS("Ready: this replica may take part in the leader election again")
		}
		last = why
	}
	check(ctx)
	go func() {
		t := time.NewTicker(leaseAccessInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				check(ctx)
			}
		}
	}()
}
