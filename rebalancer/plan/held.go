package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Held is a pod that no eviction takes out of the domain where it breaks a rule: evicted now and
// re-created, it passes the filter on no node outside that domain. The plan names it with the
// filter's own reasons for those nodes, so that a "no plan" says what binds the placement, and
// what would lift it.
type Held struct {
	// Pod is "namespace/name"; Node the node it runs on.
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// Domains are the domains of the hard violations it is counted in and cannot leave, smallest
	// first ("node n1", "zone zone-a").
	Domains []string `json:"domains"`
	// Why says why: the nodes outside the smallest of them that the filter rejects, per reason
	// in kube-scheduler's words ("4 node(s) didn't match PersistentVolume's node affinity [n3 n4
	// n5 n6], 1 Insufficient ephemeral-storage [n2]"), or why the pod is never evicted.
	Why string `json:"why"`
	// Fix says what would lift it, one change per reason: a flag, room on a node, a toleration.
	Fix []string `json:"fix"`
}

// maxHeldPods is the most pods a plan names as held; the others are counted in its last entry.
const maxHeldPods = 8

// held returns the pods of the current placement that no eviction takes out of the domain of a
// hard violation they are counted in (MasterQuorum aside: failovers move masters, not pods), in
// member order, at most maxHeldPods of them.
func (pl *planner) held() []Held {
	c := pl.c
	m := c.Model()
	cur := c.Current()
	vs := policies.Hard(c.Evaluate(cur))
	var out []Held
	more := 0
	for i, mem := range c.Members {
		if cur[i] < 0 {
			continue
		}
		var mine []policies.Violation
		for _, v := range vs {
			if v.Rule != policies.MasterQuorum && v.Domain != "" && slices.Contains(v.Pods, mem.Key()) {
				mine = append(mine, v)
			}
		}
		if len(mine) == 0 {
			continue
		}
		if len(out) == maxHeldPods {
			more++
			continue
		}
		h := Held{Pod: mem.Key(), Node: m.Nodes[cur[i]].Name}
		if why := mem.NotEvictable(); why != "" {
			for _, v := range mine {
				if d := domainText(v); !slices.Contains(h.Domains, d) {
					h.Domains = append(h.Domains, d)
				}
			}
			h.Why = "never evicted: " + why
			h.Fix = []string{"name its owner as re-creating pods (selection.recreatingOwners, --recreating-owners), or let its Redis node join the cluster"}
			out = append(out, h)
			continue
		}
		rep := c.Explain(cur, i)
		fits := map[string]bool{}
		for _, n := range rep.Fits {
			fits[n] = true
		}
		// The domains it cannot leave, and the nodes outside the smallest of them.
		var outside []int
		sizes := make(map[string]int, len(mine))
		for _, v := range mine {
			sizes[domainText(v)] = domainSize(c, v)
		}
		sort.SliceStable(mine, func(a, b int) bool { return sizes[domainText(mine[a])] < sizes[domainText(mine[b])] })
		for _, v := range mine {
			var out []int
			leaves := false
			for n, node := range m.Nodes {
				if inDomain(c, n, v) {
					continue
				}
				out = append(out, n)
				leaves = leaves || fits[node.Name]
			}
			if leaves {
				continue
			}
			if h.Domains == nil {
				outside = out
			}
			if d := domainText(v); !slices.Contains(h.Domains, d) {
				h.Domains = append(h.Domains, d)
			}
		}
		if h.Domains == nil {
			continue // it may leave every domain it breaks a rule in: the plan's search decides
		}
		h.Why, h.Fix = pl.heldWhy(i, rep, outside)
		out = append(out, h)
	}
	if more > 0 {
		out[len(out)-1].Fix = append(out[len(out)-1].Fix, fmt.Sprintf("(%s more not listed)", policies.Plural(more, "pod")))
	}
	return out
}

// heldWhy says, from the filter's report rep for member i, why it fits none of the nodes
// outside (their rejections, by reason, kube-scheduler's words), and what would lift each
// reason.
func (pl *planner) heldWhy(i int, rep policies.FitReport, outside []int) (string, []string) {
	c := pl.c
	m := c.Model()
	names := map[string]bool{}
	for _, n := range outside {
		names[m.Nodes[n].Name] = true
	}
	type reason struct {
		text  string
		nodes []string
	}
	var reasons []reason
	for text, nodes := range rep.Rejected {
		var in []string
		for _, n := range nodes {
			if names[n] {
				in = append(in, n)
			}
		}
		if len(in) > 0 {
			reasons = append(reasons, reason{text, in})
		}
	}
	sort.Slice(reasons, func(a, b int) bool {
		if len(reasons[a].nodes) != len(reasons[b].nodes) {
			return len(reasons[a].nodes) > len(reasons[b].nodes)
		}
		return reasons[a].text < reasons[b].text
	})
	var parts, fix []string
	seen := map[string]bool{}
	addFix := func(f string) {
		if !seen[f] {
			seen[f] = true
			fix = append(fix, f)
		}
	}
	for _, r := range reasons {
		list := strings.Join(r.nodes[:min(len(r.nodes), maxRejectedNames)], " ")
		if len(r.nodes) > maxRejectedNames {
			list += fmt.Sprintf(" … +%d more", len(r.nodes)-maxRejectedNames)
		}
		parts = append(parts, fmt.Sprintf("%d %s [%s]", len(r.nodes), r.text, list))
		addFix(pl.liftReason(i, r.text, r.nodes))
	}
	if len(parts) == 0 {
		return "no node outside it", []string{"more nodes outside it (in another zone, for a zone)"}
	}
	return strings.Join(parts, ", "), fix
}

// maxRejectedNames is how many node names heldWhy lists per reason before it counts the rest.
const maxRejectedNames = 6

// liftReason says what would lift one of the filter's reasons (its text) for member i on nodes.
func (pl *planner) liftReason(i int, text string, nodes []string) string {
	c := pl.c
	where := strings.Join(nodes[:min(len(nodes), 3)], ", ")
	if len(nodes) > 3 {
		where += ", …"
	}
	switch {
	case strings.HasPrefix(text, "Insufficient ") || text == "Too many pods":
		what := strings.TrimPrefix(text, "Insufficient ")
		if text == "Too many pods" {
			what = "pods"
		}
		return fmt.Sprintf("room on %s (%s), or another node there", where, what)
	case strings.Contains(text, "PersistentVolume's node affinity") || strings.Contains(text, "available volume zone"):
		if kept := c.ClaimsKept(i); kept != "" && c.Model().Options.ReleaseReplicaClaims {
			return "its claims are kept: " + kept
		}
		return "release its zonal claims (--release-replica-claims: a master is failed over first, and the pod resyncs in full from its shard's master)"
	case strings.Contains(text, "untolerated taint"):
		return fmt.Sprintf("a toleration in its StatefulSet's template, or the taint off %s", where)
	case strings.Contains(text, "were unschedulable"):
		return fmt.Sprintf("uncordon %s", where)
	case strings.Contains(text, "node affinity/selector"):
		return "its template's node affinity or nodeSelector (the allowed zones)"
	case strings.Contains(text, "topology spread"):
		return "a relaxed constraint: rules.relaxedLimits, or the maxSkew redis-rebalancer constraints prints for the cluster's size"
	case strings.Contains(text, "anti-affinity"):
		return "room in another domain: its shard's pods (or another workload's) hold the others"
	case strings.Contains(text, "free ports"):
		return fmt.Sprintf("a free host port on %s", where)
	case strings.Contains(text, "max volume count"):
		return fmt.Sprintf("attach room on %s (its CSI driver's limit)", where)
	}
	return "a change to " + where
}

// domainText names a violation's domain: "node n1", "zone zone-a", or "KEY=VALUE".
func domainText(v policies.Violation) string {
	switch v.TopologyKey {
	case policies.LabelHostname:
		return "node " + v.Domain
	case policies.LabelZone, policies.LabelZoneLegacy:
		return "zone " + v.Domain
	}
	return v.TopologyKey + "=" + v.Domain
}

// inDomain reports whether node n is in violation v's domain.
func inDomain(c *policies.Cluster, n int, v policies.Violation) bool {
	node := c.Model().Nodes[n]
	if v.TopologyKey == c.ZoneKey {
		return node.Zone == v.Domain
	}
	val, ok := node.Obj.Labels[v.TopologyKey]
	return ok && val == v.Domain
}

// domainSize counts the nodes of violation v's domain.
func domainSize(c *policies.Cluster, v policies.Violation) int {
	k := 0
	for n := range c.Model().Nodes {
		if inDomain(c, n, v) {
			k++
		}
	}
	return k
}
