// Package harness sets up complete test environments for the end-to-end tests, the demo and
// make compare. A test bed (Bed) is a local Kubernetes control plane with kwok nodes
// (e2e/localcluster); an environment (Env) is a scenario laid out on a bed in a namespace of its
// own: a real redis-server per Redis pod (e2e/redisrt), the scenario's StatefulSets and
// PodDisruptionBudgets (in the scenario's layout: one StatefulSet per shard, Bitnami's chart or
// OT's operator) with pods bound to the nodes the scenario names, a Redis Cluster formed over
// them with the shards the scenario says (its first pod the master; redistest.FormCluster), an
// operator stand-in that adds new members as replicas of their shard (redistest.AddReplica) and,
// in OT's layout, keeps the redis-role labels in step with Redis, and a rate-limited write load
// (Writer).
// Several environments share one bed without seeing each other (see Bed); Setup gives an
// environment a bed of its own.
//
// It may import e2e/localcluster, e2e/redisrt, the test-support layer (test/fixture,
// test/scenario, test/redistest), redisctl and client-go; never rebalancer or
// cmd/redis-rebalancer/app (the tests drive those).
package harness
