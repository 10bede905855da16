package window

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestOpen(t *testing.T) {
	daily2h := []Window{{Schedule: "0 2 * * *", Duration: 2 * time.Hour}}
	for _, tc := range []struct {
		name       string
		windows    []Window
		now        string
		wantOpen   bool
		wantCloses string // when open
		wantNext   string // NextOpen(now)
	}{
		{name: "a minute before 02:00 → closed, opens at 02:00", windows: daily2h, now: "2026-03-10T01:59:00Z", wantNext: "2026-03-10T02:00:00Z"},
		{name: "at 02:00 → open until 04:00", windows: daily2h, now: "2026-03-10T02:00:00Z", wantOpen: true, wantCloses: "2026-03-10T04:00:00Z", wantNext: "2026-03-11T02:00:00Z"},
		{name: "one second before 04:00 → open, 1 s left", windows: daily2h, now: "2026-03-10T03:59:59Z", wantOpen: true, wantCloses: "2026-03-10T04:00:00Z", wantNext: "2026-03-11T02:00:00Z"},
		{name: "at 04:00 → closed, opens tomorrow", windows: daily2h, now: "2026-03-10T04:00:00Z", wantNext: "2026-03-11T02:00:00Z"},
		{
			name:    "CRON_TZ=Europe/Paris 02:00 in winter is 01:00 UTC → open at 01:30 UTC",
			windows: []Window{{Schedule: "CRON_TZ=Europe/Paris 0 2 * * *", Duration: time.Hour}},
			now:     "2026-01-15T01:30:00Z", wantOpen: true, wantCloses: "2026-01-15T02:00:00Z", wantNext: "2026-01-16T01:00:00Z",
		},
		{
			name:    "CRON_TZ=Europe/Paris 02:00 in summer is 00:00 UTC → closed at 01:30 UTC",
			windows: []Window{{Schedule: "CRON_TZ=Europe/Paris 0 2 * * *", Duration: time.Hour}},
			now:     "2026-07-15T01:30:00Z", wantNext: "2026-07-16T00:00:00Z",
		},
		{
			name:    "window across midnight → open at 01:00, closes at 02:00",
			windows: []Window{{Schedule: "0 23 * * *", Duration: 3 * time.Hour}},
			now:     "2026-03-10T01:00:00Z", wantOpen: true, wantCloses: "2026-03-10T02:00:00Z", wantNext: "2026-03-10T23:00:00Z",
		},
		{
			name:    "overlapping windows → the period closes with the later one",
			windows: []Window{{Schedule: "0 2 * * *", Duration: 2 * time.Hour}, {Schedule: "0 3 * * *", Duration: 2 * time.Hour}},
			now:     "2026-03-10T02:30:00Z", wantOpen: true, wantCloses: "2026-03-10T05:00:00Z", wantNext: "2026-03-10T03:00:00Z",
		},
		{
			name:    "adjacent windows → one period",
			windows: []Window{{Schedule: "0 2 * * *", Duration: time.Hour}, {Schedule: "0 3 * * *", Duration: time.Hour}},
			now:     "2026-03-10T02:30:00Z", wantOpen: true, wantCloses: "2026-03-10T04:00:00Z", wantNext: "2026-03-10T03:00:00Z",
		},
		{
			name:    "weekdays only → closed on Saturday, opens Monday",
			windows: []Window{{Schedule: "0 2 * * MON-FRI", Duration: time.Hour}},
			now:     "2026-03-14T02:30:00Z", wantNext: "2026-03-16T02:00:00Z",
		},
		{
			name:    "@weekly descriptor → open Sunday 00:30",
			windows: []Window{{Schedule: "@weekly", Duration: time.Hour}},
			now:     "2026-03-15T00:30:00Z", wantOpen: true, wantCloses: "2026-03-15T01:00:00Z", wantNext: "2026-03-22T00:00:00Z",
		},
		{
			name:    "windows longer than their period → open up to the horizon",
			windows: []Window{{Schedule: "@hourly", Duration: 2 * time.Hour}},
			now:     "2026-03-10T02:30:00Z", wantOpen: true, wantCloses: "2026-03-17T02:30:00Z", wantNext: "2026-03-10T03:00:00Z",
		},
		{name: "no window → always open, up to the horizon", now: "2026-03-10T02:30:00Z", wantOpen: true, wantCloses: "2026-03-17T02:30:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Windows: tc.windows})
			if err != nil {
				t.Fatal(err)
			}
			now := at(tc.now)
			closes, open := s.Open(now)
			if open != tc.wantOpen {
				t.Fatalf("Open = %v, want %v", open, tc.wantOpen)
			}
			if open {
				if want := at(tc.wantCloses); !closes.Equal(want) {
					t.Errorf("closes %s, want %s", closes, want)
				}
				if got, want := s.Left(now), at(tc.wantCloses).Sub(now); got != want {
					t.Errorf("Left = %s, want %s", got, want)
				}
			} else if s.Left(now) != 0 {
				t.Errorf("Left = %s while closed, want 0", s.Left(now))
			}
			next := s.NextOpen(now)
			if tc.wantNext == "" {
				if !next.IsZero() {
					t.Errorf("NextOpen = %s, want none", next)
				}
			} else if want := at(tc.wantNext); !next.Equal(want) {
				t.Errorf("NextOpen = %s, want %s", next, want)
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "not an expression → error naming the field", cfg: Config{Windows: []Window{{Schedule: "at two"}}}, want: []string{"windows[0].schedule", `"at two"`}},
		{name: "six fields → error", cfg: Config{Windows: []Window{{Schedule: "0 0 2 * * *"}}}, want: []string{"windows[0].schedule"}},
		{name: "@every → refused, it opens no window at a fixed time", cfg: Config{Windows: []Window{{Schedule: "@every 1h"}}}, want: []string{"@every repeats relative"}},
		{name: "February 30 → never fires", cfg: Config{Windows: []Window{{Schedule: "0 0 30 2 *"}}}, want: []string{"never fires"}},
		{name: "unknown time zone → error", cfg: Config{Windows: []Window{{Schedule: "CRON_TZ=Mars/Olympus 0 2 * * *"}}}, want: []string{"Mars/Olympus"}},
		{name: "negative duration → error", cfg: Config{Windows: []Window{{Schedule: "@daily", Duration: -time.Hour}}}, want: []string{"windows[0].duration: must be positive"}},
		{name: "unknown estimate → error", cfg: Config{StepEstimate: "p50"}, want: []string{`stepEstimate: must be "bound" or "p95"`}},
		{
			name: "two problems → both listed",
			cfg:  Config{Windows: []Window{{Schedule: "@daily"}, {Schedule: "x", Duration: -1}}},
			want: []string{"windows[1].schedule", "windows[1].duration"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	s, err := New(Config{Windows: []Window{{Schedule: "@daily"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.StepEstimate() != v1alpha1.DefaultStepEstimate {
		t.Errorf("StepEstimate = %q, want %q", s.StepEstimate(), v1alpha1.DefaultStepEstimate)
	}
	if got, want := s.String(), "@daily for 1h0m0s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestParseFlag(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        Window
		wantErr     bool
	}{
		{name: "schedule only → the default duration", value: "0 2 * * *", want: Window{Schedule: "0 2 * * *", Duration: 30 * time.Minute}},
		{name: "schedule|duration → both", value: "CRON_TZ=Europe/Paris 0 2 * * *|2h", want: Window{Schedule: "CRON_TZ=Europe/Paris 0 2 * * *", Duration: 2 * time.Hour}},
		{name: "spaces around the separator → trimmed", value: "@daily | 90m", want: Window{Schedule: "@daily", Duration: 90 * time.Minute}},
		{name: "bad duration → error", value: "@daily|two hours", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFlag(tc.value, 30*time.Minute)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); !tc.wantErr && diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
