package rebalancer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Config configures a Rebalancer. Client and Redis are required.
type Config struct {
	// Client talks to the Kubernetes API server.
	Client kubernetes.Interface
	// Redis talks to the Redis nodes (auth, TLS and timeouts are its options).
	Redis *redisctl.Client
	// Namespace limits the run to one namespace ("" = all).
	Namespace string
	// Selector limits the run to the Redis clusters with at least one pod it matches (nil = all).
	Selector labels.Selector
	// Policy tunes the rules (cluster label, relaxed limits, ...).
	Policy policies.Options
	// Plan bounds the planner's search.
	Plan PlanOptions
	// MaxMoves is the number of evictions one run may make per Redis cluster (10 when 0).
	MaxMoves int
	// DryRun plans and prints, but neither fails over nor evicts.
	DryRun bool
	// FailoverMode is the CLUSTER FAILOVER variant (default mode unless set explicitly).
	FailoverMode redisctl.FailoverMode
	// FailoverTimeout bounds a failover, verification included (30 s when 0).
	FailoverTimeout time.Duration
	// DrainQuiet and DrainTimeout: after a failover, wait until no client has run a keyspace
	// command on the old master for DrainQuiet (1 s when 0), at most DrainTimeout (15 s when 0),
	// so that clients learn the new master from its MOVED replies before it goes away.
	DrainQuiet, DrainTimeout time.Duration
	// HealthTimeout bounds the wait for the cluster to be healthy before a move (2 min when 0).
	HealthTimeout time.Duration
	// RecreateTimeout bounds the wait for an evicted pod to be re-created, scheduled and Ready
	// (5 min when 0).
	RecreateTimeout time.Duration
	// RejoinTimeout bounds the wait for the re-created pod's Redis node to be back as an in-sync
	// replica (5 min when 0).
	RejoinTimeout time.Duration
	// PollInterval is the period of the waits (500 ms when 0).
	PollInterval time.Duration
	// Out receives the human-readable progress: maps, steps and durations (discarded when nil).
	Out io.Writer
	// Clock measures durations (the real clock when nil).
	Clock clock.PassiveClock
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Redis == nil {
		return c, errors.New("rebalancer: a Kubernetes client and a Redis client are required")
	}
	if c.MaxMoves == 0 {
		c.MaxMoves = 10
	}
	if c.MaxMoves < 0 {
		return c, fmt.Errorf("rebalancer: max moves must be positive, got %d", c.MaxMoves)
	}
	if c.FailoverTimeout == 0 {
		c.FailoverTimeout = 30 * time.Second
	}
	if c.DrainQuiet == 0 {
		c.DrainQuiet = time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 15 * time.Second
	}
	if c.HealthTimeout == 0 {
		c.HealthTimeout = 2 * time.Minute
	}
	if c.RecreateTimeout == 0 {
		c.RecreateTimeout = 5 * time.Minute
	}
	if c.RejoinTimeout == 0 {
		c.RejoinTimeout = 5 * time.Minute
	}
	if c.PollInterval == 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}

// Rebalancer finds Redis clusters whose placement breaks the rules and fixes them one safe move at
// a time (SPEC "Safe disruption"): health gate, PodDisruptionBudget dry-run, failover of a master,
// eviction through the policy/v1 Eviction API, and a wait until the pod is back as an in-sync
// replica.
type Rebalancer struct {
	cfg Config
}

// New returns a Rebalancer for cfg, defaults filled. It fails when a required field is missing.
func New(cfg Config) (*Rebalancer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Rebalancer{cfg: cfg}, nil
}

// Report is what a run did.
type Report struct {
	// Clusters are in namespace/name order.
	Clusters []ClusterReport `json:"clusters"`
}

// Moves returns the number of evictions made, over all clusters.
func (r *Report) Moves() int {
	n := 0
	for _, c := range r.Clusters {
		for _, m := range c.Moves {
			if m.Evicted {
				n++
			}
		}
	}
	return n
}

// Compliant reports whether every cluster complies at the end of the run.
func (r *Report) Compliant() bool {
	for _, c := range r.Clusters {
		if !c.Compliant {
			return false
		}
	}
	return true
}

// ClusterReport is what a run did to one Redis cluster.
type ClusterReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Before and After are the violations at the start and at the end of the run.
	Before []policies.Violation `json:"violations"`
	After  []policies.Violation `json:"violationsAfter"`
	// Moves are the moves tried, in order.
	Moves []MoveReport `json:"moves"`
	// Compliant reports whether every hard rule holds at the end.
	Compliant bool `json:"compliant"`
	// Stopped says why the run stopped acting on the cluster before compliance ("" otherwise).
	Stopped string `json:"stopped,omitempty"`
	// Plan is the plan of a dry run.
	Plan *Plan `json:"plan,omitempty"`
}

// MoveReport is one move as it happened.
type MoveReport struct {
	// Pod is "namespace/name"; From the node it left; To the node its replacement landed on.
	Pod  string `json:"pod"`
	From string `json:"from"`
	To   string `json:"to,omitempty"`
	// Expected is the node the plan hoped for.
	Expected string `json:"expected"`
	// Failover describes the failover made before the eviction (nil when the pod was a replica).
	Failover *FailoverReport `json:"failover,omitempty"`
	// RoleAtEviction is the pod's Redis role as Redis reported it just before the eviction.
	RoleAtEviction policies.Role `json:"roleAtEviction,omitempty"`
	// Evicted reports whether the eviction was accepted.
	Evicted bool `json:"evicted"`
	// Skipped says why the move was not made ("" when it was).
	Skipped string `json:"skipped,omitempty"`
	// Durations of the phases: health gate, client drain after a failover, eviction, re-creation
	// until Ready, rejoin until in sync, and the whole move.
	Gate, Drain, Evict, Recreate, Rejoin, Total time.Duration
}

// FailoverReport describes a verified failover.
type FailoverReport struct {
	// OldMaster and NewMaster are pod names.
	OldMaster, NewMaster string
	// Duration is the time from CLUSTER FAILOVER to the verified switch.
	Duration time.Duration
}

// Run examines every selected Redis cluster and moves pods until each complies, a move is
// refused (PodDisruptionBudget, unhealthy cluster, failed failover), or MaxMoves is spent. It
// returns an error only when the API server cannot be read or a wait breaks off in a way that
// needs an operator (the cluster is then left as it is: safe, and the next run continues).
func (r *Rebalancer) Run(ctx context.Context) (*Report, error) {
	snap, err := ReadSnapshot(ctx, r.cfg.Client, r.cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("rebalancer: %w", err)
	}
	model, err := policies.Build(snap, r.cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("rebalancer: %w", err)
	}
	var keys []string
	for _, c := range model.Clusters {
		if r.selected(c) {
			keys = append(keys, c.Key())
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		fmt.Fprintf(r.cfg.Out, "no Redis cluster found (pods labelled %s", model.Options.ClusterLabel)
		if r.cfg.Selector != nil && !r.cfg.Selector.Empty() {
			fmt.Fprintf(r.cfg.Out, " and matching %s", r.cfg.Selector)
		}
		fmt.Fprintln(r.cfg.Out, ")")
	}
	rep := &Report{}
	var errs []error
	for _, k := range keys {
		cr, err := r.runCluster(ctx, k)
		rep.Clusters = append(rep.Clusters, cr)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", k, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return rep, errors.Join(errs...)
}

func (r *Rebalancer) selected(c *policies.Cluster) bool {
	if r.cfg.Selector == nil || r.cfg.Selector.Empty() {
		return true
	}
	for _, m := range c.Members {
		if r.cfg.Selector.Matches(labels.Set(m.Pod.Labels)) {
			return true
		}
	}
	return false
}

// observe reads a fresh snapshot, finds the cluster and sets its members' roles from Redis.
func (r *Rebalancer) observe(ctx context.Context, key string) (*policies.Cluster, *redisctl.Topology, error) {
	snap, err := ReadSnapshot(ctx, r.cfg.Client, r.cfg.Namespace)
	if err != nil {
		return nil, nil, err
	}
	model, err := policies.Build(snap, r.cfg.Policy)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range model.Clusters {
		if c.Key() == key {
			topo, err := ApplyRoles(ctx, r.cfg.Redis, c)
			return c, topo, err
		}
	}
	return nil, nil, fmt.Errorf("cluster %s has no pods any more", key)
}

// ApplyRoles reads the Redis topology through the members' pod IPs (rc.AddrOf) and sets each
// member's Role from what Redis reports; members Redis does not list get RoleUnknown.
func ApplyRoles(ctx context.Context, rc *redisctl.Client, c *policies.Cluster) (*redisctl.Topology, error) {
	var addrs []string
	for _, m := range c.Members {
		if m.Pod.Status.PodIP != "" && !m.Terminating {
			addrs = append(addrs, rc.AddrOf(m.Pod.Status.PodIP))
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("no member has a pod IP")
	}
	topo, err := rc.Topology(ctx, addrs)
	if err != nil {
		return nil, fmt.Errorf("read Redis topology: %w", err)
	}
	byAddr := map[string]redisctl.Node{}
	for _, n := range topo.Nodes {
		byAddr[n.Addr()] = n
	}
	for _, m := range c.Members {
		m.Role = policies.RoleUnknown
		if m.Pod.Status.PodIP == "" || m.Terminating {
			continue
		}
		if n, ok := byAddr[rc.AddrOf(m.Pod.Status.PodIP)]; ok {
			m.Role = policies.ParseRole(n.Role())
		}
	}
	return topo, nil
}

func (r *Rebalancer) printf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Out, format, args...)
}

// runCluster runs the observe–plan–move loop on one cluster.
func (r *Rebalancer) runCluster(ctx context.Context, key string) (ClusterReport, error) {
	ns, name, _ := strings.Cut(key, "/")
	cr := ClusterReport{Namespace: ns, Name: name}
	c, _, err := r.observe(ctx, key)
	if err != nil {
		cr.Stopped = err.Error()
		return cr, err
	}
	cr.Before = c.Evaluate(c.Current())
	r.printf("\n== Redis cluster %s: %d pods (N=%d), %d shards, zones [%s]\n", key, len(c.Members), c.N, len(c.Shards), strings.Join(c.AllowedZones, " "))
	r.printf("before:\n")
	RenderMap(r.cfg.Out, c, c.Current())
	RenderViolations(r.cfg.Out, cr.Before)
	var moveErr error
	for moves := 0; ; {
		plan := PlanCluster(c, r.cfg.Plan)
		if len(policies.Hard(c.Evaluate(c.Current()))) == 0 {
			break
		}
		if plan.Infeasible != "" {
			cr.Stopped = "no plan: " + plan.Infeasible
			r.printf("no plan reaches compliance: %s\n", plan.Infeasible)
			break
		}
		if r.cfg.DryRun {
			cr.Plan = &plan
			r.printPlan(plan)
			cr.Stopped = "dry run"
			break
		}
		if moves >= r.cfg.MaxMoves {
			cr.Stopped = fmt.Sprintf("move budget spent (%d moves)", r.cfg.MaxMoves)
			r.printf("stopping: %s; the next run continues\n", cr.Stopped)
			break
		}
		moves++
		mv := plan.Moves[0]
		r.printf("\nmove %d (plan: %d moves%s): evict %s from %s (%s) — %s\n", moves, len(plan.Moves), minimalNote(plan), mv.Pod, mv.Node, roleMark(mv.Role), mv.Reason)
		r.printf("  scheduler may choose: %s\n", candidatesText(mv))
		mr, err := r.move(ctx, c, mv)
		cr.Moves = append(cr.Moves, mr)
		if err != nil {
			moveErr = err
			cr.Stopped = err.Error()
			r.printf("  ✗ move aborted: %v\n", err)
			break
		}
		if mr.Skipped != "" {
			cr.Stopped = mr.Skipped
			r.printf("  – move skipped: %s\n", mr.Skipped)
			break
		}
		if c, _, err = r.observe(ctx, key); err != nil {
			cr.Stopped = err.Error()
			return cr, err
		}
	}
	c, _, err = r.observe(ctx, key)
	if err != nil {
		cr.Stopped = err.Error()
		return cr, err
	}
	cr.After = c.Evaluate(c.Current())
	cr.Compliant = len(policies.Hard(cr.After)) == 0
	r.printf("\nafter:\n")
	RenderMap(r.cfg.Out, c, c.Current())
	RenderViolations(r.cfg.Out, cr.After)
	return cr, moveErr
}

func minimalNote(p Plan) string {
	if p.Minimal {
		return ", minimal"
	}
	return ""
}

func candidatesText(mv Move) string {
	var parts []string
	for _, c := range mv.Candidates {
		s := c.Node
		if !c.OnTrack {
			s += " (off plan)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

func (r *Rebalancer) printPlan(p Plan) {
	r.printf("plan (dry run): %d moves%s\n", len(p.Moves), minimalNote(p))
	for k, mv := range p.Moves {
		fo := ""
		if mv.Failover {
			fo = ", fail over first"
		}
		r.printf("  %d. evict %s from %s (%s%s) → expected %s; scheduler may choose %s — %s\n", k+1, mv.Pod, mv.Node, roleMark(mv.Role), fo, mv.Expected, candidatesText(mv), mv.Reason)
	}
}
