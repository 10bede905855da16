package window

import (
	"fmt"
	"strings"
	"time"
)

// FlagSeparator separates a window's schedule from its duration in the flag form
// "SCHEDULE|DURATION".
const FlagSeparator = "|"

// ParseFlag reads a window written as on the command line: "SCHEDULE" or "SCHEDULE|DURATION"
// (e.g. "CRON_TZ=Europe/Paris 0 2 * * *|2h"; DURATION in time.ParseDuration's syntax). Without a
// duration the window's Duration is def; a duration that is not positive is refused. It parses the
// duration only; New validates the schedule.
func ParseFlag(value string, def time.Duration) (Window, error) {
	sched, dur, found := strings.Cut(value, FlagSeparator)
	w := Window{Schedule: strings.TrimSpace(sched), Duration: def}
	if found {
		d, err := time.ParseDuration(strings.TrimSpace(dur))
		if err != nil {
			return Window{}, fmt.Errorf("window %q: duration: %w", value, err)
		}
		if d <= 0 {
			return Window{}, fmt.Errorf("window %q: duration %s: must be positive (a window that never stays open)", value, d)
		}
		w.Duration = d
	}
	return w, nil
}
