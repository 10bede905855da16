package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The suite's structure.
//
// One test bed (harness.Bed: a local control plane and the six nodes of scenario.ThreeZones)
// serves every test of a `go test ./e2e` run; TestMain stops it at the end and checks that none of
// its processes is left. Each test lays out its scenario in a namespace of its own, with its own
// redis-servers on its own Redis port and its own writer (bed.SetupForTest), so tests that only
// disrupt their own pods and Redis nodes run in parallel (t.Parallel; at most -parallel, by
// default GOMAXPROCS, at once).
//
// Tests that take the API server down (TestFaultAPIServerDown…) do not call t.Parallel: Go runs
// every sequential top-level test before it releases the parallel ones, so they own the control
// plane while nothing else runs, and the bed they leave behind is checked (TestBedStaysReady runs
// in parallel, afterwards). Tests that change nodes do the same (TestFaultAllNodesCordoned cordons
// every node).
//
// `redis-rebalancer run` runs as a process of its own, so that a test can read its exit status
// and kill it: the test binary re-executes itself with cliEnv set, and TestMain then runs the CLI
// (cmd/redis-rebalancer/app.Main) instead of the tests.

// cliEnv makes the test binary run the redis-rebalancer CLI with its arguments.
const cliEnv = "REBALANCER_E2E_CLI"

// workDirEnv, when set, names a directory (empty or missing) the test bed keeps its files in —
// the control plane's logs, every environment's Redis data and logs — instead of a temporary
// directory removed at the end: for looking into a failure.
const workDirEnv = "REBALANCER_E2E_WORKDIR"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		os.Exit(app.Main())
	}
	dir, err := os.MkdirTemp("", "e2e-policy-")
	if err == nil {
		policyFile = filepath.Join(dir, "policy.yaml")
		err = os.WriteFile(policyFile, []byte(e2ePolicy), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e policy:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if err := stopBed(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

var shared struct {
	once sync.Once
	bed  *harness.Bed
	err  error
	log  bytes.Buffer // the bed's progress lines, printed when it fails to start
}

// bed returns the run's test bed, started by the first test that asks.
func bed(t *testing.T) *harness.Bed {
	t.Helper()
	shared.once.Do(func() {
		shared.bed, shared.err = harness.StartBed(context.Background(), harness.BedOptions{Log: &shared.log, WorkDir: os.Getenv(workDirEnv)})
	})
	if shared.err != nil {
		t.Fatalf("test bed: %v\n%s", shared.err, shared.log.String())
	}
	return shared.bed
}

// stopBed stops the test bed, if one was started, and returns an error naming any of its
// processes still running afterwards.
func stopBed() error {
	if shared.bed == nil {
		return nil
	}
	pids := shared.bed.Cluster.Pids()
	shared.bed.Stop()
	if dir := os.Getenv(workDirEnv); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "bed.log"), shared.log.Bytes(), 0o644); err != nil {
			return err
		}
	}
	var left []string
	for name, pid := range pids {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			left = append(left, fmt.Sprintf("%s (process group %d)", name, pid))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("e2e: processes of the test bed left after Stop: %s", strings.Join(left, ", "))
	}
	return nil
}

// faultEnv is a scenario laid out on the test bed with a writer running and every pod's role
// recorded as it goes away.
type faultEnv struct {
	*harness.Env
	writer *harness.Writer
	// losses are the node and zone losses the test inflicted (loseNodes), in order.
	losses []harness.Loss
}

// writeRate is the writer's rate in every test: the fault matrix asks for ≥ 200 writes/s.
const writeRate = 250

// newFaultEnv lays sc out on the test bed (in parallel with other tests unless serial), starts a
// writer at writeRate and waits until it has 200 writes acknowledged.
func newFaultEnv(t *testing.T, sc scenario.Scenario, opts harness.Options, serial bool) *faultEnv {
	t.Helper()
	b := bed(t) // started before t.Parallel, so that a sequential test starts it, not a parallel one
	if !serial {
		t.Parallel()
	}
	opts.RecordStops = true
	return watch(t, b.SetupForTest(t, sc, opts))
}

// watch starts a writer at writeRate on env (set up with harness.Options.RecordStops), waits
// until it has 200 writes acknowledged, and returns the faultEnv of the two.
func watch(t *testing.T, env *harness.Env) *faultEnv {
	t.Helper()
	w, err := env.StartWriter(writeRate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(); w.Close() })
	if err := w.WaitAcked(t.Context(), 200, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return &faultEnv{Env: env, writer: w}
}

// finish lets the writer write 200 more writes, stops it, and asserts what every test must
// give, whatever the fault (faults_test.go): no acknowledged write lost, ≥ 200 writes/s,
// and every pod that went away a replica at that moment, as Redis said (no master evicted
// without a failover). Writes that failed after the client's retries are logged, not failed on:
// a fault may cost a client an error (the success paths assert none; runScenario). It returns
// the writer's figures.
func (f *faultEnv) finish(t *testing.T) harness.WriterStats {
	t.Helper()
	stats := f.drain(t)
	if stats.Failed > 0 {
		t.Logf("%d writes failed after the client's retries: %v", stats.Failed, stats.Failures)
	}
	if stats.Rate < 200 {
		t.Errorf("writer rate %.0f/s, want ≥ 200/s", stats.Rate)
	}
	for _, s := range f.Stops() {
		if policies.ParseRole(s.Role) != policies.RoleReplica {
			t.Errorf("pod %s went away while Redis reported role %q (err %q): a master evicted without a failover", s.Pod, s.Role, s.Err)
		}
	}
	return stats
}

// drain lets the writer write 200 more writes, stops it, and checks that no acknowledged write
// was lost (writes that failed after the client's retries are not failed on). The one exception
// is a write harness.Loss.Explains: acknowledged by a master the test itself stopped, in the
// moments Redis Cluster's asynchronous replication may lose it (logged, with the loss). It
// returns the writer's figures over the whole test.
func (f *faultEnv) drain(t *testing.T) harness.WriterStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := f.writer.WaitAcked(ctx, f.writer.Stats().Acked+200, 30*time.Second); err != nil {
		t.Error(err)
	}
	f.writer.Stop()
	stats := f.writer.Stats()
	t.Logf("writer: %s", stats)
	lost, err := f.writer.LostWrites(ctx)
	if err != nil {
		t.Error(err)
	}
	var unexplained []harness.LostWrite
	for _, l := range lost {
		i := slices.IndexFunc(f.losses, func(x harness.Loss) bool { return x.Explains(l) })
		if i < 0 {
			unexplained = append(unexplained, l)
			continue
		}
		x := f.losses[i]
		t.Logf("%s (slot %d) acknowledged %v after %v was lost (%v after it came back): lost with it, as Redis Cluster's asynchronous replication may",
			l, l.Slot, l.Acked.Sub(x.Paused).Round(time.Millisecond), x.Nodes, l.Acked.Sub(x.Resumed).Round(time.Millisecond))
	}
	if err := harness.LostError(unexplained); err != nil {
		t.Error(err)
	}
	return stats
}

// e2ePolicy is the RebalancerPolicy every run reads (--policy): timeouts that fit a test, at most
// 6 evictions per cluster. What differs per test (kubeconfig, namespace, Redis port) are flags,
// and a test's extra flags override the file (--health-timeout 8s).
const e2ePolicy = `apiVersion: rebalancer.redis.io/v1alpha1
kind: RebalancerPolicy
limits: {maxMovesPerCluster: 6}
timeouts: {healthGate: 1m, recreate: 2m, rejoin: 2m}
output: json
`

// policyFile is e2ePolicy's file, written by TestMain.
var policyFile string

// runArgs returns `redis-rebalancer run`'s arguments for env (cliArgs), with the Lease in env's
// namespace: each test's runs hold a Lease of their own, so that tests running in parallel do not
// wait for each other (a run in a Job holds the Lease of the rebalancer's namespace).
func runArgs(env *harness.Env, extra ...string) []string {
	return cliArgs("run", env, append([]string{"--leader-elect-resource-namespace", env.Namespace}, extra...)...)
}

// cliArgs returns the arguments of `redis-rebalancer <command>` (run, plan, lint, serve) on env:
// the policy file, its kubeconfig, namespace and Redis port, and JSON log lines (beside the
// progress on stderr); extra comes last (a later flag wins).
func cliArgs(command string, env *harness.Env, extra ...string) []string {
	return append([]string{command, "--policy", policyFile, "--kubeconfig", env.Kubeconfig(), "-n", env.Namespace,
		"--redis-port", strconv.Itoa(env.Port), "--logging-format", "json"}, extra...)
}

// cliRun is `redis-rebalancer` running as a child process: the test binary re-executed with
// cliEnv, in its own process group, killed if the test process dies.
type cliRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout bytes.Buffer
	done   chan struct{} // closed once the process has exited and its output is read

	mu      sync.Mutex
	lines   []string      // stderr lines so far: progress (-o json) and the error
	changed chan struct{} // closed and replaced on every new line
}

// startCLI starts redis-rebalancer with args; env is added to its environment.
func startCLI(t *testing.T, env []string, args ...string) *cliRun {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &cliRun{t: t, done: make(chan struct{}), changed: make(chan struct{})}
	r.cmd = exec.Command(self, args...)
	r.cmd.Env = append(append(os.Environ(), cliEnv+"=1"), env...)
	r.cmd.Stdout = &r.stdout
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("$ redis-rebalancer %s", strings.Join(args, " "))
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			close(r.changed)
			r.changed = make(chan struct{})
			r.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = r.cmd.Wait()
	}()
	t.Cleanup(func() {
		r.kill()
		r.assertNoProcessLeft()
	})
	return r
}

// waitLine waits until a line of the CLI's progress contains substr and returns it. It fails
// the test if the process exits first or timeout passes.
func (r *cliRun) waitLine(substr string, timeout time.Duration) string {
	r.t.Helper()
	return r.waitLineWith(timeout, substr)
}

// waitStep waits until the CLI reports that a move's step (report.Step…) continued with a reason
// containing note ("" for any), and returns the line ("  ✓ failover (52ms): verified in …").
func (r *cliRun) waitStep(step, note string, timeout time.Duration) string {
	r.t.Helper()
	return r.waitLineWith(timeout, "✓ "+step+" (", note)
}

// waitLineWith waits until a line of the CLI's progress contains every one of substrs.
func (r *cliRun) waitLineWith(timeout time.Duration, substrs ...string) string {
	r.t.Helper()
	substr := strings.Join(substrs, " … ")
	match := func(line string) bool {
		for _, s := range substrs {
			if !strings.Contains(line, s) {
				return false
			}
		}
		return true
	}
	deadline := time.After(timeout)
	seen := 0
	for {
		r.mu.Lock()
		lines, changed := r.lines, r.changed
		r.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if match(lines[seen]) {
				return lines[seen]
			}
		}
		select {
		case <-changed:
		case <-r.done:
			// done is closed after the last line was read: look at the rest once more.
			r.mu.Lock()
			lines = r.lines
			r.mu.Unlock()
			for ; seen < len(lines); seen++ {
				if match(lines[seen]) {
					return lines[seen]
				}
			}
			r.t.Fatalf("redis-rebalancer exited (%v) before printing %q; its output:\n%s", r.cmd.ProcessState, substr, r.stderr())
		case <-deadline:
			r.t.Fatalf("redis-rebalancer printed no %q in %v; its output so far:\n%s", substr, timeout, r.stderr())
		}
	}
}

// kill kills the CLI's process group with SIGKILL (at once, as a node or an OOM killer would) and
// waits until it has exited. It is a no-op once the process has exited.
func (r *cliRun) kill() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.done
}

// wait waits up to timeout for the CLI to exit and returns its exit status (-1 when a signal
// killed it). It logs the CLI's progress output.
func (r *cliRun) wait(timeout time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		r.kill()
		r.t.Fatalf("redis-rebalancer did not exit within %v; killed. Its output:\n%s", timeout, r.stderr())
	}
	r.t.Logf("redis-rebalancer exited (%v); its output:\n%s", r.cmd.ProcessState, r.stderr())
	r.assertNoProcessLeft()
	r.assertJSONLines(r.cmd.Args[1:])
	return r.cmd.ProcessState.ExitCode()
}

// assertNoProcessLeft checks that nothing of the CLI's process group runs any more.
func (r *cliRun) assertNoProcessLeft() {
	r.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return errors.Is(syscall.Kill(-r.cmd.Process.Pid, 0), syscall.ESRCH), nil
	})
	if err != nil {
		r.t.Errorf("a process of redis-rebalancer's group %d is still running after it exited", r.cmd.Process.Pid)
	}
}

// logs returns the structured log lines (--logging-format=json) the CLI printed on stderr so
// far, decoded.
func (r *cliRun) logs() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, l := range r.lines {
		var m map[string]any
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// stderr returns what the CLI printed on stderr so far.
func (r *cliRun) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// errorLine returns the error the CLI ended with: the "err" of its "Command failed" log entry
// (--logging-format=json), or the first line "redis-rebalancer: …" without the prefix (text);
// "" when it printed none.
func (r *cliRun) errorLine() string {
	for _, l := range r.logs() {
		if l["msg"] == "Command failed" {
			s, _ := l["err"].(string)
			return s
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lines {
		if rest, ok := strings.CutPrefix(l, "redis-rebalancer: "); ok {
			return rest
		}
	}
	return ""
}

// assertJSONLines checks, when the CLI logs JSON (--logging-format json), that every line it
// printed on stderr is one JSON object: the log entries, the progress as "Progress" entries,
// the error as "Command failed".
func (r *cliRun) assertJSONLines(args []string) {
	r.t.Helper()
	if !slices.Contains(args, "json") || !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--logging-format") }) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	bad := 0
	for _, l := range r.lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			if bad++; bad <= 5 {
				r.t.Errorf("stderr line is not one JSON object (%v): %q", err, l)
			}
		}
	}
	if bad > 0 {
		r.t.Errorf("%d of %d stderr lines are not JSON with --logging-format json", bad, len(r.lines))
	}
}

// report returns the run's JSON report (stdout); it fails the test when there is none.
func (r *cliRun) report() report.Run {
	r.t.Helper()
	<-r.done
	var rep report.Run
	if err := json.Unmarshal(r.stdout.Bytes(), &rep); err != nil {
		r.t.Fatalf("run report: %v\n%s", err, r.stdout.String())
	}
	return rep
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
