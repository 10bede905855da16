// Package guard is the eviction guard: the admission handler `serve` answers kube-apiserver's
// AdmissionReviews for CREATE pods/eviction with, on a TLS port, on every replica. Drains
// (kubectl drain, node-pool upgrades), cluster-autoscaler and Karpenter consolidation and the
// descheduler evict pods through the Eviction API; a PodDisruptionBudget cannot tell a Redis
// master from a replica. The guard can: it denies with 429 TooManyRequests (which every such
// evictor retries) the eviction of a master serving slots, and of a replica whose shard would be
// left without a serving master or an in-sync replica, while the leader fails the master over
// (the hand-off, rebalancer/handoff); the retry then finds a replica and passes. It allows a
// replica whose shard stays covered, any pod on a node that is NotReady or unreachable, and any
// eviction it has held longer than guard.maxHold (a Warning Event says so), so that a drain never
// hangs forever. It judges only the members of the Redis clusters it guards, as the model reads
// them (policies.WhyNotMember): a Job's pod or another controller's that shares the cluster label
// (the chart's cluster-update Job, a web Deployment of the same Helm release) is allowed without
// a Redis read. The guard itself never evicts anything.
//
// The decision (Decide) is a pure function of a State, which the Guard builds per review from a
// watched cache (Source, which serve's rebalancer/cache implements: informers on pods and nodes;
// no request to the API server per review)
// and at most two Redis reads under one deadline (CLUSTER NODES of the evicted pod's Redis node;
// for a replica, INFO replication of its master). Dry runs get the same answer and change
// nothing. What a review trusts of the AdmissionReview is the pod's namespace and name and the
// dry-run flags; everything else is read from the cache and Redis, so a forged review can at most
// make the leader fail a master over (verified), never evict a pod.
//
// It owns Decide, State, Verdict, the Guard (Review, ServeHTTP), the Source interface and Holds. It imports policies, observe and redisctl; execute reads
// its denial prefix (Denied), and rebalancer/handoff its holds.
package guard
