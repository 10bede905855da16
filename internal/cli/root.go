// Package cli implements the redis-rebalancer command line: the cobra commands, their flags, and
// the wiring from flags to the rebalancer, policies and redisctl packages.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// Exit codes of the commands.
const (
	// ExitOK: success; for check and run, every Redis cluster complies.
	ExitOK = 0
	// ExitError: the command failed (bad flags, API server or Redis unreachable, ...).
	ExitError = 1
	// ExitViolations: the command worked, and some cluster breaks a hard rule.
	ExitViolations = 3
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// NewRootCommand returns the redis-rebalancer command with its subcommands.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "redis-rebalancer",
		Short: "Fix Redis Cluster pod placements on Kubernetes without losing a write",
		Long: `redis-rebalancer finds Redis Cluster pods whose placement breaks the HA rules
(ShardSeparation, MaxPodsPerNode, ZoneEvenSplit, MaxPodsPerZone, AllowedZones, TopologySpread,
Unschedulable) and fixes them one safe move at a time: it fails a master over to an in-sync
replica (CLUSTER FAILOVER), evicts the pod through the policy/v1 Eviction API so that
PodDisruptionBudgets hold, and lets kube-scheduler's topology spread constraints re-place it.

It runs as a Kubernetes CronJob, as a one-shot Job, or from a workstation with a kubeconfig.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	root.PersistentFlags().AddGoFlag(gofs.Lookup("v"))
	root.AddCommand(newRunCommand(), newAnalyzeCommand(false), newAnalyzeCommand(true), newConstraintsCommand(), newLintCommand(), newVersionCommand())
	return root
}

// Main runs the root command with os.Args and returns the process exit code.
func Main() int {
	cmd := NewRootCommand()
	err := cmd.Execute()
	klog.Flush()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "redis-rebalancer:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "redis-rebalancer:", err)
	return ExitError
}
