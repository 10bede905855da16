package lint

import (
	"fmt"
	"sort"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// budget is one PodDisruptionBudget as lint reads it: the members of the cluster it selects and
// how many of them it lets be disrupted at once.
type budget struct {
	pdb     *policyv1.PodDisruptionBudget
	members map[int]bool
	// allowed is how many selected pods may be unavailable together: maxUnavailable, or the
	// selected pods minus minAvailable (percentages of the selected pods rounded up, as the
	// disruption controller does).
	allowed int
	// spec says it in the PodDisruptionBudget's words ("maxUnavailable 2").
	spec string
}

// budgets reads c's PodDisruptionBudgets.
func budgets(c *policies.Cluster) []budget {
	var out []budget
	for _, pdb := range c.PodDisruptionBudgets {
		if pdb.Spec.Selector == nil {
			continue // selects nothing
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		b := budget{pdb: pdb, members: map[int]bool{}}
		for i, m := range c.Members {
			if m.Pod.Namespace == pdb.Namespace && sel.Matches(labels.Set(m.Pod.Labels)) {
				b.members[i] = true
			}
		}
		expected := len(b.members)
		switch {
		case pdb.Spec.MaxUnavailable != nil:
			v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true)
			if err != nil {
				continue
			}
			b.allowed, b.spec = v, "maxUnavailable "+pdb.Spec.MaxUnavailable.String()
		case pdb.Spec.MinAvailable != nil:
			v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, expected, true)
			if err != nil {
				continue
			}
			b.allowed, b.spec = expected-v, fmt.Sprintf("minAvailable %s of %d pods", pdb.Spec.MinAvailable.String(), expected)
		default:
			continue // no budget: the Eviction API allows everything it selects
		}
		out = append(out, b)
	}
	return out
}

// disruptionBudgets returns the DisruptionBudget findings of c (Bitnami's fix named under
// valuesPath): the PodDisruptionBudgets that let a
// drain take two pods of one shard at once (a master and its replica), which one budget per
// shard (maxUnavailable 1) never does. Two pods of a shard are protected when some
// budget selects both and lets at most one of its pods be unavailable. Findings are grouped by
// cause: no budget selects the shard's pods; budgets that split the shard (a budget per role, as
// OT's leader/follower pair); a budget over both pods that allows more than one (a per-release
// budget with maxUnavailable above 1).
func disruptionBudgets(c *policies.Cluster, chart Chart, valuesPath []string) []Finding {
	bs := budgets(c)
	type cause struct {
		kind  string // "none", "split", "loose"
		names string // the budgets involved, sorted, comma-separated
	}
	shardsOf := map[cause][]string{}
	example := map[cause][2]string{}
	var order []cause
	for _, s := range c.Shards {
		if len(s.Members) < 2 {
			continue
		}
		var found *cause
		var pair [2]string
	pairs:
		for x, a := range s.Members {
			for _, b := range s.Members[x+1:] {
				var both, either []string
				protected := false
				for _, bu := range bs {
					switch {
					case bu.members[a] && bu.members[b]:
						both = append(both, bu.pdb.Name+" ("+bu.spec+")")
						if bu.allowed <= 1 {
							protected = true
						}
					case bu.members[a] || bu.members[b]:
						either = append(either, bu.pdb.Name)
					}
				}
				if protected {
					continue
				}
				pair = [2]string{c.Members[a].Pod.Name, c.Members[b].Pod.Name}
				switch {
				case len(both) > 0:
					found = &cause{"loose", joinSorted(both)}
				case len(either) > 0:
					found = &cause{"split", joinSorted(either)}
				default:
					found = &cause{"none", ""}
				}
				break pairs
			}
		}
		if found == nil {
			continue
		}
		if _, ok := shardsOf[*found]; !ok {
			order = append(order, *found)
			example[*found] = pair
		}
		shardsOf[*found] = append(shardsOf[*found], s.Name)
	}
	var out []Finding
	for _, k := range order {
		shards, pair := shardsOf[k], example[k]
		f := Finding{Namespace: c.Namespace, Cluster: c.Name, Kind: DisruptionBudget,
			Want: "a PodDisruptionBudget selecting every pod of a shard with maxUnavailable 1 (one per shard, or one for the cluster)"}
		which := fmt.Sprintf("shard %s (%s and %s)", shards[0], pair[0], pair[1])
		if len(shards) > 1 {
			which = fmt.Sprintf("%d shards (%s: %s and %s, ...)", len(shards), shards[0], pair[0], pair[1])
		}
		switch k.kind {
		case "none":
			f.Got = "none"
			f.Message = fmt.Sprintf("no PodDisruptionBudget selects two pods of %s: a drain may take a master and its replica together", which)
		case "split":
			f.Got = "PodDisruptionBudgets " + k.names + ", none selecting a whole shard"
			f.Message = fmt.Sprintf("PodDisruptionBudgets %s each let a pod go, but none selects two pods of %s: a drain may take a master and its replica together (as budgets per role do)", k.names, which)
		case "loose":
			f.Got = "PodDisruptionBudget " + k.names
			f.Message = fmt.Sprintf("PodDisruptionBudget %s lets more than one of its pods be unavailable at once, two of %s among them: a drain may take a master and its replica together", k.names, which)
		}
		f.Message += "; " + budgetFix(chart, valuesPath)
		if chart == ChartOT {
			f.Values = otBudget(c)
		}
		out = append(out, f)
	}
	return out
}

// budgetFix says how to protect every shard in chart's terms (Bitnami's value under valuesPath).
func budgetFix(chart Chart, valuesPath []string) string {
	switch chart {
	case ChartBitnami:
		return "set the chart's " + valuesKey(valuesPath, "pdb.maxUnavailable: 1") + " (its budget covers the whole release: one pod of the cluster at a time)"
	case ChartOT:
		return "the RedisCluster's pdb fields make one budget per role, which cannot protect a shard: disable them (spec.redisLeader.pdb.enabled and spec.redisFollower.pdb.enabled false) and create one PodDisruptionBudget for the cluster with maxUnavailable 1 (below)"
	}
	return "give each shard a PodDisruptionBudget with maxUnavailable 1, or the cluster one with maxUnavailable 1"
}

// otBudget returns the PodDisruptionBudget that protects every shard of an OT cluster: one over
// the cluster's pods (cluster=<name>), maxUnavailable 1.
func otBudget(c *policies.Cluster) string {
	out, err := yaml.Marshal(map[string]any{
		"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
		"metadata": map[string]string{"name": c.Name, "namespace": c.Namespace},
		"spec": policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: chartSelector(c, ChartOT)},
		},
	})
	if err != nil {
		return ""
	}
	return string(out)
}

func joinSorted(names []string) string {
	sort.Strings(names)
	return strings.Join(names, ", ")
}
