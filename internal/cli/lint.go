package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
)

// lintOptions are the lint command's options.
type lintOptions struct {
	model  modelOptions
	output string
}

func newLintOptions() *lintOptions {
	return &lintOptions{model: newModelOptions(), output: defaultTableOutput}
}

func (o *lintOptions) addFlags(fs *pflag.FlagSet) {
	o.model.addFlags(fs)
	fs.StringVarP(&o.output, "output", "o", o.output, "table or json")
}

func newLintCommand() *cobra.Command {
	o := newLintOptions()
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
			if o.output != "table" && o.output != "json" {
				return &exitError{ExitError, fmt.Errorf("-o must be table or json, got %q", o.output)}
			}
			// Templates carry no roles: lint never asks Redis.
			m, err := o.model.model(cmd.Context(), cmd.ErrOrStderr(), false)
			if err != nil {
				return &exitError{ExitError, err}
			}
			findings := lint.Lint(m, o.model.policy.relaxed)
			out := cmd.OutOrStdout()
			if o.output == "json" {
				if findings == nil {
					findings = []lint.Finding{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"findings": findings}); err != nil {
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
	o.addFlags(cmd.Flags())
	return cmd
}
