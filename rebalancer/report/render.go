package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
)

// maxEmptyNodesShown is the node count above which RenderMap lists only nodes holding pods.
const maxEmptyNodesShown = 30

// RoleMark returns M for a master, R for a replica, ? when unknown.
func RoleMark(r policies.Role) string {
	switch r {
	case policies.RoleMaster:
		return "M"
	case policies.RoleReplica:
		return "R"
	}
	return "?"
}

// RenderMap writes a zones × nodes map of cluster c under placement p: one line per node, grouped
// by zone, listing the cluster's pods with their role (M master, R replica, ? unknown), then the
// pods that are not placed (P pending, T terminating). With more than 30 nodes, nodes that hold
// none of the cluster's pods are only counted.
func RenderMap(w io.Writer, c *policies.Cluster, p policies.Placement) {
	m := c.Model()
	onNode := map[int][]int{}
	for i, n := range p {
		if n >= 0 {
			onNode[n] = append(onNode[n], i)
		}
	}
	zones := map[string][]*policies.Node{}
	for _, n := range m.Nodes {
		zones[n.Zone] = append(zones[n.Zone], n)
	}
	names := make([]string, 0, len(zones))
	for z := range zones {
		names = append(names, z)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// The last column is not tab-terminated: tabwriter then does not pad it to the widest row.
	fmt.Fprintf(tw, "  ZONE\tNODE\tPODS\n")
	showEmpty := len(m.Nodes) <= maxEmptyNodesShown
	for _, z := range names {
		label := z
		if label == "" {
			label = "(no zone)"
		}
		empty := 0
		for _, n := range zones[z] {
			pods := onNode[n.Index]
			if len(pods) == 0 && !showEmpty {
				empty++
				continue
			}
			var cells []string
			for _, i := range pods {
				cells = append(cells, c.Members[i].Pod.Name+" "+RoleMark(c.Members[i].Role))
			}
			sort.Strings(cells)
			mark := ""
			if n.Obj.Spec.Unschedulable {
				mark = " (cordoned)"
			}
			fmt.Fprintf(tw, "  %s\t%s%s\t%s\n", label, n.Name, mark, strings.Join(cells, ", "))
			label = ""
		}
		if empty > 0 {
			fmt.Fprintf(tw, "  %s\t(+%s without pods)\t\n", label, policies.Plural(empty, "node"))
		}
	}
	var unplaced []string
	for i, n := range p {
		if n < 0 {
			mark := "P"
			if c.Members[i].Terminating {
				mark = "T"
			}
			unplaced = append(unplaced, c.Members[i].Pod.Name+" "+mark)
		}
	}
	if len(unplaced) > 0 {
		fmt.Fprintf(tw, "  -\t(not placed)\t%s\n", strings.Join(unplaced, ", "))
	}
	tw.Flush()
}

// RenderViolations writes one line per violation ("  ✗ MaxPodsPerNode n1: ..."; soft ones with
// "~"), wrapped to TextWidth columns, or "  ✓ every hard rule holds" when there is no hard
// violation.
func RenderViolations(w io.Writer, vs []policies.Violation) {
	w = newWrapWriter(w)
	if len(policies.Hard(vs)) == 0 {
		fmt.Fprintln(w, "  ✓ every hard rule holds")
	}
	for _, v := range vs {
		mark := "✗"
		if v.Soft {
			mark = "~"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, v.Rule, v.Message)
	}
}

// RenderShards says, under a cluster's header, where its shards came from when it is not the pods'
// controllers ("  shards from Redis: a master and its replicas (CLUSTER NODES)"), and its
// warnings, one per line.
func RenderShards(w io.Writer, c *policies.Cluster) {
	switch c.ShardSource.Kind {
	case policies.ShardRedis:
		fmt.Fprintf(w, "  shards from Redis: a master and its replicas (CLUSTER NODES)\n")
	case policies.ShardLabel:
		fmt.Fprintf(w, "  shards from label %s\n", c.ShardSource.Key)
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}

// RenderAnalysis writes a as tables: per cluster a header, where its shards came from and its
// warnings (RenderShards), the zones × nodes map, the violations, the Pending pods' diagnosis
// and, when withPlans is true, the moves; every line but the map's wrapped to TextWidth columns.
func RenderAnalysis(out io.Writer, m *policies.Model, a *Analysis, withPlans bool) {
	w := newWrapWriter(out)
	byKey := map[string]*policies.Cluster{}
	for _, c := range m.Clusters {
		byKey[c.Key()] = c
	}
	if len(a.Clusters) == 0 {
		fmt.Fprintf(w, "no Redis cluster found (no pod has the label %s)\n", m.Options.ClusterLabel)
	}
	for k, ca := range a.Clusters {
		if k > 0 {
			fmt.Fprintln(w)
		}
		c := byKey[ca.Namespace+"/"+ca.Name]
		fmt.Fprintf(w, "Redis cluster %s/%s: %s (N=%d), %s, zones [%s]\n", ca.Namespace, ca.Name, policies.Plural(ca.Pods, "pod"), ca.N, policies.Plural(len(c.Shards), "shard"), strings.Join(ca.AllowedZones, " "))
		if ca.Without != nil {
			RenderWhatIf(w, ca.Without)
		}
		RenderShards(w, c)
		RenderMap(out, c, c.Current())
		RenderViolations(w, ca.Violations)
		if ca.MasterQuorum.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", ca.MasterQuorum.Note)
		}
		RenderHealth(w, ca.Health)
		for _, p := range ca.Pending {
			fmt.Fprintf(w, "  pending %s: %s\n", p.Pod, p.Why)
			if len(p.Unblock) > 0 {
				fmt.Fprintf(w, "    evicting %s unblocks it\n", strings.Join(p.Unblock, ", "))
			}
		}
		if !withPlans {
			if ca.Infeasible != "" {
				fmt.Fprintf(w, "  no placement can comply: %s\n", ca.Infeasible)
			}
			continue
		}
		switch {
		case ca.BestEffort != nil:
			fmt.Fprintf(w, "  no plan reaches compliance: %s\n", ca.Infeasible)
			RenderHeld(w, ca.Held)
			if len(ca.Moves) == 0 {
				fmt.Fprintf(w, "  best effort: no eviction lowers the violations (%s)\n", PenaltyText(ca.BestEffort.Before))
				break
			}
			fmt.Fprintf(w, "  best-effort plan: %s%s; %s\n", StepsText(ca.Evictions, ca.Failovers), minimalText(ca.Minimal, ca.FailoversMinimal), BestEffortText(*ca.BestEffort))
			renderMoves(w, ca.Moves)
			RenderExposure(w, ca.PendingSteps)
		case ca.Partial != nil:
			fmt.Fprintf(w, "  no plan reaches compliance: %s\n", ca.Infeasible)
			RenderHeld(w, ca.Held)
			fmt.Fprintf(w, "  partial plan: %s; %s\n", StepsText(ca.Evictions, ca.Failovers), PartialText(*ca.Partial))
			renderMoves(w, ca.Moves)
		case ca.Infeasible != "":
			fmt.Fprintf(w, "  no plan: %s\n", ca.Infeasible)
			RenderHeld(w, ca.Held)
		case len(ca.Moves) == 0 && !ca.Compliant:
			fmt.Fprintf(w, "  no move: the scheduler places the Pending pods by itself; compliant after: %v\n", ca.CompliantAfter)
		case len(ca.Moves) == 0:
			fmt.Fprintln(w, "  nothing to do")
		default:
			fmt.Fprintf(w, "  plan: %s%s; compliant after: %v%s\n", StepsText(ca.Evictions, ca.Failovers), minimalText(ca.Minimal, ca.FailoversMinimal), ca.CompliantAfter, SoftFixText(ca.SoftEvictions, ca.SoftFix))
			renderMoves(w, ca.Moves)
			RenderExposure(w, ca.PendingSteps)
		}
	}
}

// RenderHeld writes what holds the pods that no eviction takes out of the domain where they
// break a rule (plan.Held): one line per pod with the filter's reasons, one with the fixes.
func RenderHeld(w io.Writer, held []plan.Held) {
	if len(held) == 0 {
		return
	}
	fmt.Fprintln(w, "  what holds the pods (evicted now, each fits no node outside the domain where it breaks a rule):")
	// Pods held alike are written once, together.
	type group struct {
		pods         []string
		domains, why string
		fix          []string
	}
	var groups []*group
	for _, h := range held {
		domains := strings.Join(h.Domains, ", ")
		i := slices.IndexFunc(groups, func(g *group) bool {
			return g.domains == domains && g.why == h.Why && slices.Equal(g.fix, h.Fix)
		})
		if i < 0 {
			groups = append(groups, &group{domains: domains, why: h.Why, fix: h.Fix})
			i = len(groups) - 1
		}
		groups[i].pods = append(groups[i].pods, fmt.Sprintf("%s (%s)", h.Pod, h.Node))
	}
	for _, g := range groups {
		fmt.Fprintf(w, "    %s, held in %s: %s\n", strings.Join(g.pods, ", "), g.domains, g.why)
		fmt.Fprintf(w, "      to lift it: %s\n", strings.Join(g.fix, "; "))
	}
}

// renderMoves writes a plan's moves, one per line with its reason; a soft move's reason is
// marked "(soft)".
func renderMoves(w io.Writer, moves []plan.Move) {
	for i, mv := range moves {
		fmt.Fprintf(w, "  %d. %s\n     because: %s%s\n", i+1, MoveText(mv), mv.Reason, softMark(mv))
	}
}

// softMark is " (soft)" for a move of the soft fix, "" otherwise.
func softMark(mv plan.Move) string {
	if mv.Soft {
		return " (soft)"
	}
	return ""
}

// PenaltyText says a best-effort penalty in words: "excess 3 over the hard rules' limits", with
// "2 pods without a node, " before it when there are.
func PenaltyText(p policies.Penalty) string {
	s := fmt.Sprintf("excess %d over the hard rules' limits", p.Excess)
	if p.Unplaceable > 0 {
		s = plural(p.Unplaceable, "pod") + " without a node, " + s
	}
	return s
}

// BestEffortText says what a best-effort plan reaches: "best effort: excess over the hard rules'
// limits 5 → 1", and "; pods without a node 2 → 0" when there are any.
func BestEffortText(b plan.BestEffort) string {
	s := fmt.Sprintf("best effort: excess over the hard rules' limits %d → %d", b.Before.Excess, b.After.Excess)
	if b.Before.Unplaceable+b.After.Unplaceable > 0 {
		s += fmt.Sprintf("; pods without a node %d → %d", b.Before.Unplaceable, b.After.Unplaceable)
	}
	return s
}

// PartialText says what a plan of failovers only does: "Redis made safer: MasterQuorum excess 3 →
// 0 (it holds), no pod moves".
func PartialText(p plan.Partial) string {
	holds := ""
	if p.QuorumAfter == 0 {
		holds = " (it holds: the cluster survives the loss of any one node or zone)"
	}
	return fmt.Sprintf("Redis made safer: MasterQuorum excess %d → %d%s, no pod moves", p.QuorumBefore, p.QuorumAfter, holds)
}

// SoftFixText says what a plan's soft fix does ("; then 1 soft eviction: soft excess 2 → 0"),
// "" without one.
func SoftFixText(evictions int, f *plan.SoftFix) string {
	if f == nil || f.Before == 0 {
		return ""
	}
	if evictions == 0 {
		return fmt.Sprintf("; soft excess %d, no soft eviction lowers it", f.Before)
	}
	return fmt.Sprintf("; then %s: soft excess %d → %d", plural(evictions, "soft eviction"), f.Before, f.After)
}

// RenderWhatIf writes what `plan --without` assumes: the nodes taken away, the hand-off made
// before they go, the masters no replica can take over from, and the pods lost with the nodes.
func RenderWhatIf(w io.Writer, wi *WhatIf) {
	fmt.Fprintf(w, "  as if %s were gone; MasterQuorum over the nodes that stay: %s\n", strings.Join(wi.Nodes, ", "), quorumLimits(wi.MasterQuorum))
	if len(wi.HandOff) == 0 {
		fmt.Fprintln(w, "  hand-off first: none (no master there)")
	}
	for i, mv := range wi.HandOff {
		if i == 0 {
			fmt.Fprintf(w, "  hand-off first: %s\n", plural(len(wi.HandOff), "failover"))
		}
		fmt.Fprintf(w, "    %s\n", MoveText(mv))
	}
	if !wi.QuorumHolds {
		fmt.Fprintln(w, "  ! no failovers keep MasterQuorum over the nodes that stay")
	}
	for _, s := range wi.Stuck {
		fmt.Fprintf(w, "  ! master %s: no replica on a node that stays can take over; its slots fail when its node goes\n", s)
	}
	if len(wi.Lost) > 0 {
		fmt.Fprintf(w, "  pods lost with the nodes, re-created by their controllers: %s\n", strings.Join(wi.Lost, ", "))
	}
	fmt.Fprintln(w, "  without them:")
}

// quorumLimits is MasterQuorum's limits in words ("not checked" when the rule does not apply).
func quorumLimits(q policies.Quorum) string {
	switch {
	case !q.Applies:
		return "not checked (roles unknown)"
	case q.ZoneLimit > 0:
		return fmt.Sprintf("at most %d of %d masters per node, %d per zone", q.NodeLimit, q.Masters, q.ZoneLimit)
	}
	return fmt.Sprintf("at most %d of %d masters per node", q.NodeLimit, q.Masters)
}

// Destination says where a move's pod goes: the expected node and the nodes the scheduler may choose
// instead (CandidatesText), or that it waits Pending; then the Pending pods the move lets the
// scheduler place.
func Destination(mv plan.Move) string {
	s := mv.Expected + "; scheduler may choose " + CandidatesText(mv)
	if mv.WaitsPending {
		s = "waits Pending (no node fits until a later move frees room)"
	}
	for _, p := range mv.Places {
		s += fmt.Sprintf("; then %s is placed on %s", p.Pod, p.Node)
	}
	return s
}

// RenderExposure writes one line per pod a plan lets wait Pending: which shard runs without it,
// during which moves.
func RenderExposure(w io.Writer, es []plan.Exposure) {
	for _, e := range es {
		fmt.Fprintf(w, "  exposure: %s (shard %s) waits Pending after move %d until move %d places it on %s: the shard runs without it meanwhile\n", e.Pod, e.Shard, e.FromMove, e.UntilMove, e.Node)
	}
}

// maxNamesShown is how many node names CandidatesText lists per group before it only counts.
const maxNamesShown = 3

// CandidatesText summarises the nodes the scheduler may choose for mv's pod: the expected node,
// then the other nodes that keep the plan on track, those that leave it ("off plan") and those
// the bounded search could not judge ("undecided"), each group counted with its first names
// ("(none)" without candidates). JSON keeps the full list.
func CandidatesText(mv plan.Move) string {
	if len(mv.Candidates) == 0 {
		return "(none)"
	}
	var on, off, open []string
	expected := false
	for _, c := range mv.Candidates {
		switch {
		case c.Node == mv.Expected:
			expected = true
		case c.OnTrack:
			on = append(on, c.Node)
		case c.Undecided:
			open = append(open, c.Node)
		default:
			off = append(off, c.Node)
		}
	}
	var parts []string
	if expected {
		parts = append(parts, mv.Expected+" (expected)")
	}
	group := func(names []string, what string) {
		if len(names) == 0 {
			return
		}
		shown := names[:min(len(names), maxNamesShown)]
		list := strings.Join(shown, ", ")
		if len(names) > len(shown) {
			list += ", …"
		}
		parts = append(parts, fmt.Sprintf("%d %s: %s", len(names), what, list))
	}
	onTrack := "on track"
	if expected {
		onTrack = "more on track"
	}
	group(on, onTrack)
	group(off, "off plan")
	group(open, "undecided (search budget spent)")
	return strings.Join(parts, "; ")
}

// RenderPlan writes plan p of a run that does not act on it, why in label ("dry run", "outside
// every maintenance window"): a header line with the step counts, then one line per step
// (MoveText, and the reason), then the exposure of its Pending steps; wrapped to TextWidth columns.
func RenderPlan(w io.Writer, label string, p plan.Plan) {
	w = newWrapWriter(w)
	what := "plan"
	switch {
	case p.BestEffort != nil:
		what = "best-effort plan"
	case p.Partial != nil:
		what = "partial plan"
	}
	fmt.Fprintf(w, "%s (%s): %s%s%s\n", what, label, StepsText(p.Evictions, p.Failovers), MinimalNote(p), PlanNote(p))
	for k, mv := range p.Moves {
		fmt.Fprintf(w, "  %d. %s — %s%s\n", k+1, MoveText(mv), mv.Reason, softMark(mv))
	}
	RenderExposure(w, p.PendingSteps)
}

// PlanNote says what a plan does beyond its evictions and failovers: its soft fix
// (SoftFixText), or what a best-effort plan reaches ("; " and BestEffortText).
func PlanNote(p plan.Plan) string {
	switch {
	case p.BestEffort != nil:
		return "; " + BestEffortText(*p.BestEffort)
	case p.Partial != nil:
		return "; " + PartialText(*p.Partial)
	}
	return SoftFixText(p.SoftEvictions, p.Soft)
}

// MoveText says what a planned step does: "evict POD from NODE (ROLE[, fail over to REPLICA on
// NODE first][; then release claim CLAIM: it resyncs in full]) → Outcome", or "fail MASTER
// (NODE) over to REPLICA (NODE): no pod moves".
func MoveText(mv plan.Move) string {
	if mv.Kind == plan.KindFailover {
		return fmt.Sprintf("fail %s (%s) over to %s (%s): no pod moves", mv.From, mv.Node, mv.To, mv.ToNode)
	}
	return fmt.Sprintf("evict %s from %s (%s%s) → %s", mv.Pod, mv.Node, roleAndFailover(mv), releaseText(mv), Destination(mv))
}

// releaseText says which claims a move releases after the eviction: "; then release claim C: it
// resyncs in full" ("" when it releases none).
func releaseText(mv plan.Move) string {
	switch len(mv.ReleaseClaims) {
	case 0:
		return ""
	case 1:
		return "; then release claim " + mv.ReleaseClaims[0] + ": it resyncs in full"
	}
	return "; then release claims " + strings.Join(mv.ReleaseClaims, ", ") + ": it resyncs in full"
}

// StepsText counts a plan's steps: "1 eviction, 2 failovers" (failovers only when there are).
func StepsText(evictions, failovers int) string {
	s := plural(evictions, "eviction")
	if failovers > 0 {
		s += ", " + plural(failovers, "failover")
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// roleAndFailover returns mv's role mark (RoleMark), followed by the failover made before the
// eviction: ", fail over to POD on NODE first" when the plan names the replica, ", fail over
// first" when it does not.
func roleAndFailover(mv plan.Move) string {
	switch {
	case mv.To != "":
		return fmt.Sprintf("%s, fail over to %s on %s first", RoleMark(mv.Role), mv.To, mv.ToNode)
	case mv.Failover:
		return RoleMark(mv.Role) + ", fail over first"
	}
	return RoleMark(mv.Role)
}

// MinimalNote returns ", minimal" when p's number of evictions (and of failovers) is proven
// minimal, ", minimal evictions" when only that is, "" otherwise.
func MinimalNote(p plan.Plan) string { return minimalText(p.Minimal, p.FailoversMinimal) }

func minimalText(minimal, failovers bool) string {
	switch {
	case minimal && failovers:
		return ", minimal"
	case minimal:
		return ", minimal evictions"
	}
	return ""
}
