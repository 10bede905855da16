package execute

import (
	"strings"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// TestYieldToTheHandOff: while serve's hand-off is at work on a cluster (Config.Yield), a pass
// makes no move there, even one its plan has (role-only: a failover step), and says why; the
// cluster is progressing, not in need of attention; without the hand-off the same pass makes the
// failover.
func TestYieldToTheHandOff(t *testing.T) {
	for _, tc := range []struct {
		name      string
		busy      bool
		wantMoves int
		wantBy    string
		wantOut   report.Outcome
	}{
		{name: "the hand-off at work on the cluster → no move, stopped by handOff, progressing", busy: true, wantBy: report.StoppedHandOff, wantOut: report.OutcomeProgressing},
		{name: "the hand-off idle → the failover step, compliant", busy: false, wantMoves: 1, wantOut: report.OutcomeCompliant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestbed(t, scenario.RoleOnly())
			var asked []string
			rep, err := runExecutor(t, tb, func(c *Config) {
				c.Yield = func(key string) (string, bool) {
					asked = append(asked, key)
					return "failing redis/redis-s0-0 over to redis/redis-s0-1 (node n1 is being emptied)", tc.busy
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			cr := rep.Clusters[0]
			if len(cr.Moves) != tc.wantMoves || cr.StoppedBy != tc.wantBy || cr.Outcome != tc.wantOut {
				t.Fatalf("moves %d, stopped by %q (%s), outcome %s; want %d moves, stopped by %q, outcome %s", len(cr.Moves), cr.StoppedBy, cr.Stopped, cr.Outcome, tc.wantMoves, tc.wantBy, tc.wantOut)
			}
			if len(asked) == 0 || asked[0] != "redis/redis" {
				t.Errorf("Yield asked about %v, want the cluster redis/redis before the move", asked)
			}
			if tc.busy {
				if fo := tb.redis.called("failover"); len(fo) != 0 {
					t.Errorf("failovers %v while the hand-off is at work, want none", fo)
				}
				if !strings.HasPrefix(cr.Stopped, "left to the hand-off: failing redis/redis-s0-0 over") {
					t.Errorf("stopped %q, want the hand-off's reason", cr.Stopped)
				}
			}
		})
	}
}
