package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// parser is robfig/cron/v3's standard parser (five fields) with descriptors; CRON_TZ= and TZ=
// prefixes are always accepted by it.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// validationReference is the time a schedule must fire after (within cron's five-year search) to
// be valid: one that never fires from here never fires at all.
var validationReference = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Validate checks c after SetDefaults: every schedule parses as a calendar expression that fires,
// every duration is positive, and StepEstimate is EstimateBound or EstimateP95. The error lists
// every problem, each prefixed with its field ("windows[1].schedule: ...").
func Validate(c Config) error {
	var errs []error
	switch c.StepEstimate {
	case EstimateBound, EstimateP95:
	default:
		errs = append(errs, fmt.Errorf("stepEstimate: must be %q or %q, got %q", EstimateBound, EstimateP95, c.StepEstimate))
	}
	for i, w := range c.Windows {
		if _, err := parse(w.Schedule); err != nil {
			errs = append(errs, fmt.Errorf("windows[%d].schedule: %w", i, err))
		}
		if w.Duration <= 0 {
			errs = append(errs, fmt.Errorf("windows[%d].duration: must be positive, got %s", i, w.Duration))
		}
	}
	return errors.Join(errs...)
}

// parse compiles one schedule and refuses those that open no window at a fixed time; the error
// quotes the expression.
func parse(spec string) (*cron.SpecSchedule, error) {
	ss, err := compile(spec)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", spec, err)
	}
	return ss, nil
}

// ValidateSchedule checks one window's schedule as New does: a calendar expression (five fields
// or a descriptor, optional CRON_TZ=<zone> prefix) that fires; @every is refused. The error does
// not repeat the expression (a caller that names the field shows it).
func ValidateSchedule(spec string) error {
	_, err := compile(spec)
	return err
}

func compile(spec string) (*cron.SpecSchedule, error) {
	s, err := parser.Parse(spec)
	if err != nil {
		return nil, err
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, errors.New("@every repeats relative to when a job starts, so it opens no window at a fixed time; use a cron expression or @daily, @weekly, ...")
	}
	if ss.Next(validationReference).IsZero() {
		return nil, errors.New("never fires")
	}
	return ss, nil
}
