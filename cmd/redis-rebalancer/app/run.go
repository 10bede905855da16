package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/lease"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/serve"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// runOptions are the run command's options: the API server, the policy with the flags that
// override it, and the two flags of one run that are no policy field.
type runOptions struct {
	kube   kubeOptions
	policy *policyOptions
	// redis is the Redis client executor made (serve's guard reads roles through it too).
	redis *redisctl.Client
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
	// leaderElection is the Lease run holds while it acts (serve's, by default: one run or
	// serve acts at a time); LeaderElect false takes none. leaseWait bounds the wait for it.
	leaderElection componentbaseconfig.LeaderElectionConfiguration
	leaseWait      time.Duration
	// yield, when set, is the executor's execute.Config.Yield (serve's hand-off at work).
	yield func(key string) (string, bool)
	// source, when set, is where the executor observes the cluster (serve's watched cache).
	source observe.Source
}

func newRunOptions() *runOptions {
	return &runOptions{
		kube: newKubeOptions(), policy: newPolicyOptions(), progress: true,
		// The Lease's namespace is filled in when the command runs (leaseConfig).
		leaderElection: serve.DefaultLeaderElection(""), leaseWait: lease.DefaultWait,
	}
}

// addLeaseFlags binds run's Lease flags: serve's leader-election flags under the same names (the
// same Lease by default), and --lease-wait. serve binds component-base's own instead.
func (o *runOptions) addLeaseFlags(fs *pflag.FlagSet) {
	le := &o.leaderElection
	fs.BoolVar(&le.LeaderElect, "leader-elect", le.LeaderElect, "take the Lease serve's replicas elect their leader on before acting, hold it while acting and release it at the end, so that one run or serve acts at a time (--dry-run takes none)")
	fs.StringVar(&le.ResourceName, "leader-elect-resource-name", le.ResourceName, "the Lease's name (serve's --leader-elect-resource-name: the processes that name the same Lease never act together)")
	fs.StringVar(&le.ResourceNamespace, "leader-elect-resource-namespace", le.ResourceNamespace, "the Lease's namespace (default: the pod's own in a cluster, else the kubeconfig context's)")
	fs.DurationVar(&le.LeaseDuration.Duration, "leader-elect-lease-duration", le.LeaseDuration.Duration, "how long the Lease stays held after its last renewal: a run killed while acting blocks the next one this long")
	fs.DurationVar(&le.RenewDeadline.Duration, "leader-elect-renew-deadline", le.RenewDeadline.Duration, "how long run retries renewing the Lease before it stops acting at once (exit 1)")
	fs.DurationVar(&le.RetryPeriod.Duration, "leader-elect-retry-period", le.RetryPeriod.Duration, "the period of the attempts to take and renew the Lease")
	fs.DurationVar(&o.leaseWait, "lease-wait", o.leaseWait, "how long to wait while another run or serve holds the Lease, with a progress line every 10s; then run gives up without acting (outcome leaseHeld, exit 0). 0: give up after the first attempt")
	zeroMeans(fs, "lease-wait")
}

// leaseConfig is the Lease run holds, on client: the Lease's namespace defaults to the pod's
// own in a cluster, else the kubeconfig context's (serve's default); the identity is the
// hostname and a random suffix (serve's form).
func leaseConfig(kube *kubeOptions, client kubernetes.Interface, le componentbaseconfig.LeaderElectionConfiguration) (lease.Config, error) {
	if le.ResourceNamespace == "" {
		ns, err := kube.namespace()
		if err != nil {
			return lease.Config{}, err
		}
		le.ResourceNamespace = ns
	}
	id, err := leaseIdentity()
	if err != nil {
		return lease.Config{}, err
	}
	return lease.Config{Client: client, LeaderElection: le, Identity: id}, nil
}

// leaseIdentity is this process's identity in a Lease: its hostname (a pod's name) and a random
// suffix.
func leaseIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("identity: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.kube.addFlags(fs)
	o.policy.addPolicyFlag(fs)
	o.policy.addSelectionFlags(fs, releaseReplicaClaimsUsage+" (see below)")
	o.policy.addRedisFlags(fs)
	o.policy.addPlanFlags(fs, allowPendingStepsUsage+" (see below)")
	o.policy.addExecuteFlags(fs)
	fs.BoolVar(&o.dryRun, "dry-run", o.dryRun, "plan and print; make no failover and no eviction")
	fs.BoolVar(&o.ignoreWindows, "ignore-windows", o.ignoreWindows, "act outside the maintenance windows (a manual run; logged and reported)")
	fs.BoolVar(&o.progress, "progress", o.progress, "write the progress (maps, plans, each step): on stdout, on stderr with -o json; with --logging-format=json as log entries (\"Progress\") when on stderr, and always in serve; false leaves the log lines and the report")
	o.policy.addOutputFlag(fs, "text: progress and maps on stdout; json: the run report on stdout (README \"JSON output\"), progress on stderr")
}

// resolve returns the policy a pass acts with (policyOptions.load). It reads no cluster.
func (o *runOptions) resolve(fs *pflag.FlagSet) (*policy, error) {
	p, err := o.policy.load(fs)
	if err != nil {
		return nil, err
	}
	if le := o.leaderElection; le.LeaderElect && !o.dryRun {
		if err := validateLease(le); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// validateLease checks the Lease's flags before anything is read (the namespace, which may come
// from the kubeconfig later, aside): the Lease's name is a DNS-1123 subdomain and its namespace a
// DNS-1123 label, as the API server requires, and the timings hold together.
func validateLease(le componentbaseconfig.LeaderElectionConfiguration) error {
	var errs []error
	for _, msg := range validation.IsDNS1123Subdomain(le.ResourceName) {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-name %q: not a Lease name: %s", le.ResourceName, msg))
	}
	if le.ResourceNamespace != "" {
		for _, msg := range validation.IsDNS1123Label(le.ResourceNamespace) {
			errs = append(errs, fmt.Errorf("--leader-elect-resource-namespace %q: not a namespace: %s", le.ResourceNamespace, msg))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if le.ResourceNamespace == "" {
		le.ResourceNamespace = "namespace-filled-in-later"
	}
	if err := lease.ValidateLeaderElection(le); err != nil {
		return fmt.Errorf("--leader-elect-*: %w", err)
	}
	return nil
}

// executor connects to Redis through client (reading the policy's Redis Secret, when it names
// one) and returns the executor of p on client working toward goal (nil: compliance), with its
// progress written to out; closeRedis closes its Redis client.
func (o *runOptions) executor(ctx context.Context, client kubernetes.Interface, p *policy, out io.Writer, stop <-chan struct{}, goal execute.Goal) (ex *execute.Executor, closeRedis func(), err error) {
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
	cfg.Stop, cfg.Goal, cfg.Source, cfg.Yield = stop, goal, o.source, o.yield
	if o.observer != nil {
		cfg.Observer = o.observer
	}
	if ex, err = execute.New(cfg); err != nil {
		rc.Close()
		return nil, nil, err
	}
	o.redis = rc
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
   8. evict       policy/v1 Eviction through the descheduler's PodEvictor (a 429 skips; no pod is
                  ever deleted);
      release     only in a move that releases the pod's claims (--release-replica-claims, see
                  below): the pod's claims are deleted, once its shard's master is healthy;
   9. recreate    the pod is re-created, scheduled and Ready (and its claims re-created, bound);
  10. rejoin      its Redis node is a connected, in-sync replica again (after a full sync, up to
                  --full-sync-timeout, when its claims were released);
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

--release-replica-claims lets a pod leave the zone of the zonal PersistentVolumes its claims are
bound to (a cloud disk per pod, the charts' default): when the plan sends a pod to a node its
volumes do not allow, the move fails it over first if it is a master, evicts it, then deletes its
claims (from its StatefulSet's volumeClaimTemplates) while the old pod still exists, only when its
shard's master is healthy and no other pod of the shard is without its data; the StatefulSet
re-creates pod and claims, the claims bind in the zone the scheduler picks (WaitForFirstConsumer),
and the pod's Redis node, back empty, is re-introduced as a replica of its master (CLUSTER MEET,
REPLICATE; every node forgets the old node) and resyncs in full. A check that says no keeps the
claims: the pod comes back where its volumes are. run needs persistentvolumeclaims delete for it.

At the end, each cluster complies when every hard rule holds AND Redis is healthy; a cluster still
resyncing does not comply.

Settings come from a RebalancerPolicy (--policy FILE; "redis-rebalancer policy default" prints
every field with its default): the flags' defaults are the policy's, and a flag given overrides
the file's field. A policy or flag that does not validate stops run before it reads anything.

One actor at a time: run takes the Lease serve's replicas elect their leader on (the same
--leader-elect-resource-namespace and --leader-elect-resource-name), holds it while it acts and
releases it at the end. While another run or serve holds it, run waits up to --lease-wait with a
progress line every 10s, then gives up without reading or changing anything (outcome leaseHeld).
A Lease that cannot be renewed stops the run at once (exit 1). --dry-run takes no Lease;
--leader-elect=false acts without one.

Outcome and exit status (docs/operations.md: what a Job makes of each, what to alert on):
  0  compliant       every cluster complies (placement and Redis health), or there was none
                     (--allow-empty)
     progressing     not yet: the move budget or an eviction limit was spent, or a graceful
                     stop; the next run continues
     outsideWindow   no window was open (or the open one left no time for the next move)
     leaseHeld       another run or serve held the Lease for the whole --lease-wait
     dryRun          --dry-run planned only
  3  partial         no plan brings a cluster to compliance, but Redis is as safe as failovers
                     make it: MasterQuorum holds (failovers, no pod moved) and Redis is healthy;
                     the summary says what holds the placement (room, a zonal claim, ...)
     needsAttention  a cluster does not comply and this run could not get it there: no plan
                     while MasterQuorum is broken, Redis not healthy, a safety check skipped the
                     move (PodDisruptionBudget, no node fits, failover refused, role check), the
                     scheduler undoing the moves
  1  error           the policy or a flag is invalid (every bad field is listed), a step aborted
                     (API server or Redis unreachable, failover not verified, pod not back in
                     time, ...), a cluster could not be observed, the Lease was lost; the
                     message is the first real reason (docs/runbook.md)
The JSON report's outcome (per run and per cluster) and error say the same; in text, the
summary's first line does.

-o json prints the run report (README "JSON output"): per cluster the moves with their steps
(name, outcome continue/skip/abort, reason, seconds), the health, compliant, outcome,
stopped/stoppedBy; and the run's outcome, error and Lease.`,
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
	o.addLeaseFlags(cmd.Flags())
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
	client, err := o.kube.connect(ctx)
	if err != nil {
		return &exitError{ExitError, err}
	}
	out := progressOut(cmd, p)
	ex, closeRedis, err := o.executor(ctx, client, p, out, stop, nil)
	if err != nil {
		return &exitError{ExitError, err}
	}
	defer closeRedis()
	leaseOut := out
	switch {
	case !o.progress:
		leaseOut = io.Discard
	case o.progressLogged(p):
		leaseOut = errLines(cmd) // each line one log entry: stderr stays JSON
	}
	rep, runErr := o.pass(ctx, leaseOut, client, ex)
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

// pass runs the executor once, holding the Lease (lease.Hold) unless this is a dry run or
// --leader-elect=false. A Lease that stays held by another process for the whole wait is no
// error: the report's outcome is report.OutcomeLeaseHeld and nothing was read or done. Progress
// lines while waiting go to out.
func (o *runOptions) pass(ctx context.Context, out io.Writer, client kubernetes.Interface, ex *execute.Executor) (*report.Run, error) {
	if o.dryRun || !o.leaderElection.LeaderElect {
		return ex.Run(ctx)
	}
	started := time.Now()
	cfg, err := leaseConfig(&o.kube, client, o.leaderElection)
	if err != nil {
		return failedRun(started, err), err
	}
	cfg.Wait = o.leaseWait
	ref := cfg.LeaderElection.ResourceNamespace + "/" + cfg.LeaderElection.ResourceName
	cfg.Waiting = func(holder string, waited time.Duration) {
		fmt.Fprintf(out, "waiting for the Lease %s: held by %s (waited %s of %s)\n", ref, holder, waited.Round(time.Second), o.leaseWait)
	}
	var rep *report.Run
	held, err := lease.Hold(ctx, cfg, func(ctx context.Context) error {
		var runErr error
		rep, runErr = ex.Run(ctx)
		return runErr
	})
	state := &report.Lease{Namespace: held.Namespace, Name: held.Name, Holder: held.Holder, WaitedSeconds: report.Seconds(held.Waited)}
	var he *lease.HeldError
	switch {
	case errors.As(err, &he):
		fmt.Fprintf(out, "the Lease %s stayed held by %s for %s: another run or serve acts; nothing done\n", ref, he.Holder, he.Waited.Round(time.Second))
		rep = emptyRun(started)
		rep.Outcome, rep.Lease = report.OutcomeLeaseHeld, state
		return rep, nil
	case rep == nil: // act never ran: the context ended, or the Lease could not be taken
		rep = failedRun(started, err)
	case err != nil: // the run's error, or the Lease lost while it acted (errors.Is lease.ErrLost)
		rep.Classify(err)
	}
	rep.Lease = state
	return rep, err
}

// emptyRun is the report of a run that read nothing: every list empty, not nil (the JSON
// contract's lists are never null).
func emptyRun(started time.Time) *report.Run {
	return &report.Run{Started: started.UTC(), Window: report.WindowState{Windows: []string{}}, Clusters: []report.ClusterRun{}}
}

// failedRun is the report of a run that failed with err before it read anything.
func failedRun(started time.Time, err error) *report.Run {
	rep := emptyRun(started)
	rep.Classify(err)
	rep.Seconds = report.Seconds(time.Since(started))
	return rep
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
	return ExitStatus(rep.Outcome)
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

// ExitStatus is run's exit status for a run's outcome: ExitError for report.OutcomeError,
// ExitViolations for report.OutcomeNeedsAttention and report.OutcomePartial, ExitOK for every
// expected outcome (compliant, progressing, outsideWindow, leaseHeld, dryRun), so that a Job
// that ran it completes.
// docs/operations.md has the table (hack/gendocs checks it against this function).
func ExitStatus(o report.Outcome) int {
	switch o {
	case report.OutcomeError:
		return ExitError
	case report.OutcomeNeedsAttention, report.OutcomePartial:
		return ExitViolations
	}
	return ExitOK
}

// printRunSummary writes the run's last lines: the run's outcome first (a failed run says so on
// that first line), then one line per cluster, its verdict and why it stopped.
func printRunSummary(w io.Writer, rep *report.Run) {
	if rep.Outcome == report.OutcomeError {
		fmt.Fprintf(w, "\nrun failed (exit %d): %s\n", ExitError, firstLineOf(rep.Error))
	} else {
		fmt.Fprintf(w, "\noutcome: %s (exit %d): %s\n", rep.Outcome, ExitStatus(rep.Outcome), outcomeText(rep.Outcome))
	}
	fmt.Fprintf(w, "summary: %s, %s, %s in %.1fs\n", count(len(rep.Clusters), "Redis cluster", "Redis clusters"), count(rep.Moves(), "eviction", "evictions"), count(rep.Failovers(), "failover step", "failover steps"), rep.Seconds)
	if l := rep.Lease; l != nil && rep.Outcome == report.OutcomeLeaseHeld {
		fmt.Fprintf(w, "  the Lease %s/%s was held by %s for the whole wait (%.0fs)\n", l.Namespace, l.Name, l.Holder, l.WaitedSeconds)
	}
	for _, c := range rep.Clusters {
		verdict := "complies (every hard rule holds, Redis healthy)"
		if !c.Compliant {
			verdict = "does not comply:"
			if !c.PlacementCompliant {
				verdict += " a hard rule is broken;"
			}
			verdict += " Redis " + c.Health.Summary()
		}
		fmt.Fprintf(w, "  %s/%s %s (%s)\n", c.Namespace, c.Name, verdict, c.Outcome)
		if c.Outcome == report.OutcomePartial {
			fmt.Fprintf(w, "    partial: %s\n", report.PartialRunText(c.Partial))
		} else if c.Stopped != "" {
			fmt.Fprintf(w, "    stopped (%s): %s\n", c.StoppedBy, c.Stopped)
		}
		if c.ObserveAfterError != "" {
			fmt.Fprintf(w, "    then: %s\n", c.ObserveAfterError)
		}
	}
}

// outcomeText says what an outcome means for whoever reads the summary.
func outcomeText(o report.Outcome) string {
	switch o {
	case report.OutcomeCompliant:
		return "every Redis cluster complies"
	case report.OutcomeProgressing:
		return "progress made within the run's budget; the next run continues"
	case report.OutcomeOutsideWindow:
		return "waiting for a maintenance window; the next run inside one continues"
	case report.OutcomeLeaseHeld:
		return "another run or serve holds the Lease; nothing done"
	case report.OutcomeDryRun:
		return "planned only"
	case report.OutcomeNeedsAttention:
		return "a Redis cluster does not comply and this run could not get it there: see stopped below"
	case report.OutcomePartial:
		return "Redis is as safe as failovers make it (MasterQuorum holds), but no plan brings a placement to compliance: see partial below"
	}
	return string(o)
}

// count writes n with the singular or the plural noun: "1 Redis cluster", "2 evictions".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// firstLineOf returns s up to its first newline.
func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
