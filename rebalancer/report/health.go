package report

import (
	"fmt"
	"io"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
)

// CompliantAndHealthy reports whether every cluster complies now and its Redis health, when it
// was judged, is healthy: check's exit status 0. A cluster whose health is unknown (offline, or
// Redis not read) is judged on its placement alone.
func (a *Analysis) CompliantAndHealthy() bool {
	for _, c := range a.Clusters {
		if !c.Compliant {
			return false
		}
		if h := c.Health; h != nil && h.State != observe.HealthHealthy && h.State != observe.HealthUnknown {
			return false
		}
	}
	return true
}

// RenderHealth writes a cluster's health as the table shows it: "  ✓ Redis healthy", or the state
// and its reasons ("  ✗ Redis resyncing: replica_link_down ..."), one reason a line. Nothing when
// h is nil.
func RenderHealth(w io.Writer, h *observe.Health) {
	if h == nil {
		return
	}
	mark := "✗"
	switch h.State {
	case observe.HealthHealthy:
		mark = "✓"
	case observe.HealthUnknown:
		mark = "?"
	}
	fmt.Fprintf(w, "  %s Redis %s", mark, h.State)
	for i, r := range h.Reasons {
		if i == 0 {
			fmt.Fprintf(w, ": %s\n", r)
			continue
		}
		fmt.Fprintf(w, "      %s\n", r)
	}
	if len(h.Reasons) == 0 {
		fmt.Fprintln(w)
	}
}
