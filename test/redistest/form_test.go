package redistest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

func TestSlotShares(t *testing.T) {
	r := func(start, end int) redisctl.SlotRange { return redisctl.SlotRange{Start: start, End: end} }
	tests := []struct {
		name string
		k    int
		want []redisctl.SlotRange
	}{
		{"0 shards: none", 0, nil},
		{"1 shard: all slots", 1, []redisctl.SlotRange{r(0, 16383)}},
		{"3 shards: first gets the extra slot", 3, []redisctl.SlotRange{r(0, 5461), r(5462, 10922), r(10923, 16383)}},
		{"5 shards: first four get an extra slot", 5, []redisctl.SlotRange{r(0, 3276), r(3277, 6553), r(6554, 9830), r(9831, 13107), r(13108, 16383)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SlotShares(tc.k)); diff != "" {
				t.Errorf("SlotShares(%d) (-want +got):\n%s", tc.k, diff)
			}
		})
	}
}

func TestServes(t *testing.T) {
	r := func(start, end int) redisctl.SlotRange { return redisctl.SlotRange{Start: start, End: end} }
	tests := []struct {
		name  string
		slots []redisctl.SlotRange
		want  bool
	}{
		{"none → false (a fresh master)", nil, false},
		{"the share as one range → true", []redisctl.SlotRange{r(0, 5461)}, true},
		{"the share split in two adjacent ranges → true", []redisctl.SlotRange{r(0, 99), r(100, 5461)}, true},
		{"part of the share → false", []redisctl.SlotRange{r(0, 5000)}, false},
		{"past the share → false", []redisctl.SlotRange{r(0, 5462)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := serves(tc.slots, r(0, 5461)); got != tc.want {
				t.Errorf("serves(%v, 0-5461) = %v, want %v", tc.slots, got, tc.want)
			}
		})
	}
}
