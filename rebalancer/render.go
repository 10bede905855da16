package rebalancer

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// maxEmptyNodesShown is the node count above which RenderMap lists only nodes holding pods.
const maxEmptyNodesShown = 30

// roleMark returns M for a master, R for a replica, ? when unknown.
func roleMark(r policies.Role) string {
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
	fmt.Fprintf(tw, "  ZONE\tNODE\tPODS\t\n")
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
				cells = append(cells, c.Members[i].Pod.Name+" "+roleMark(c.Members[i].Role))
			}
			sort.Strings(cells)
			mark := ""
			if n.Obj.Spec.Unschedulable {
				mark = " (cordoned)"
			}
			fmt.Fprintf(tw, "  %s\t%s%s\t%s\t\n", label, n.Name, mark, strings.Join(cells, ", "))
			label = ""
		}
		if empty > 0 {
			fmt.Fprintf(tw, "  %s\t(+%d nodes without pods)\t\t\n", label, empty)
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
		fmt.Fprintf(tw, "  -\t(not placed)\t%s\t\n", strings.Join(unplaced, ", "))
	}
	tw.Flush()
}

// RenderViolations writes one line per violation ("  ✗ MaxPodsPerNode n1: ..."; soft ones with
// "~"), or "  ✓ every hard rule holds" when there is no hard violation.
func RenderViolations(w io.Writer, vs []policies.Violation) {
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
