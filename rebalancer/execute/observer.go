package execute

import (
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// Observer is told what a run does while it does it; rebalancer/metrics implements it (the
// Prometheus metrics `serve` exposes). Its methods are called from the clusters' goroutines, so
// concurrently when clusters run in parallel; they must return quickly and cannot fail the run.
// cluster is always "namespace/name".
type Observer interface {
	// Step is called after each step of a move, with the step as reported (its name, outcome
	// and duration).
	Step(cluster string, s report.Step)
	// Failover is called after each failover tried, with its result.
	Failover(cluster string, result FailoverResult)
	// Eviction is called after each eviction tried, with its result.
	Eviction(cluster string, result EvictionResult)
	// Move is called after each move, with the move as reported.
	Move(cluster string, m report.MoveResult)
	// Cluster is called once per cluster at the end of its run, with its report (the violations
	// before and after, compliance, why it stopped).
	Cluster(cr report.ClusterRun)
}

// FailoverResult is how a failover ended (the label value of the failover metric).
type FailoverResult string

// Failover results.
const (
	// FailoverSucceeded: the replica was promoted and the switch verified.
	FailoverSucceeded FailoverResult = "succeeded"
	// FailoverRefused: Redis said no (no in-sync replica, an error reply); the move skipped.
	FailoverRefused FailoverResult = "refused"
	// FailoverFailed: the switch was not verified in time, or Redis did not answer; the move
	// aborted.
	FailoverFailed FailoverResult = "failed"
)

// EvictionResult is how an eviction ended (the label value of the eviction metric).
type EvictionResult string

// Eviction results.
const (
	// EvictionEvicted: the API server accepted the eviction.
	EvictionEvicted EvictionResult = "evicted"
	// EvictionRefused: a PodDisruptionBudget (429) or an eviction limit said no; the move skipped.
	EvictionRefused EvictionResult = "refused"
	// EvictionFailed: any other error; the move aborted.
	EvictionFailed EvictionResult = "failed"
)

// noObserver is the Observer of a Config without one.
type noObserver struct{}

func (noObserver) Step(string, report.Step)        {}
func (noObserver) Failover(string, FailoverResult) {}
func (noObserver) Eviction(string, EvictionResult) {}
func (noObserver) Move(string, report.MoveResult)  {}
func (noObserver) Cluster(report.ClusterRun)       {}
