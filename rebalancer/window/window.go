package window

import (
	"fmt"
	"strings"
	"time"
	// Time zones for CRON_TZ= even where the image has no zoneinfo (distroless, scratch).
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// Horizon bounds how far Open follows windows that overlap or touch: a union of windows that
// stays open longer than this is reported as closing at now + Horizon (a run that needs more
// time left than a week is not expected).
const Horizon = 7 * 24 * time.Hour

// maxActivations bounds the activations examined while one window's latest opening is searched
// (a window of a day opening every minute has 1,440).
const maxActivations = 100000

// Schedule is a compiled Config: the maintenance windows, ready to be asked whether one is open.
// It is read-only after New (safe for concurrent use).
type Schedule struct {
	windows  []compiled
	estimate v1alpha1.StepEstimate
}

type compiled struct {
	Window
	sched *cron.SpecSchedule
}

// New fills c's defaults (SetDefaults), validates it (Validate) and compiles its expressions.
func New(c Config) (*Schedule, error) {
	c.Windows = append([]Window(nil), c.Windows...)
	SetDefaults(&c)
	if err := Validate(c); err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	s := &Schedule{estimate: c.StepEstimate}
	for _, w := range c.Windows {
		sched, err := parse(w.Schedule)
		if err != nil {
			return nil, fmt.Errorf("window: %w", err)
		}
		s.windows = append(s.windows, compiled{Window: w, sched: sched})
	}
	return s, nil
}

// Always reports whether s has no window: a run may then act at any time.
func (s *Schedule) Always() bool { return len(s.windows) == 0 }

// Windows returns the windows, defaults filled.
func (s *Schedule) Windows() []Window {
	out := make([]Window, len(s.windows))
	for i, w := range s.windows {
		out[i] = w.Window
	}
	return out
}

// StepEstimate returns how a move's expected duration is judged (v1alpha1.StepEstimateBound or
// v1alpha1.StepEstimateP95).
func (s *Schedule) StepEstimate() v1alpha1.StepEstimate { return s.estimate }

// Open reports whether a window is open at now and, when one is, when the open period closes:
// the end of the latest opening of every open window, followed through windows that open before
// (or as) it closes, at most Horizon ahead. With no window (Always) it returns now + Horizon.
func (s *Schedule) Open(now time.Time) (closes time.Time, open bool) {
	now = now.UTC()
	if s.Always() {
		return now.Add(Horizon), true
	}
	for _, w := range s.windows {
		if end, ok := w.closesAfter(now); ok && end.After(closes) {
			closes, open = end, true
		}
	}
	if !open {
		return time.Time{}, false
	}
	// Follow windows that open while the open period lasts (overlapping or adjacent ones).
	limit := now.Add(Horizon)
	for closes.Before(limit) {
		next := closes
		for _, w := range s.windows {
			// A window opening exactly as the period closes is open at closes too.
			if end, ok := w.closesAfter(closes); ok && end.After(next) {
				next = end
			}
		}
		if !next.After(closes) {
			break
		}
		closes = next
	}
	if closes.After(limit) {
		closes = limit
	}
	return closes, true
}

// Left returns the time left at now before the open period closes (see Open); 0 when no window
// is open.
func (s *Schedule) Left(now time.Time) time.Duration {
	closes, open := s.Open(now)
	if !open {
		return 0
	}
	return closes.Sub(now)
}

// NextOpen returns the earliest opening of any window strictly after now (UTC), or the zero time
// when none fires within cron's five-year search.
func (s *Schedule) NextOpen(now time.Time) time.Time {
	var next time.Time
	for _, w := range s.windows {
		if a := w.sched.Next(now.UTC()); !a.IsZero() && (next.IsZero() || a.Before(next)) {
			next = a
		}
	}
	return next
}

// String lists the windows as "SCHEDULE for DURATION", separated by "; ", or "always" when there
// is none.
func (s *Schedule) String() string {
	if s.Always() {
		return "always"
	}
	parts := make([]string, len(s.windows))
	for i, w := range s.windows {
		parts[i] = w.String()
	}
	return strings.Join(parts, "; ")
}

// String returns "SCHEDULE for DURATION", e.g. "CRON_TZ=Europe/Paris 0 2 * * * for 2h0m0s".
func (w Window) String() string { return w.Schedule + " for " + w.Duration.String() }

// closesAfter reports whether w is open at t (UTC) and when its latest opening at or before t
// closes.
func (w compiled) closesAfter(t time.Time) (time.Time, bool) {
	// The first activation after t - Duration; the window is open at t when it is not after t.
	a := w.sched.Next(t.Add(-w.Duration))
	if a.IsZero() || a.After(t) {
		return time.Time{}, false
	}
	for i := 0; i < maxActivations; i++ {
		n := w.sched.Next(a)
		if n.IsZero() || n.After(t) {
			break
		}
		a = n
	}
	end := a.Add(w.Duration)
	return end, end.After(t)
}
