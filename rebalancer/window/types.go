// Package window holds maintenance windows: when `run` may disrupt pods. A window opens at each
// activation of a cron expression and stays open for its duration; a run acts only while some
// window is open and has time left for the next move.
//
// Expressions use robfig/cron/v3's standard parser: five fields (minute hour day-of-month month
// day-of-week), the descriptors @yearly, @monthly, @weekly, @daily, @hourly, and an optional
// leading CRON_TZ=<IANA zone> (or TZ=). Without a zone the expression is read in UTC. @every is
// refused: it repeats relative to when a job starts, so it opens no window at a fixed time.
//
// It owns Config (types.go, its defaults in defaults.go, its validation in validation.go) and
// Schedule, the compiled windows (window.go). It imports robfig/cron/v3 and api/v1alpha1 (which
// defines a schedule's syntax, ParseWindowSchedule, and the defaults); execute and the CLI import
// it.
package window

import (
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// Window is one maintenance window: it opens at every activation of Schedule and stays open for
// Duration.
type Window struct {
	// Schedule is a cron expression (standard parser, descriptors, optional CRON_TZ=<zone>
	// prefix), e.g. "CRON_TZ=Europe/Paris 0 2 * * *" or "@daily".
	Schedule string `json:"schedule"`
	// Duration is how long the window stays open after each activation (DefaultDuration when 0).
	Duration time.Duration `json:"duration"`
}

// Config is the maintenance-window part of a run's policy. The zero value has no window: a run
// may act at any time.
type Config struct {
	// Windows are the maintenance windows; a run may act while any of them is open. Empty: always.
	Windows []Window `json:"windows,omitempty"`
	// StepEstimate chooses how a move's expected duration is judged against the time left
	// (v1alpha1.DefaultStepEstimate when empty).
	StepEstimate v1alpha1.StepEstimate `json:"stepEstimate,omitempty"`
}
