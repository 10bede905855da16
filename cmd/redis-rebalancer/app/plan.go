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
	// without is --without: nodes and "zone=ZONE" to plan without.
	without []string
}

func newPlanOptions() *planOptions {
	return &planOptions{analysisOptions: newAnalysisOptions()}
}

func (o *planOptions) addFlags(fs *pflag.FlagSet) {
	o.analysisOptions.addFlags(fs, contractUsage)
	o.model.policy.addPlanFlags(fs, allowPendingStepsUsage)
	fs.StringSliceVar(&o.without, "without", o.without, "plan as if these nodes were gone: `NODE,...` and/or zone=ZONE (every node of the zone); their masters are handed off first (the fewest failovers that keep MasterQuorum over the nodes that stay), their pods re-created elsewhere")
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

--without NODE,...|zone=ZONE plans as if those nodes were gone (can the cluster lose zone-b for an
upgrade and stay compliant?): every master on them is first handed off to a replica on a node that
stays, with the fewest failovers that keep MasterQuorum over the nodes that stay (what
prepare-drain does); the pods that ran there are re-created by their controllers and placed by the
scheduler where they fit, or stay Pending (Unschedulable). The rest of the output is about the
cluster without those nodes; JSON adds "without" per cluster (nodes, handOff, masterQuorum,
quorumHolds, stuck, lost). Exit status 3 also when a master there has no replica that stays.

Live (kubeconfig) or offline (--snapshot FILE). Exit status: 0 when every cluster complies or
has a plan that reaches compliance, 3 when some cluster has none, 1 on error.`,
		Example: `  redis-rebalancer plan -n redis
  kubectl get nodes,pods,sts,pdb,pvc,pv,csinodes,services -A -o yaml > snap.yaml
  redis-rebalancer plan --snapshot snap.yaml --role-label redis.rebalancer.io/role -o json
  # can the cluster lose zone-b for an upgrade and stay compliant?
  redis-rebalancer plan -n redis --without zone=zone-b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.without) > 0 {
				return o.analyzeWith(cmd, o.planWithout, (*report.Analysis).Planned)
			}
			return o.analyze(cmd, planBounds, (*report.Analysis).Planned)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}
