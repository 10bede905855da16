// Command descheduler is the descheduler (sigs.k8s.io/descheduler/cmd/descheduler, same flags and
// DeschedulerPolicy) with one more balance plugin registered: RedisClusterBalance
// (redisclusterbalance), which fixes Redis Cluster pod placements with redis-rebalancer's planner
// and steps, evicting through the profile's PodEvictor, holding redis-rebalancer's Lease while it
// acts; under --dry-run it plans and logs only. Built by build.sh.
//
//	descheduler --policy-config-file policy.yaml --kubeconfig ...
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	"sigs.k8s.io/descheduler/cmd/descheduler/app"
	"sigs.k8s.io/descheduler/pkg/framework/pluginregistry"

	"github.com/redis-rebalancer/redis-rebalancer/hack/descheduler-plugin/redisclusterbalance"
)

func main() {
	cmd := app.NewDeschedulerCommand(os.Stdout)
	cmd.AddCommand(app.NewVersionCommand())
	// The descheduler fills its plugin registry in PreRunE (descheduler.SetupPlugins, which
	// replaces the registry with the in-tree plugins), before RunE loads the policy: register
	// the plugin right after, so that the policy can name it.
	setup := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if err := setup(c, args); err != nil {
			return err
		}
		// The descheduler does not tell its plugins --dry-run: pass it (and --kubeconfig, where
		// the Lease's namespace defaults from) from its flags.
		dryRun, err := c.Flags().GetBool("dry-run")
		if err != nil {
			return fmt.Errorf("--dry-run: %w", err)
		}
		kubeconfig, err := c.Flags().GetString("kubeconfig")
		if err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
		redisclusterbalance.Register(pluginregistry.PluginRegistry, redisclusterbalance.Options{DryRun: dryRun, Kubeconfig: kubeconfig})
		return nil
	}
	os.Exit(cli.Run(cmd))
}
