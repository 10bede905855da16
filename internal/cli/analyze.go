package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// sourceFlags say where the snapshot comes from: the API server, or a file.
type sourceFlags struct {
	kube       kubeFlags
	policy     policyFlags
	redis      redisFlags
	snapshot   string
	roleLabel  string
	redisRoles bool
}

func (f *sourceFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.kube.add(fs)
	f.policy.add(fs)
	f.redis.add(fs)
	fs.StringVar(&f.snapshot, "snapshot", "", "read the cluster state from `FILE` instead of the API server: what \"kubectl get nodes,pods,statefulsets,poddisruptionbudgets,pvc,pv -A -o yaml\" (or -o json) prints; - for stdin")
	fs.StringVar(&f.roleLabel, "role-label", "", "pod label giving the Redis role offline (master, replica/slave); roles are unknown without it")
	fs.BoolVar(&f.redisRoles, "redis-roles", true, "live: read each pod's Redis role from Redis (needs network access to the pod IPs)")
}

// model loads the snapshot (live or from the file), builds the model, keeps the selected
// clusters and, live, reads the roles from Redis. Warnings go to errOut.
func (f *sourceFlags) model(ctx context.Context, errOut io.Writer) (*policies.Model, error) {
	opts := f.policy.options()
	opts.RoleLabel = f.roleLabel
	sel, err := labels.Parse(f.policy.selector)
	if err != nil {
		return nil, fmt.Errorf("--selector: %w", err)
	}
	var snap *policies.Snapshot
	if f.snapshot != "" {
		var skipped map[string]int
		if snap, skipped, err = observe.LoadSnapshotFile(f.snapshot); err != nil {
			return nil, err
		}
		if len(skipped) > 0 {
			var kinds []string
			for k, n := range skipped {
				kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
			}
			sort.Strings(kinds)
			fmt.Fprintf(errOut, "note: %s skipped (not used by the rules)\n", strings.Join(kinds, ", "))
		}
	} else {
		client, err := f.kube.client()
		if err != nil {
			return nil, err
		}
		if snap, err = observe.ReadSnapshot(ctx, client, f.policy.namespace); err != nil {
			return nil, err
		}
	}
	m, err := policies.Build(snap, opts)
	if err != nil {
		return nil, err
	}
	observe.Selection{Namespace: f.policy.namespace, Selector: sel}.Filter(m)
	if f.snapshot == "" && f.redisRoles && f.roleLabel == "" {
		rc, err := f.redis.client()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		for _, c := range m.Clusters {
			if _, err := observe.ApplyRoles(ctx, rc, c); err != nil {
				fmt.Fprintf(errOut, "warning: %s: roles unknown: %v\n", c.Key(), err)
			}
		}
	}
	return m, nil
}

func newAnalyzeCommand(withPlans bool) *cobra.Command {
	var (
		src    sourceFlags
		output string
		popts  plan.Options
	)
	cmd := &cobra.Command{Args: cobra.NoArgs}
	if withPlans {
		cmd.Use = "plan"
		cmd.Short = "Plan the fewest evictions that make every Redis cluster comply (changes nothing)"
		cmd.Long = `plan evaluates every Redis cluster's placement and plans the shortest ordered list of
evictions after which every hard rule holds, assuming kube-scheduler re-places each evicted pod
with its StatefulSet's current template. For each move it lists the nodes the scheduler may choose
and whether each keeps the plan on track, and marks masters for failover. For Pending pods it
says why no node fits and which evictions unblock them. It changes nothing.

Live (kubeconfig) or offline (--snapshot FILE). Exit status: 0 when every cluster complies or
has a plan that reaches compliance, 3 when some cluster has none, 1 on error.`
		cmd.Example = `  redis-rebalancer plan -n redis
  kubectl get nodes,pods,statefulsets,poddisruptionbudgets,pvc,pv -A -o yaml > snap.yaml
  redis-rebalancer plan --snapshot snap.yaml --role-label redis.rebalancer.io/role -o json`
	} else {
		cmd.Use = "check"
		cmd.Short = "Report every Redis cluster whose placement breaks a rule (changes nothing)"
		cmd.Long = `check evaluates every Redis cluster's placement against the HA rules (ShardSeparation,
MaxPodsPerNode, ZoneEvenSplit, MaxPodsPerZone, AllowedZones, TopologySpread, Unschedulable; soft:
NodeSpread, ZoneBalance) and prints a zones × nodes map with M/R/P marks and the violations.

Live (kubeconfig) or offline (--snapshot FILE). Exit status: 0 when every cluster complies, 3 when
any hard rule is broken, 1 on error.`
		cmd.Example = `  redis-rebalancer check -n redis
  redis-rebalancer check --snapshot snap.yaml -o json`
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if output != "table" && output != "json" {
			return &exitError{ExitError, fmt.Errorf("-o must be table or json, got %q", output)}
		}
		m, err := src.model(cmd.Context(), cmd.ErrOrStderr())
		if err != nil {
			return &exitError{ExitError, err}
		}
		a := report.Analyze(m, withPlans, popts)
		if output == "json" {
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(a); err != nil {
				return &exitError{ExitError, err}
			}
		} else {
			report.RenderAnalysis(cmd.OutOrStdout(), m, a, withPlans)
		}
		ok := a.Compliant()
		if withPlans {
			ok = a.Planned()
		}
		if !ok {
			return &exitError{ExitViolations, nil}
		}
		return nil
	}
	src.add(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json (the JSON contract is in the README)")
	if withPlans {
		cmd.Flags().IntVar(&popts.MaxMoves, "max-plan-moves", 0, "longest plan considered (0: 12, or twice the lower bound on the moves needed when that is more)")
		cmd.Flags().IntVar(&popts.MaxStates, "max-plan-states", 200000, "placements the planner may evaluate while it looks for a plan shorter than its greedy one")
	}
	return cmd
}
