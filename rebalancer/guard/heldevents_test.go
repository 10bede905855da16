package guard

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestHoldsCountFromTheFirstReplica: a hold counts guard.maxHold from the earliest first denial
// any replica's Event tells, so that a new leader or a restarted replica does not start it again
// (the chaos soak: a replica killed at +13m58s, its successor answered "held for 0s").
func TestHoldsCountFromTheFirstReplica(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		seen     []HeldEvent   // Events read, in order, before the step
		forget   time.Duration // the forget period (10m when 0)
		hold     bool          // this replica denies the eviction at t0+4m
		wantHeld bool
		wantFor  time.Duration // at t0+4m
	}{
		{name: "no Event, no hold of its own → not held"},
		{name: "no Event, its own first denial now → held 0s", hold: true, wantHeld: true},
		{
			name: "another replica held it from t0, seen at t0+3m → held 4m without a denial of its own",
			seen: []HeldEvent{{UID: "u", First: t0, Last: t0.Add(3 * time.Minute)}}, wantHeld: true, wantFor: 4 * time.Minute,
		},
		{
			name: "another replica's Event from t0, then its own first denial → its hold counts from t0",
			seen: []HeldEvent{{UID: "u", First: t0, Last: t0.Add(time.Minute)}}, hold: true, wantHeld: true, wantFor: 4 * time.Minute,
		},
		{
			name: "two replicas' Events (t0+1m, t0) → the earliest counts",
			seen: []HeldEvent{{UID: "u", First: t0.Add(time.Minute), Last: t0.Add(2 * time.Minute)}, {UID: "u", First: t0, Last: t0}},
			hold: true, wantHeld: true, wantFor: 4 * time.Minute,
		},
		{
			name: "an Event of another pod's UID → its own hold counts from now",
			seen: []HeldEvent{{UID: "other", First: t0, Last: t0}}, hold: true, wantHeld: true,
		},
		{
			name: "an Event last seen longer ago than the forget period (2m) → forgotten: not held",
			seen: []HeldEvent{{UID: "u", First: t0, Last: t0.Add(time.Minute)}}, forget: 2 * time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			forget := tc.forget
			if forget == 0 {
				forget = 10 * time.Minute
			}
			h := NewHolds(clk, forget)
			for _, ev := range tc.seen {
				h.Seen(ev.UID, ev.First, ev.Last)
			}
			clk.SetTime(t0.Add(4 * time.Minute))
			if tc.hold {
				h.Hold(Hold{Namespace: "redis", Name: "p", UID: "u"})
			}
			got, held := h.HeldFor("u")
			if held != tc.wantHeld || got != tc.wantFor {
				t.Errorf("HeldFor = %s, %t; want %s, %t", got, held, tc.wantFor, tc.wantHeld)
			}
		})
	}
}

// TestHoldsSeenAfterItsOwnHold: an Event read after this replica's own first denial still moves
// the hold's start back to the earlier denial it tells; Release forgets both.
func TestHoldsSeenAfterItsOwnHold(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0.Add(2 * time.Minute))
	h := NewHolds(clk, 10*time.Minute)
	h.Hold(Hold{Namespace: "redis", Name: "p", UID: "u"})
	h.Seen("u", t0, t0.Add(time.Minute))
	if got, _ := h.HeldFor("u"); got != 2*time.Minute {
		t.Errorf("HeldFor = %s, want 2m (from the other replica's first denial)", got)
	}
	if hs := h.List(); len(hs) != 1 || !hs[0].Since.Equal(t0) {
		t.Errorf("List = %+v, want one hold since %s", hs, t0)
	}
	h.Release("u")
	if _, held := h.HeldFor("u"); held {
		t.Error("held after Release")
	}
}

func TestParseHeldEvent(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	pod := corev1.ObjectReference{Kind: "Pod", Namespace: "redis", Name: "redis-0", UID: "u"}
	for _, tc := range []struct {
		name   string
		ev     corev1.Event
		want   HeldEvent
		wantOK bool
	}{
		{
			name:   "events.k8s.io Event with a series → first its eventTime, last the series' lastObservedTime",
			ev:     corev1.Event{Reason: EventEvictionHeld, InvolvedObject: pod, ReportingController: "src", EventTime: metav1.NewMicroTime(t0), Series: &corev1.EventSeries{LastObservedTime: metav1.NewMicroTime(t0.Add(time.Minute))}},
			want:   HeldEvent{Namespace: "redis", Name: "redis-0", UID: "u", First: t0, Last: t0.Add(time.Minute)},
			wantOK: true,
		},
		{
			name:   "core/v1 Event without eventTime → firstTimestamp and lastTimestamp",
			ev:     corev1.Event{Reason: EventEvictionHeld, InvolvedObject: pod, FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0.Add(time.Second))},
			want:   HeldEvent{Namespace: "redis", Name: "redis-0", UID: "u", First: t0, Last: t0.Add(time.Second)},
			wantOK: true,
		},
		{name: "another reason → not one", ev: corev1.Event{Reason: "Killing", InvolvedObject: pod, EventTime: metav1.NewMicroTime(t0)}},
		{name: "another reporting controller → not one", ev: corev1.Event{Reason: EventEvictionHeld, InvolvedObject: pod, ReportingController: "x", EventTime: metav1.NewMicroTime(t0)}},
		{name: "no time at all → not one", ev: corev1.Event{Reason: EventEvictionHeld, InvolvedObject: pod}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseHeldEvent(&tc.ev, "src")
			if ok != tc.wantOK {
				t.Fatalf("ok = %t, want %t", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
