package app

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// textOrJSON binds -o for the commands whose output is text or one JSON object (policy,
// version); usage names what the JSON object holds.
func textOrJSON(fs *pflag.FlagSet, output *string, usage string) {
	*output = string(v1alpha1.OutputText)
	fs.StringVarP(output, "output", "o", *output, "output format: text or json ("+usage+")")
}

// checkTextOrJSON refuses an -o value other than text or json.
func checkTextOrJSON(output string) error {
	if output != string(v1alpha1.OutputText) && output != string(v1alpha1.OutputJSON) {
		return &exitError{ExitError, fmt.Errorf("--output %q: text or json", output)}
	}
	return nil
}

// knownSubcommand refuses the arguments of a command with subcommands that names none of them
// ("policy valdate"), as cobra refuses an unknown command of the root: "unknown command", with
// the subcommands it may mean.
func knownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errors.New(msg + " (" + cmd.CommandPath() + " --help lists its commands)")
}

// policyValidation is policy validate's JSON object.
type policyValidation struct {
	// File is the file read ("-": standard input).
	File string `json:"file"`
	// Valid says whether the policy loads: strict, valid.
	Valid bool `json:"valid"`
	// Errors are the problems, one per bad field (with its path), or the one error that kept
	// the file from being read or parsed; empty when valid.
	Errors []string `json:"errors"`
}

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Print the default RebalancerPolicy, or check a policy file",
		Long: `A RebalancerPolicy (` + v1alpha1.SchemeGroupVersion.String() + `) holds every setting of run, serve, check, plan
and lint; they read it with --policy FILE, and a flag given on the command line overrides the
file's field. docs/policy.md is its reference.`,
		// Runnable, so that cobra checks its arguments: a parent command without Run takes any
		// (cobra's legacyArgs checks the root's only) and prints its help with exit status 0.
		Args:                       knownSubcommand,
		RunE:                       func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SuggestionsMinimumDistance: 2,
	}
	var defaultOutput, validateOutput string
	def := &cobra.Command{
		Use:   "default",
		Short: "Print a complete RebalancerPolicy: every field at its default, with its documentation",
		Long: `default prints a complete RebalancerPolicy: every field at its default value, each with its
documentation as a YAML comment (generated from the API types' doc comments). Save it, change what
you need, and check it with "policy validate". With -o json: the same policy as one JSON object,
without the comments.`,
		Example: `  redis-rebalancer policy default > policy.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkTextOrJSON(defaultOutput); err != nil {
				return err
			}
			if defaultOutput == string(v1alpha1.OutputJSON) {
				p := v1alpha1.Default()
				p.APIVersion, p.Kind = v1alpha1.SchemeGroupVersion.String(), v1alpha1.Kind
				return printJSON(cmd.OutOrStdout(), p)
			}
			_, err := cmd.OutOrStdout().Write(v1alpha1.CommentedDefault())
			return err
		},
	}
	textOrJSON(def.Flags(), &defaultOutput, "the policy at its defaults, without comments")
	validate := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a RebalancerPolicy file: every unknown field and every invalid value, at once",
		Long: `validate reads a RebalancerPolicy as every command does (strictly: an unknown field is an error
naming its path), validates it, and lists every problem at once, each with its field path.
FILE - reads standard input. A policy file is one YAML document of at most 1 MiB.

Exit status: 0 when the policy is valid, 1 otherwise.`,
		Example: `  redis-rebalancer policy validate policy.yaml
  kubectl get configmap redis-rebalancer -o jsonpath='{.data.policy\.yaml}' \
    | redis-rebalancer policy validate -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTextOrJSON(validateOutput); err != nil {
				return err
			}
			_, err := v1alpha1.Load(args[0])
			if validateOutput == string(v1alpha1.OutputJSON) {
				v := policyValidation{File: args[0], Valid: err == nil, Errors: []string{}}
				var invalid *v1alpha1.InvalidError
				switch {
				case errors.As(err, &invalid):
					for _, e := range invalid.Errs {
						v.Errors = append(v.Errors, e.Error())
					}
				case err != nil:
					v.Errors = append(v.Errors, err.Error())
				}
				if perr := printJSON(cmd.OutOrStdout(), v); perr != nil {
					return &exitError{ExitError, perr}
				}
				if err != nil {
					return &exitError{ExitError, nil}
				}
				return nil
			}
			if err != nil {
				return &exitError{ExitError, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: a valid %s %s\n", args[0], v1alpha1.Kind, v1alpha1.SchemeGroupVersion)
			return nil
		},
	}
	textOrJSON(validate.Flags(), &validateOutput, `{"file", "valid", "errors": [...]}, the problems one per bad field`)
	cmd.AddCommand(def, validate)
	return cmd
}
