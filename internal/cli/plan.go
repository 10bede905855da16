package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// planOptions are the plan command's options: check's, and the planner's bounds.
type planOptions struct {
	analysisOptions
	plan plan.Options
}

func newPlanOptions() *planOptions {
	return &planOptions{analysisOptions: newAnalysisOptions(), plan: plan.Options{MaxStates: plan.DefaultMaxStates}}
}

func (o *planOptions) addFlags(fs *pflag.FlagSet) {
	o.analysisOptions.addFlags(fs, contractUsage)
	fs.IntVar(&o.plan.MaxMoves, "max-plan-moves", o.plan.MaxMoves, fmt.Sprintf("longest plan considered (0: %d, or twice the lower bound on the moves needed when that is more)", plan.DefaultMaxMoves))
	fs.IntVar(&o.plan.MaxStates, "max-plan-states", o.plan.MaxStates, "placements the planner may evaluate per cluster; when they run out, the best plan found so far is shown as not proven minimal")
	addPendingStepsFlag(fs, &o.plan.AllowPendingSteps)
}

// allowPendingStepsUsage is --allow-pending-steps' help.
const allowPendingStepsUsage = "plan through Pending pods: an evicted pod may wait Pending until a later move frees room, one pod per Redis cluster at a time (its shard runs without that replica meanwhile; the plan names the moves). Without it, each evicted pod must be placeable at once, and a cluster that only such a plan fixes says so"

// addPendingStepsFlag binds --allow-pending-steps (check and plan; run refuses it).
func addPendingStepsFlag(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "allow-pending-steps", *v, allowPendingStepsUsage)
}

func newPlanCommand() *cobra.Command {
	o := newPlanOptions()
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan the fewest evictions that make every Redis cluster comply (changes nothing)",
		Long: `plan evaluates every Redis cluster's placement and plans the shortest ordered list of
evictions after which every hard rule holds, assuming kube-scheduler re-places each evicted pod
with its StatefulSet's current template. For each move it lists the nodes the scheduler may choose
and whether each keeps the plan on track (the expected node and a count of the others; -o json
lists them all), and marks masters for failover. For Pending pods it says why no node fits and
which evictions unblock them. By default each evicted pod must be placeable at once; when only a
plan through a temporarily Pending pod exists, plan says so and --allow-pending-steps shows it.
When no plan exists, it says why: no placement can comply, or which bound stopped the search
(--max-plan-moves, --max-plan-states). It changes nothing.

Live (kubeconfig) or offline (--snapshot FILE). Exit status: 0 when every cluster complies or
has a plan that reaches compliance, 3 when some cluster has none, 1 on error.`,
		Example: `  redis-rebalancer plan -n redis
  kubectl get nodes,pods,statefulsets,poddisruptionbudgets,pvc,pv -A -o yaml > snap.yaml
  redis-rebalancer plan --snapshot snap.yaml --role-label redis.rebalancer.io/role -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.analyze(cmd, true, o.plan, (*report.Analysis).Planned)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}
