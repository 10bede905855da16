// Package app implements the redis-rebalancer command line: the cobra commands, their flags, and
// the wiring from flags to the rebalancer/observe, plan, report and execute packages, policies and
// redisctl. One file per command (check.go, plan.go, run.go, lint.go, constraints.go, version.go),
// each with an options struct bound to its flags; options.go holds the option groups they share.
package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-redis/redis/v8"
	"github.com/spf13/cobra"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"
)

// Exit codes of the commands.
const (
	// ExitOK: success; for check, every Redis cluster complies; for run, an expected outcome
	// (report.Outcome.Expected: compliant, progressing, outsideWindow, leaseHeld, dryRun).
	ExitOK = 0
	// ExitError: the command failed (bad flags, API server or Redis unreachable, ...); for run,
	// report.OutcomeError.
	ExitError = 1
	// ExitViolations: the command worked, and some cluster breaks a hard rule (check: or its
	// Redis is not healthy); for run, report.OutcomeNeedsAttention: a cluster does not comply
	// and the run could not get it there.
	ExitViolations = 3
)

// usageWidth is the width --help wraps the flags' usages to: no line of a command's help is wider.
const usageWidth = 100

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// NewRootCommand returns the redis-rebalancer command with its subcommands.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "redis-rebalancer",
		Short: "Fix Redis Cluster pod placements on Kubernetes without losing a write",
		Long: fill(`redis-rebalancer finds Redis Cluster pods whose placement breaks the HA rules (`+
			ruleNames(false)+`) and fixes them one safe move at a time: it fails a master over to an
in-sync replica (CLUSTER FAILOVER), evicts the pod through the policy/v1 Eviction API so that
PodDisruptionBudgets hold, and lets kube-scheduler's topology spread constraints re-place it.`, helpWidth) + `

It runs as a Kubernetes CronJob, as a one-shot Job, or from a workstation with a kubeconfig.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	logging := logsapi.NewLoggingConfiguration()
	logsapi.AddFlags(logging, root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		// The flags first: a logging flag's bad value is then named as a flag.
		if err := validateFlags(cmd.Flags()); err != nil {
			return err
		}
		if err := applyLogging(logging, cmd.ErrOrStderr()); err != nil {
			return err
		}
		setGCPercent()
		return nil
	}
	// The flags' usages wrapped to the help's width (pflag's FlagUsagesWrapped), every command's
	// (the subcommands inherit the root's template).
	root.SetUsageTemplate(strings.NewReplacer(
		".LocalFlags.FlagUsages", "(.LocalFlags.FlagUsagesWrapped "+strconv.Itoa(usageWidth)+")",
		".InheritedFlags.FlagUsages", "(.InheritedFlags.FlagUsagesWrapped "+strconv.Itoa(usageWidth)+")",
	).Replace(root.UsageTemplate()))
	root.AddCommand(newRunCommand(), newServeCommand(), newCheckCommand(), newPlanCommand(), newPrepareDrainCommand(), newConstraintsCommand(), newLintCommand(), newPolicyCommand(), newVersionCommand())
	return root
}

// applyLogging sets klog up as --logging-format and the other logging flags say (component-base
// logs, as kube-scheduler and the descheduler do): text or json lines, both to errOut, so that
// stdout keeps the reports. Logging is process-wide and component-base applies it once: a command
// run again in the same process (tests, e2e) with the same logging flags only points the log
// lines at its own errOut; other logging flags there are an error.
//
// With the json format every line the process writes on its standard error is one JSON object:
// the progress becomes log entries (execute.Config.ProgressLog), notes and the final error are
// logged (errLines, exitCode), and go-redis's own log lines go through klog (redisLogger).
func applyLogging(c *logsapi.LoggingConfiguration, errOut io.Writer) error {
	logOut.set(errOut)
	if err := logsapi.ValidateAndApplyWithOptions(c, &logsapi.LoggingOptions{ErrorStream: logOut, InfoStream: logOut}, nil); err != nil {
		// Not applied: this command's error is a plain line on errOut, whatever an earlier
		// command in the same process (tests, e2e) set up.
		jsonLogs.Store(false)
		return &exitError{ExitError, fmt.Errorf("logging: %w", err)}
	}
	jsonLogs.Store(c.Format == logsapi.JSONLogFormat)
	redis.SetLogger(redisLogger{})
	return nil
}

// jsonLogs is true once the logging flags applied say --logging-format=json.
var jsonLogs atomic.Bool

// redisLogger sends go-redis's log lines (connection pool and cluster-state notes, which it
// otherwise prints on the standard error with the standard library's logger) to klog at V(2).
type redisLogger struct{}

func (redisLogger) Printf(_ context.Context, format string, v ...interface{}) {
	klog.V(2).InfoS("Redis client", "note", fmt.Sprintf(format, v...))
}

// errLines is where a command writes its notes for a human (stderr): the command's error output
// in text mode, one log entry ("Note", the line under "text") per line with --logging-format=json.
func errLines(cmd *cobra.Command) io.Writer {
	if jsonLogs.Load() {
		return &noteWriter{}
	}
	return cmd.ErrOrStderr()
}

// noteWriter logs each whole line written to it as a klog entry "Note" (blank lines dropped).
type noteWriter struct{ buf []byte }

func (w *noteWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		line, rest, found := bytes.Cut(w.buf, []byte("\n"))
		if !found {
			return len(p), nil
		}
		if text := strings.TrimRight(string(line), " \r"); strings.TrimSpace(text) != "" {
			klog.InfoS("Note", "text", text)
		}
		w.buf = append(w.buf[:0], rest...)
	}
}

func init() {
	// A second command in one process with the same logging flags (see applyLogging).
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

// logOut is where klog's lines go: the running command's standard error.
var logOut = &switchWriter{w: os.Stderr}

// switchWriter writes to w, which set replaces; safe for concurrent use.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Main runs the root command with os.Args and returns the process exit code.
func Main() int {
	return exitCode(NewRootCommand())
}

// exitCode runs cmd, prints its error (if any) to cmd's error output as "redis-rebalancer: …",
// and returns the exit code: ExitOK, the code an exitError carries, or ExitError.
// With --logging-format=json the error is a log entry ("Command failed", its exit code under
// "exitCode") instead of a line of text.
func exitCode(cmd *cobra.Command) int {
	err := cmd.Execute()
	defer klog.Flush()
	if err == nil {
		return ExitOK
	}
	code := ExitError
	var ee *exitError
	if errors.As(err, &ee) {
		code, err = ee.code, ee.err
	}
	switch {
	case err == nil:
	case jsonLogs.Load():
		klog.ErrorS(err, "Command failed", "exitCode", code)
	default:
		fmt.Fprintln(cmd.ErrOrStderr(), "redis-rebalancer:", err)
	}
	return code
}

// printJSON writes v to w as JSON indented by two spaces, as -o json prints every report.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
