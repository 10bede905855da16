package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"

	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
)

func newLintCommand() *cobra.Command {
	o := newAnalysisOptions()
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Report StatefulSets whose constraints differ from the seed's recommendation or can deadlock",
		Long: `lint compares every Redis cluster's StatefulSet templates with the constraints that seed 000 §二
recommends for the cluster's size N and zones (see the constraints command): hard maxSkew on
hostname and zone, the soft constraints, the anti-affinity inside the shard, and the node affinity
on the zones. It also flags templates that can deadlock (seed 000 §四: several zones and 3 shards
with the strict limits) and names the relaxed setting that avoids it.

Live (kubeconfig) or offline (--snapshot FILE). Exit status: 0 when there is no finding, 3 when
there are findings, 1 on error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := o.model.policy.load(cmd.Flags())
			if err != nil {
				return &exitError{ExitError, err}
			}
			// Templates carry no roles: lint never asks Redis.
			m, err := o.model.model(cmd.Context(), cmd.ErrOrStderr(), p, false)
			if err != nil {
				return &exitError{ExitError, err}
			}
			findings := lint.Lint(m, p.Rules.RelaxedLimits)
			out := cmd.OutOrStdout()
			if p.Output == v1alpha1.OutputJSON {
				if findings == nil {
					findings = []lint.Finding{}
				}
				if err := printJSON(out, map[string]any{"findings": findings}); err != nil {
					return &exitError{ExitError, err}
				}
			} else {
				if len(findings) == 0 {
					fmt.Fprintf(out, "%d Redis clusters checked: every StatefulSet follows the recommendation\n", len(m.Clusters))
				}
				for _, f := range findings {
					fmt.Fprintf(out, "%s/%s %s: %s: %s\n", f.Namespace, f.Cluster, f.StatefulSet, f.Kind, f.Message)
				}
			}
			if len(findings) > 0 {
				return &exitError{ExitViolations, nil}
			}
			return nil
		},
	}
	o.addFlags(cmd.Flags(), outputUsage(`{"findings": [...]}`))
	return cmd
}
