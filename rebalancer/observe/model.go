package observe

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Model builds the model of snap with opts (policies.Build) and keeps the clusters sel selects.
// Roles are those opts.RoleLabel gives; ApplyRedis (live) and ApplyRedisNodes (offline, from
// CLUSTER NODES files) read them, and the shards the shard source wants, from Redis instead.
func Model(snap *policies.Snapshot, opts policies.Options, sel Selection) (*policies.Model, error) {
	m, err := policies.Build(snap, opts)
	if err != nil {
		return nil, err
	}
	sel.Filter(m)
	return m, nil
}

// Live reads the API server's snapshot of sel.Namespace (ReadSnapshot) and returns its Model.
func Live(ctx context.Context, client kubernetes.Interface, opts policies.Options, sel Selection) (*policies.Model, error) {
	return LiveFrom(ctx, Lister{Client: client}, opts, sel)
}
