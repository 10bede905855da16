package soak

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The soak's flags (make soak sets them from SOAK_DURATION and SOAK_SEED); the defaults are the
// short soak `make test` runs.
var (
	flagDuration   = flag.Duration("soak.duration", 3*time.Minute, "how long disruptions start (the soak then waits for the last to end and the cluster to settle)")
	flagSeed       = flag.Uint64("soak.seed", 1, "the seed of the disruptions' sequence, the pods' delays and the datasets")
	flagEvents     = flag.String("soak.events", "", "comma-separated event numbers: only these events of the seed's sequence, at their times (a shrunk sequence)")
	flagOut        = flag.String("soak.out", "", "directory for the soak's report, timeline and logs (default: a new directory under the system's temp dir, kept)")
	flagShrink     = flag.Bool("soak.shrink", false, "when the soak fails, run it again on shorter sequences of its events until the shortest that still fails, and print it as a command")
	flagShrinkRuns = flag.Int("soak.shrink-runs", 8, "with -soak.shrink: the most runs the shrinking makes")
	flagToleration = flag.Int64("soak.toleration-seconds", 60, "the Redis pods' tolerationSeconds of unreachable and not-ready nodes (Kubernetes' default: 300)")
	flagNetwork    = flag.String("soak.pod-network", "127.62", "the first two octets of the soak bed's pod network (its own, never the e2e suite's 127.10 on or the scheduler oracle's 127.61): another one, such as 127.63, lets a long soak run beside make test, whose short soak takes 127.62")
	flagDataset    = flag.String("soak.dataset-mb", "", "MIN-MAX MiB each master holds (default: 100-200, or 10-20 for a soak shorter than 10 minutes)")
)

// TestMain runs the redis-rebalancer CLI instead of the tests when the soak starts one of its
// processes (serve, run): the test binary re-executed with cliEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		os.Exit(app.Main())
	}
	os.Exit(m.Run())
}

// Config configures one soak.
type Config struct {
	// Seed draws the sequence (Plan), the pods' delays and the datasets.
	Seed uint64
	// Duration: disruptions start within it.
	Duration time.Duration
	// Only keeps these events of the sequence (all when empty).
	Only []int
	// Out holds the report, the timeline and the logs.
	Out string
	// TolerationSeconds are the Redis pods' tolerations of unreachable and not-ready nodes.
	TolerationSeconds int64
	// DatasetMin and DatasetMax bound each master's dataset in bytes.
	DatasetMin, DatasetMax int64
	// ServeSchedule is serve's schedule (the policy's); CronInterval the CronJob's.
	ServeSchedule string
	CronInterval  time.Duration
	// DeschedulingInterval is the stock descheduler's.
	DeschedulingInterval time.Duration
	// WriteRate is the writer's rate.
	WriteRate int
	// MaxHold is the guard's maxHold (the policy's default).
	MaxHold time.Duration
}

// configFromFlags returns the soak's configuration from its flags.
func configFromFlags() (Config, error) {
	cfg := Config{
		Seed: *flagSeed, Duration: *flagDuration, Out: *flagOut, TolerationSeconds: *flagToleration,
		ServeSchedule: "*/3 * * * *", CronInterval: 2 * time.Minute, DeschedulingInterval: 2 * time.Minute,
		WriteRate: 250, MaxHold: 5 * time.Minute,
		DatasetMin: 100 << 20, DatasetMax: 200 << 20,
	}
	if cfg.Duration < 10*time.Minute {
		cfg.DatasetMin, cfg.DatasetMax = 10<<20, 20<<20
	}
	if *flagDataset != "" {
		lo, hi, ok := strings.Cut(*flagDataset, "-")
		a, errA := strconv.ParseInt(lo, 10, 64)
		b, errB := strconv.ParseInt(hi, 10, 64)
		if !ok || errA != nil || errB != nil || a <= 0 || b < a {
			return cfg, fmt.Errorf("-soak.dataset-mb=%q: want MIN-MAX, such as 100-200", *flagDataset)
		}
		cfg.DatasetMin, cfg.DatasetMax = a<<20, b<<20
	}
	for _, f := range strings.Split(*flagEvents, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("-soak.events=%q: want event numbers, such as 3,7,12", *flagEvents)
		}
		cfg.Only = append(cfg.Only, n)
	}
	return cfg, nil
}

// command returns the command that runs the soak of cfg again.
func (cfg Config) command() string {
	cmd := fmt.Sprintf("flock /tmp/rr-e2e.lock go test ./e2e/soak -run 'TestSoak$' -count=1 -timeout 4h -v -soak.seed=%d -soak.duration=%s", cfg.Seed, cfg.Duration)
	if len(cfg.Only) > 0 {
		var parts []string
		for _, n := range cfg.Only {
			parts = append(parts, strconv.Itoa(n))
		}
		cmd += " -soak.events=" + strings.Join(parts, ",")
	}
	return cmd
}

// TestSoak runs the chaos soak (the package doc): the system as installed, the seed's
// disruptions, and every check of checks_test.go; a failure prints the command that reproduces
// it and, with -soak.shrink, the shortest sequence of its events that still fails.
func TestSoak(t *testing.T) {
	cfg, err := configFromFlags()
	if err != nil {
		t.Fatal(err)
	}
	res, err := runSoak(t.Context(), cfg, t.Logf)
	if res != nil {
		t.Logf("soak of seed %d:\n%s", cfg.Seed, res.summary)
		t.Logf("timeline: %s", res.timeline)
	}
	if err != nil {
		t.Fatalf("soak: %v\nreproduce: %s", err, cfg.command())
	}
	for _, f := range res.failures {
		t.Errorf("%s: %s", f.check, f.text)
	}
	if len(res.failures) == 0 {
		return
	}
	t.Logf("reproduce: %s", cfg.command())
	if *flagShrink {
		shrunk := shrink(t.Context(), cfg, res, t.Logf)
		t.Logf("shortest failing sequence: %s", shrunk.command())
	}
}

// pass is a pass of serve, or a run of the CronJob that held the Lease.
type pass struct {
	at, ended    time.Time
	who, outcome string
}

// hold is an eviction the guard held ("Eviction held"), or admitted after maxHold.
type hold struct {
	at          time.Time
	pod, reason string
	by          int
}

// handoff is a master the leader handed off ("Handed off").
type handoff struct {
	at              time.Time
	master, to, why string
}

// mark is a point of the timeline worth showing (a new leader).
type mark struct {
	at         time.Time
	kind, text string
}

// recorder keeps what the soak's processes said.
type recorder struct {
	passes         []pass
	holds, expired []hold
	handoffs       []handoff
	handoffRetries []time.Time
	panics         []string
	marks          []mark
	runs           []cronRun
	serveExits     []string // serve replicas that exited unexpectedly
	notJSON        int      // stderr lines of serve and run that are not JSON objects
	notJSONLines   []string // the first of them
}

func (r *recorder) mark(at time.Time, kind, text string) {
	r.marks = append(r.marks, mark{at: at, kind: kind, text: text})
}

// passEnded records the end of who's last pass.
func (r *recorder) passEnded(who string, at time.Time, outcome string) {
	for i := len(r.passes) - 1; i >= 0; i-- {
		if r.passes[i].who == who && r.passes[i].ended.IsZero() {
			r.passes[i].ended, r.passes[i].outcome = at, outcome
			return
		}
	}
}

// Soak is one soak run.
type Soak struct {
	cfg    Config
	out    string
	self   string
	logw   io.Writer
	logOut func(format string, args ...any)

	bed     *harness.Bed
	env     *harness.Env
	inst    *installation
	proxy   *harness.Proxy
	work    *workload
	mon     *monitor
	desched *child
	events  []*Event

	begin time.Time // the bed and the workload ready: the timeline's origin
	start time.Time // the first disruption's time origin
	quiet quietPhase

	bgStop func() // stops the CronJob's loop and the serve watch

	mu         sync.Mutex
	serves     []*serveReplica
	serveCount int
	guardDown  bool
	rec        recorder
	stopping   bool
}

// logf writes a line to the soak's log (events.log) and the test's.
func (s *Soak) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.mu.Lock()
	fmt.Fprintf(s.logw, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), line)
	s.mu.Unlock()
	if s.logOut != nil {
		s.logOut("%s", line)
	}
}

// soakZones are the bed's nodes: 3 zones × 3 nodes.
var soakZones = []scenario.Zone{{Name: "zone-a", Nodes: []string{"n1", "n2", "n3"}}, {Name: "zone-b", Nodes: []string{"n4", "n5", "n6"}}, {Name: "zone-c", Nodes: []string{"n7", "n8", "n9"}}}

// soakScenario is Bitnami's chart as installed: release redis-cluster, 6 masters and 6
// replicas, zonal volumes, placed in compliance (2 masters per zone, each on a node of its own,
// every replica in another zone than its master).
func soakScenario() scenario.Scenario {
	sc := scenario.Scenario{
		Name: "soak", Description: "Bitnami's redis-cluster, 6 shards × 2, zonal volumes, on 3 zones × 3 nodes",
		Layout: scenario.LayoutBitnami, Namespace: "redis", Cluster: "redis-cluster",
		Zones: soakZones, Shards: 6, PodsPerShard: 2,
		Claims: &scenario.ClaimTemplate{Name: scenario.BitnamiClaimTemplate, StorageClass: "zonal", Size: scenario.BitnamiClaimSize},
	}
	return sc.Placed([][]string{{"n1", "n4"}, {"n2", "n7"}, {"n5", "n3"}, {"n6", "n8"}, {"n8", "n1"}, {"n9", "n5"}})
}

// soakPassword is the Redis password (the chart's Secret holds it).
const soakPassword = "soak-redis-password"

// runSoak runs one soak and returns its result; an error is a soak that could not run (the
// bed, the install), not a check that failed.
func runSoak(ctx context.Context, cfg Config, logOut func(string, ...any)) (res *result, err error) {
	out := cfg.Out
	if out == "" {
		if out, err = os.MkdirTemp("", fmt.Sprintf("redis-rebalancer-soak-seed%d-", cfg.Seed)); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(out, "events.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	s := &Soak{cfg: cfg, out: out, self: self, logw: logFile, logOut: logOut}
	s.logf("soak of seed %d for %s in %s", cfg.Seed, cfg.Duration, out)
	defer s.teardown()
	if err := s.setUp(ctx); err != nil {
		return nil, err
	}
	if err := s.disrupt(ctx); err != nil {
		return nil, err
	}
	return s.finish(ctx)
}

// setUp starts the bed, lays the cluster out, starts the workload, installs deploy/ and starts
// its processes, the descheduler and the monitor.
func (s *Soak) setUp(ctx context.Context) error {
	bedLog, err := os.Create(filepath.Join(s.out, "bed.log"))
	if err != nil {
		return err
	}
	realistic := &harness.Realistic{Seed: s.cfg.Seed, UnreachableTolerationSeconds: s.cfg.TolerationSeconds,
		DatasetMin: s.cfg.DatasetMin, DatasetMax: s.cfg.DatasetMax}
	t0 := time.Now()
	s.bed, err = harness.StartBed(ctx, harness.BedOptions{Log: bedLog, WorkDir: filepath.Join(s.out, "bed"), Zones: soakZones,
		Cluster: soakClusterConfig(), Realistic: realistic})
	if err != nil {
		return err
	}
	s.logf("bed up in %s (realistic profile: %+v)", time.Since(t0).Round(time.Second), *s.bed.Realistic)
	t0 = time.Now()
	s.env, err = s.bed.Setup(ctx, soakScenario(), harness.Options{
		Log: bedLog, Namespace: "redis", Timeout: 15 * time.Minute, RecordStops: true,
		Redis:     redisctl.Options{Password: soakPassword},
		RedisArgs: []string{"--requirepass", soakPassword, "--masterauth", soakPassword},
	})
	if err != nil {
		return err
	}
	var total int64
	for _, d := range s.env.Datasets() {
		total += d.Bytes
	}
	s.logf("Redis cluster laid out and filled in %s: %d masters, %d MiB in all", time.Since(t0).Round(time.Second), len(s.env.Datasets()), total>>20)
	if s.work, err = startWorkload(s.env.RedisOptions, s.env.Addrs(), s.cfg.WriteRate); err != nil {
		return err
	}
	if err := waitFor(ctx, time.Minute, func() bool { a, _, _, _, _ := s.work.snapshot(); return a >= 200 }); err != nil {
		return fmt.Errorf("the writer did not get 200 writes acknowledged: %w", err)
	}
	if s.inst, err = s.install(ctx); err != nil {
		return err
	}
	s.logf("deploy/ installed (%d objects: %s); serve %v; run %v", len(s.inst.applied), strings.Join(s.inst.applied, ", "), s.inst.serveArgs, s.inst.runArgs)
	if s.proxy, err = harness.StartProxy(); err != nil {
		return err
	}
	if err := s.pointWebhook(ctx, "https://"+s.proxy.Addr()+"/guard/evictions", s.inst.caBundle); err != nil {
		return err
	}
	for range 2 {
		if _, err := s.startServe(ctx); err != nil {
			return err
		}
	}
	master, err := s.aMaster(ctx)
	if err != nil {
		return err
	}
	if err := s.guardReady(ctx, master); err != nil {
		return err
	}
	if err := waitFor(ctx, 2*time.Minute, func() bool { return s.leader() != nil }); err != nil {
		return errors.New("no serve replica leads after 2m")
	}
	if s.desched, err = s.startDescheduler(); err != nil {
		return err
	}
	if s.mon, err = s.startMonitor(ctx); err != nil {
		return err
	}
	s.logf("the guard holds a master's eviction (%s), serve-%d leads, the descheduler and the monitor run", master, s.leader().id)
	return nil
}

// soakClusterConfig is the soak's local cluster: a pod network of its own (-soak.pod-network,
// 127.62 by default), so that it never meets the e2e suite's bed (127.10, 127.11, ...) or the
// scheduler oracle's (127.61).
func soakClusterConfig() localcluster.Config {
	return localcluster.Config{PodNetwork: *flagNetwork}
}

// aMaster returns the name of a pod Redis says is a master serving slots.
func (s *Soak) aMaster(ctx context.Context) (string, error) {
	topo, err := s.env.Redis.Topology(ctx, s.env.Addrs())
	if err != nil {
		return "", err
	}
	for _, srv := range s.env.Runtime.Servers() {
		if n, ok := topo.NodeByAddr(srv.Addr); ok && n.IsMaster() && len(n.Slots) > 0 {
			return srv.Name, nil
		}
	}
	return "", errors.New("no master serving slots")
}

// waitFor polls cond every 200 ms until it holds, timeout passes or ctx ends.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// disrupt runs the sequence: each event at its time, in a goroutine of its own, then waits
// until every event has ended.
func (s *Soak) disrupt(ctx context.Context) error {
	zones := map[string][]string{}
	for _, z := range soakZones {
		zones[z.Name] = z.Nodes
	}
	s.events = only(Plan(s.cfg.Seed, planConfig{Duration: s.cfg.Duration, Zones: zones, Shards: 6, MinGap: 10 * time.Second, MaxGap: 30 * time.Second}), s.cfg.Only)
	for _, e := range s.events {
		s.logf("planned: %s", e)
	}
	bg, cancelBg := context.WithCancel(ctx)
	s.mu.Lock()
	s.begin = s.work.started
	s.mu.Unlock()
	var bgWG sync.WaitGroup
	bgWG.Go(func() { s.cronLoop(bg) })
	bgWG.Go(func() { s.watchServes(bg) })
	s.bgStop = func() { cancelBg(); bgWG.Wait() }
	s.start = time.Now()
	var wg sync.WaitGroup
	for _, e := range s.events {
		if !sleep(ctx, time.Until(s.start.Add(e.At))) {
			return ctx.Err()
		}
		wg.Go(func() { s.act(ctx, e) })
	}
	if !sleep(ctx, time.Until(s.start.Add(s.cfg.Duration))) {
		return ctx.Err()
	}
	s.logf("the last disruption has started; waiting for every one to end")
	wg.Wait()
	return ctx.Err()
}

// watchServes samples the serve replicas' memory every 10 s and notices a replica that exits
// without the soak killing it (a crash): its Deployment would start another pod, so the soak
// does too.
func (s *Soak) watchServes(ctx context.Context) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.sampleRSS()
		s.mu.Lock()
		var crashed []*serveReplica
		for _, r := range s.serves {
			r.mu.Lock()
			gone := r.exited() && !r.killed && !s.stopping
			r.mu.Unlock()
			if gone && !slices.Contains(s.rec.serveExits, r.name) {
				s.rec.serveExits = append(s.rec.serveExits, r.name)
				crashed = append(crashed, r)
			}
		}
		s.mu.Unlock()
		for _, r := range crashed {
			s.logf("%s exited on its own (exit %d): a crash; starting another replica", r.name, r.exit)
			s.updateProxy()
			if _, err := s.startServe(ctx); err != nil {
				s.logf("starting a serve replica: %v", err)
			}
		}
	}
}

// teardown stops whatever runs.
func (s *Soak) teardown() {
	if s.bgStop != nil {
		s.bgStop()
	}
	s.mu.Lock()
	s.stopping = true
	serves := slices.Clone(s.serves)
	s.mu.Unlock()
	for _, r := range serves {
		if !r.exited() {
			r.stop(30 * time.Second)
		}
	}
	if s.desched != nil && !s.desched.exited() {
		s.desched.stop(10 * time.Second)
	}
	if s.work != nil {
		s.work.stop()
		s.work.close()
	}
	if s.proxy != nil {
		s.proxy.Close()
	}
	if s.env != nil {
		s.env.Stop()
	}
	if s.bed != nil {
		s.bed.Stop()
	}
	s.dropDatasets()
}

// dropDatasets removes the Redis data the bed kept (append-only files and RDB snapshots: up to
// a few GB a soak) and keeps the rest of the bed's directory: the control plane's and the
// redis-servers' logs, nodes.conf.
func (s *Soak) dropDatasets() {
	_ = filepath.WalkDir(filepath.Join(s.out, "bed"), func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && d.Name() == "appendonlydir":
			_ = os.RemoveAll(path)
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(d.Name(), ".rdb"):
			_ = os.Remove(path)
		}
		return nil
	})
}

// lastEnd returns when the last event ended.
func (s *Soak) lastEnd() time.Time {
	var t time.Time
	for _, e := range s.events {
		if e.Ended.After(t) {
			t = e.Ended
		}
	}
	if t.IsZero() {
		t = s.start
	}
	return t
}
