package app

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// planOptions are the plan command's options: check's, and the planner's bounds (the policy's
// plan section).
type planOptions struct {
	analysisOptions
}

func newPlanOptions() *planOptions {
	return &planOptions{analysisOptions: newAnalysisOptions()}
}

func (o *planOptions) addFlags(fs *pflag.FlagSet) {
	o.analysisOptions.addFlags(fs, contractUsage)
	o.model.policy.addPlanFlags(fs, allowPendingStepsUsage)
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
  kubectl get nodes,pods,statefulsets,poddisruptionbudgets,pvc,pv,csinodes -A -o yaml > snap.yaml
  redis-rebalancer plan --snapshot snap.yaml --role-label redis.rebalancer.io/role -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.analyze(cmd, planBounds, (*report.Analysis).Planned)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}
