package soak

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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// What deploy/ ships, installed on the soak's bed as an SRE installs it: the kustomize overlays
// guard (serve with the eviction guard, 2 replicas) and cronjob (run on a schedule), rendered
// with the real kustomize through an overlay of the soak that sets the settings as deploy/README.md
// says (the Redis namespace, the API server's address) and the policy an SRE would write for
// Bitnami's chart (layout bitnami, the chart's password Secret), applied with server-side apply.
// Their pods cannot run as containers here, so their workloads are not applied: the processes
// their pods would run are started instead, with the container's arguments, the policy file the
// ConfigMap holds, and a kubeconfig holding a token of the ServiceAccount the manifests create.
// The webhook configuration's clientConfig points at a TCP proxy standing in for the guard's
// Service, as cert-manager's CA injector fills in its caBundle.

// Versions of the rendering tool and where the stock descheduler is cached (hack/compare
// builds it: build-descheduler.sh).
const (
	kustomizeVersion = "v5.8.1"
	// deschedulerBinEnv names the stock descheduler's binary (the Makefile sets it); else the
	// tool cache's descheduler-<version>/descheduler, built by hack/compare/build-descheduler.sh.
	deschedulerBinEnv = "DESCHEDULER_BIN"
)

// The rebalancer's namespace, ServiceAccount, Lease and webhook configuration, as deploy/
// names them.
const (
	rebalancerNamespace = "redis-rebalancer"
	serviceAccount      = "redis-rebalancer"
	webhookName         = "redis-rebalancer-guard"
)

// repoPath returns a path relative to the repository root (this package is two levels down).
func repoPath(rel string) string { return filepath.Join("..", "..", filepath.FromSlash(rel)) }

// renderOverlay renders deploy/<dir> through an overlay that sets the settings as
// deploy/README.md documents (redisNamespace, apiServerCIDR), replaces the policy with policy
// (the ConfigMap redis-rebalancer-policy's file), and names the Redis password's Secret in its
// Role (deploy/base/redis-secret-role.yaml says to patch it with the policy's).
func renderOverlay(work, dir, redisNamespace, secret string, policy []byte) ([]*unstructured.Unstructured, error) {
	kustomize, err := harness.ToolPath("kustomize", "KUSTOMIZE_BIN_DIR", kustomizeVersion)
	if err != nil {
		return nil, err
	}
	overlay := filepath.Join(work, "overlay-"+strings.ReplaceAll(dir, "/", "-"))
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		return nil, err
	}
	return harness.Overlay{Repo: repoPath(""), Dir: dir, RedisNamespace: redisNamespace, Policy: policy, Patches: fmt.Sprintf(`- target: {kind: Role, name: redis-rebalancer-redis-secret}
  patch: |-
    - op: replace
      path: /rules/0/resourceNames
      value: [%s]
`, secret)}.Build(kustomize, overlay)
}

// soakPolicy returns deploy/base/policy.yaml as an SRE running Bitnami's chart in namespace ns
// sets it: the Redis namespace, layout bitnami, the chart's password Secret (release
// redis-cluster), and serve's schedule.
func soakPolicy(ns, secret, schedule string) ([]byte, error) {
	data, err := os.ReadFile(repoPath("deploy/base/policy.yaml"))
	if err != nil {
		return nil, err
	}
	var p map[string]any
	if err := yaml.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("deploy/base/policy.yaml: %w", err)
	}
	sel, _ := p["selection"].(map[string]any)
	if sel == nil {
		sel = map[string]any{}
	}
	sel["layout"] = "bitnami"
	p["selection"] = sel
	p["redis"] = map[string]any{"passwordSecretRef": map[string]any{"namespace": ns, "name": secret, "key": "redis-password"}}
	p["schedule"] = schedule
	out, err := yaml.Marshal(p)
	if err != nil {
		return nil, err
	}
	return append([]byte("# deploy/base/policy.yaml as the soak's SRE sets it for Bitnami's chart in "+ns+"\n"), out...), nil
}

// installation is what deploy/ installed: the objects applied, the policy file, the
// ServiceAccount's kubeconfig, and the workloads' arguments.
type installation struct {
	policyFile, kubeconfig string
	serveArgs, runArgs     []string
	caBundle               []byte
	certDir                string
	applied                []string
}

// install renders the guard and cronjob overlays, applies what is not a workload (or
// cert-manager's, whose CRDs the bed lacks), issues the guard's serving certificate, and writes
// the policy and the ServiceAccount's kubeconfig.
func (s *Soak) install(ctx context.Context) (*installation, error) {
	work := filepath.Join(s.out, "install")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	policy, err := soakPolicy(s.env.Namespace, s.env.Scenario.BitnamiFullname(), s.cfg.ServeSchedule)
	if err != nil {
		return nil, err
	}
	in := &installation{policyFile: filepath.Join(work, "policy.yaml"), certDir: filepath.Join(work, "guard-tls")}
	if err := os.WriteFile(in.policyFile, policy, 0o600); err != nil {
		return nil, err
	}
	if _, err := s.env.Cluster.Namespace(ctx, rebalancerNamespace); err != nil {
		return nil, err
	}
	a, err := harness.NewApplier(s.env.Cluster)
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{"overlays/guard", "overlays/cronjob"} {
		objs, err := renderOverlay(work, dir, s.env.Namespace, s.env.Scenario.BitnamiFullname(), policy)
		if err != nil {
			return nil, err
		}
		var apply []*unstructured.Unstructured
		for _, o := range objs {
			switch {
			case o.GetKind() == "Deployment" && dir == "overlays/guard":
				if in.serveArgs, err = harness.ContainerArgs(o); err != nil {
					return nil, err
				}
			case o.GetKind() == "CronJob":
				if in.runArgs, err = harness.ContainerArgs(o); err != nil {
					return nil, err
				}
			case o.GetKind() == "Deployment", o.GroupVersionKind().Group == "cert-manager.io":
			default:
				apply = append(apply, o)
				in.applied = append(in.applied, o.GetKind()+"/"+o.GetName())
			}
		}
		if err := a.Apply(ctx, "soak-sre", apply); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	slices.Sort(in.applied)
	in.applied = slices.Compact(in.applied)
	if len(in.serveArgs) == 0 || len(in.runArgs) == 0 {
		return nil, errors.New("install: the guard overlay's Deployment or the cronjob overlay's CronJob is missing")
	}
	if err := os.MkdirAll(in.certDir, 0o700); err != nil {
		return nil, err
	}
	if in.caBundle, err = harness.GuardTLS(in.certDir); err != nil {
		return nil, err
	}
	if in.kubeconfig, err = harness.ServiceAccountKubeconfig(ctx, s.env.Cluster, rebalancerNamespace, serviceAccount, work, 6*3600); err != nil {
		return nil, err
	}
	return in, nil
}

// pointWebhook points the applied webhook configuration at url with the CA bundle, as
// cert-manager's CA injector and a Service in front of serve's pods would make it reachable.
func (s *Soak) pointWebhook(ctx context.Context, url string, ca []byte) error {
	api := s.env.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations()
	w, err := api.Get(ctx, webhookName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for i := range w.Webhooks {
		w.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: ca}
	}
	_, err = api.Update(ctx, w, metav1.UpdateOptions{})
	return err
}

// withFlags returns args with each flag of over replacing the argument of the same flag
// ("--name=value" or "--name value" forms are both replaced by over's).
func withFlags(args []string, over ...string) []string {
	name := func(a string) string {
		n, _, _ := strings.Cut(a, "=")
		return n
	}
	replaced := map[string]bool{}
	for _, o := range over {
		if strings.HasPrefix(o, "--") {
			replaced[name(o)] = true
		}
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "--") && replaced[name(a)] {
			if !strings.Contains(a, "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return append(out, over...)
}

// cliEnv makes the test binary run the redis-rebalancer CLI (TestMain).
const cliEnv = "REBALANCER_SOAK_CLI"

// child is a process the soak started: serve, run, the descheduler. Its output goes to a log
// file, line by line, and to watch.
type child struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
	stdout  bytes.Buffer

	mu      sync.Mutex
	lines   int
	matched map[string]string // last line matching each watched pattern
	killed  bool              // killed on purpose
	exit    int
	watch   []*regexp.Regexp
	onLine  func(line string)
}

// startChild starts bin with args, its stderr (and stdout unless captured) appended to logPath.
func startChild(name, bin string, args []string, env []string, logPath string, captureStdout bool, onLine func(string)) (*child, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c := &child{name: name, done: make(chan struct{}), started: time.Now(), onLine: onLine}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if captureStdout {
		c.cmd.Stdout = &c.stdout
	} else {
		c.cmd.Stdout = f
	}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	fmt.Fprintf(f, "# %s $ %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
	if err := c.cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() {
		defer close(c.done)
		defer f.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			c.mu.Lock()
			c.lines++
			c.mu.Unlock()
			if c.onLine != nil {
				c.onLine(line)
			}
		}
		_, _ = io.Copy(f, stderr)
		err := c.cmd.Wait()
		c.mu.Lock()
		c.exit = c.cmd.ProcessState.ExitCode()
		c.mu.Unlock()
		fmt.Fprintf(f, "# %s exited: %v\n", time.Now().UTC().Format(time.RFC3339Nano), err)
	}()
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// kill kills the child's process group (SIGKILL) on purpose and waits for it.
func (c *child) kill() {
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
}

// stop stops the child with SIGTERM (SIGKILL after grace) and returns its exit status.
func (c *child) stop(grace time.Duration) int {
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}

// rss returns the child's resident set size in bytes (/proc/<pid>/status VmRSS), 0 when gone.
func (c *child) rss() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// logLine is a JSON log line of the rebalancer (--logging-format json).
type logLine struct {
	TS  float64 `json:"ts"`
	Msg string  `json:"msg"`
	raw map[string]any
}

// parseLog decodes a JSON log line; ok is false for another line.
func parseLog(line string) (logLine, bool) {
	if !strings.HasPrefix(line, "{") {
		return logLine{}, false
	}
	var l logLine
	if json.Unmarshal([]byte(line), &l.raw) != nil {
		return logLine{}, false
	}
	l.Msg, _ = l.raw["msg"].(string)
	l.TS, _ = l.raw["ts"].(float64)
	return l, true
}

// str returns a string field of the line; for an object reference (klog.KObj: {"name": ...,
// "namespace": ...}), "namespace/name".
func (l logLine) str(key string) string {
	switch v := l.raw[key].(type) {
	case string:
		return v
	case map[string]any:
		name, _ := v["name"].(string)
		if ns, _ := v["namespace"].(string); ns != "" {
			return ns + "/" + name
		}
		return name
	}
	return ""
}

// at returns the line's time (its ts, in milliseconds since the epoch), or now.
func (l logLine) at() time.Time {
	if l.TS == 0 {
		return time.Now()
	}
	return time.UnixMilli(int64(l.TS))
}

// serveReplica is one pod of serve's Deployment, as a process.
type serveReplica struct {
	*child
	id           int
	guardAddr    string
	metricsAddr  string
	rssSamples   []rssSample
	leadingSince time.Time
}

// rssSample is a replica's resident set size at a time.
type rssSample struct {
	at    time.Time
	bytes int64
}

var addressRE = regexp.MustCompile(`"address":"([^"]+)"`)

// startServe starts a serve replica (the guard overlay's Deployment's arguments, the soak's
// files and listeners) and waits until its guard and HTTP listeners are up.
func (s *Soak) startServe(ctx context.Context) (*serveReplica, error) {
	s.mu.Lock()
	s.serveCount++
	id := s.serveCount
	s.mu.Unlock()
	args := withFlags(s.inst.serveArgs, "--policy="+s.inst.policyFile, "--kubeconfig="+s.inst.kubeconfig,
		"--listen-address=127.0.0.1:0", "--guard-listen-address=127.0.0.1:0", "--guard-cert-dir="+s.inst.certDir, "-v=2")
	r := &serveReplica{id: id}
	ready := make(chan struct{}, 2)
	onLine := func(line string) {
		l, ok := parseLog(line)
		if !ok {
			s.recordPanic(fmt.Sprintf("serve-%d", id), line)
			s.recordNotJSON(fmt.Sprintf("serve-%d", id), line)
			return
		}
		switch l.Msg {
		case "Serving the eviction guard":
			if m := addressRE.FindStringSubmatch(line); m != nil {
				s.mu.Lock()
				r.guardAddr = m[1]
				s.mu.Unlock()
				ready <- struct{}{}
			}
		case "Serving":
			if m := addressRE.FindStringSubmatch(line); m != nil {
				s.mu.Lock()
				r.metricsAddr = m[1]
				s.mu.Unlock()
				ready <- struct{}{}
			}
		}
		s.serveLine(r, l)
	}
	c, err := startChild(fmt.Sprintf("serve-%d", id), s.self, args, []string{cliEnv + "=1"},
		filepath.Join(s.out, fmt.Sprintf("serve-%d.log", id)), false, onLine)
	if err != nil {
		return nil, err
	}
	r.child = c
	for range 2 {
		select {
		case <-ready:
		case <-c.done:
			return nil, fmt.Errorf("serve-%d exited before serving; see %s", id, filepath.Join(s.out, fmt.Sprintf("serve-%d.log", id)))
		case <-time.After(2 * time.Minute):
			return nil, fmt.Errorf("serve-%d: no listener after 2m", id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	s.serves = append(s.serves, r)
	s.mu.Unlock()
	s.updateProxy()
	s.logf("serve-%d started (pid %d): guard %s, metrics %s", id, c.cmd.Process.Pid, r.guardAddr, r.metricsAddr)
	return r, nil
}

// updateProxy points the guard's Service (the proxy) at every replica alive, unless the guard is
// down on purpose.
func (s *Soak) updateProxy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.guardDown {
		s.proxy.SetBackends()
		return
	}
	var back []string
	for _, r := range s.serves {
		if !r.exited() && r.guardAddr != "" {
			back = append(back, r.guardAddr)
		}
	}
	s.proxy.SetBackends(back...)
}

// leader returns the serve replica leading now (the last to log "Leading" among those alive).
func (s *Soak) leader() *serveReplica {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lead *serveReplica
	for _, r := range s.serves {
		if !r.exited() && !r.leadingSince.IsZero() && (lead == nil || r.leadingSince.After(lead.leadingSince)) {
			lead = r
		}
	}
	return lead
}

// serveLine records what a serve replica's log line says: leadership, passes, holds, hand-offs.
func (s *Soak) serveLine(r *serveReplica, l logLine) {
	at := l.at()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch l.Msg {
	case "Leading: passes start on the schedule":
		r.leadingSince = at
		s.rec.mark(at, "leader", fmt.Sprintf("serve-%d leads", r.id))
	case "Pass starting":
		s.rec.passes = append(s.rec.passes, pass{at: at, who: fmt.Sprintf("serve-%d", r.id)})
	case "Pass ended":
		s.rec.passEnded(fmt.Sprintf("serve-%d", r.id), at, l.str("outcome"))
	case "Eviction held":
		s.rec.holds = append(s.rec.holds, hold{at: at, pod: l.str("pod"), reason: l.str("reason"), by: r.id})
	case "Eviction hold expired: admitted":
		s.rec.expired = append(s.rec.expired, hold{at: at, pod: l.str("pod"), by: r.id})
	case "Handed off":
		s.rec.handoffs = append(s.rec.handoffs, handoff{at: at, master: l.str("master"), to: l.str("to"), why: l.str("why")})
	case "Hand-off not done; retried later":
		s.rec.handoffRetries = append(s.rec.handoffRetries, at)
	}
}

// recordPanic remembers a line that looks like a Go panic or fatal error of a child.
func (s *Soak) recordPanic(who, line string) {
	if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
		s.mu.Lock()
		s.rec.panics = append(s.rec.panics, who+": "+line)
		s.mu.Unlock()
	}
}

// recordNotJSON remembers (the first few) lines a child printed on stderr that are not JSON
// objects, under --logging-format json.
func (s *Soak) recordNotJSON(who, line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.notJSON++
	if len(s.rec.notJSONLines) < 5 {
		s.rec.notJSONLines = append(s.rec.notJSONLines, who+": "+line)
	}
}

// sampleRSS records every live serve replica's resident set size.
func (s *Soak) sampleRSS() {
	s.mu.Lock()
	serves := slices.Clone(s.serves)
	s.mu.Unlock()
	now := time.Now()
	for _, r := range serves {
		if r.exited() {
			continue
		}
		if b := r.rss(); b > 0 {
			s.mu.Lock()
			r.rssSamples = append(r.rssSamples, rssSample{at: now, bytes: b})
			s.mu.Unlock()
		}
	}
}

// cronRun is one of the CronJob's Jobs: a run process.
type cronRun struct {
	started, ended time.Time
	exit           int
	outcome        report.Outcome
	acted          bool // it held the Lease (not leaseHeld)
}

// cronLoop plays the CronJob's controller: every CronInterval a Job (a `run` process with the
// CronJob's arguments), never two at once (concurrencyPolicy Forbid), until ctx ends.
func (s *Soak) cronLoop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.CronInterval)
	defer tick.Stop()
	var running *child
	var cr *cronRun
	finish := func() {
		if running == nil {
			return
		}
		<-running.done
		cr.ended = time.Now()
		running.mu.Lock()
		cr.exit = running.exit
		running.mu.Unlock()
		var rep report.Run
		if json.Unmarshal(running.stdout.Bytes(), &rep) == nil {
			cr.outcome = rep.Outcome
			cr.acted = rep.Outcome != report.OutcomeLeaseHeld
		}
		s.mu.Lock()
		s.rec.runs = append(s.rec.runs, *cr)
		if cr.acted {
			s.rec.passes = append(s.rec.passes, pass{at: cr.started, who: "run", outcome: string(cr.outcome), ended: cr.ended})
		}
		s.mu.Unlock()
		s.logf("CronJob's run ended: exit %d, outcome %s", cr.exit, cr.outcome)
		running = nil
	}
	n := 0
	for {
		select {
		case <-ctx.Done():
			if running != nil {
				running.stop(2 * time.Minute)
				finish()
			}
			return
		case <-tick.C:
		}
		if running != nil {
			if !running.exited() {
				continue // Forbid: the Job before still runs
			}
			finish()
		}
		n++
		args := withFlags(s.inst.runArgs, "--policy="+s.inst.policyFile, "--kubeconfig="+s.inst.kubeconfig)
		c, err := startChild(fmt.Sprintf("run-%d", n), s.self, args, []string{cliEnv + "=1"}, filepath.Join(s.out, "cronjob-runs.log"), true,
			func(line string) {
				s.recordPanic("run", line)
				if _, ok := parseLog(line); !ok {
					s.recordNotJSON("run", line)
				}
			})
		if err != nil {
			s.logf("CronJob's run: %v", err)
			continue
		}
		running, cr = c, &cronRun{started: time.Now()}
	}
}

// deschedulerBinary returns the stock descheduler's path: $DESCHEDULER_BIN, else the tool
// cache's, built by hack/compare/build-descheduler.sh when missing.
func deschedulerBinary() (string, error) {
	if p := os.Getenv(deschedulerBinEnv); p != "" {
		return p, nil
	}
	mod, err := os.ReadFile(repoPath("hack/compare/descheduler/go.mod"))
	if err != nil {
		return "", err
	}
	version := ""
	for _, l := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "sigs.k8s.io/descheduler" {
			version = f[1]
		}
	}
	if version == "" {
		return "", errors.New("hack/compare/descheduler/go.mod requires no sigs.k8s.io/descheduler")
	}
	cache := os.Getenv("REBALANCER_TOOLS_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(base, "redis-rebalancer")
	}
	out := filepath.Join(cache, "descheduler-"+version, "descheduler")
	cmd := exec.Command(repoPath("hack/compare/build-descheduler.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the stock descheduler: %w\n%s", err, b)
	}
	return out, nil
}

// startDescheduler runs the stock descheduler as its Deployment does: in its loop, every
// DeschedulingInterval, with the RemovePodsViolatingTopologySpreadConstraint profile on the Redis
// namespace and the DefaultEvictor.
func (s *Soak) startDescheduler() (*child, error) {
	bin, err := deschedulerBinary()
	if err != nil {
		return nil, err
	}
	policy := map[string]any{
		"apiVersion": "descheduler/v1alpha2",
		"kind":       "DeschedulerPolicy",
		"profiles": []any{map[string]any{
			"name": "spread",
			"pluginConfig": []any{
				map[string]any{"name": "DefaultEvictor", "args": map[string]any{}},
				map[string]any{"name": "RemovePodsViolatingTopologySpreadConstraint", "args": map[string]any{
					"namespaces": map[string]any{"include": []string{s.env.Namespace}},
				}},
			},
			"plugins": map[string]any{"balance": map[string]any{"enabled": []string{"RemovePodsViolatingTopologySpreadConstraint"}}},
		}},
	}
	data, err := yaml.Marshal(policy)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(s.out, "install", "descheduler-policy.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	return startChild("descheduler", bin, []string{"--kubeconfig", s.env.Kubeconfig(), "--policy-config-file", path,
		"--descheduling-interval", s.cfg.DeschedulingInterval.String(), "--disable-metrics", "--secure-port", "0", "--v", "2"},
		nil, filepath.Join(s.out, "descheduler.log"), false, func(line string) { s.recordPanic("descheduler", line) })
}

// guardReady waits until a dry-run eviction of a master is the guard's 429.
func (s *Soak) guardReady(ctx context.Context, master string) error {
	return harness.WaitDryRunEviction(ctx, s.env.Client(), s.env.Namespace, master, 2*time.Minute, func(err error) bool {
		return err != nil && guard.Denied(err.Error(), guard.ReasonMaster)
	})
}
