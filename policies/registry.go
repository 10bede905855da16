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
	// Optional marks a rule that is judged only when a policy enables it (Options.Rules, the
	// policy's rules.enabled); the other rules are judged unless a policy disables them.
	Optional bool
	// Options names the policy fields that tune the rule ("rules.relaxedLimits"), none when the
	// rule has no option.
	Options []string

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
			return fmt.Sprintf("%s %s a node or zone with a pod of %s shard, one eviction each", Plural(lb, "pod"), Agree(lb, "shares", "share"), Agree(lb, "its", "their"))
		},
		check: func(c *Cluster, a ruleArgs) []Violation { return c.shardSeparation(a.p, a.brief) },
	},
	{
		Name:        MaxPodsPerNode,
		AppliesWhen: "always",
		Options:     []string{"rules.relaxedLimits"},
		Description: "every node holds fewer than N/3 of the cluster's pods (at most N/3 with relaxed limits)",
		Fix:         "moves: evict the pods above the limit from the node",
		lowerBound: func(lb int) string {
			return fmt.Sprintf("%s above the per-node limit, one eviction each", Plural(lb, "pod"))
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
		Options:     []string{"rules.relaxedLimits"},
		Description: "every zone holds fewer than N/2 of the cluster's pods (at most N/2 with relaxed limits)",
		Fix:         "moves: evict the pods above the limit from the zone",
		lowerBound: func(lb int) string {
			return fmt.Sprintf("%s above the per-zone limit, one eviction each", Plural(lb, "pod"))
		},
		check: func(c *Cluster, a ruleArgs) []Violation { return c.maxPerZone(a.g, a.brief) },
	},
	{
		Name:        AllowedZones,
		AppliesWhen: "the pods' required node affinity lists zones",
		Description: "no pod runs outside the zones the node affinity lists",
		Fix:         "moves: evict the pods outside the allowed zones",
		lowerBound: func(lb int) string {
			return fmt.Sprintf("%s %s outside the allowed zones, one eviction each", Plural(lb, "pod"), Agree(lb, "runs", "run"))
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
		Fix:         softFix,
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.nodeSpread(a.g) },
	},
	{
		Name:        ZoneBalance,
		Soft:        true,
		AppliesWhen: "Z ≥ 2",
		Description: "the pods spread over the allowed zones within 1",
		Fix:         softFix,
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.zoneBalance(a.g) },
	},
	{
		Name:        SoftTopologySpread,
		Soft:        true,
		Optional:    true,
		AppliesWhen: "enabled, and a pod carries a ScheduleAnyway topology spread constraint",
		Description: "every ScheduleAnyway constraint holds, counted as TopologySpread counts a DoNotSchedule one: count − global minimum ≤ maxSkew in every eligible domain",
		Fix:         softFix,
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.softTopologySpread(a.p, a.brief) },
	},
	{
		Name:        PreferredAntiAffinity,
		Soft:        true,
		Optional:    true,
		AppliesWhen: "enabled, and a pod carries a preferred pod anti-affinity term",
		Description: "no pod shares a preferred anti-affinity term's topology domain with a pod the term selects",
		Fix:         softFix,
		check:       func(c *Cluster, a ruleArgs) []Violation { return c.preferredAntiAffinity(a.p, a.brief) },
	},
}

// softFix is what fixes a soft rule's violation.
const softFix = "reported only; with plan.softEvictions, moves after the hard rules hold, each keeping every hard rule"

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

// RuleSetting is how a policy judges one rule (Options.Rules).
type RuleSetting struct {
	// Enabled says whether the rule is judged. A rule that is not is neither checked nor
	// reported, and no plan acts on it.
	Enabled bool
	// Soft says whether its violations are soft: reported (Violation.Soft) and never deciding
	// compliance; only the soft fix acts on them (the planner's soft evictions). A rule the
	// registry marks soft cannot be made hard.
	Soft bool
}

// DefaultSetting returns the setting a rule has when a policy says nothing of it: enabled unless
// Optional, soft as the registry says.
func (r RuleInfo) DefaultSetting() RuleSetting {
	return RuleSetting{Enabled: !r.Optional, Soft: r.Soft}
}

// resolveRules returns, per registry entry, the setting opts.Rules gives it (the default when it
// gives none). It fails on a rule the registry does not hold and on a soft rule made hard.
func resolveRules(opts map[Rule]RuleSetting) ([]RuleSetting, error) {
	out := make([]RuleSetting, len(registry))
	for i, r := range registry {
		out[i] = r.DefaultSetting()
	}
	for name, s := range opts {
		i := ruleIndex(name)
		if i < 0 {
			return nil, fmt.Errorf("rule %q: no such rule", name)
		}
		if registry[i].Soft && !s.Soft {
			return nil, fmt.Errorf("rule %s: a soft rule cannot be made hard (the planner fixes soft rules only with soft evictions)", name)
		}
		out[i] = s
	}
	return out, nil
}

// ruleIndex returns r's position in the registry, -1 when it is not registered.
func ruleIndex(r Rule) int {
	for i := range registry {
		if registry[i].Name == r {
			return i
		}
	}
	return -1
}

// Setting returns how the model judges rule r (its Options.Rules, defaults filled); the zero
// RuleSetting (not judged) for a rule the registry does not hold.
func (m *Model) Setting(r Rule) RuleSetting {
	if i := ruleIndex(r); i >= 0 {
		return m.rules[i]
	}
	return RuleSetting{}
}

// enforced reports whether rule r is judged as a hard rule: the planner acts on it.
func (m *Model) enforced(r Rule) bool {
	s := m.Setting(r)
	return s.Enabled && !s.Soft
}

// evaluate runs the checks of the rules the model judges (the hard ones only when hardOnly;
// the soft ones only when softOnly) under a, and marks each violation Soft as its setting is.
func (c *Cluster) evaluate(a ruleArgs, hardOnly, softOnly bool) []Violation {
	var out []Violation
	for i := range registry {
		r, s := &registry[i], c.model.rules[i]
		if !s.Enabled || hardOnly && s.Soft || softOnly && !s.Soft {
			continue
		}
		from := len(out)
		out = append(out, r.check(c, a)...)
		for k := from; k < len(out); k++ {
			out[k].Soft = s.Soft
		}
	}
	return out
}

// Plural is n and what, with an s when n is not 1 ("1 pod", "3 pods"): the counts of the
// messages of the rules and the commands.
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Agree is one when n is 1 and many otherwise: the verb (or pronoun) that agrees with a count
// Plural writes ("1 pod runs", "3 pods run").
func Agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
