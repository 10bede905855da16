package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Print the default RebalancerPolicy, or check a policy file",
		Long: `A RebalancerPolicy (` + v1alpha1.SchemeGroupVersion.String() + `) holds every setting of run, serve, check, plan
and lint; they read it with --policy FILE, and a flag given on the command line overrides the
file's field. docs/policy.md is its reference.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "default",
		Short: "Print a complete RebalancerPolicy: every field at its default, with its documentation",
		Long: `default prints a complete RebalancerPolicy: every field at its default value, each with its
documentation as a YAML comment (generated from the API types' doc comments). Save it, change what
you need, and check it with "policy validate".`,
		Example: `  redis-rebalancer policy default > policy.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(v1alpha1.CommentedDefault())
			return err
		},
	}, &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a RebalancerPolicy file: every unknown field and every invalid value, at once",
		Long: `validate reads a RebalancerPolicy as every command does (strictly: an unknown field is an error
naming its path), validates it, and lists every problem at once, each with its field path.
FILE - reads standard input.

Exit status: 0 when the policy is valid, 1 otherwise.`,
		Example: `  redis-rebalancer policy validate policy.yaml
  kubectl get configmap redis-rebalancer -o jsonpath='{.data.policy\.yaml}' | redis-rebalancer policy validate -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := v1alpha1.Load(args[0]); err != nil {
				return &exitError{ExitError, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: a valid %s %s\n", args[0], v1alpha1.Kind, v1alpha1.SchemeGroupVersion)
			return nil
		},
	})
	return cmd
}
