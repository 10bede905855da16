package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
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
	// cfg holds the executor's settings bound to flags; clients, selection and output are set
	// when the command runs.
	cfg    execute.Config
	mode   string
	output string
}

func newRunOptions() *runOptions {
	return &runOptions{
		kube: newKubeOptions(), policy: newPolicyOptions(), redis: newRedisOptions(),
		cfg:  execute.Config{MaxMoves: execute.DefaultMaxMoves},
		mode: defaultFailoverMode, output: defaultTextOutput,
	}
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.kube.addFlags(fs)
	o.policy.addFlags(fs, "not supported by run yet (it refuses the flag; use it with check or plan): "+releaseReplicaClaimsUsage)
	o.redis.addFlags(fs)
	fs.BoolVar(&o.cfg.DryRun, "dry-run", o.cfg.DryRun, "plan and print; make no failover and no eviction")
	fs.IntVar(&o.cfg.MaxMoves, "max-moves", o.cfg.MaxMoves, "most evictions per Redis cluster in one run")
	fs.IntVar(&o.cfg.Plan.MaxMoves, "max-plan-moves", o.cfg.Plan.MaxMoves, fmt.Sprintf("longest plan the planner considers (0: %d, or twice the lower bound on the moves needed when that is more)", plan.DefaultMaxMoves))
	fs.StringVar(&o.mode, "failover-mode", o.mode, "CLUSTER FAILOVER variant: default, force or takeover (force/takeover can lose writes)")
	fs.DurationVar(&o.cfg.FailoverTimeout, "failover-timeout", o.cfg.FailoverTimeout, "bound on a failover and its verification (default "+durationText(execute.DefaultFailoverTimeout)+")")
	fs.DurationVar(&o.cfg.HealthTimeout, "health-timeout", o.cfg.HealthTimeout, "how long to wait for a healthy cluster before a move (default "+durationText(execute.DefaultHealthTimeout)+")")
	fs.DurationVar(&o.cfg.RecreateTimeout, "recreate-timeout", o.cfg.RecreateTimeout, "how long to wait for an evicted pod to be re-created and Ready (default "+durationText(execute.DefaultRecreateTimeout)+")")
	fs.DurationVar(&o.cfg.RejoinTimeout, "rejoin-timeout", o.cfg.RejoinTimeout, "how long to wait for a re-created pod to be an in-sync replica again (default "+durationText(execute.DefaultRejoinTimeout)+")")
	fs.StringVarP(&o.output, "output", "o", o.output, "report format: text (progress and maps on stdout) or json (report on stdout, progress on stderr)")
}

// validate checks the flags that need no cluster, and sets the failover mode.
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
	return nil
}

func newRunCommand() *cobra.Command {
	o := newRunOptions()
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Find Redis clusters that break the rules and fix them, one safe move at a time",
		Long: `run reads the Redis clusters' pods, nodes, StatefulSets and PodDisruptionBudgets, evaluates the
HA rules, plans the fewest evictions that restore them, and carries the plan out one move at a
time. Each move:
  1. waits until the Redis cluster is healthy (cluster_state:ok, 16384 slots served, no failing
     node, every master with a connected in-sync replica) and all its pods are Ready;
  2. asks the API server for a dry-run eviction: a PodDisruptionBudget that forbids it skips the move;
  3. if the pod is a master, runs CLUSTER FAILOVER on its best in-sync replica and waits until the
     roles have really switched (a timeout aborts the move);
  4. evicts the pod (policy/v1 Eviction; a 429 skips the move, nothing is ever deleted);
  5. waits until the pod is re-created, scheduled, Ready, and back as an in-sync replica.
After each move it observes the cluster again and re-plans. A run killed at any point leaves the
cluster safe; the next run continues from what it finds.

Exit status: 0 when every cluster complies at the end, 3 when some cluster still breaks a hard
rule (move budget spent, move refused, or no plan), 1 on error.`,
		Example: `  # see what it would do
  redis-rebalancer run --dry-run -n redis
  # fix every Redis cluster in namespace redis, at most 5 evictions per cluster
  redis-rebalancer run -n redis --max-moves 5 --redis-password-file /etc/redis/password`,
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
	cfg.Client, cfg.Redis, cfg.Requests = client, rc, o.kube.requests
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
	if rep != nil {
		if o.output == "json" {
			if err := printJSON(cmd.OutOrStdout(), rep); err != nil {
				return &exitError{ExitError, err}
			}
		} else {
			fmt.Fprintf(cfg.Out, "\nsummary: %d clusters, %d evictions, %s\n", len(rep.Clusters), rep.Moves(), complianceWord(rep.Compliant()))
		}
	}
	switch {
	case runErr != nil:
		return &exitError{ExitError, runErr}
	case !rep.Compliant() && !cfg.DryRun:
		return &exitError{ExitViolations, nil}
	}
	return nil
}

func complianceWord(ok bool) string {
	if ok {
		return "every cluster complies"
	}
	return "some cluster still breaks a hard rule"
}
