// Package serve runs redis-rebalancer as a long-running process (`redis-rebalancer serve`): passes
// on a robfig/cron/v3 schedule of its own, client-go leader election on a Lease so that of several
// replicas only the leader acts, and one HTTP listener for /healthz, /readyz and /metrics. A
// leader also starts a pass when Config.Trigger asks (a broken MasterQuorum), at most one per
// Config.TriggerMinInterval.
//
// A graceful stop (Config.Stop: SIGTERM) starts no further pass, lets the pass in flight stop at
// its next safe point (the pass honours the same channel: execute.Config.Stop), then releases the
// Lease (ReleaseOnCancel), so that another replica takes over at once instead of after the lease
// duration, and shuts the listener down. Cancelling Run's context is the hard stop. A leader that
// fails to renew its Lease stops acting at once (the pass's context ends) and Run returns
// ErrLeaseLost: the process exits and is restarted, as kube-scheduler's and the descheduler's are.
//
// With Config.GuardListener it also serves the eviction guard's admission webhook (any
// http.Handler: rebalancer/guard's) on that TLS listener, whether it leads or not, and runs
// Config.Leading (the guard's hand-off) while it leads.
//
// It imports client-go (leader election), robfig/cron/v3, golang.org/x/time/rate, api/v1alpha1
// (its defaults), rebalancer/lease (the Lease's defaults) and rebalancer/metrics;
// cmd/redis-rebalancer/app wires it.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/lease"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/metrics"
)

// Defaults of Config.
const (
	// DefaultLeaseName is the Lease's name (LeaderElection.ResourceName): lease.DefaultName,
	// which run and the descheduler plugin take too.
	DefaultLeaseName = lease.DefaultName
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod are the leader
	// election's timings: component-base's recommended defaults, as kube-scheduler's and the
	// descheduler's (lease's).
	DefaultLeaseDuration = lease.DefaultLeaseDuration
	DefaultRenewDeadline = lease.DefaultRenewDeadline
	DefaultRetryPeriod   = lease.DefaultRetryPeriod
	// DefaultShutdownTimeout bounds the listener's shutdown.
	DefaultShutdownTimeout = 5 * time.Second
	// DefaultTriggerMinInterval is Config.TriggerMinInterval (the policy's
	// watch.quorumPassInterval).
	DefaultTriggerMinInterval = v1alpha1.DefaultQuorumPassInterval
)

// ErrLeaseLost is returned by Run when this process led and failed to renew its Lease.
var ErrLeaseLost = errors.New("serve: leader election lost: stopped acting")

// DefaultLeaderElection returns the leader election's defaults: enabled, on the Lease
// DefaultLeaseName in namespace, with component-base's recommended timings
// (lease.DefaultLeaderElection).
func DefaultLeaderElection(namespace string) componentbaseconfig.LeaderElectionConfiguration {
	return lease.DefaultLeaderElection(namespace)
}

// Pass runs one pass: observe, plan and move (an execute.Executor.Run), report it and record its
// end in the metrics. ctx ends on the hard stop or when the Lease is lost; stop is closed on a
// graceful stop, which the pass honours at its next safe point.
type Pass func(ctx context.Context, stop <-chan struct{})

// Config configures Run.
type Config struct {
	// Client reaches the API server (the Lease; a readiness check at start).
	Client kubernetes.Interface
	// Pass is one pass. Required.
	Pass Pass
	// Schedule is when passes start: a robfig/cron/v3 expression (5 fields, @hourly/@daily/...,
	// @every DURATION, optional CRON_TZ=<zone> prefix; UTC without one). A pass still running at
	// the next tick makes that tick skipped (passes never overlap). Required.
	Schedule string
	// PassOnStart makes a pass start as soon as this process leads (then on the schedule).
	PassOnStart bool
	// LeaderElection configures the election; LeaderElect false acts without one (a single
	// replica).
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Identity is this process's identity in the Lease (required with leader election; the
	// hostname plus a random suffix is usual).
	Identity string
	// Listener serves /healthz, /readyz and /metrics. Required.
	Listener net.Listener
	// Metrics are served on /metrics and told whether this process leads. Required.
	Metrics *metrics.Metrics
	// Stop, when closed, is the graceful stop (see the package doc). Nil: never.
	Stop <-chan struct{}
	// Trigger, when set, asks for passes off the schedule (a watch saw MasterQuorum broken):
	// each value, the reason, starts a pass while this process leads, unless a pass runs or the
	// last pass Trigger started began less than TriggerMinInterval ago (then it is dropped: the
	// watch asks again).
	Trigger <-chan string
	// TriggerMinInterval is the least time between two passes Trigger starts
	// (DefaultTriggerMinInterval when 0).
	TriggerMinInterval time.Duration
	// GuardListener, when set, serves Guard on GuardPath: the eviction guard's admission
	// webhook, answered by every replica whether it leads or not. It must be a TLS listener
	// (kube-apiserver calls webhooks over HTTPS only); it is shut down with the other.
	GuardListener net.Listener
	// Guard answers the admission reviews (rebalancer/guard's *Guard); required with
	// GuardListener.
	Guard http.Handler
	// GuardPath is the URL path Guard is served on ("/" when empty).
	GuardPath string
	// Leading are run, each in a goroutine of its own, while this process leads (the eviction
	// guard's hand-off), with a context that ends when it stops leading; the term ends once
	// they have returned.
	Leading []func(ctx context.Context)
}

// ParseSchedule parses a schedule as Config.Schedule describes it (v1alpha1.ParseSchedule: one
// that is empty, never fires or fires more than once a second is refused).
func ParseSchedule(s string) (cron.Schedule, error) {
	if s == "" {
		return nil, errors.New("a schedule is required")
	}
	sched, err := v1alpha1.ParseSchedule(s)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", s, err)
	}
	return sched, nil
}

// Validate checks cfg: every required field, the schedule, the leader election's timings
// (renew deadline shorter than the lease duration, retry period shorter than the renew deadline,
// "leases" locks only).
func (cfg Config) Validate() error {
	var errs []error
	if cfg.Client == nil || cfg.Pass == nil || cfg.Listener == nil || cfg.Metrics == nil {
		errs = append(errs, errors.New("a client, a pass, a listener and metrics are required"))
	}
	if (cfg.GuardListener == nil) != (cfg.Guard == nil) {
		errs = append(errs, errors.New("the guard's listener and its handler go together"))
	}
	if _, err := ParseSchedule(cfg.Schedule); err != nil {
		errs = append(errs, err)
	}
	if le := cfg.LeaderElection; le.LeaderElect {
		switch {
		case le.ResourceLock != resourcelock.LeasesResourceLock:
			errs = append(errs, fmt.Errorf("leader election: resource lock %q: only %q is supported", le.ResourceLock, resourcelock.LeasesResourceLock))
		case le.ResourceName == "" || le.ResourceNamespace == "":
			errs = append(errs, errors.New("leader election: the Lease's name and namespace are required"))
		case le.RenewDeadline.Duration >= le.LeaseDuration.Duration:
			errs = append(errs, fmt.Errorf("leader election: the renew deadline (%s) must be shorter than the lease duration (%s)", le.RenewDeadline.Duration, le.LeaseDuration.Duration))
		case le.RetryPeriod.Duration <= 0 || le.RetryPeriod.Duration >= le.RenewDeadline.Duration:
			errs = append(errs, fmt.Errorf("leader election: the retry period (%s) must be positive and shorter than the renew deadline (%s)", le.RetryPeriod.Duration, le.RenewDeadline.Duration))
		}
		if cfg.Identity == "" {
			errs = append(errs, errors.New("leader election: an identity is required"))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("serve: %w", errors.Join(errs...))
	}
	return nil
}

// server is one Run's state.
type server struct {
	cfg      Config
	schedule cron.Schedule
	watchdog *leaderelection.HealthzAdaptor
	ready    atomic.Bool
	// leaseDenied says why this replica cannot take part in the leader election ("" when it
	// can; leaseaccess.go): /readyz fails meanwhile.
	leaseDenied atomic.Value

	// The gate: the passes in flight, and closed once a graceful stop refuses new ones.
	mu       sync.Mutex
	idle     *sync.Cond // signalled when inFlight drops
	inFlight int
	closed   bool
}

// Run serves until the graceful stop has drained the pass in flight and released the Lease, or
// ctx ends, or the Lease is lost (ErrLeaseLost). It returns an error when cfg does not validate,
// the API server cannot be reached at start, or the listener fails.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	sched, _ := ParseSchedule(cfg.Schedule)
	s := &server{cfg: cfg, schedule: sched}
	s.idle = sync.NewCond(&s.mu)
	if cfg.LeaderElection.LeaderElect {
		// A leader that has not renewed for this long past its lease is unhealthy.
		s.watchdog = leaderelection.NewLeaderHealthzAdaptor(cfg.LeaderElection.LeaseDuration.Duration)
	}

	srv := &http.Server{Handler: s.mux(), ReadHeaderTimeout: 10 * time.Second}
	srvErr := make(chan error, 2)
	go func() { srvErr <- srv.Serve(cfg.Listener) }()
	var guardSrv *http.Server
	if cfg.GuardListener != nil {
		mux := http.NewServeMux()
		path := cfg.GuardPath
		if path == "" {
			path = "/"
		}
		mux.Handle(path, cfg.Guard)
		guardSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { srvErr <- guardSrv.Serve(cfg.GuardListener) }()
		klog.InfoS("Serving the eviction guard", "address", cfg.GuardListener.Addr().String(), "path", path)
	}
	defer func() {
		s.ready.Store(false)
		sctx, cancel := context.WithTimeout(context.Background(), DefaultShutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if guardSrv != nil {
			_ = guardSrv.Shutdown(sctx)
		}
	}()

	if _, err := cfg.Client.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("serve: API server: %w", err)
	}
	if cfg.LeaderElection.LeaderElect {
		checkCtx, stopChecks := context.WithCancel(ctx)
		defer stopChecks()
		s.checkLeaseAccess(checkCtx)
	}
	s.ready.Store(true)
	klog.InfoS("Serving", "address", cfg.Listener.Addr().String(), "schedule", cfg.Schedule, "leaderElection", cfg.LeaderElection.LeaderElect)

	// runCtx ends on the hard stop, or once a graceful stop has drained the pass in flight.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-cfg.Stop:
			klog.InfoS("Graceful stop: no further pass; waiting for the pass in flight to reach a safe point")
			s.close()
			cancel()
		case <-runCtx.Done():
		}
	}()

	var err error
	done := make(chan error, 1)
	go func() {
		if !cfg.LeaderElection.LeaderElect {
			s.lead(runCtx)
			done <- nil
			return
		}
		done <- s.elect(runCtx)
	}()
	select {
	case err = <-done:
	case err = <-srvErr:
		cancel()
		<-done
		err = fmt.Errorf("serve: listener: %w", err)
	}
	return err
}

// elect runs the leader election until ctx ends or the Lease is lost.
func (s *server) elect(ctx context.Context) error {
	le := s.cfg.LeaderElection
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.ResourceNamespace, Name: le.ResourceName},
		Client:     s.cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: s.cfg.Identity},
	}
	var (
		led     atomic.Bool
		leading = make(chan struct{}) // closed when the leading loop has returned
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		WatchDog:        s.watchdog,
		Name:            le.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(leading)
				led.Store(true)
				s.cfg.Metrics.SetLeader(true)
				klog.InfoS("Leading: passes start on the schedule", "lease", klog.KRef(le.ResourceNamespace, le.ResourceName), "identity", s.cfg.Identity)
				s.lead(lctx)
			},
			OnStoppedLeading: func() {
				s.cfg.Metrics.SetLeader(false)
			},
			OnNewLeader: func(identity string) {
				if identity != s.cfg.Identity {
					klog.InfoS("Another replica leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("serve: leader election: %w", err)
	}
	s.watchdog.SetLeaderElection(elector)
	elector.Run(ctx)
	if !led.Load() {
		return nil // ctx ended before this process led
	}
	// OnStartedLeading runs in a goroutine of its own: wait until it has stopped acting.
	<-leading
	if ctx.Err() == nil {
		return ErrLeaseLost
	}
	return nil
}

// lead starts passes on the schedule (and one at once with PassOnStart) and the Leading funcs
// until ctx ends, then waits for the pass in flight and for the Leading funcs to return.
func (s *server) lead(ctx context.Context) {
	var leading sync.WaitGroup
	defer leading.Wait()
	for _, f := range s.cfg.Leading {
		leading.Add(1)
		go func() {
			defer leading.Done()
			f(ctx)
		}()
	}
	c := cron.New()
	c.Schedule(s.schedule, cron.FuncJob(func() { s.pass(ctx) }))
	if s.cfg.PassOnStart {
		go s.pass(ctx)
	}
	c.Start()
	klog.InfoS("Next pass", "at", s.schedule.Next(time.Now()).UTC().Format(time.RFC3339))
	if s.cfg.Trigger != nil {
		go s.triggered(ctx)
	}
	<-ctx.Done()
	<-c.Stop().Done()
	s.wait()
}

// triggered starts a pass for each reason Config.Trigger sends, rate-limited (one per
// TriggerMinInterval) and never beside another pass, until ctx ends.
func (s *server) triggered(ctx context.Context) {
	every := s.cfg.TriggerMinInterval
	if every == 0 {
		every = DefaultTriggerMinInterval
	}
	limit := rate.NewLimiter(rate.Every(every), 1)
	for {
		select {
		case <-ctx.Done():
			return
		case why := <-s.cfg.Trigger:
			if s.busy() || !limit.Allow() {
				continue
			}
			klog.InfoS("Pass triggered off the schedule", "reason", why)
			go s.pass(ctx)
		}
	}
}

// busy reports whether a pass runs now.
func (s *server) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight > 0
}

// pass runs one pass unless a graceful stop closed the gate or ctx ended.
func (s *server) pass(ctx context.Context) {
	if !s.begin() {
		return
	}
	defer s.end()
	if ctx.Err() != nil {
		return
	}
	klog.InfoS("Pass starting")
	s.cfg.Pass(ctx, s.cfg.Stop)
	klog.InfoS("Pass done", "next", s.schedule.Next(time.Now()).UTC().Format(time.RFC3339))
}

// begin counts a pass in flight, or reports false once the gate is closed or while another pass
// runs (the pass at start and the schedule's never overlap: one disruption in flight per cluster).
func (s *server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.inFlight > 0 {
		klog.InfoS("Pass skipped: the previous pass still runs")
		return false
	}
	s.inFlight++
	return true
}

// end uncounts a pass.
func (s *server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	s.idle.Broadcast()
}

// wait waits until no pass is in flight.
func (s *server) wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inFlight > 0 {
		s.idle.Wait()
	}
}

// close refuses further passes and waits for the passes in flight.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.ready.Store(false)
	s.wait()
}

// mux serves /healthz (the process runs; a leader that stopped renewing its Lease past the lease
// duration is not healthy), /readyz (the API server answered at start, no graceful stop is under
// way, and with leader election this replica may get and update the Lease: leaseaccess.go) and
// /metrics.
func (s *server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if s.watchdog != nil {
			if err := s.watchdog.Check(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if why, _ := s.leaseDenied.Load().(string); why != "" {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/metrics", s.cfg.Metrics.Handler())
	return mux
}
