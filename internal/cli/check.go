package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// defaultTableOutput is -o of check, plan and lint.
const defaultTableOutput = "table"

// checkOptions are the check command's options.
type checkOptions struct {
	model  modelOptions
	output string
}

func newCheckOptions() *checkOptions {
	return &checkOptions{model: newModelOptions(), output: defaultTableOutput}
}

func (o *checkOptions) addFlags(fs *pflag.FlagSet) {
	o.model.addFlags(fs)
	fs.StringVarP(&o.output, "output", "o", o.output, "table or json (the JSON contract is in the README)")
}

func newCheckCommand() *cobra.Command {
	o := newCheckOptions()
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Report every Redis cluster whose placement breaks a rule (changes nothing)",
		Long: `check evaluates every Redis cluster's placement against the HA rules (ShardSeparation,
MaxPodsPerNode, ZoneEvenSplit, MaxPodsPerZone, AllowedZones, TopologySpread, Unschedulable; soft:
NodeSpread, ZoneBalance) and prints a zones × nodes map with M/R/P marks and the violations.

Live (kubeconfig) or offline (--snapshot FILE). Exit status: 0 when every cluster complies, 3 when
any hard rule is broken, 1 on error.`,
		Example: `  redis-rebalancer check -n redis
  redis-rebalancer check --snapshot snap.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := analyze(cmd, &o.model, o.output, false, plan.Options{})
			if err != nil {
				return err
			}
			if !a.Compliant() {
				return &exitError{ExitViolations, nil}
			}
			return nil
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// analyze is check's and plan's work: it builds the model, analyses it (report.Analyze, with
// plans when withPlans) and prints the analysis as output says (table or json).
func analyze(cmd *cobra.Command, mo *modelOptions, output string, withPlans bool, popts plan.Options) (*report.Analysis, error) {
	if output != "table" && output != "json" {
		return nil, &exitError{ExitError, fmt.Errorf("-o must be table or json, got %q", output)}
	}
	m, err := mo.model(cmd.Context(), cmd.ErrOrStderr(), mo.snapshot.redisRoles)
	if err != nil {
		return nil, &exitError{ExitError, err}
	}
	a := report.Analyze(m, withPlans, popts)
	if output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(a); err != nil {
			return nil, &exitError{ExitError, err}
		}
	} else {
		report.RenderAnalysis(cmd.OutOrStdout(), m, a, withPlans)
	}
	return a, nil
}
