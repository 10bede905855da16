// Package soak is the chaos soak (`make soak`): the whole system as an SRE installs
// it, on a test bed as slow as a cloud (harness.Realistic), through a seeded random sequence of
// overlapping disruptions, checked continuously and at the end.
//
// The bed is a local cluster of its own (pod network 127.62, so that it never meets the e2e
// suite's) with 3 zones × 3 kwok nodes, the realistic profile (pods Ready 5–20 s after they are
// scheduled, a volume attach delay, the kubelet's grace period, cluster-node-timeout 15 s, masters
// holding 100–200 MB, append-only files, node losses the control plane sees), and Bitnami's
// redis-cluster chart as installed: 6 masters and 6 replicas in one StatefulSet, zonal volumes,
// a password. On it run what deploy/ ships, as processes with the ServiceAccount's token: serve
// from the guard overlay (2 replicas, the eviction guard behind a proxy standing in for its
// Service, failurePolicy Ignore), the CronJob overlay's run on a short schedule, and the stock
// descheduler (RemovePodsViolatingTopologySpreadConstraint, every 2 minutes); a writer at 250
// writes/s and a reader that reads every acknowledged key back.
//
// The disruptions (events_test.go) are drawn from the seed: node and zone drains (kubectl's
// drain library), cluster-autoscaler and Karpenter scale-downs, nodes lost without warning,
// node-pool scale-downs, rolling restarts, replicas killed, serve's leader killed, kube-apiserver
// restarted and the guard unreachable; the checks (checks_test.go) attribute every failed write
// to an unguarded event, as Jepsen's checkers pair a nemesis' start and stop into the intervals
// they judge a history by.
//
// Run it with `make soak` (SOAK_DURATION, SOAK_SEED) or `go test ./e2e/soak -run TestSoak
// -soak.duration=30m -soak.seed=N`; `make test` runs a short one (3 minutes, a fixed seed).
package soak
