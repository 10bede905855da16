package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

func newRunCommand() *cobra.Command {
	var (
		kf     kubeFlags
		pf     policyFlags
		rf     redisFlags
		cfg    execute.Config
		mode   string
		output string
	)
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
			switch mode {
			case "default":
				cfg.FailoverMode = redisctl.FailoverDefault
			case "force":
				cfg.FailoverMode = redisctl.FailoverForce
			case "takeover":
				cfg.FailoverMode = redisctl.FailoverTakeover
			default:
				return &exitError{ExitError, fmt.Errorf("--failover-mode must be default, force or takeover, got %q", mode)}
			}
			if output != "text" && output != "json" {
				return &exitError{ExitError, fmt.Errorf("-o must be text or json, got %q", output)}
			}
			sel, err := labels.Parse(pf.selector)
			if err != nil {
				return &exitError{ExitError, fmt.Errorf("--selector: %w", err)}
			}
			client, err := kf.client()
			if err != nil {
				return &exitError{ExitError, err}
			}
			rc, err := rf.client()
			if err != nil {
				return &exitError{ExitError, err}
			}
			defer rc.Close()
			cfg.Client, cfg.Redis = client, rc
			cfg.Selection, cfg.Policy = observe.Selection{Namespace: pf.namespace, Selector: sel}, pf.options()
			cfg.Out = cmd.OutOrStdout()
			if output == "json" {
				cfg.Out = cmd.ErrOrStderr()
			}
			r, err := execute.New(cfg)
			if err != nil {
				return &exitError{ExitError, err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, runErr := r.Run(ctx)
			if rep != nil {
				if output == "json" {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					if err := enc.Encode(rep); err != nil {
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
		},
	}
	fs := cmd.Flags()
	kf.add(fs)
	pf.add(fs)
	rf.add(fs)
	fs.BoolVar(&cfg.DryRun, "dry-run", false, "plan and print; make no failover and no eviction")
	fs.IntVar(&cfg.MaxMoves, "max-moves", 10, "most evictions per Redis cluster in one run")
	fs.IntVar(&cfg.Plan.MaxMoves, "max-plan-moves", 0, "longest plan the planner considers (0: 12, or twice the lower bound on the moves needed when that is more)")
	fs.StringVar(&mode, "failover-mode", "default", "CLUSTER FAILOVER variant: default, force or takeover (force/takeover can lose writes)")
	fs.DurationVar(&cfg.FailoverTimeout, "failover-timeout", 0, "bound on a failover and its verification (default 30s)")
	fs.DurationVar(&cfg.HealthTimeout, "health-timeout", 0, "how long to wait for a healthy cluster before a move (default 2m)")
	fs.DurationVar(&cfg.RecreateTimeout, "recreate-timeout", 0, "how long to wait for an evicted pod to be re-created and Ready (default 5m)")
	fs.DurationVar(&cfg.RejoinTimeout, "rejoin-timeout", 0, "how long to wait for a re-created pod to be an in-sync replica again (default 5m)")
	fs.StringVarP(&output, "output", "o", "text", "report format: text (progress and maps on stdout) or json (report on stdout, progress on stderr)")
	return cmd
}

func complianceWord(ok bool) string {
	if ok {
		return "every cluster complies"
	}
	return "some cluster still breaks a hard rule"
}
