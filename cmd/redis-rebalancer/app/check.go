package app

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

func newCheckCommand() *cobra.Command {
	o := newAnalysisOptions()
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Report every Redis cluster whose placement breaks a rule (changes nothing)",
		Long: fill(`check evaluates every Redis cluster's placement against the HA rules (`+ruleNames(true)+
			`) and prints a zones × nodes map with M/R/P marks and the violations. MasterQuorum is about roles: with M the masters serving slots, no node may hold M/2
or more of them, nor (3 zones or more) a zone, or its loss leaves no majority to promote replicas
and the whole cluster down. Roles come from Redis live and from --role-label offline; without
them the rule is skipped and a note says so. Where no placement can satisfy it (M ≤ 2, 4 masters
in 3 zones, 2 zones), a note says once which loss the cluster cannot survive and what would fix
it, and the rule asks for the masters spread evenly (JSON "masterQuorum").`, helpWidth) + `
Live, it also reports Redis's health (JSON "health"): healthy; resyncing (only replicas catching
up with their master); or unhealthy (pods missing or not Ready, cluster_state, slots, failing or
unreachable nodes, ...), with the reasons. Offline (--snapshot FILE), or live with
--redis-roles=false, health is "unknown" and says so.

Exit status: 0 when every cluster complies and its Redis is healthy (or its health is unknown),
3 when a hard rule is broken or Redis is resyncing or unhealthy, 1 on error.`,
		Example: `  redis-rebalancer check -n redis
  redis-rebalancer check --snapshot snap.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.analyze(cmd, nil, (*report.Analysis).CompliantAndHealthy)
		},
	}
	o.addFlags(cmd.Flags(), contractUsage)
	return cmd
}

// analyze is check's and plan's work: it resolves the policy, builds the model, analyses it
// (report.Analyze, with plans when popts is set: plan's bounds from the policy) and prints the
// analysis as the output format says. The exit code is ExitViolations when ok reports false on
// the analysis.
func (o *analysisOptions) analyze(cmd *cobra.Command, popts func(*policy) plan.Options, ok func(*report.Analysis) bool) error {
	p, err := o.model.policy.load(cmd.Flags())
	if err != nil {
		return &exitError{ExitError, err}
	}
	m, rc, err := o.model.model(cmd.Context(), errLines(cmd), p, o.model.snapshot.redisRoles)
	if err != nil {
		return &exitError{ExitError, err}
	}
	if rc != nil {
		defer rc.Close()
	}
	withPlans := popts != nil
	var bounds plan.Options
	if withPlans {
		bounds = popts(p)
	}
	a := report.Analyze(m, withPlans, bounds)
	if !withPlans {
		// check: Redis health beside the placement.
		o.model.judgeHealth(cmd.Context(), m, a, rc)
	}
	if p.Output == v1alpha1.OutputJSON {
		if err := printJSON(cmd.OutOrStdout(), a); err != nil {
			return &exitError{ExitError, err}
		}
	} else {
		report.RenderAnalysis(cmd.OutOrStdout(), m, a, withPlans)
	}
	if !ok(a) {
		return &exitError{ExitViolations, nil}
	}
	return nil
}

// analyzeWith is analyze with the model and the analysis made by analysis (plan --without): the
// policy resolved, then printed as the output format says, the exit code ExitViolations when ok
// reports false.
func (o *analysisOptions) analyzeWith(cmd *cobra.Command, analysis func(context.Context, io.Writer, *policy) (*policies.Model, *report.Analysis, error), ok func(*report.Analysis) bool) error {
	p, err := o.model.policy.load(cmd.Flags())
	if err != nil {
		return &exitError{ExitError, err}
	}
	m, a, err := analysis(cmd.Context(), cmd.ErrOrStderr(), p)
	if err != nil {
		return &exitError{ExitError, err}
	}
	if p.Output == v1alpha1.OutputJSON {
		if err := printJSON(cmd.OutOrStdout(), a); err != nil {
			return &exitError{ExitError, err}
		}
	} else {
		report.RenderAnalysis(cmd.OutOrStdout(), m, a, true)
	}
	if !ok(a) {
		return &exitError{ExitViolations, nil}
	}
	return nil
}
