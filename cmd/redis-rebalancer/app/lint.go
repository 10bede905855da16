package app

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

func newLintCommand() *cobra.Command {
	o := newAnalysisOptions()
	var valuesPathFlag string
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Report StatefulSets whose constraints can deadlock or differ from the recommendation",
		Long: `lint compares every Redis cluster's StatefulSet templates with the constraints recommended
for the cluster's size N and zones (see the constraints command): hard maxSkew on
hostname and zone, the soft constraints, the anti-affinity inside the shard, and the node affinity
on the zones. It also flags templates that can deadlock (several zones and 3 shards with the
strict limits) and names the relaxed setting that avoids it, and, once per cluster
(MasterQuorum), shards and zones that leave some loss unsurvivable whatever the placement: with
one master per shard, Redis promotes a replica only when a majority of the masters vote, so 2
shards, 4 shards in 3 zones, or any cluster in 2 zones cannot survive the loss of some node or
zone; the finding says which loss and what would fix it.

PodDisruptionBudgets that let a drain take two pods of one shard at once (a master and its
replica) are findings too (DisruptionBudget): no budget over the shard's pods, a budget per role
(OT's leader/follower pair), a budget over the whole cluster with maxUnavailable above 1. For
clusters written by Bitnami's redis-cluster chart or OT's redis-operator (told by their labels),
a shard whose pods nothing required keeps off one node, where a value of the chart would, is a
finding (SoftAntiAffinity: Bitnami's podAntiAffinityPreset: hard when there is a node for every
pod, OT's role anti-affinity annotation), its message saying what the StatefulSet's template
renders; the fixes are printed in the chart's terms: the Helm values (Bitnami's
redis.topologySpreadConstraints, redis.nodeAffinityPreset, redis.podAntiAffinityPreset, nested
under an umbrella chart's key with --values-path) or the RedisCluster's fields and annotation (OT)
that set the recommended constraints, as far as the chart can express them (JSON "values"). What
the chart cannot express (a shard's pods out of one zone: no value names a shard; a node per pod
with fewer nodes than pods) is a note, not a finding: a chart whose values follow lint's advice
lints clean. These findings need the shards: where they come from Redis (--shard-source redis,
as --layout bitnami and ot set it), lint reads CLUSTER NODES live, and offline takes it from
--redis-nodes; without either (offline without --redis-nodes, live with --redis-roles=false) it
stops (status 1) and says what to give.

Every finding names the rule it serves (JSON "rule": MaxPodsPerNode for the hostname maxSkew and
the deadlock, MaxPodsPerZone or ZoneEvenSplit for the zone's, NodeSpread and ZoneBalance for the
soft constraints, ShardSeparation for the anti-affinity, AllowedZones for the node affinity,
MasterQuorum); a rule the policy does not judge (--disable-rules, rules.disabled) silences its
findings. DisruptionBudget serves no rule (budgets hold for every eviction) and always shows.

The templates place pods, not roles: no constraint keeps the masters apart, and the operator's
pod -0 = master convention drifts after every failover. lint says so once (a note; JSON
"notes"); check and plan judge the masters themselves (MasterQuorum), and run fixes them with
failovers.

Live (kubeconfig) or offline (--snapshot FILE). Exit status: 0 when there is no finding, 3 when
there are findings, 1 on error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := o.model.policy.load(cmd.Flags())
			if err != nil {
				return &exitError{ExitError, err}
			}
			valuesPath, err := lint.ParseValuesPath(valuesPathFlag)
			if err != nil {
				return &exitError{ExitError, fmt.Errorf("--values-path: %w", err)}
			}
			// Templates carry no roles: lint asks Redis (unless --redis-roles=false) only for
			// the shards, when they come from nowhere else.
			opts, err := rules(p)
			if err != nil {
				return &exitError{ExitError, err}
			}
			m, rc, err := o.model.model(cmd.Context(), errLines(cmd), p, o.model.snapshot.redisRoles && opts.ShardSource.Kind == policies.ShardRedis)
			if err != nil {
				return &exitError{ExitError, err}
			}
			if rc != nil {
				rc.Close()
			}
			rep := lint.Lint(m, lint.Options{Relaxed: p.Rules.RelaxedLimits, ValuesPath: valuesPath})
			findings := rep.Findings
			out := cmd.OutOrStdout()
			notes := append(rep.Notes, lint.RolesNote)
			if p.Output == v1alpha1.OutputJSON {
				if findings == nil {
					findings = []lint.Finding{}
				}
				if err := printJSON(out, map[string]any{"findings": findings, "notes": notes}); err != nil {
					return &exitError{ExitError, err}
				}
			} else {
				// The messages wrapped, the values (YAML) as they are.
				w := report.NewWrapWriter(out)
				if len(findings) == 0 {
					as := ""
					if len(rep.Notes) > 0 {
						as = " as far as its chart can express it (notes below)"
					}
					fmt.Fprintf(w, "%s checked: every StatefulSet follows the recommendation%s\n", policies.Plural(len(m.Clusters), "Redis cluster"), as)
				}
				for _, f := range findings {
					where := f.Namespace + "/" + f.Cluster
					if f.StatefulSet != "" {
						where += " " + f.StatefulSet
					}
					fmt.Fprintf(w, "%s: %s: %s\n", where, f.Kind, f.Message)
					if f.Values != "" {
						fmt.Fprintf(out, "    %s\n", strings.ReplaceAll(strings.TrimRight(f.Values, "\n"), "\n", "\n    "))
					}
				}
				for _, n := range notes {
					fmt.Fprintf(w, "note: %s\n", n)
				}
			}
			if len(findings) > 0 {
				return &exitError{ExitViolations, nil}
			}
			return nil
		},
	}
	o.addFlags(cmd.Flags(), outputUsage(`{"findings": [...], "notes": [...]}`))
	cmd.Flags().StringVar(&valuesPathFlag, "values-path", "", valuesPathUsage)
	return cmd
}

// valuesPathUsage is --values-path's help in lint and constraints.
const valuesPathUsage = `nest the Bitnami chart's values under this key of an umbrella chart: the subchart's name or alias (redis-cluster), dotted for a deeper one (backend.redis-cluster); empty: at the top`
