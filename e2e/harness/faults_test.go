package harness

import (
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

func TestLossExplains(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	loss := Loss{
		Nodes:     []string{"n1"},
		Slots:     []redisctl.SlotRange{{Start: 0, End: 5460}},
		Paused:    at,
		PauseDone: at.Add(5 * time.Millisecond),
		Resumed:   at.Add(10 * time.Second),
		Settled:   at.Add(13 * time.Second),
	}
	for _, tc := range []struct {
		name  string
		slot  int
		acked time.Duration // from Paused
		want  bool
	}{
		{"lost master's slot, acknowledged 2 ms before the pause → explained", 100, -2 * time.Millisecond, true},
		{"lost master's slot, acknowledged while pausing → explained", 5460, 3 * time.Millisecond, true},
		{"lost master's slot, acknowledged 2 s before the pause → not explained", 100, -2 * time.Second, false},
		{"lost master's slot, acknowledged during the outage (by the promoted replica) → not explained", 100, 5 * time.Second, false},
		{"lost master's slot, acknowledged after it came back, before Redis settled → explained", 100, 11 * time.Second, true},
		{"lost master's slot, acknowledged after Redis settled → not explained", 100, 14 * time.Second, false},
		{"another master's slot, acknowledged just before the pause → not explained", 5461, -2 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := LostWrite{Key: "seq:1", Got: "(missing)", Slot: tc.slot, Acked: at.Add(tc.acked)}
			if got := loss.Explains(w); got != tc.want {
				t.Errorf("Explains(slot %d, acknowledged %v from the pause) = %v, want %v", tc.slot, tc.acked, got, tc.want)
			}
		})
	}
}
