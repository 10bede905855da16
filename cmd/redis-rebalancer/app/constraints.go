package app

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
	"github.com/redis-rebalancer/redis-rebalancer/policies/lint"
)

// commentWidth is the width the constraints command wraps its YAML comments at.
const commentWidth = 100

// writeComment writes text as YAML comment lines ("# ..."), wrapped at commentWidth.
func writeComment(w io.Writer, text string) {
	line := "#"
	for _, word := range strings.Fields(text) {
		if len(line)+1+len(word) > commentWidth && line != "#" {
			fmt.Fprintln(w, line)
			line = "#"
		}
		line += " " + word
	}
	fmt.Fprintln(w, line)
}

// Defaults of the constraints command.
const (
	// defaultShards and defaultPodsPerShard are --shards and --pods-per-shard.
	defaultShards       = 3
	defaultPodsPerShard = 2
	// defaultShardValue is --shard: a placeholder for the shard label's value.
	defaultShardValue = "SHARD"
)

// constraintsOptions are the constraints command's options.
type constraintsOptions struct {
	in                               constraints.Input
	clusterLabel, clusterName, shard string
	shardLabel, zones                string
	// output is -o: yaml (the fragment with its comments) or json (the fragment alone; the
	// comments as note lines on stderr).
	output string
	// layout (bitnami, ot) prints the chart's values or the RedisCluster's fields; nodes is the
	// number of nodes in the allowed zones (0: unknown).
	layout string
	nodes  int
	// valuesPath nests Bitnami's values under an umbrella chart's key (dotted); chartName is
	// app.kubernetes.io/name's value on the release's pods ("": the last key of valuesPath, else
	// redis-cluster).
	valuesPath, chartName string
}

func newConstraintsOptions() *constraintsOptions {
	return &constraintsOptions{
		in:           constraints.Input{Shards: defaultShards, PodsPerShard: defaultPodsPerShard, ZoneKey: policies.LabelZone},
		clusterLabel: policies.DefaultClusterLabel, shardLabel: constraints.DefaultShardLabel, shard: defaultShardValue,
		output: "yaml",
	}
}

func (o *constraintsOptions) addFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.in.Shards, "shards", o.in.Shards, "number of shards (StatefulSets)")
	fs.IntVar(&o.in.PodsPerShard, "pods-per-shard", o.in.PodsPerShard, "pods per shard (1 master + replicas)")
	fs.StringVar(&o.zones, "zones", o.zones, "comma-separated allowed zones (written as required node affinity); empty or one zone: single-zone rules")
	fs.StringVar(&o.in.ZoneKey, "zone-key", o.in.ZoneKey, "zone topology key (older operators use "+policies.LabelZoneLegacy+")")
	fs.StringVar(&o.clusterLabel, "cluster-label", o.clusterLabel, "pod label naming the Redis cluster")
	fs.StringVar(&o.clusterName, "cluster-name", o.clusterName, "the Redis cluster's name (the cluster label's value)")
	fs.StringVar(&o.shardLabel, "shard-label", o.shardLabel, "pod label naming the shard")
	fs.StringVar(&o.shard, "shard", o.shard, "the shard label's value for this StatefulSet")
	fs.StringVarP(&o.output, "output", "o", o.output, "output format: yaml (the fragment or values with comments) or json (the fragment or values alone, e.g. for kubectl patch --type merge or helm -f; the comments as note lines on stderr)")
	fs.StringVar(&o.layout, "layout", o.layout, "bitnami: print the values of Bitnami's redis-cluster chart for release --cluster-name; ot: the fields of OT's RedisCluster --cluster-name (N = --shards × --pods-per-shard); empty: a StatefulSet template fragment per shard")
	fs.IntVar(&o.nodes, "nodes", o.nodes, "with --layout bitnami: nodes in the allowed zones; podAntiAffinityPreset hard is written when every pod can have one of its own (0: unknown, not written)")
	zeroMeans(fs, "nodes")
	fs.StringVar(&o.valuesPath, "values-path", o.valuesPath, "with --layout bitnami: "+valuesPathUsage)
	fs.StringVar(&o.chartName, "chart-name", o.chartName, "with --layout bitnami: the app.kubernetes.io/name the release's pods carry, which the values select them by: the chart's nameOverride, or its alias in an umbrella chart (default: the last key of --values-path, which is the alias; else redis-cluster)")
	fs.BoolVar(&o.in.Relaxed, "relaxed-limits", o.in.Relaxed, `"at most" N/3 and N/2 (maxSkew without the "minus 1"), which avoids the 3-shard deadlock`)
}

// input completes the generator's input from the flags; --cluster-name is required. The label
// keys (--cluster-label, --shard-label, --zone-key) must be qualified names, the label values
// (--cluster-name, --shard, each of --zones) valid label values, as the API server requires of
// what the fragment is merged into; every problem is named at once.
func (o *constraintsOptions) input() (constraints.Input, error) {
	if o.clusterName == "" {
		return constraints.Input{}, fmt.Errorf("--cluster-name is required")
	}
	if o.output != "yaml" && o.output != "json" {
		return constraints.Input{}, fmt.Errorf("--output %q: yaml or json", o.output)
	}
	in := o.in
	in.ClusterLabels = map[string]string{o.clusterLabel: o.clusterName}
	in.ShardLabels = map[string]string{o.shardLabel: o.shard}
	if o.zones != "" {
		in.Zones = strings.Split(o.zones, ",")
	}
	var errs []error
	for _, k := range []struct{ flag, key string }{{"cluster-label", o.clusterLabel}, {"shard-label", o.shardLabel}, {"zone-key", o.in.ZoneKey}} {
		for _, msg := range validation.IsQualifiedName(k.key) {
			errs = append(errs, fmt.Errorf("--%s %q: not a label key: %s", k.flag, k.key, msg))
		}
	}
	values := []struct{ flag, value string }{{"cluster-name", o.clusterName}, {"shard", o.shard}}
	for _, z := range in.Zones {
		values = append(values, struct{ flag, value string }{"zones", z})
	}
	for _, v := range values {
		for _, msg := range validation.IsValidLabelValue(v.value) {
			errs = append(errs, fmt.Errorf("--%s %q: not a label value: %s", v.flag, v.value, msg))
		}
	}
	return in, errors.Join(errs...)
}

func newConstraintsCommand() *cobra.Command {
	o := newConstraintsOptions()
	cmd := &cobra.Command{
		Use:   "constraints",
		Short: "Print the recommended scheduling constraints for a Redis cluster's StatefulSets",
		Long: `constraints prints the topologySpreadConstraints, pod anti-affinity and node affinity
recommended for a Redis cluster of --shards × --pods-per-shard pods over --zones (the HA rules'
limits as maxSkew), as a StatefulSet template fragment (YAML) to merge into each shard's
StatefulSet:
  - hostname: maxSkew N/3 (minus 1 when 3 divides N; at least 1), DoNotSchedule;
  - zone (2+ zones): maxSkew N/2 (minus 1 when 2 divides N; at least 1), DoNotSchedule;
  - soft maxSkew 1 on hostname (and zone), ScheduleAnyway;
  - required anti-affinity inside the shard on hostname (1 zone) or zone (2+ zones);
  - required node affinity on the zones.
--relaxed-limits drops the "minus 1" ("at most" N/3 and N/2), which avoids the 3-shard deadlock.

With --layout bitnami or ot it prints instead what the chart or operator takes: the values of
Bitnami's redis-cluster chart (redis.topologySpreadConstraints on the release's pods,
redis.nodeAffinityPreset on the zones, redis.podAntiAffinityPreset hard when --nodes leaves every
pod a node of its own) or the fields of OT's RedisCluster (spec.redisLeader/redisFollower
topologySpreadConstraints and node affinity, the role anti-affinity annotation). Neither can name a
shard, so the anti-affinity inside a shard is not among them (lint says what it costs, as a
note). Applied, they pass lint: no finding but MasterQuorum where the shards and zones leave one.
-o json prints them as JSON alone (helm takes a JSON values file; kubectl patch --type merge a
RedisCluster), the comments as note lines on stderr. --values-path KEY nests Bitnami's values
under an umbrella chart's key for the subchart (its name or alias; dotted for a deeper one).

These constraints place pods, not roles: kube-scheduler knows no Redis role, so nothing here keeps
the masters apart, and the operator's pod -0 = master convention drifts after every failover. The
output says so in a comment, and says which loss the cluster cannot survive whatever the placement
when its shards and zones leave one (2 shards; 4 shards in 3 zones; any cluster in 2 zones):
redis-rebalancer's MasterQuorum rule checks the masters and fixes them with failovers.`,
		Example: `  redis-rebalancer constraints --shards 5 --pods-per-shard 2 --zones zone-a,zone-b,zone-c \
    --cluster-name rc1 --shard rc1-s0
  redis-rebalancer constraints --layout bitnami --shards 5 --pods-per-shard 2 \
    --zones zone-a,zone-b,zone-c --cluster-name redis-cluster
  redis-rebalancer constraints --layout bitnami --shards 3 --pods-per-shard 2 --nodes 6 \
    --cluster-name cache --values-path redis-cluster -o json > values.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := o.input()
			if err != nil {
				return &exitError{ExitError, err}
			}
			if o.layout != "" {
				return o.printChartValues(cmd.OutOrStdout(), cmd.ErrOrStderr(), in)
			}
			if o.valuesPath != "" || o.chartName != "" {
				return &exitError{ExitError, fmt.Errorf("--values-path and --chart-name are for the Bitnami chart's values: give --layout bitnami")}
			}
			spread, aff, err := constraints.Generate(in)
			if err != nil {
				return &exitError{ExitError, err}
			}
			frag := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"topologySpreadConstraints": spread, "affinity": aff,
			}}}}
			intro := fmt.Sprintf("# StatefulSet template fragment for shard %q; pods must carry %s=%s and %s=%s.\n", o.shard, o.clusterLabel, o.clusterName, o.shardLabel, o.shard)
			return o.print(cmd.OutOrStdout(), cmd.ErrOrStderr(), in, frag, intro, o.notes(in))
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// printChartValues writes the values of the chart --layout names for the cluster in (N pods,
// its zones), headed by comments saying where they go (YAML), or alone (-o json) with the
// comments as note lines on errOut.
func (o *constraintsOptions) printChartValues(out, errOut io.Writer, in constraints.Input) error {
	chart := lint.Chart(o.layout)
	if chart != lint.ChartBitnami && chart != lint.ChartOT {
		return &exitError{ExitError, fmt.Errorf("--layout %q: want bitnami or ot", o.layout)}
	}
	// A Helm release is named by a DNS-1123 label, a RedisCluster by a DNS-1123 subdomain.
	check := validation.IsDNS1123Label
	if chart == lint.ChartOT {
		check = validation.IsDNS1123Subdomain
	}
	if msgs := check(o.clusterName); len(msgs) > 0 {
		return &exitError{ExitError, fmt.Errorf("--layout %s: --cluster-name %q: not a name the chart takes: %s", o.layout, o.clusterName, strings.Join(msgs, "; "))}
	}
	// The chart's constraints are generated over its N pods, with the shards' own bounds.
	if _, _, err := constraints.Generate(in); err != nil {
		return &exitError{ExitError, err}
	}
	n := in.Shards * in.PodsPerShard
	if n > constraints.MaxShards {
		return &exitError{ExitError, fmt.Errorf("--layout %s: %d shards × %d pods = %d pods: the chart's constraints are written for at most %d pods (lower --shards or --pods-per-shard)", o.layout, in.Shards, in.PodsPerShard, n, constraints.MaxShards)}
	}
	path, err := lint.ParseValuesPath(o.valuesPath)
	if err != nil {
		return &exitError{ExitError, fmt.Errorf("--values-path: %w", err)}
	}
	if len(path) > 0 && chart != lint.ChartBitnami {
		return &exitError{ExitError, fmt.Errorf("--values-path nests Helm values: --layout bitnami only (--layout %s prints a RedisCluster's fields)", o.layout)}
	}
	if o.chartName != "" && chart != lint.ChartBitnami {
		return &exitError{ExitError, fmt.Errorf("--chart-name names the Bitnami chart's pods: --layout bitnami only")}
	}
	sel := lint.SelectorOf(chart, o.clusterName)
	if name := cmp.Or(o.chartName, lastKey(path)); chart == lint.ChartBitnami && name != "" {
		if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
			return &exitError{ExitError, fmt.Errorf("--chart-name %q: not a label value: %s", name, strings.Join(errs, "; "))}
		}
		sel[lint.BitnamiNameLabel] = name
	}
	values, err := lint.ChartValueTree(lint.ChartInput{Chart: chart, Selector: sel, N: n, Nodes: o.nodes,
		Zones: in.Zones, ZoneKey: in.ZoneKey, Relaxed: in.Relaxed, ValuesPath: path})
	if err != nil {
		return &exitError{ExitError, fmt.Errorf("--layout %s: %w", o.layout, err)}
	}
	var notes []string
	switch chart {
	case lint.ChartBitnami:
		where := "helm upgrade --reuse-values -f this file"
		if len(path) > 0 {
			where = fmt.Sprintf("nested under %s: the umbrella chart's values, helm upgrade --reuse-values -f this file", o.valuesPath)
		}
		notes = append(notes, fmt.Sprintf("Values of Bitnami's redis-cluster chart for release %q (%s), selecting its pods by %s=%s (--chart-name for an alias or nameOverride). The chart names no shard, so no value keeps exactly a shard's pods apart.",
			o.clusterName, where, lint.BitnamiNameLabel, sel[lint.BitnamiNameLabel]))
		if o.nodes == 0 || n > o.nodes {
			notes = append(notes, fmt.Sprintf("redis.podAntiAffinityPreset: hard (a node per pod) is left out: it needs at least %d nodes in the allowed zones (--nodes).", n))
		}
	case lint.ChartOT:
		notes = append(notes, fmt.Sprintf("Fields of OT's RedisCluster %q (merge into it; the annotation needs the operator's webhook). It names no shard: the annotation keeps leader-i and follower-i off one node, and nothing keeps them in different zones.", o.clusterName))
	}
	return o.print(out, errOut, in, values, "", append(notes, o.notes(in)...))
}

// notes returns what every output of the command says: the note on roles, and MasterQuorum's
// when in's shards and zones leave a loss no placement survives.
func (o *constraintsOptions) notes(in constraints.Input) []string {
	notes := []string{"Note: " + lint.RolesNote + "."}
	if q := policies.QuorumFor(in.Shards, len(in.Zones), in.Shards*in.PodsPerShard); q.Note != "" {
		notes = append(notes, fmt.Sprintf("MasterQuorum: %s, one master each: %s.", policies.Plural(in.Shards, "shard"), q.Note))
	}
	return notes
}

// print writes v as -o says: JSON alone, the notes as note lines on errOut; or YAML headed by the
// command's summary line, intro (as it is) and the notes as comments.
func (o *constraintsOptions) print(out, errOut io.Writer, in constraints.Input, v any, intro string, notes []string) error {
	if o.output == "json" {
		for _, note := range notes {
			fmt.Fprintf(errOut, "note: %s\n", strings.TrimPrefix(note, "Note: "))
		}
		return printJSON(out, v)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return &exitError{ExitError, err}
	}
	fmt.Fprintf(out, "# redis-rebalancer constraints: N=%d (%d shards x %d pods), zones [%s], relaxed=%v\n%s",
		in.Shards*in.PodsPerShard, in.Shards, in.PodsPerShard, strings.Join(in.Zones, " "), in.Relaxed, intro)
	for _, note := range notes {
		writeComment(out, note)
	}
	_, err = out.Write(b)
	return err
}

// lastKey returns the last key of a values path ("" for none).
func lastKey(path []string) string {
	if len(path) == 0 {
		return ""
	}
	return path[len(path)-1]
}
