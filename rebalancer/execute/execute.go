// Package execute carries out plans on a live Kubernetes cluster, one safe move at a time (SPEC
// "Safe disruption"): health gate, PodDisruptionBudget dry run, failover of a master, client
// drain, eviction through the policy/v1 Eviction API, and a wait until the pod is back as an
// in-sync replica; then it observes the cluster again and re-plans.
//
// It owns the Executor and its Config, and the move steps (move.go). It imports observe (what the
// cluster looks like now), plan (what to move), report (what it did, and the maps it prints),
// policies and redisctl; nothing in rebalancer/ imports it.
package execute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Defaults of Config, used when a field is 0.
const (
	// DefaultMaxMoves is Config.MaxMoves: evictions per Redis cluster in one run.
	DefaultMaxMoves = 10
	// DefaultFailoverTimeout is Config.FailoverTimeout.
	DefaultFailoverTimeout = 30 * time.Second
	// DefaultDrainQuiet and DefaultDrainTimeout are Config.DrainQuiet and Config.DrainTimeout.
	DefaultDrainQuiet   = time.Second
	DefaultDrainTimeout = 15 * time.Second
	// DefaultHealthTimeout is Config.HealthTimeout.
	DefaultHealthTimeout = 2 * time.Minute
	// DefaultRecreateTimeout is Config.RecreateTimeout.
	DefaultRecreateTimeout = 5 * time.Minute
	// DefaultRejoinTimeout is Config.RejoinTimeout.
	DefaultRejoinTimeout = 5 * time.Minute
	// DefaultPollInterval is Config.PollInterval.
	DefaultPollInterval = 500 * time.Millisecond
)

// ErrReleaseReplicaClaims is returned by New when Config.Policy.ReleaseReplicaClaims is set: the
// planner would then plan moves that need a replica's PersistentVolumeClaim released, and the
// Executor does not release claims.
var ErrReleaseReplicaClaims = errors.New("releasing replica claims is not supported: the executor never deletes a PersistentVolumeClaim")

// Config configures an Executor. Client and Redis are required.
type Config struct {
	// Client talks to the Kubernetes API server.
	Client kubernetes.Interface
	// Redis talks to the Redis nodes (auth, TLS and timeouts are its options).
	Redis *redisctl.Client
	// Selection picks the Redis clusters (the zero value: all); its namespace ("" = all) also
	// limits what is read from the API server.
	Selection observe.Selection
	// Policy tunes the rules (cluster label, relaxed limits, ...). ReleaseReplicaClaims must be
	// false (ErrReleaseReplicaClaims).
	Policy policies.Options
	// Plan bounds the planner's search.
	Plan plan.Options
	// MaxMoves is the number of evictions one run may make per Redis cluster (DefaultMaxMoves
	// when 0).
	MaxMoves int
	// DryRun plans and prints, but neither fails over nor evicts.
	DryRun bool
	// FailoverMode is the CLUSTER FAILOVER variant (default mode unless set explicitly).
	FailoverMode redisctl.FailoverMode
	// FailoverTimeout bounds a failover, verification included (DefaultFailoverTimeout when 0).
	FailoverTimeout time.Duration
	// DrainQuiet and DrainTimeout: after a failover, wait until no client has run a keyspace
	// command on the old master for DrainQuiet (DefaultDrainQuiet when 0), at most DrainTimeout
	// (DefaultDrainTimeout when 0), so that clients learn the new master from its MOVED replies
	// before it goes away.
	DrainQuiet, DrainTimeout time.Duration
	// HealthTimeout bounds the wait for the cluster to be healthy before a move
	// (DefaultHealthTimeout when 0).
	HealthTimeout time.Duration
	// RecreateTimeout bounds the wait for an evicted pod to be re-created, scheduled and Ready
	// (DefaultRecreateTimeout when 0).
	RecreateTimeout time.Duration
	// RejoinTimeout bounds the wait for the re-created pod's Redis node to be back as an in-sync
	// replica (DefaultRejoinTimeout when 0).
	RejoinTimeout time.Duration
	// PollInterval is the period of the waits (DefaultPollInterval when 0).
	PollInterval time.Duration
	// Out receives the human-readable progress: maps, steps and durations (discarded when nil).
	Out io.Writer
	// Clock measures durations (the real clock when nil).
	Clock clock.PassiveClock
	// Requests, when set, counts Client's API requests (observe.RequestCounter.Wrap on its
	// rest.Config); Run's report then holds the counts.
	Requests *observe.RequestCounter
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Redis == nil {
		return c, errors.New("execute: a Kubernetes client and a Redis client are required")
	}
	if c.Policy.ReleaseReplicaClaims {
		return c, fmt.Errorf("execute: %w", ErrReleaseReplicaClaims)
	}
	if c.MaxMoves == 0 {
		c.MaxMoves = DefaultMaxMoves
	}
	if c.MaxMoves < 0 {
		return c, fmt.Errorf("execute: max moves must be positive, got %d", c.MaxMoves)
	}
	if c.FailoverTimeout == 0 {
		c.FailoverTimeout = DefaultFailoverTimeout
	}
	if c.DrainQuiet == 0 {
		c.DrainQuiet = DefaultDrainQuiet
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.HealthTimeout == 0 {
		c.HealthTimeout = DefaultHealthTimeout
	}
	if c.RecreateTimeout == 0 {
		c.RecreateTimeout = DefaultRecreateTimeout
	}
	if c.RejoinTimeout == 0 {
		c.RejoinTimeout = DefaultRejoinTimeout
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}

// Executor finds Redis clusters whose placement breaks the rules and fixes them one safe move at
// a time (SPEC "Safe disruption"): health gate, PodDisruptionBudget dry-run, failover of a master,
// eviction through the policy/v1 Eviction API, and a wait until the pod is back as an in-sync
// replica.
type Executor struct {
	cfg Config
}

// New returns an Executor for cfg, defaults filled. It fails when a required field is missing,
// MaxMoves is negative, or Policy.ReleaseReplicaClaims is set (ErrReleaseReplicaClaims).
func New(cfg Config) (*Executor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Executor{cfg: cfg}, nil
}

// Run examines every selected Redis cluster and moves pods until each complies, a move is
// refused (PodDisruptionBudget, unhealthy cluster, failed failover), or MaxMoves is spent. It
// returns an error only when the API server cannot be read or a wait breaks off in a way that
// needs an operator (the cluster is then left as it is: safe, and the next run continues).
func (e *Executor) Run(ctx context.Context) (*report.Run, error) {
	model, err := observe.Live(ctx, e.cfg.Client, e.cfg.Policy, e.cfg.Selection)
	if err != nil {
		return nil, fmt.Errorf("execute: %w", err)
	}
	var keys []string
	for _, c := range model.Clusters {
		keys = append(keys, c.Key())
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		fmt.Fprintf(e.cfg.Out, "no Redis cluster found (pods labelled %s", model.Options.ClusterLabel)
		if sel := e.cfg.Selection.Selector; sel != nil && !sel.Empty() {
			fmt.Fprintf(e.cfg.Out, " and matching %s", sel)
		}
		fmt.Fprintln(e.cfg.Out, ")")
	}
	rep := &report.Run{}
	var errs []error
	for _, k := range keys {
		cr, err := e.runCluster(ctx, k)
		rep.Clusters = append(rep.Clusters, cr)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", k, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	if e.cfg.Requests != nil {
		rep.APIRequests = e.cfg.Requests.Counts()
	}
	return rep, errors.Join(errs...)
}

// observe reads a fresh snapshot, finds the cluster and sets its members' roles from Redis.
func (e *Executor) observe(ctx context.Context, key string) (*policies.Cluster, *redisctl.Topology, error) {
	model, err := observe.Live(ctx, e.cfg.Client, e.cfg.Policy, observe.Selection{Namespace: e.cfg.Selection.Namespace})
	if err != nil {
		return nil, nil, err
	}
	for _, c := range model.Clusters {
		if c.Key() == key {
			topo, err := observe.ApplyRoles(ctx, e.cfg.Redis, c)
			return c, topo, err
		}
	}
	return nil, nil, fmt.Errorf("cluster %s has no pods any more", key)
}

func (e *Executor) printf(format string, args ...any) {
	fmt.Fprintf(e.cfg.Out, format, args...)
}

// runCluster runs the observe–plan–move loop on one cluster.
func (e *Executor) runCluster(ctx context.Context, key string) (report.ClusterRun, error) {
	ns, name, _ := strings.Cut(key, "/")
	cr := report.ClusterRun{Namespace: ns, Name: name}
	c, _, err := e.observe(ctx, key)
	if err != nil {
		cr.Stopped = err.Error()
		return cr, err
	}
	cr.Before = c.Evaluate(c.Current())
	e.printf("\n== Redis cluster %s: %d pods (N=%d), %d shards, zones [%s]\n", key, len(c.Members), c.N, len(c.Shards), strings.Join(c.AllowedZones, " "))
	e.printf("before:\n")
	report.RenderMap(e.cfg.Out, c, c.Current())
	report.RenderViolations(e.cfg.Out, cr.Before)
	var moveErr error
	for moves := 0; ; {
		p := plan.Compute(c, e.cfg.Plan)
		if len(policies.Hard(c.Evaluate(c.Current()))) == 0 {
			break
		}
		if p.Infeasible != "" {
			cr.Stopped = "no plan: " + p.Infeasible
			e.printf("no plan reaches compliance: %s\n", p.Infeasible)
			break
		}
		if e.cfg.DryRun {
			cr.Plan = &p
			report.RenderPlan(e.cfg.Out, p)
			cr.Stopped = "dry run"
			break
		}
		if moves >= e.cfg.MaxMoves {
			cr.Stopped = fmt.Sprintf("move budget spent (%d moves)", e.cfg.MaxMoves)
			e.printf("stopping: %s; the next run continues\n", cr.Stopped)
			break
		}
		moves++
		mv := p.Moves[0]
		e.printf("\nmove %d (plan: %d moves%s): evict %s from %s (%s) — %s\n", moves, len(p.Moves), report.MinimalNote(p), mv.Pod, mv.Node, report.RoleMark(mv.Role), mv.Reason)
		e.printf("  scheduler may choose: %s\n", report.CandidatesText(mv))
		mr, err := e.move(ctx, c, mv)
		cr.Moves = append(cr.Moves, mr)
		if err != nil {
			moveErr = err
			cr.Stopped = err.Error()
			e.printf("  ✗ move aborted: %v\n", err)
			break
		}
		if mr.Skipped != "" {
			cr.Stopped = mr.Skipped
			e.printf("  – move skipped: %s\n", mr.Skipped)
			break
		}
		if c, _, err = e.observe(ctx, key); err != nil {
			cr.Stopped = err.Error()
			return cr, err
		}
	}
	c, _, err = e.observe(ctx, key)
	if err != nil {
		cr.Stopped = err.Error()
		return cr, err
	}
	cr.After = c.Evaluate(c.Current())
	cr.Compliant = len(policies.Hard(cr.After)) == 0
	e.printf("\nafter:\n")
	report.RenderMap(e.cfg.Out, c, c.Current())
	report.RenderViolations(e.cfg.Out, cr.After)
	return cr, moveErr
}
