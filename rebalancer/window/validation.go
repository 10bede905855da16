package window

import (
	"errors"
	"fmt"

	"github.com/robfig/cron/v3"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// Validate checks c after SetDefaults: every schedule parses as a calendar expression that fires,
// every duration is positive, and StepEstimate is v1alpha1.StepEstimateBound or
// v1alpha1.StepEstimateP95. The error lists
// every problem, each prefixed with its field ("windows[1].schedule: ...").
func Validate(c Config) error {
	var errs []error
	switch c.StepEstimate {
	case v1alpha1.StepEstimateBound, v1alpha1.StepEstimateP95:
	default:
		errs = append(errs, fmt.Errorf("stepEstimate: must be %q or %q, got %q", v1alpha1.StepEstimateBound, v1alpha1.StepEstimateP95, c.StepEstimate))
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

// parse compiles one schedule (v1alpha1.ParseWindowSchedule: a calendar expression that fires,
// @every refused); the error quotes the expression.
func parse(spec string) (*cron.SpecSchedule, error) {
	ss, err := v1alpha1.ParseWindowSchedule(spec)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", spec, err)
	}
	return ss, nil
}
