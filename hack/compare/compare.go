package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/redisrt"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/proc"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// What is measured, for each scenario and tool, on a fresh layout of the scenario (its own
// namespace on one shared test bed) with a writer at Config.WriteRate throughout:
//   - compliance: every hard rule of redis-rebalancer's policies holds, every pod's redis-server
//     runs, and the Redis cluster passes the health gate (cluster_state ok, every slot served,
//     every master with an in-sync replica); "time to compliance" is from the tool's start to
//     the first poll (every 500 ms) where all three hold;
//   - evictions: pods that went away; "masters evicted without failover": those whose Redis node
//     said "master" (ROLE) at that moment, asked by the Redis runtime just before it stopped the
//     server;
//   - writer errors (writes that failed after the client's retries) and lost writes
//     (acknowledged, then not read back);
//   - node loss afterwards: once the cluster is healthy again, the redis-servers of the node
//     holding the most masters are stopped (SIGSTOP); the cluster survives when, within
//     4 × cluster-node-timeout, every survivor flags the lost nodes fail, says cluster_state:ok and
//     serves every slot.
// Every (re-)created pod takes Config.ReadyDelay to start (kwok's pod-ready delay): on the
// instant test bed a master evicted without a failover is back before Redis notices
// (cluster-node-timeout), which flatters any tool that does so.

// Tool names. The guard's rows run `redis-rebalancer serve --guard` beside the tool, behind a
// ValidatingWebhookConfiguration on the scenario's evictions (kube-apiserver calls it at
// https://127.0.0.1:PORT).
const (
	toolRebalancer       = "redis-rebalancer"
	toolDescheduler      = "descheduler"
	toolDeschedulerGuard = "descheduler + guard"
	toolDrain            = "kubectl drain"
	toolDrainGuard       = "kubectl drain + guard"
	// toolPlugin is the descheduler built with the RedisClusterBalance balance plugin
	// (hack/descheduler-plugin), its profile enabling that plugin alone: a row wherever
	// redis-rebalancer has one, when Config.DeschedulerPlugin is set.
	toolPlugin = "descheduler + RedisClusterBalance"
)

// defaultTools are the tools a scenario runs with unless it names its own.
var defaultTools = []string{toolRebalancer, toolDescheduler}

// redisNodeTimeout is the test bed's cluster-node-timeout (test/redisserver's default).
const redisNodeTimeout = 2 * time.Second

// Config configures a comparison.
type Config struct {
	// Rebalancer and Descheduler are the binaries.
	Rebalancer, Descheduler string
	// DeschedulerPlugin is the descheduler built with RedisClusterBalance
	// (hack/descheduler-plugin); its rows are left out when empty.
	DeschedulerPlugin string
	// Scenarios names the scenarios (scenarioNames).
	Scenarios []string
	// ReadyDelay is how long every (re-)created pod takes to become Running and Ready.
	ReadyDelay time.Duration
	// Budget bounds how long a tool gets to reach compliance.
	Budget time.Duration
	// DeschedulingInterval is the descheduler's loop period.
	DeschedulingInterval time.Duration
	// WriteRate is the writer's writes per second.
	WriteRate int
	// Markdown, when set, also receives the table.
	Markdown string
	// Verbose prints the harness's and the tools' output.
	Verbose bool
	// Out receives progress lines.
	Out io.Writer
}

func defaultConfig() Config {
	return Config{
		Rebalancer:           "bin/redis-rebalancer",
		Scenarios:            scenarioNames(),
		ReadyDelay:           5 * time.Second,
		Budget:               time.Minute,
		DeschedulingInterval: 5 * time.Second,
		WriteRate:            250,
		Out:                  io.Discard,
	}
}

func (c Config) validate() error {
	for _, bin := range []string{c.Rebalancer, c.Descheduler} {
		if bin == "" {
			return errors.New("-rebalancer and -descheduler are required")
		}
		if _, err := os.Stat(bin); err != nil {
			return err
		}
	}
	if c.DeschedulerPlugin != "" {
		if _, err := os.Stat(c.DeschedulerPlugin); err != nil {
			return err
		}
	}
	for _, s := range c.Scenarios {
		if _, ok := scenarios[s]; !ok {
			return fmt.Errorf("unknown scenario %q (known: %v)", s, scenarioNames())
		}
	}
	if c.ReadyDelay < 0 || c.Budget <= 0 || c.DeschedulingInterval <= 0 || c.WriteRate <= 0 {
		return errors.New("-ready-delay must not be negative; -budget, -descheduling-interval and -write-rate must be positive")
	}
	return nil
}

// compareScenario is a scenario and how it is laid out for the comparison.
type compareScenario struct {
	what string
	make func() scenario.Scenario
	// runningPods changes the template the pods are created from (harness.Options.RunningPods).
	runningPods func(*corev1.PodTemplateSpec)
	// pending names a pod that must be Unschedulable before the tool starts.
	pending func(scenario.Scenario) string
	// tools are the tools compared (defaultTools when nil).
	tools []string
	// drain names the node the drain rows drain.
	drain string
}

var scenarios = map[string]compareScenario{
	"post-scale-down": {
		what:  "5 shards × 2 pods after a scale-down, 4 masters on n1 (node maxSkew 3 broken)",
		make:  scenario.PostScaleDown,
		tools: []string{toolRebalancer, toolDescheduler, toolDeschedulerGuard},
	},
	"drain": {
		what:  "a compliant 5 shards × 2 pods, n1 holding the most masters (2 of 5): `kubectl drain n1` (k8s.io/kubectl/pkg/drain, retry every 5 s)",
		make:  scenario.TwoMastersOnN1,
		tools: []string{toolDrain, toolDrainGuard},
		drain: "n1",
	},
	"seed-deadlock": {
		what:    "the 3-shard deadlock: shard 2's replica Pending forever",
		make:    scenario.SeedDeadlock,
		pending: func(sc scenario.Scenario) string { return sc.PodName(2, 1) },
	},
	"template-only-constraints": {
		what: "post-scale-down placement, spread constraints only in the StatefulSet templates (pods created before the operator added them)",
		make: func() scenario.Scenario {
			sc := scenario.PostScaleDown()
			sc.Name = "template-only-constraints"
			return sc
		},
		runningPods: func(t *corev1.PodTemplateSpec) { t.Spec.TopologySpreadConstraints = nil },
	},
}

func scenarioNames() []string {
	return []string{"post-scale-down", "seed-deadlock", "template-only-constraints", "drain"}
}

// Result is what one tool did on one scenario.
type Result struct {
	Scenario, Tool string
	// Compliant: compliance (see above) held when the tool was done; Reached is when it first
	// held, from the tool's start (0: never).
	Compliant bool
	Reached   time.Duration
	// Broken lists the hard rules still broken at the end.
	Broken []string
	// Evictions and MastersEvicted count the pods that went away, and those that were masters.
	Evictions, MastersEvicted int
	// Acked, WriteErrors and LostWrites are the writer's figures.
	Acked, WriteErrors, LostWrites int
	// LostNode is the node whose servers were stopped afterwards, holding LostMasters masters;
	// Survived says whether the cluster survived it (SurviveNote says how, or why not).
	LostNode    string
	LostMasters int
	Survived    bool
	SurviveNote string
	// ToolExit is the tool's exit status (-1 when stopped by a signal, as the descheduler is).
	ToolExit int
	// DrainTook is how long a drain row's drain took (0 for the other rows).
	DrainTook time.Duration
	// Err is set when the measurement itself failed.
	Err error
}

// run starts a test bed and runs every scenario with both tools, one after the other.
func run(ctx context.Context, cfg Config) ([]Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var log io.Writer = io.Discard
	if cfg.Verbose {
		log = cfg.Out
	}
	fmt.Fprintf(cfg.Out, "compare: starting a test bed (local control plane, 6 kwok nodes in 3 zones)\n")
	bed, err := harness.StartBed(ctx, harness.BedOptions{Log: log})
	if err != nil {
		return nil, err
	}
	defer bed.Stop()
	var results []Result
	for _, name := range cfg.Scenarios {
		tools := scenarios[name].tools
		if tools == nil {
			tools = defaultTools
		}
		if cfg.DeschedulerPlugin != "" && slices.Contains(tools, toolRebalancer) {
			tools = append(slices.Clip(tools), toolPlugin)
		}
		for _, tool := range tools {
			fmt.Fprintf(cfg.Out, "compare: %s with %s ...\n", name, tool)
			r := runOne(ctx, cfg, bed, name, tool, log)
			fmt.Fprintf(cfg.Out, "compare: %s with %s: %s\n", name, tool, r.summary())
			results = append(results, r)
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
		}
	}
	return results, nil
}

func (r Result) summary() string {
	if r.Err != nil {
		return "error: " + r.Err.Error()
	}
	return fmt.Sprintf("compliant %v (reached %s), %d evictions (%d masters), %d writes acknowledged, %d failed, %d lost; loss of %s (%d masters): survived %v (%s)",
		r.Compliant, reachedText(r), r.Evictions, r.MastersEvicted, r.Acked, r.WriteErrors, r.LostWrites, r.LostNode, r.LostMasters, r.Survived, r.SurviveNote)
}

// runOne lays the scenario out, runs the tool with the writer running, and measures.
func runOne(ctx context.Context, cfg Config, bed *harness.Bed, name, tool string, log io.Writer) (res Result) {
	res = Result{Scenario: name, Tool: tool}
	cs := scenarios[name]
	sc := cs.make()
	env, err := bed.Setup(ctx, sc, harness.Options{
		Log:            log,
		Namespace:      namespaceFor(name, tool),
		PodAnnotations: map[string]string{localcluster.PodReadyDelayAnnotation: cfg.ReadyDelay.String()},
		RunningPods:    cs.runningPods,
		RecordStops:    true,
	})
	if err != nil {
		res.Err = err
		return res
	}
	defer env.Stop()
	if cs.pending != nil {
		if err := env.WaitUnschedulable(ctx, cs.pending(sc), time.Minute); err != nil {
			res.Err = err
			return res
		}
	}
	w, err := env.StartWriter(cfg.WriteRate)
	if err != nil {
		res.Err = err
		return res
	}
	defer w.Close()
	if err := w.WaitAcked(ctx, 200, time.Minute); err != nil {
		res.Err = err
		return res
	}

	if tool == toolDeschedulerGuard || tool == toolDrainGuard {
		stop, err := startGuard(ctx, cfg, env, log)
		if err != nil {
			res.Err = err
			return res
		}
		defer stop()
	}
	var mon *monitor
	switch tool {
	case toolRebalancer:
		mon = startMonitor(ctx, env, sc.N(), time.Now())
		res.ToolExit, err = runRebalancer(ctx, cfg, env, mon, log)
	case toolDescheduler, toolDeschedulerGuard:
		mon = startMonitor(ctx, env, sc.N(), time.Now())
		res.ToolExit, err = runDescheduler(ctx, cfg, cfg.Descheduler, env, mon, log, topologySpreadProfile(env), nil)
	case toolPlugin:
		mon = startMonitor(ctx, env, sc.N(), time.Now())
		res.ToolExit, err = runDescheduler(ctx, cfg, cfg.DeschedulerPlugin, env, mon, log, redisClusterBalanceProfile(env), pluginCycleCompliant(env))
	case toolDrain, toolDrainGuard:
		// The placement complies before the drain: compliance is judged from the drain's end
		// (the node uncordoned), up to 30 s.
		res.ToolExit, res.DrainTook, err = runDrain(ctx, cfg, env, cs.drain, log)
		mon = startMonitor(ctx, env, sc.N(), time.Now())
		mon.waitReached(ctx, 30*time.Second)
	}
	mon.stop(ctx)
	if err != nil {
		res.Err = err
	}
	res.Reached = mon.reachedAfter()
	res.Compliant, res.Broken = mon.last()

	if err := w.WaitAcked(ctx, w.Stats().Acked+200, time.Minute); err != nil && res.Err == nil {
		res.Err = err
	}
	w.Stop()
	stats := w.Stats()
	res.Acked, res.WriteErrors = stats.Acked, stats.Failed
	lost, err := w.Lost(ctx)
	if err != nil && res.Err == nil {
		res.Err = err
	}
	res.LostWrites = len(lost)
	for _, s := range env.Stops() {
		res.Evictions++
		if policies.ParseRole(s.Role) == policies.RoleMaster {
			res.MastersEvicted++
		}
	}

	res.LostNode, res.LostMasters, res.Survived, res.SurviveNote = loseNode(ctx, env)
	return res
}

// runRebalancer runs `redis-rebalancer run` once, then waits up to 30 s (within the budget)
// for compliance.
func runRebalancer(ctx context.Context, cfg Config, env *harness.Env, mon *monitor, log io.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfg.Rebalancer, "run", "--kubeconfig", env.Kubeconfig(), "-n", env.Namespace,
		"--redis-port", strconv.Itoa(env.Port), "--max-moves", "10")
	cmd.Stdout, cmd.Stderr = log, log
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return code, fmt.Errorf("redis-rebalancer: %w", err)
	}
	mon.waitReached(ctx, 30*time.Second)
	return code, nil
}

// topologySpreadProfile is the stock descheduler's DeschedulerPolicy profile:
// RemovePodsViolatingTopologySpreadConstraint on the scenario's namespace and the DefaultEvictor.
func topologySpreadProfile(env *harness.Env) map[string]any {
	return map[string]any{
		"name": "compare",
		"pluginConfig": []any{
			map[string]any{"name": "DefaultEvictor", "args": map[string]any{}},
			map[string]any{"name": "RemovePodsViolatingTopologySpreadConstraint", "args": map[string]any{
				"namespaces": map[string]any{"include": []string{env.Namespace}},
			}},
		},
		"plugins": map[string]any{"balance": map[string]any{"enabled": []string{"RemovePodsViolatingTopologySpreadConstraint"}}},
	}
}

// redisClusterBalanceProfile is the profile of the descheduler built with RedisClusterBalance:
// that plugin alone on the scenario's namespace (its Redis port, the Lease in that namespace, of
// its own; redis-rebalancer's defaults otherwise, at most 10 evictions per cycle as
// `redis-rebalancer run --max-moves 10`) and the DefaultEvictor.
func redisClusterBalanceProfile(env *harness.Env) map[string]any {
	return map[string]any{
		"name": "compare",
		"pluginConfig": []any{
			map[string]any{"name": "DefaultEvictor", "args": map[string]any{}},
			map[string]any{"name": "RedisClusterBalance", "args": map[string]any{
				"namespaces":         map[string]any{"include": []string{env.Namespace}},
				"redisPort":          env.Port,
				"maxMovesPerCluster": 10,
				"lease":              map[string]any{"namespace": env.Namespace},
			}},
		},
		"plugins": map[string]any{"balance": map[string]any{"enabled": []string{"RedisClusterBalance"}}},
	}
}

// pluginCycleCompliant says, from the descheduler's output, whether a cycle of RedisClusterBalance
// has ended with the scenario's Redis cluster compliant: its moves, failover steps included (which
// move no pod, so that the monitor's compliance may hold before them), are all made.
func pluginCycleCompliant(env *harness.Env) func(output string) bool {
	name := env.Scenario.ClusterLabels()[env.Scenario.ClusterLabel()]
	line := fmt.Sprintf(`"Redis cluster" plugin="RedisClusterBalance" namespace=%q name=%q compliant=true`, env.Namespace, name)
	return func(output string) bool { return strings.Contains(output, line) }
}

// runDescheduler runs a descheduler binary in its loop (every DeschedulingInterval) with the
// DeschedulerPolicy profile given, until compliance or the budget, then stops it (SIGTERM). When
// settled is not nil, it also waits (within the budget) until settled holds on the descheduler's
// output so far, as runRebalancer waits for `redis-rebalancer run` to exit.
func runDescheduler(ctx context.Context, cfg Config, bin string, env *harness.Env, mon *monitor, log io.Writer, profile map[string]any, settled func(output string) bool) (int, error) {
	began := time.Now()
	policy := map[string]any{
		"apiVersion": "descheduler/v1alpha2",
		"kind":       "DeschedulerPolicy",
		"profiles":   []any{profile},
	}
	data, err := yaml.Marshal(policy)
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "compare-descheduler-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return 0, err
	}
	cmd := exec.Command(bin, "--kubeconfig", env.Kubeconfig(), "--policy-config-file", path,
		"--descheduling-interval", cfg.DeschedulingInterval.String(), "--disable-metrics", "--secure-port", "0", "--v", "2")
	var out proc.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &out), io.MultiWriter(log, &out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	reached := make(chan struct{})
	go func() {
		mon.waitReached(ctx, cfg.Budget)
		close(reached)
	}()
	select {
	case err := <-done:
		// It stops only on a bad configuration.
		return cmd.ProcessState.ExitCode(), fmt.Errorf("descheduler exited early: %v\n%s", err, tail(out.Bytes(), 2000))
	case <-reached:
	}
	if settled != nil {
		if left := cfg.Budget - time.Since(began); left > 0 {
			_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, left, true, func(context.Context) (bool, error) {
				return settled(string(out.Bytes())), nil
			})
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	return cmd.ProcessState.ExitCode(), nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// monitor polls compliance every 500 ms from the tool's start.
type monitor struct {
	env    *harness.Env
	n      int
	began  time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	reachedAt time.Time
	compliant bool
	broken    []string
	changed   chan struct{}
}

func startMonitor(ctx context.Context, env *harness.Env, n int, began time.Time) *monitor {
	ctx, cancel := context.WithCancel(ctx)
	m := &monitor{env: env, n: n, began: began, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	go func() {
		defer close(m.done)
		_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			ok, broken := m.check(ctx)
			if ctx.Err() != nil {
				return true, nil // stopped during the check: its outcome is the cancellation's
			}
			m.mu.Lock()
			m.compliant, m.broken = ok, broken
			if ok && m.reachedAt.IsZero() {
				m.reachedAt = time.Now()
				close(m.changed)
			}
			m.mu.Unlock()
			return false, nil
		})
	}()
	return m
}

// check reports whether compliance holds now, and the hard rules broken.
func (m *monitor) check(ctx context.Context) (bool, []string) {
	snap, err := observe.ReadSnapshot(ctx, m.env.Client(), m.env.Namespace)
	if err != nil {
		return false, []string{"read: " + err.Error()}
	}
	model, err := policies.Build(snap, policies.Options{})
	if err != nil || len(model.Clusters) != 1 {
		return false, []string{fmt.Sprintf("model: %v", err)}
	}
	c := model.Clusters[0]
	var broken []string
	seen := map[string]bool{}
	for _, v := range policies.Hard(c.Evaluate(c.Current())) {
		if !seen[string(v.Rule)] {
			seen[string(v.Rule)] = true
			broken = append(broken, string(v.Rule))
		}
	}
	sort.Strings(broken)
	if len(broken) > 0 {
		return false, broken
	}
	// Every pod Ready, with its redis-server running on its IP (not a server still stopping
	// for a pod that went away).
	// The snapshot's pods (listed once, above) are the namespace's: keep the scenario's.
	sel, err := labels.Parse(m.env.Scenario.Selector())
	if err != nil {
		return false, []string{"selector: " + err.Error()}
	}
	servers := map[string]redisrt.ServerInfo{}
	for _, srv := range m.env.Runtime.Servers() {
		servers[srv.Name] = srv
	}
	var addrs []string
	for _, p := range snap.Pods {
		srv, ok := servers[p.Name]
		if !sel.Matches(labels.Set(p.Labels)) || !observe.PodReady(p) || !ok || srv.UID != p.UID || srv.IP != p.Status.PodIP || srv.Paused {
			continue
		}
		addrs = append(addrs, srv.Addr)
	}
	if len(addrs) < m.n {
		return false, nil
	}
	_, err = m.env.Redis.CheckHealth(ctx, addrs, redisctl.HealthOptions{})
	return err == nil, nil
}

// waitReached waits until compliance has been reached, at most timeout.
func (m *monitor) waitReached(ctx context.Context, timeout time.Duration) {
	m.mu.Lock()
	changed := m.changed
	m.mu.Unlock()
	select {
	case <-changed:
	case <-time.After(timeout):
	case <-ctx.Done():
	}
}

// stop ends the polling, then checks once more, so that the outcome when the tool was done is a
// check made after it was done, not the last poll, which may have run while the tool's last step
// (a failover's switch, a pod's return) was still settling.
func (m *monitor) stop(ctx context.Context) {
	m.cancel()
	<-m.done
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, broken := m.check(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.compliant, m.broken = ok, broken
	if ok && m.reachedAt.IsZero() {
		m.reachedAt = time.Now()
		close(m.changed)
	}
}

func (m *monitor) reachedAfter() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reachedAt.IsZero() {
		return 0
	}
	return m.reachedAt.Sub(m.began)
}

// last returns the last check's outcome: compliant, and the hard rules broken.
func (m *monitor) last() (bool, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.compliant, append([]string(nil), m.broken...)
}

// loseNode waits (up to a minute) for a settled cluster (healthy, but for masters without a
// replica: a Pending pod's shard), stops the redis-servers of the node whose loss is worst (the
// most masters; then one holding a master without a replica elsewhere; then by name), and reports
// whether the cluster survived within 4 × cluster-node-timeout; then it resumes them.
func loseNode(ctx context.Context, env *harness.Env) (node string, masters int, survived bool, note string) {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		h, err := env.Redis.CheckHealth(ctx, env.Addrs(), redisctl.HealthOptions{})
		if h != nil {
			err = h.Except(func(r redisctl.Reason) bool { return r.Code == redisctl.ReasonNoConnectedReplica })
		}
		last = err
		return err == nil, nil
	})
	if err != nil {
		return "", 0, false, fmt.Sprintf("never settled before the loss: %v", last)
	}
	topo, err := env.Redis.Topology(ctx, env.Addrs())
	if err != nil {
		return "", 0, false, "topology: " + err.Error()
	}
	pods, err := env.Client().CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: env.Scenario.Selector()})
	if err != nil {
		return "", 0, false, err.Error()
	}
	nodeOf := map[string]string{} // Redis address → node
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			nodeOf[env.Redis.AddrOf(p.Status.PodIP)] = p.Spec.NodeName
		}
	}
	count := map[string]int{}    // node → masters serving slots
	exposed := map[string]bool{} // node → holds a master with no replica on another node
	for _, m := range topo.Nodes {
		if !m.IsMaster() || m.SlotCount() == 0 {
			continue
		}
		at := nodeOf[m.Addr()]
		count[at]++
		covered := false
		for _, r := range topo.Nodes {
			if r.MasterID == m.ID && nodeOf[r.Addr()] != at {
				covered = true
			}
		}
		if !covered {
			exposed[at] = true
		}
	}
	worse := func(n string, c int) bool {
		switch {
		case c != masters:
			return c > masters
		case exposed[n] != exposed[node]:
			return exposed[n]
		}
		return n < node
	}
	for n, c := range count {
		if node == "" || worse(n, c) {
			node, masters = n, c
		}
	}
	paused, err := env.PauseNode(ctx, node)
	defer func() {
		if err := env.ResumeNode(paused); err != nil && note == "" {
			note = err.Error()
		}
	}()
	if err != nil {
		return node, masters, false, err.Error()
	}
	lost := map[string]bool{}
	for _, s := range paused {
		lost[s.Addr] = true
	}
	var survivors []string
	for _, a := range env.Addrs() {
		if !lost[a] {
			survivors = append(survivors, a)
		}
	}
	began := time.Now()
	window := 4 * redisNodeTimeout
	why := ""
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, window, true, func(context.Context) (bool, error) {
		// Each check gets its own deadline, not the window's: the last one is not cut short.
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		why = survives(cctx, env.Redis, survivors, lost)
		return why == "", nil
	})
	if err != nil {
		return node, masters, false, fmt.Sprintf("after %s: %s", window, why)
	}
	return node, masters, true, fmt.Sprintf("ok after %s", time.Since(began).Round(100*time.Millisecond))
}

// survives returns "" when every survivor flags every lost node fail, says cluster_state:ok and
// serves all 16384 slots; else why not.
func survives(ctx context.Context, rc *redisctl.Client, survivors []string, lost map[string]bool) string {
	for _, a := range survivors {
		info, err := rc.ClusterInfo(ctx, a)
		if err != nil {
			return a + ": " + err.Error()
		}
		if st := info.ClusterState(); st != "ok" {
			return a + ": cluster_state:" + st
		}
		if ok := info.Int("cluster_slots_ok", 0); ok != redisctl.NumSlots {
			return fmt.Sprintf("%s: %d slots ok", a, ok)
		}
		nodes, err := rc.ClusterNodes(ctx, a)
		if err != nil {
			return a + ": " + err.Error()
		}
		for _, n := range nodes {
			if lost[n.Addr()] && !n.HasFlag(redisctl.FlagFail) {
				return fmt.Sprintf("%s: lost node %s not flagged fail yet", a, n.Addr())
			}
		}
	}
	return ""
}

// namespaceFor returns the namespace of a scenario's run with a tool: "<scenario>-<tool>", every
// character a namespace cannot hold a dash ("drain-kubectl-drain-guard").
func namespaceFor(scenario, tool string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(scenario + "-" + tool) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}
