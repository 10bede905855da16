package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// errReleaseReplicaClaims is run's answer to rules.releaseReplicaClaims (--release-replica-claims)
// until the executor can release a claim (execute.ErrReleaseReplicaClaims).
var errReleaseReplicaClaims = errors.New("rules.releaseReplicaClaims (--release-replica-claims) is not supported by run yet: it would plan moves that need a replica's PersistentVolumeClaim released, which run does not do; use it with plan/check to see such moves")

// runOptions are the run command's options: the API server, the policy with the flags that
// override it, and the two flags of one run that are no policy field.
type runOptions struct {
	kube   kubeOptions
	policy *policyOptions
	// dryRun plans and prints without acting; ignoreWindows acts outside the maintenance windows.
	dryRun, ignoreWindows bool
	// progress writes the progress (maps, plans, steps): on stdout, on stderr with -o json (as
	// log entries with --logging-format=json).
	progress bool
	// serving is set by serve: with --logging-format=json its progress and text summaries are
	// log entries whatever -o says (a long-running process's output is its log).
	serving bool
	// observer, when set, is told what each run does (serve's metrics).
	observer execute.Observer
}

func newRunOptions() *runOptions {
	return &runOptions{kube: newKubeOptions(), policy: newPolicyOptions(), progress: true}
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.kube.addFlags(fs)
	o.policy.addPolicyFlag(fs)
	o.policy.addSelectionFlags(fs, "not supported by run yet (it refuses the flag; use it with check or plan): "+releaseReplicaClaimsUsage)
	o.policy.addRedisFlags(fs)
	o.policy.addPlanFlags(fs, allowPendingStepsUsage+" (see below)")
	o.policy.addExecuteFlags(fs)
	fs.BoolVar(&o.dryRun, "dry-run", o.dryRun, "plan and print; make no failover and no eviction")
	fs.BoolVar(&o.ignoreWindows, "ignore-windows", o.ignoreWindows, "act outside the maintenance windows (a manual run; logged and reported)")
	fs.BoolVar(&o.progress, "progress", o.progress, "write the progress (maps, plans, each step): on stdout, on stderr with -o json; with --logging-format=json as log entries (\"Progress\") when on stderr, and always in serve; false leaves the log lines and the report")
	o.policy.addOutputFlag(fs, "text: progress and maps on stdout; json: the run report on stdout (README \"JSON output\"), progress on stderr")
}

// resolve returns the policy a pass acts with (policyOptions.load), after the refusals of run
// (and serve): rules.releaseReplicaClaims. It reads no cluster.
func (o *runOptions) resolve(fs *pflag.FlagSet) (*policy, error) {
	p, err := o.policy.load(fs)
	if err != nil {
		return nil, err
	}
	if p.Rules.ReleaseReplicaClaims {
		return nil, errReleaseReplicaClaims
	}
	return p, nil
}

// executor connects to Redis through client (reading the policy's Redis Secret, when it names
// one) and returns the executor of p on client, with its progress written to out; closeRedis
// closes its Redis client.
func (o *runOptions) executor(ctx context.Context, client kubernetes.Interface, p *policy, out io.Writer, stop <-chan struct{}) (ex *execute.Executor, closeRedis func(), err error) {
	cfg, err := executorConfig(p)
	if err != nil {
		return nil, nil, err
	}
	rc, err := redisClient(ctx, client, &p.Redis)
	if err != nil {
		return nil, nil, err
	}
	cfg.Client, cfg.Redis, cfg.Out, cfg.Requests = client, rc, out, o.kube.requests
	switch {
	case !o.progress:
		cfg.Out = io.Discard
	case o.progressLogged(p):
		// The progress shares stderr with the log lines: one JSON object per line.
		cfg.ProgressLog = true
	}
	// With JSON logs, one entry per step of every move (the text logs keep the key events).
	cfg.LogEveryStep = jsonLogs.Load()
	if p.Windows.StepEstimate == v1alpha1.StepEstimateP95 {
		// The step history lives beside the rebalancer: the pod's namespace (a workstation's
		// kubeconfig context's), as serve's Lease does.
		ns, err := o.kube.namespace()
		if err != nil {
			rc.Close()
			return nil, nil, err
		}
		cfg.History = types.NamespacedName{Namespace: ns, Name: p.Windows.HistoryConfigMap}
	}
	cfg.DryRun, cfg.IgnoreWindows = o.dryRun, o.ignoreWindows
	cfg.Stop = stop
	if o.observer != nil {
		cfg.Observer = o.observer
	}
	if ex, err = execute.New(cfg); err != nil {
		rc.Close()
		return nil, nil, err
	}
	return ex, func() { rc.Close() }, nil
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
duration ends before the window closes. With --window-step-estimate p95 (the default) a step is
expected to take the 95th percentile of what it took in this Redis cluster before (the step
history, kept in the ConfigMap --window-history-configmap in the rebalancer's namespace) and in
this run, a rejoin scaled to the moving pod's dataset (used_memory) at the measured sync rate;
a step never measured counts its bound. With bound, every step counts its bound: its timeout
(30s for the steps without one). --ignore-windows acts anyway (reported as "ignored").

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

Settings come from a RebalancerPolicy (--policy FILE; "redis-rebalancer policy default" prints
every field with its default): the flags' defaults are the policy's, and a flag given overrides
the file's field. A policy or flag that does not validate stops run before it reads anything.

Exit status:
  0  every cluster complies (placement and Redis health)
  1  error: the policy or a flag is invalid (every bad field is listed), a step aborted (API
     server or Redis unreachable, failover not verified, pod not back in time, ...), or a
     cluster could not be observed; the message is the first real reason (docs/runbook.md)
  3  some cluster does not comply: a hard rule is broken or Redis is not healthy (move skipped,
     move budget spent, no plan, cluster resyncing)
  4  outside the maintenance windows: no window was open (or the open one left no time for the
     next move), and every cluster that does not comply waits for one

-o json prints the run report (README "JSON output"): per cluster the moves with their steps
(name, outcome continue/skip/abort, reason, seconds), the health, compliant, stopped/stoppedBy.`,
		Example: `  # see what it would do
  redis-rebalancer run --dry-run -n redis
  # as a CronJob does: the policy from its ConfigMap, a flag overriding one field
  redis-rebalancer run --policy /etc/redis-rebalancer/policy.yaml --max-moves 3
  # fix every Redis cluster in namespace redis, at most 5 evictions per cluster
  redis-rebalancer run -n redis --max-moves 5 --redis-password-file /etc/redis/password
  # a nightly CronJob: act only between 02:00 and 04:00 Paris time, two clusters at once,
  # at most one eviction per node in the run
  redis-rebalancer run --window "CRON_TZ=Europe/Paris 0 2 * * *|2h" --max-parallel-clusters 2 \
    --max-pods-to-evict-per-node 1 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// run resolves the policy (a bad one stops here: nothing has been read), connects to the API
// server and Redis, runs the executor and prints its report. The first SIGTERM or SIGINT asks for
// a graceful stop (execute.Config.Stop: the step in flight finishes or is abandoned at a safe
// point), the second cuts every step short.
func (o *runOptions) run(cmd *cobra.Command) error {
	p, err := o.resolve(cmd.Flags())
	if err != nil {
		return &exitError{ExitError, err}
	}
	stop, ctx, release := gracefulSignals(cmd.Context())
	defer release()
	client, err := o.kube.client()
	if err != nil {
		return &exitError{ExitError, err}
	}
	ex, closeRedis, err := o.executor(ctx, client, p, progressOut(cmd, p), stop)
	if err != nil {
		return &exitError{ExitError, err}
	}
	defer closeRedis()
	rep, runErr := ex.Run(ctx)
	if code := o.report(cmd, p, rep, runErr); code != ExitOK {
		return &exitError{code, runErr}
	}
	return nil
}

// progressLogged reports whether the progress is written as log entries: with
// --logging-format=json when it goes to stderr (-o json), and always for serve.
func (o *runOptions) progressLogged(p *policy) bool {
	return jsonLogs.Load() && (p.Output == v1alpha1.OutputJSON || o.serving)
}

// progressOut is where the progress goes: stdout, or stderr with -o json (the report is on
// stdout).
func progressOut(cmd *cobra.Command, p *policy) io.Writer {
	if p.Output == v1alpha1.OutputJSON {
		return cmd.ErrOrStderr()
	}
	return cmd.OutOrStdout()
}

// report prints a run's report (-o json: the JSON report on stdout; text: the summary) and
// returns the run's exit status. A report that cannot be written is ExitError.
func (o *runOptions) report(cmd *cobra.Command, p *policy, rep *report.Run, runErr error) int {
	if p.Output == v1alpha1.OutputJSON {
		if err := printJSON(cmd.OutOrStdout(), rep); err != nil {
			fmt.Fprintln(errLines(cmd), "redis-rebalancer: report:", err)
			return ExitError
		}
	} else if o.progressLogged(p) {
		printRunSummary(errLines(cmd), rep)
	} else {
		printRunSummary(progressOut(cmd, p), rep)
	}
	return runExitCode(rep, runErr, o.dryRun)
}

// gracefulSignals returns a channel closed on the first SIGTERM or SIGINT (the graceful stop), a
// context cancelled on the second (the hard stop) or with parent, and the function that stops
// listening.
func gracefulSignals(parent context.Context) (<-chan struct{}, context.Context, func()) {
	stop := make(chan struct{})
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case sig := <-sigs:
				n++
				if n == 1 {
					klog.InfoS("Graceful stop: finishing the step in flight or abandoning it at a safe point; signal again to stop at once", "signal", sig.String())
					close(stop)
					continue
				}
				klog.InfoS("Stopping at once", "signal", sig.String())
				cancel()
				return
			case <-done:
				return
			}
		}
	}()
	return stop, ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
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
