package policies

import "fmt"

// RuleInfo is a rule's entry in the rule registry: the one place that says what the rule is
// called, whether it is hard or soft, when it applies, what it asks for and what fixes it, and
// that holds its check. Evaluate runs exactly the registered checks; the command line's help,
// the metrics' per-rule series and the generated rule reference (hack/gendocs) read the same
// entries.
type RuleInfo struct {
	// Name is the rule's stable name, as violations, metrics and the JSON output carry it.
	Name Rule
	// Soft marks a soft rule: its violations are reported (Violation.Soft) and never make a
	// Redis cluster non-compliant, so nothing is evicted or failed over for it. Hard rules decide
	// compliance.
	Soft bool
	// AppliesWhen says, in a few words, for which Redis clusters the rule is checked ("always",
	// "exactly 2 zones", ...); Z is the number of zones the cluster's pods may use.
	AppliesWhen string
	// Description says in one line what holds when the rule is kept.
	Description string
	// Fix says what fixes a violation: the moves (a master failed over first, the pod evicted
	// through the Eviction API and re-placed by kube-scheduler) or failovers the rebalancer
	// plans, or what the rebalancer cannot do and an operator must.
	Fix string

	// lowerBound, for a rule whose excess sets Summary.LowerBound (State.Excess), says in words
	// why lb evictions are needed; nil for the other rules.
	lowerBound func(lb int) string
	// check returns the rule's violations under a placement, without Pods and Message when
	// brief; Soft is set by the caller from the entry.
	check func(c *Cluster, a ruleArgs) []Violation
}

// ruleArgs is what a rule's check reads: the placement, its grouping by node and zone, the
// masters (MasterQuorum), and whether Pods and Message may be left out.
type ruleArgs struct {
	p     Placement
	g     *grouping
	ms    Masters
	brief bool
}

// LowerBoundReason says in words why lb evictions are at least needed when the rule's excess
// sets Summary.LowerBound (one eviction per pod above a limit, ...), or "" when the rule's
// excess bounds nothing.
func (r RuleInfo) LowerBoundReason(lb int) string {
	if r.lowerBound == nil {
		return ""
	}
	return r.lowerBound(lb)
}

// registry lists every rule, hard rules first, in the order the documentation lists them.
// Evaluate runs their checks in this order; EvaluateWith sorts the violations afterwards.
var registry = []RuleInfo{
	{
		Name:        ShardSeparation,
		AppliesWhen: "always: per node when Z ≤ 1, per zone when Z ≥ 2",
		Description: "no two pods of one shard share a node (Z ≤ 1) or a zone (Z ≥ 2)",
		Fix:         "moves: evict the shard's extra pods from the shared node or zone",
		lowerBound: func(lb int) string {
			return fmt.Sprintf("%d pods share a node or zone with a pod of their shard, one eviction each", lb)
		},
		check: func(c *Cluster, a ruleArgs) []Violation { return c.shardSeparation(a.p, a.brief) },
	},
	{
		Name:        MaxPodsPerNode,
		AppliesWhen: "always",
		Description: "every node holds fewer than N/3 of the cluster's pods (at most N/3 with relaxed limits)",
		Fix:         "moves: evict the pods above the limit from the node",
		lowerBound: func(lb int) string {
			return fmt.Sprintf("%d pods above the per-node limit, one eviction each", lb)
		},
		check: func(c *Cluster, a ruleArgs) []Violation { return c.maxPerNode(a.g, a.brief) },
	},
	{
		Name:        ZoneEvenSplit,
		AppliesWhen: "Z = 2",
		Description: "the two zones' pod counts differ by at most N mod 2",
		Fix:         "moves: evict pods from the fuller zone (one eviction narrows the difference by at most 2)",
		lowerBound: func(int) string {
			return "the two zones' pod counts differ too much, and one eviction narrows the difference by at most 2"
		},
		check: func(c *Cluster, a ruleArgs) []Violation { return c.zoneEvenSplit(a.g, a.brief) },
	},
	{
		Name:        MaxPodsPerZone,
		AppliesWhen: "Z ≥ 3",
		Description: "every zone holds fewer than N/2 of the cluster's pods (at most N/2 with relaxed limits)",
		Fix:         "moves: evict the pods above the limit from the zone",
		lowerBound: func(lb int) string {
			return fmt.Sprintf("%d pods above the per-zone limit, one eviction each", lb)
		},
		check: func(c *Cluster, a ruleArgs) []Violation { return c.maxPerZone(a.g, a.brief) },
	},
	{
		Name:        AllowedZones,
		AppliesWhen: "the pods' required node affinity lists zones",
		Description: "no pod runs outside the zones the node affinity lists",
		Fix:         "moves: evict the pods outside the allowed zones",
		lowerBound: func(lb int) string {
			return fmt.Sprintf("%d pods run outside the allowed zones, one eviction each", lb)
		},
		check: func(c *Cluster, a ruleArgs) []Violation { return c.allowedZones(a.g, a.brief) },
	},
	{
		Name:        TopologySpread,
		AppliesWhen: "a pod carries a DoNotSchedule topology spread constraint",
		Description: "every DoNotSchedule constraint holds as kube-scheduler counts it: count − global minimum ≤ maxSkew in every eligible domain",
		Fix:         "moves: evict pods from the domains whose skew exceeds maxSkew",
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.topologySpread(a.p, a.brief) },
	},
	{
		Name:        Unschedulable,
		AppliesWhen: "always",
		Description: "no pod is Pending as Unschedulable, and no move leaves a pod without a node",
		Fix:         "moves that free a node the Pending pod fits (check's pending list names the fewest); otherwise more nodes or capacity",
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.unschedulable(a.p, a.brief) },
	},
	{
		Name:        MasterQuorum,
		AppliesWhen: "the roles are known (Redis live, --role-label offline)",
		Description: "with M the masters serving slots, no node holds M/2 or more of them, nor (Z ≥ 3) a zone; where no placement can, the masters spread evenly",
		Fix:         "failovers: CLUSTER FAILOVER to a replica elsewhere (no pod moves, nothing is evicted)",
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.masterQuorum(a.p, a.ms, a.brief) },
	},
	{
		Name:        NodeSpread,
		Soft:        true,
		AppliesWhen: "Z ≥ 2",
		Description: "inside each zone, the pods spread over its usable nodes within 1",
		Fix:         "nothing: reported only",
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.nodeSpread(a.g) },
	},
	{
		Name:        ZoneBalance,
		Soft:        true,
		AppliesWhen: "Z ≥ 2",
		Description: "the pods spread over the allowed zones within 1",
		Fix:         "nothing: reported only",
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.zoneBalance(a.g) },
	},
}

// Rules returns every registered rule, hard rules first, in the order the documentation lists
// them. The slice is a copy.
func Rules() []RuleInfo { return append([]RuleInfo(nil), registry...) }

// LookupRule returns the registry's entry for r, and false when r is not a registered rule.
func LookupRule(r Rule) (RuleInfo, bool) {
	for _, info := range registry {
		if info.Name == r {
			return info, true
		}
	}
	return RuleInfo{}, false
}

// evaluate runs the registered checks (the hard ones only when hardOnly) under a, and marks each
// violation Soft as its rule is.
func (c *Cluster) evaluate(a ruleArgs, hardOnly bool) []Violation {
	var out []Violation
	for i := range registry {
		r := &registry[i]
		if hardOnly && r.Soft {
			continue
		}
		from := len(out)
		out = append(out, r.check(c, a)...)
		for k := from; k < len(out); k++ {
			out[k].Soft = r.Soft
		}
	}
	return out
}
