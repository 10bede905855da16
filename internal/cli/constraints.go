package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
)

func newConstraintsCommand() *cobra.Command {
	var (
		in                               constraints.Input
		clusterLabel, clusterName, shard string
		shardLabel, zones                string
	)
	cmd := &cobra.Command{
		Use:   "constraints",
		Short: "Print the seed's recommended scheduling constraints for a Redis cluster's StatefulSets",
		Long: `constraints prints the topologySpreadConstraints, pod anti-affinity and node affinity that seed
000 §二 recommends for a Redis cluster of --shards × --pods-per-shard pods over --zones, as a
StatefulSet template fragment (YAML) to merge into each shard's StatefulSet:
  - hostname: maxSkew N/3 (minus 1 when 3 divides N; at least 1), DoNotSchedule;
  - zone (2+ zones): maxSkew N/2 (minus 1 when 2 divides N; at least 1), DoNotSchedule;
  - soft maxSkew 1 on hostname (and zone), ScheduleAnyway;
  - required anti-affinity inside the shard on hostname (1 zone) or zone (2+ zones);
  - required node affinity on the zones.
--relaxed-limits drops the "minus 1" (seed 000 §四), which avoids the 3-shard deadlock.`,
		Example: `  redis-rebalancer constraints --shards 5 --pods-per-shard 2 --zones zone-a,zone-b,zone-c --cluster-name rc1 --shard rc1-s0`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if clusterName == "" {
				return &exitError{ExitError, fmt.Errorf("--cluster-name is required")}
			}
			in.ClusterLabels = map[string]string{clusterLabel: clusterName}
			in.ShardLabels = map[string]string{shardLabel: shard}
			if zones != "" {
				in.Zones = strings.Split(zones, ",")
			}
			spread, aff, err := constraints.Generate(in)
			if err != nil {
				return &exitError{ExitError, err}
			}
			n := in.Shards * in.PodsPerShard
			frag := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"topologySpreadConstraints": spread, "affinity": aff,
			}}}}
			b, err := yaml.Marshal(frag)
			if err != nil {
				return &exitError{ExitError, err}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "# redis-rebalancer constraints: N=%d (%d shards x %d pods), zones [%s], relaxed=%v (seed 000 §二)\n",
				n, in.Shards, in.PodsPerShard, strings.Join(in.Zones, " "), in.Relaxed)
			fmt.Fprintf(out, "# StatefulSet template fragment for shard %q; pods must carry %s=%s and %s=%s.\n", shard, clusterLabel, clusterName, shardLabel, shard)
			_, err = out.Write(b)
			return err
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&in.Shards, "shards", 3, "number of shards (StatefulSets)")
	fs.IntVar(&in.PodsPerShard, "pods-per-shard", 2, "pods per shard (1 master + replicas)")
	fs.StringVar(&zones, "zones", "", "comma-separated allowed zones (seed available-zones); empty or one zone: single-zone rules")
	fs.StringVar(&in.ZoneKey, "zone-key", policies.LabelZone, "zone topology key (seed 000 uses "+policies.LabelZoneLegacy+")")
	fs.StringVar(&clusterLabel, "cluster-label", policies.DefaultClusterLabel, "pod label naming the Redis cluster")
	fs.StringVar(&clusterName, "cluster-name", "", "the Redis cluster's name (the cluster label's value)")
	fs.StringVar(&shardLabel, "shard-label", constraints.DefaultShardLabel, "pod label naming the shard")
	fs.StringVar(&shard, "shard", "SHARD", "the shard label's value for this StatefulSet")
	fs.BoolVar(&in.Relaxed, "relaxed-limits", false, `seed 000 §四: "at most" N/3 and N/2 (maxSkew without the "minus 1")`)
	return cmd
}

func newLintCommand() *cobra.Command {
	var (
		src    sourceFlags
		output string
	)
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
			src.redisRoles = false
			m, err := src.model(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return &exitError{ExitError, err}
			}
			findings := lint.Lint(m, src.policy.relaxed)
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				if findings == nil {
					findings = []lint.Finding{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"findings": findings}); err != nil {
					return &exitError{ExitError, err}
				}
			case "table":
				if len(findings) == 0 {
					fmt.Fprintf(out, "%d Redis clusters checked: every StatefulSet follows the recommendation\n", len(m.Clusters))
				}
				for _, f := range findings {
					fmt.Fprintf(out, "%s/%s %s: %s: %s\n", f.Namespace, f.Cluster, f.StatefulSet, f.Kind, f.Message)
				}
			default:
				return &exitError{ExitError, fmt.Errorf("-o must be table or json, got %q", output)}
			}
			if len(findings) > 0 {
				return &exitError{ExitViolations, nil}
			}
			return nil
		},
	}
	src.add(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}
