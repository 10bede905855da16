package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/window"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Defaults of the run command (the executor's own are in execute's Default… constants).
const (
	// defaultFailoverMode is --failover-mode.
	defaultFailoverMode = "default"
	// defaultTextOutput is run's -o.
	defaultTextOutput = "text"
)

// errReleaseReplicaClaims is run's answer to --release-replica-claims until the executor can
// release a claim (execute.ErrReleaseReplicaClaims).
var errReleaseReplicaClaims = errors.New("--release-replica-claims is not supported by run yet: it would plan moves that need a replica's PersistentVolumeClaim released, which run does not do; use it with plan/check to see such moves")

// runOptions are the run command's options.
type runOptions struct {
	kube   kubeOptions
	policy policyOptions
	redis  redisOptions
	// cfg holds the executor's settings bound to flags; clients, selection, windows, limits and
	// output are set when the command runs.
	cfg    execute.Config
	mode   string
	output string
	// windows are --window values ("SCHEDULE" or "SCHEDULE|DURATION"); windowDuration the
	// duration of those without one; stepEstimate --window-step-estimate.
	windows        []string
	windowDuration time.Duration
	stepEstimate   string
	// The eviction limits; 0 is no limit.
	maxPerNode, maxPerNamespace, maxTotal uint
}

func newRunOptions() *runOptions {
	return &runOptions{
		kube: newKubeOptions(), policy: newPolicyOptions(), redis: newRedisOptions(),
		cfg:  execute.Config{MaxMoves: execute.DefaultMaxMoves, MaxParallelClusters: execute.DefaultMaxParallelClusters},
		mode: defaultFailoverMode, output: defaultTextOutput,
		windowDuration: window.DefaultDuration, stepEstimate: string(window.EstimateBound),
	}
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.kube.addFlags(fs)
	o.policy.addFlags(fs, "not supported by run yet (it refuses the flag; use it with check or plan): "+releaseReplicaClaimsUsage)
	o.redis.addFlags(fs)
	fs.BoolVar(&o.cfg.DryRun, "dry-run", o.cfg.DryRun, "plan and print; make no failover and no eviction")
	fs.IntVar(&o.cfg.MaxMoves, "max-moves", o.cfg.MaxMoves, "most evictions per Redis cluster in one run")
	fs.IntVar(&o.cfg.Plan.MaxMoves, "max-plan-moves", o.cfg.Plan.MaxMoves, fmt.Sprintf("longest plan the planner considers (0: %d, or twice the lower bound on the moves needed when that is more)", plan.DefaultMaxMoves))
	addPendingStepsFlag(fs, &o.cfg.Plan.AllowPendingSteps)
	fs.StringVar(&o.mode, "failover-mode", o.mode, "CLUSTER FAILOVER variant: default, force or takeover (force/takeover can lose writes)")
	fs.DurationVar(&o.cfg.FailoverTimeout, "failover-timeout", o.cfg.FailoverTimeout, "bound on a failover and its verification (default "+durationText(execute.DefaultFailoverTimeout)+")")
	fs.DurationVar(&o.cfg.HealthTimeout, "health-timeout", o.cfg.HealthTimeout, "how long to wait for a healthy cluster before a move, and after it (default "+durationText(execute.DefaultHealthTimeout)+")")
	fs.DurationVar(&o.cfg.RecreateTimeout, "recreate-timeout", o.cfg.RecreateTimeout, "how long to wait for an evicted pod to be re-created and Ready (default "+durationText(execute.DefaultRecreateTimeout)+")")
	fs.DurationVar(&o.cfg.RejoinTimeout, "rejoin-timeout", o.cfg.RejoinTimeout, "how long to wait for a re-created pod to be an in-sync replica again (default "+durationText(execute.DefaultRejoinTimeout)+")")
	fs.StringArrayVar(&o.windows, "window", o.windows, `maintenance window "SCHEDULE" or "SCHEDULE|DURATION" (repeatable): a cron expression (5 fields, @daily/@weekly/..., optional CRON_TZ=<zone> prefix; UTC without one), e.g. "CRON_TZ=Europe/Paris 0 2 * * *|2h"; without --window run acts at any time`)
	fs.DurationVar(&o.windowDuration, "window-duration", o.windowDuration, "how long a --window given without |DURATION stays open")
	fs.StringVar(&o.stepEstimate, "window-step-estimate", o.stepEstimate, "how long a move is expected to take when the time left in the window is judged: bound (its timeouts) or p95 (of the steps this run has measured; the bound until measured)")
	fs.BoolVar(&o.cfg.IgnoreWindows, "ignore-windows", o.cfg.IgnoreWindows, "act outside the maintenance windows (a manual run; logged and reported)")
	fs.IntVar(&o.cfg.MaxParallelClusters, "max-parallel-clusters", o.cfg.MaxParallelClusters, "Redis clusters that progress at once (each with one disruption in flight at most)")
	fs.UintVar(&o.maxPerNode, "max-pods-to-evict-per-node", o.maxPerNode, "most evictions in one run from one node, over every cluster (the descheduler's maxNoOfPodsToEvictPerNode; 0: no limit)")
	fs.UintVar(&o.maxPerNamespace, "max-pods-to-evict-per-namespace", o.maxPerNamespace, "most evictions in one run in one namespace, over every cluster (maxNoOfPodsToEvictPerNamespace; 0: no limit)")
	fs.UintVar(&o.maxTotal, "max-pods-to-evict-total", o.maxTotal, "most evictions in one run, over every cluster (maxNoOfPodsToEvictTotal; 0: no limit)")
	fs.StringVarP(&o.output, "output", "o", o.output, "report format: text (progress and maps on stdout) or json (report on stdout, progress on stderr)")
}

// validate checks the flags that need no cluster, and sets the failover mode, the windows and the
// eviction limits.
func (o *runOptions) validate() error {
	if o.policy.releaseReplicaClaims {
		return errReleaseReplicaClaims
	}
	switch o.mode {
	case "default":
		o.cfg.FailoverMode = redisctl.FailoverDefault
	case "force":
		o.cfg.FailoverMode = redisctl.FailoverForce
	case "takeover":
		o.cfg.FailoverMode = redisctl.FailoverTakeover
	default:
		return fmt.Errorf("--failover-mode must be default, force or takeover, got %q", o.mode)
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("-o must be text or json, got %q", o.output)
	}
	if o.cfg.MaxParallelClusters < 1 {
		return fmt.Errorf("--max-parallel-clusters must be at least 1, got %d", o.cfg.MaxParallelClusters)
	}
	o.cfg.Window = window.Config{StepEstimate: window.StepEstimate(o.stepEstimate)}
	for _, v := range o.windows {
		w, err := window.ParseFlag(v, o.windowDuration)
		if err != nil {
			return fmt.Errorf("--window: %w", err)
		}
		o.cfg.Window.Windows = append(o.cfg.Window.Windows, w)
	}
	if _, err := window.New(o.cfg.Window); err != nil {
		return fmt.Errorf("--window: %w", err)
	}
	limit := func(v uint) *uint {
		if v == 0 {
			return nil
		}
		return &v
	}
	o.cfg.MaxPodsToEvictPerNode, o.cfg.MaxPodsToEvictPerNamespace, o.cfg.MaxPodsToEvictTotal = limit(o.maxPerNode), limit(o.maxPerNamespace), limit(o.maxTotal)
	return nil
}

func newRunCommand() *cobra.Command {
	o := newRunOptions()
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Find Redis clusters that break the rules and fix them, one safe move at a time",
		Long: `run reads the Redis clusters' pods, nodes, StatefulSets and PodDisruptionBudgets, evaluates the
HA rules, plans the fewest evictions that restore them, and carries the plan out one move at a
time per Redis cluster. A move is a list of steps; each continues, skips (a safety check said no:
the cluster is left as it is, the run goes on with other clusters) or aborts (an error):
   1. window      a maintenance window is open with time left for the whole move;
   2. healthGate  every pod Ready and Redis healthy (cluster_state:ok, 16384 slots served, no
                  failing node, every master with a connected in-sync replica); a cluster still
                  resyncing is waited for, up to --health-timeout;
   3. placeable   the pod, re-created from its StatefulSet's template, fits some node now;
   4. pdbDryRun   the eviction limits allow it, and a dry-run eviction is accepted (a
                  PodDisruptionBudget's 429 skips; overlapping budgets' 500 aborts);
   5. failover    a master: the window still leaves time for the rest of the move, then CLUSTER
                  FAILOVER on its best in-sync replica, verified (refused: skip; not verified in
                  --failover-timeout: abort);
   6. drain       after a failover, the old master's clients go quiet;
   7. roleCheck   Redis says the pod is a replica right now;
   8. evict       policy/v1 Eviction through the descheduler's PodEvictor (a 429 skips; nothing is
                  ever deleted);
   9. recreate    the pod is re-created, scheduled and Ready;
  10. rejoin      its Redis node is a connected, in-sync replica again;
  11. reobserve   the cluster is observed again and healthy again; the next move is re-planned.
From step 5 to the pod's return nothing is interrupted by the window closing. A run killed at
any point leaves the cluster safe; the next run waits for the cluster to be healthy and continues
from what it finds.

Maintenance windows (--window, repeatable): outside every window run only observes, plans and
reports, and says when the next window opens. Inside one, a move starts only when its expected
duration ends before the window closes: the sum of its steps' bounds (their timeouts; 30s for the
steps without one), or with --window-step-estimate p95 the 95th percentile of each step's
durations measured in this run. --ignore-windows acts anyway (reported as "ignored").

Up to --max-parallel-clusters Redis clusters progress at once (progress lines are then prefixed
with [namespace/name]); --max-pods-to-evict-per-node, -per-namespace and -total limit the run's
evictions over every cluster, as the descheduler's limits do.

A plan has two kinds of step. An eviction runs the steps above. A failover step (MasterQuorum: no
node, nor with 3 zones or more a zone, may hold half of the masters or more, or its loss leaves no
majority of masters to promote replicas) moves no pod: window, healthGate, failover on the
replica the plan names (verified), drain, reobserve. Evictions come first, then failovers; a
master's own failover before its eviction goes to the replica the plan names too, one whose node
and zone keep MasterQuorum. --max-moves counts evictions; failover steps are bounded by the
cluster's shards plus --max-moves.

--allow-pending-steps carries out plans through a Pending pod (see plan --help): the evicted pod
the plan lets wait Pending is not waited for at re-creation, and the health gate accepts exactly
that pod Pending (and what its absence costs Redis: its shard's master without a replica, its
old Redis node unreachable) until the next move frees its room; any other pod Pending that was
not Pending when the run started makes the cluster unhealthy. Each such move prints and reports
its exposure (which shard runs without which replica, until which move).

At the end, each cluster complies when every hard rule holds AND Redis is healthy; a cluster still
resyncing does not comply.

Exit status:
  0  every cluster complies (placement and Redis health)
  1  error: a step aborted (API server or Redis unreachable, failover not verified, pod not
     back in time, ...), or a cluster could not be observed; the message is the first real reason
  3  some cluster does not comply: a hard rule is broken or Redis is not healthy (move skipped,
     move budget spent, no plan, cluster resyncing)
  4  outside the maintenance windows: no window was open (or the open one left no time for the
     next move), and every cluster that does not comply waits for one

-o json prints the run report (README "JSON output"): per cluster the moves with their steps
(name, outcome continue/skip/abort, reason, seconds), the health, compliant, stopped/stoppedBy.`,
		Example: `  # see what it would do
  redis-rebalancer run --dry-run -n redis
  # fix every Redis cluster in namespace redis, at most 5 evictions per cluster
  redis-rebalancer run -n redis --max-moves 5 --redis-password-file /etc/redis/password
  # a nightly CronJob: act only between 02:00 and 04:00 Paris time, two clusters at once,
  # at most one eviction per node in the run
  redis-rebalancer run --window "CRON_TZ=Europe/Paris 0 2 * * *|2h" --max-parallel-clusters 2 \
    --max-pods-to-evict-per-node 1 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return &exitError{ExitError, err}
			}
			return o.run(cmd)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// run connects to the API server and Redis, runs the executor and prints its report.
func (o *runOptions) run(cmd *cobra.Command) error {
	cfg := o.cfg
	sel, err := o.policy.selection()
	if err != nil {
		return &exitError{ExitError, err}
	}
	client, err := o.kube.client()
	if err != nil {
		return &exitError{ExitError, err}
	}
	rc, err := o.redis.client()
	if err != nil {
		return &exitError{ExitError, err}
	}
	defer rc.Close()
	cfg.Client, cfg.Redis = client, rc
	cfg.Selection, cfg.Policy = sel, o.policy.rules()
	cfg.Out = cmd.OutOrStdout()
	if o.output == "json" {
		cfg.Out = cmd.ErrOrStderr()
	}
	ex, err := execute.New(cfg)
	if err != nil {
		return &exitError{ExitError, err}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, runErr := ex.Run(ctx)
	if o.output == "json" {
		if err := printJSON(cmd.OutOrStdout(), rep); err != nil {
			return &exitError{ExitError, err}
		}
	} else {
		printRunSummary(cfg.Out, rep)
	}
	if code := runExitCode(rep, runErr, cfg.DryRun); code != ExitOK {
		return &exitError{code, runErr}
	}
	return nil
}

// runExitCode is run's exit status (see the command's help).
func runExitCode(rep *report.Run, runErr error, dryRun bool) int {
	switch {
	case runErr != nil:
		return ExitError
	case rep.Compliant() || dryRun:
		return ExitOK
	case rep.OnlyWindowStopped():
		return ExitOutsideWindow
	}
	return ExitViolations
}

// printRunSummary writes the run's last lines: one per cluster, its verdict and why it stopped.
func printRunSummary(w io.Writer, rep *report.Run) {
	fmt.Fprintf(w, "\nsummary: %d clusters, %d evictions, %d failover steps in %.1fs\n", len(rep.Clusters), rep.Moves(), rep.Failovers(), rep.Seconds)
	for _, c := range rep.Clusters {
		verdict := "complies (every hard rule holds, Redis healthy)"
		if !c.Compliant {
			verdict = "does not comply:"
			if !c.PlacementCompliant {
				verdict += " a hard rule is broken;"
			}
			verdict += " Redis " + c.Health.Summary()
		}
		fmt.Fprintf(w, "  %s/%s %s\n", c.Namespace, c.Name, verdict)
		if c.Stopped != "" {
			fmt.Fprintf(w, "    stopped (%s): %s\n", c.StoppedBy, c.Stopped)
		}
		if c.ObserveAfterError != "" {
			fmt.Fprintf(w, "    then: %s\n", c.ObserveAfterError)
		}
	}
}
