package policies

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Rule is a stable rule name: it appears in reports, metrics labels and policies, and never changes.
type Rule string

// The rules. Hard rules decide compliance; NodeSpread, ZoneBalance, SoftTopologySpread and
// PreferredAntiAffinity are soft: reported, and acted upon only by the soft fix. The registry
// (Rules, registry.go) says which is which and holds each rule's check; a policy may disable a
// rule or judge a hard one as soft (Options.Rules).
const (
	// ShardSeparation: no two pods of one shard share a node (Z≤1) or a zone (Z≥2): losing one
	// node or zone must never take a shard's master and its replicas together.
	// A node without a zone label is in no zone, as for the operator's zone anti-affinity: only
	// sharing that very node counts.
	ShardSeparation Rule = "ShardSeparation"
	// MaxPodsPerNode: every node holds fewer than N/3 of the cluster's pods (at most N/3 relaxed).
	MaxPodsPerNode Rule = "MaxPodsPerNode"
	// ZoneEvenSplit: with Z=2, the two zones differ by at most N mod 2 pods.
	ZoneEvenSplit Rule = "ZoneEvenSplit"
	// MaxPodsPerZone: with Z≥3, every zone holds fewer than N/2 of the pods (at most N/2 relaxed).
	MaxPodsPerZone Rule = "MaxPodsPerZone"
	// AllowedZones: no pod runs outside the zones the cluster's node affinity lists.
	AllowedZones Rule = "AllowedZones"
	// MasterQuorum: with M the masters that serve slots, no node holds M/2 or more of them, and
	// with Z ≥ 3 no zone either (Redis promotes a replica only with a majority of the masters);
	// where no placement can, masters spread evenly (Quorum). Skipped while the roles are unknown.
	MasterQuorum Rule = "MasterQuorum"
	// TopologySpread: every DoNotSchedule constraint in the placed pods' specs holds: for every
	// eligible topology domain, count − global minimum ≤ maxSkew, counted as kube-scheduler's
	// PodTopologySpread plugin counts (labelSelector plus matchLabelKeys, same namespace only,
	// terminating pods skipped, nodes lacking a key skipped, nodeAffinityPolicy and
	// nodeTaintsPolicy, global minimum 0 below minDomains eligible domains). Count is the skew.
	TopologySpread Rule = "TopologySpread"
	// Unschedulable: no pod of the cluster is Pending with PodScheduled=False/Unschedulable, and, in
	// a simulated placement, no member bound in the snapshot is left unplaced.
	Unschedulable Rule = "Unschedulable"
	// NodeSpread (soft, Z≥2): inside each zone, the pods spread over its nodes within 1.
	NodeSpread Rule = "NodeSpread"
	// ZoneBalance (soft, Z≥2): the pods spread over the allowed zones within 1.
	ZoneBalance Rule = "ZoneBalance"
	// SoftTopologySpread (soft, optional): every ScheduleAnyway constraint in the placed pods'
	// specs holds, counted as TopologySpread counts a DoNotSchedule one (the descheduler's
	// RemovePodsViolatingTopologySpreadConstraint judges them so when asked to). kube-scheduler
	// only prefers such placements, so the rule is soft: reported, and fixed only by soft
	// evictions.
	SoftTopologySpread Rule = "SoftTopologySpread"
	// PreferredAntiAffinity (soft, optional): no placed pod shares a topology domain of one of
	// its preferred pod anti-affinity terms with another pod the term selects (kube-scheduler
	// only scores such terms; Bitnami's chart keeps a shard's pods apart with one by default).
	PreferredAntiAffinity Rule = "PreferredAntiAffinity"
)

// Violation is one broken rule in one topology domain. Its JSON form is part of the `check` and
// `plan` output contract.
type Violation struct {
	// Rule is the rule's stable name.
	Rule Rule `json:"rule"`
	// Soft marks a soft rule (reported, not enforced).
	Soft bool `json:"soft,omitempty"`
	// Domain is the node or zone the violation is about ("" when cluster-wide).
	Domain string `json:"domain,omitempty"`
	// TopologyKey is the key Domain is a value of.
	TopologyKey string `json:"topologyKey,omitempty"`
	// Count is the number of the cluster's pods in Domain (or the skew, for TopologySpread).
	Count int `json:"count"`
	// Limit is the largest Count the rule allows.
	Limit int `json:"limit"`
	// Pods are the pods involved ("namespace/name"), sorted.
	Pods []string `json:"pods,omitempty"`
	// Message says it in words.
	Message string `json:"message"`
}

// NodeLimit returns the most pods of a cluster of size n one node may hold: fewer than n/3, so
// that losing any one node leaves more than two thirds of the pods; at most n/3 when relaxed.
func NodeLimit(n int, relaxed bool) int {
	if relaxed {
		return n / 3
	}
	return (n - 1) / 3 // largest c with 3c < n
}

// ZoneLimit returns the most pods of a cluster of size n one zone may hold (Z≥3): fewer than n/2,
// so that losing any one zone leaves a majority of the pods; at most n/2 when relaxed.
func ZoneLimit(n int, relaxed bool) int {
	if relaxed {
		return n / 2
	}
	return (n - 1) / 2
}

// Evaluate returns every violation of the cluster's rules under placement p with the current
// roles (EvaluateWith(p, c.CurrentMasters())), hard rules first, then by rule name and domain.
func (c *Cluster) Evaluate(p Placement) []Violation { return c.EvaluateWith(p, c.CurrentMasters()) }

// EvaluateWith returns every violation of the cluster's rules under placement p with masters ms
// (MasterQuorum; a plan's failovers change them), hard rules first, then by rule name and domain.
// Members that are unplaced are not counted in any domain. A member placed on the node it runs on
// (or a Pending pod, wherever placed) counts with its own labels and constraints; a member placed
// elsewhere has been re-created and counts with its template's.
func (c *Cluster) EvaluateWith(p Placement, ms Masters) []Violation {
	g := c.group(p)
	out := c.evaluate(ruleArgs{p: p, g: g, ms: ms}, false, false)
	g.release()
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Soft != out[j].Soft {
			return !out[i].Soft
		}
		if out[i].Rule != out[j].Rule {
			return out[i].Rule < out[j].Rule
		}
		return out[i].Domain < out[j].Domain
	})
	return out
}

// EvaluateHard returns the hard violations under p, as Hard(Evaluate(p)) does but without their
// Pods and Message and in no particular order: the cheap form (Rule, Domain, TopologyKey, Count,
// Limit) the planner's search evaluates millions of placements with.
func (c *Cluster) EvaluateHard(p Placement) []Violation {
	g := c.group(p)
	defer g.release()
	return c.evaluate(ruleArgs{p: p, g: g, ms: c.CurrentMasters(), brief: true}, true, false)
}

// EvaluateSoft returns the soft violations under p with masters ms, as the soft ones of
// EvaluateWith(p, ms) but in no particular order and with Pods and Message left out where a
// check can: what the planner's soft fix weighs placements with (SoftExcess).
func (c *Cluster) EvaluateSoft(p Placement, ms Masters) []Violation {
	g := c.group(p)
	defer g.release()
	return c.evaluate(ruleArgs{p: p, g: g, ms: ms, brief: true}, false, true)
}

// SoftExcess sums, over vs's soft violations, how far each is above its limit (Count − Limit,
// at least 1): the measure the planner's soft fix lowers.
func SoftExcess(vs []Violation) int {
	sum := 0
	for _, v := range vs {
		if v.Soft {
			sum += max(v.Count-v.Limit, 1)
		}
	}
	return sum
}

// Hard returns the hard violations of vs.
func Hard(vs []Violation) []Violation {
	var out []Violation
	for _, v := range vs {
		if !v.Soft {
			out = append(out, v)
		}
	}
	return out
}

// Compliant reports whether no hard rule is broken under p with the current roles.
func (c *Cluster) Compliant(p Placement) bool { return len(Hard(c.Evaluate(p))) == 0 }

// CompliantWith reports whether no hard rule is broken under p with masters ms.
func (c *Cluster) CompliantWith(p Placement, ms Masters) bool {
	return len(Hard(c.EvaluateWith(p, ms))) == 0
}

// namesUnless returns c.podNames(idx), or nil when brief.
func (c *Cluster) namesUnless(brief bool, idx []int) []string {
	if brief {
		return nil
	}
	return c.podNames(idx)
}

// unless returns fmt.Sprintf(format, args...), or "" when brief.
func unless(brief bool, format string, args ...any) string {
	if brief {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

func (c *Cluster) podNames(idx []int) []string {
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		out = append(out, c.Members[i].Key())
	}
	sort.Strings(out)
	return out
}

// grouping is a placement's placed members grouped by node (in node order) and by zone (in
// order of first appearance), built once per Evaluate without maps.
type grouping struct {
	order []int // placed members sorted by node, then index
	nodes []memberGroup
	zones []zoneGroup
	// packed and spare are scratch kept for the next use: the sort's keys, and the zone groups
	// of the last use (their node lists are reused).
	packed []int64
	spare  []zoneGroup
}

// release returns g to groupingPool; g is not read after.
func (g *grouping) release() { groupingPool.Put(g) }

// memberGroup is the members on one node: order[from:to].
type memberGroup struct {
	node     int
	from, to int
}

type zoneGroup struct {
	zone  string
	count int
	nodes []int // indexes into grouping.nodes
}

// groupingPool holds the groupings of finished evaluations (evaluated), their memory reused.
var groupingPool = sync.Pool{New: func() any { return new(grouping) }}

// group returns p's grouping, from groupingPool: the caller returns it with g.release once no
// violation it made reads it (violations copy what they keep).
func (c *Cluster) group(p Placement) *grouping {
	g := groupingPool.Get().(*grouping)
	g.order, g.nodes, g.packed = g.order[:0], g.nodes[:0], g.packed[:0]
	for j := range g.zones {
		g.zones[j].nodes = g.zones[j].nodes[:0]
	}
	g.spare, g.zones = g.zones[:cap(g.zones)], g.zones[:0]
	// Sort (node, member) pairs packed in one integer: by node, then member index.
	packed := g.packed
	for i, n := range p {
		if n >= 0 {
			packed = append(packed, int64(n)<<32|int64(i))
		}
	}
	slices.Sort(packed)
	g.packed = packed
	for _, v := range packed {
		g.order = append(g.order, int(v&(1<<32-1)))
	}
	for k := 0; k < len(g.order); {
		n := p[g.order[k]]
		e := k
		for e < len(g.order) && p[g.order[e]] == n {
			e++
		}
		g.nodes = append(g.nodes, memberGroup{node: n, from: k, to: e})
		z := c.zoneOfNode(n)
		zi := -1
		for j := range g.zones {
			if g.zones[j].zone == z {
				zi = j
				break
			}
		}
		if zi < 0 {
			zi = len(g.zones)
			var nodes []int // a zone group's list from an earlier use, emptied
			if zi < len(g.spare) {
				nodes = g.spare[zi].nodes[:0]
			}
			g.zones = append(g.zones, zoneGroup{zone: z, nodes: nodes})
		}
		g.zones[zi].count += e - k
		g.zones[zi].nodes = append(g.zones[zi].nodes, len(g.nodes)-1)
		k = e
	}
	return g
}

// members returns the members on node group ng.
func (g *grouping) members(ng memberGroup) []int { return g.order[ng.from:ng.to] }

// zoneMembers returns the members in zone group zg.
func (g *grouping) zoneMembers(zg zoneGroup) []int {
	out := make([]int, 0, zg.count)
	for _, k := range zg.nodes {
		out = append(out, g.members(g.nodes[k])...)
	}
	return out
}

// zoneCount returns the number of members in zone z.
func (g *grouping) zoneCount(z string) int {
	for _, zg := range g.zones {
		if zg.zone == z {
			return zg.count
		}
	}
	return 0
}

func (g *grouping) zoneGroup(z string) (zoneGroup, bool) {
	for _, zg := range g.zones {
		if zg.zone == z {
			return zg, true
		}
	}
	return zoneGroup{}, false
}

// shardSeparation: no two pods of a shard on one node (Z ≤ 1) or in one zone (Z ≥ 2). A node
// without a zone label is in no zone (as for a required anti-affinity on the zone key, which
// never matches it), so with Z ≥ 2 only sharing that very node counts.
func (c *Cluster) shardSeparation(p Placement, brief bool) []Violation {
	byZone := c.Z() >= 2
	// The domain of a placed member: its zone, or its node (zone "") when the rule is per node or
	// the node has no zone label. Shards are small: members are grouped pairwise, without maps or
	// allocations.
	type group struct {
		zone  string
		node  int
		count int
	}
	var out []Violation
	var groups []group
	var gid []int // per shard member: its group, or -1 when unplaced
	for _, s := range c.Shards {
		groups, gid = groups[:0], gid[:0]
		for _, i := range s.Members {
			if p[i] < 0 {
				gid = append(gid, -1)
				continue
			}
			g := group{node: p[i]}
			if z := c.zoneOfNode(p[i]); byZone && z != "" {
				g = group{zone: z, node: -1}
			}
			k := 0
			for k < len(groups) && (groups[k].zone != g.zone || groups[k].node != g.node) {
				k++
			}
			if k == len(groups) {
				groups = append(groups, g)
			}
			groups[k].count++
			gid = append(gid, k)
		}
		for k, g := range groups {
			if g.count < 2 {
				continue
			}
			what, key, name := "zone", c.ZoneKey, g.zone
			if g.node >= 0 {
				what, key, name = "node", LabelHostname, c.model.Nodes[g.node].Name
			}
			v := Violation{Rule: ShardSeparation, Domain: name, TopologyKey: key, Count: g.count, Limit: 1}
			if !brief {
				var idx []int
				for m, i := range s.Members {
					if gid[m] == k {
						idx = append(idx, i)
					}
				}
				v.Pods = c.podNames(idx)
				v.Message = fmt.Sprintf("shard %s has %d pods in %s %s", s.Name, g.count, what, name)
			}
			out = append(out, v)
		}
	}
	return out
}

func (c *Cluster) maxPerNode(g *grouping, brief bool) []Violation {
	relaxed := c.model.Options.RelaxedLimits
	limit := NodeLimit(c.N, relaxed)
	var out []Violation
	for _, ng := range g.nodes {
		idx := g.members(ng)
		if len(idx) <= limit {
			continue
		}
		cmp := "fewer than"
		if relaxed {
			cmp = "at most"
		}
		name := c.model.Nodes[ng.node].Name
		out = append(out, Violation{
			Rule: MaxPodsPerNode, Domain: name, TopologyKey: LabelHostname,
			Count: len(idx), Limit: limit, Pods: c.namesUnless(brief, idx),
			Message: unless(brief, "node %s holds %d of %d pods; a node may hold %s N/3 (at most %d)", name, len(idx), c.N, cmp, limit),
		})
	}
	return out
}

// zoneEvenSplit: with Z = 2, the two zones' counts differ by at most N mod 2.
func (c *Cluster) zoneEvenSplit(g *grouping, brief bool) []Violation {
	if c.Z() != 2 {
		return nil
	}
	a, b := c.AllowedZones[0], c.AllowedZones[1]
	na, nb := g.zoneCount(a), g.zoneCount(b)
	if na < nb {
		a, b, na, nb = b, a, nb, na
	}
	if na-nb <= c.N%2 {
		return nil
	}
	zg, _ := g.zoneGroup(a)
	return []Violation{{
		Rule: ZoneEvenSplit, Domain: a, TopologyKey: c.ZoneKey, Count: na - nb, Limit: c.N % 2,
		Pods:    c.namesUnless(brief, g.zoneMembers(zg)),
		Message: unless(brief, "zones %s and %s hold %d and %d pods; they may differ by at most %d", a, b, na, nb, c.N%2),
	}}
}

// maxPerZone: with Z ≥ 3, every zone holds fewer than N/2 of the pods (at most N/2 relaxed).
func (c *Cluster) maxPerZone(g *grouping, brief bool) []Violation {
	if c.Z() < 3 {
		return nil
	}
	relaxed := c.model.Options.RelaxedLimits
	limit := ZoneLimit(c.N, relaxed)
	var out []Violation
	for _, zg := range g.zones {
		if zg.count <= limit || zg.zone == "" {
			continue
		}
		cmp := "fewer than"
		if relaxed {
			cmp = "at most"
		}
		out = append(out, Violation{
			Rule: MaxPodsPerZone, Domain: zg.zone, TopologyKey: c.ZoneKey, Count: zg.count, Limit: limit,
			Pods:    c.namesUnless(brief, g.zoneMembers(zg)),
			Message: unless(brief, "zone %s holds %d of %d pods; a zone may hold %s N/2 (at most %d)", zg.zone, zg.count, c.N, cmp, limit),
		})
	}
	return out
}

func (c *Cluster) allowedZones(g *grouping, brief bool) []Violation {
	if !c.ZoneList {
		return nil
	}
	var out []Violation
	for _, zg := range g.zones {
		if c.allowed[zg.zone] {
			continue
		}
		out = append(out, Violation{
			Rule: AllowedZones, Domain: zg.zone, TopologyKey: c.ZoneKey, Count: zg.count, Limit: 0,
			Pods:    c.namesUnless(brief, g.zoneMembers(zg)),
			Message: unless(brief, "%s %s in zone %q, outside the allowed zones [%s]", Plural(zg.count, "pod"), Agree(zg.count, "runs", "run"), zg.zone, strings.Join(c.AllowedZones, " ")),
		})
	}
	return out
}

// topologySpread checks every DoNotSchedule constraint instance in effect for some placed member:
// for every eligible domain, count − global minimum ≤ maxSkew (kube-scheduler's skew, seen after
// the fact). An instance's violations are reported once per domain even when several instances
// (e.g. a running pod's and its template's) break there.
func (c *Cluster) topologySpread(p Placement, brief bool) []Violation {
	return c.spreadViolations(TopologySpread, c.spread, p, brief, func(s *podSpec) []int { return s.spread })
}

// softTopologySpread checks the ScheduleAnyway constraints as topologySpread checks the
// DoNotSchedule ones (their instances are built on first use: softSpreadOf).
func (c *Cluster) softTopologySpread(p Placement, brief bool) []Violation {
	ss := c.softSpreadOf()
	return c.spreadViolations(SoftTopologySpread, ss.instances, p, brief, func(s *podSpec) []int { return ss.of[s] })
}

// countsPool recycles spreadViolations' per-domain counts.
var countsPool sync.Pool

// spreadViolations reports rule's violations of the constraint instances in effect under p:
// the instances of list that instancesOf gives for the spec some placed member runs with.
func (c *Cluster) spreadViolations(rule Rule, list []*spreadInstance, p Placement, brief bool, instancesOf func(*podSpec) []int) []Violation {
	var inEffect []int
	for j, n := range p {
		if n < 0 {
			continue
		}
		for _, idx := range instancesOf(c.specOf(j, p)) {
			if !slices.Contains(inEffect, idx) {
				inEffect = append(inEffect, idx)
			}
		}
	}
	slices.Sort(inEffect)
	var out []Violation
	reported := map[string]bool{}
	counts, _ := countsPool.Get().(map[int32]int)
	if counts == nil {
		counts = map[int32]int{}
	}
	defer countsPool.Put(counts)
	for _, idx := range inEffect {
		in := list[idx]
		clear(counts)
		members, min := c.spreadCounts(in, p, -1, counts)
		var over []domainCount // domains whose skew exceeds maxSkew
		for d, n := range members {
			if cnt := in.external[d] + n; cnt-min > in.maxSkew {
				over = append(over, domainCount{d, cnt})
			}
		}
		for k := len(in.extAsc) - 1; k >= 0 && in.extAsc[k].count-min > in.maxSkew; k-- {
			if members[in.extAsc[k].dom] == 0 {
				over = append(over, in.extAsc[k])
			}
		}
		for _, o := range over {
			d, cnt := o.dom, o.count
			key := in.constraint.TopologyKey + "\x00" + in.dom.names[d]
			if reported[key] {
				continue
			}
			reported[key] = true
			var pods []int
			for j, n := range p {
				if !brief && n >= 0 && in.dom.ofNode[n] == d && c.counted(in, j, p) {
					pods = append(pods, j)
				}
			}
			out = append(out, Violation{
				Rule: rule, Domain: in.dom.names[d], TopologyKey: in.constraint.TopologyKey,
				Count: cnt - min, Limit: in.maxSkew, Pods: c.namesUnless(brief, pods),
				Message: unless(brief, "%s=%s has %d matching pods, global minimum %d: skew %d > maxSkew %d%s", in.constraint.TopologyKey, in.dom.names[d], cnt, min, cnt-min, in.maxSkew, whenText(in)),
			})
		}
	}
	return out
}

// whenText names a ScheduleAnyway constraint in a violation's message ("" for DoNotSchedule).
func whenText(in *spreadInstance) string {
	if in.constraint.WhenUnsatisfiable == corev1.ScheduleAnyway {
		return " (ScheduleAnyway)"
	}
	return ""
}

// unschedulable reports members that cannot be placed: Pending pods the scheduler marked
// Unschedulable (and left unplaced by p), and, in a simulated placement, members bound in the
// snapshot that p leaves unplaced (evicted and not re-placed). Terminating members are being
// replaced and a Pending pod the scheduler has not judged yet is not reported.
func (c *Cluster) unschedulable(p Placement, brief bool) []Violation {
	var idx []int
	for i, n := range p {
		mem := c.Members[i]
		if n < 0 && !mem.Terminating && (mem.Unschedulable || mem.Node >= 0) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	v := Violation{Rule: Unschedulable, Count: len(idx), Limit: 0}
	if !brief {
		v.Pods = c.podNames(idx)
		v.Message = fmt.Sprintf("%s cannot be scheduled: %s", Plural(len(idx), "pod"), strings.Join(v.Pods, ", "))
	}
	return []Violation{v}
}

// nodeSpread (soft, Z ≥ 2): inside each allowed zone, over its usable nodes (those passing
// cordon, taints and node affinity for some member) and the nodes holding pods, counts within 1.
func (c *Cluster) nodeSpread(g *grouping) []Violation {
	if c.Z() < 2 {
		return nil
	}
	var out []Violation
	for _, zone := range c.AllowedZones {
		zg, ok := g.zoneGroup(zone)
		if !ok {
			continue
		}
		nlo, nhi, hiNode, usedUsable := -1, -1, "", 0
		for _, k := range zg.nodes {
			ng := g.nodes[k]
			n := ng.to - ng.from
			name := c.model.Nodes[ng.node].Name
			if nlo < 0 || n < nlo {
				nlo = n
			}
			if n > nhi || n == nhi && name < hiNode {
				nhi, hiNode = n, name
			}
			if c.isUsable(ng.node) {
				usedUsable++
			}
		}
		if c.usableIn[zone] > usedUsable {
			nlo = 0 // a usable node of the zone holds no pod
		}
		if nhi-nlo > 1 {
			out = append(out, Violation{
				Rule: NodeSpread, Domain: hiNode, TopologyKey: LabelHostname, Count: nhi - nlo, Limit: 1,
				Message: fmt.Sprintf("in zone %s, node %s holds %d pods and another node %d", zone, hiNode, nhi, nlo),
			})
		}
	}
	return out
}

// zoneBalance (soft, Z ≥ 2): over the allowed zones, counts within 1, so that no zone holds far
// more of the cluster's pods than another.
func (c *Cluster) zoneBalance(g *grouping) []Violation {
	if c.Z() < 2 {
		return nil
	}
	lo, hi, hiZone := -1, -1, ""
	for _, zone := range c.AllowedZones {
		cnt := g.zoneCount(zone)
		if lo < 0 || cnt < lo {
			lo = cnt
		}
		if cnt > hi {
			hi, hiZone = cnt, zone
		}
	}
	if hi-lo <= 1 {
		return nil
	}
	return []Violation{{
		Rule: ZoneBalance, Domain: hiZone, TopologyKey: c.ZoneKey, Count: hi - lo, Limit: 1,
		Message: fmt.Sprintf("zone %s holds %d pods and another allowed zone %d", hiZone, hi, lo),
	}}
}
