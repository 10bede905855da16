// Package lease makes one redis-rebalancer act at a time: `run` (and the descheduler built with
// the RedisClusterBalance plugin, hack/descheduler-plugin) takes the same coordination.k8s.io
// Lease that `serve`'s replicas elect their leader on (client-go's leaderelection on a
// resourcelock.LeaseLock), holds it while it acts, and releases it at the end.
// A run that finds the Lease held waits for it, bounded, logging who holds it, and gives up with
// a *HeldError; serve's leader holds it for as long as it leads, so a run beside a serve
// Deployment never acts while serve does. One Lease is one scope: the processes that name the
// same Lease (namespace and name) never act together, whatever Redis clusters they select.
//
// It imports client-go (leaderelection, resourcelock) and component-base's leader-election
// configuration; cmd/redis-rebalancer/app wires it into run. serve keeps its own elector
// (rebalancer/serve) on the same Lease.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultWait is how long a run waits for a Lease another process holds (run's --lease-wait).
const DefaultWait = 2 * time.Minute

// The Lease's defaults, which run, serve and the descheduler plugin share.
const (
	// DefaultName is the Lease's name (LeaderElection.ResourceName).
	DefaultName = "redis-rebalancer"
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod are its timings:
	// component-base's recommended defaults, as kube-scheduler's and the descheduler's.
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// DefaultLeaderElection returns the Lease's defaults: enabled, DefaultName in namespace, with
// component-base's recommended timings.
func DefaultLeaderElection(namespace string) componentbaseconfig.LeaderElectionConfiguration {
	return componentbaseconfig.LeaderElectionConfiguration{
		LeaderElect:       true,
		LeaseDuration:     metav1.Duration{Duration: DefaultLeaseDuration},
		RenewDeadline:     metav1.Duration{Duration: DefaultRenewDeadline},
		RetryPeriod:       metav1.Duration{Duration: DefaultRetryPeriod},
		ResourceLock:      resourcelock.LeasesResourceLock,
		ResourceName:      DefaultName,
		ResourceNamespace: namespace,
	}
}

// ProgressInterval is how often a run waiting for the Lease logs that it still waits.
const ProgressInterval = 10 * time.Second

// ErrLost is returned by Hold when the Lease could not be renewed while act ran: act's context
// was cancelled (its steps cut short), and another process may act from now on.
var ErrLost = errors.New("lease: lost while acting (not renewed within the renew deadline)")

// HeldError is Hold's error when another process held the Lease for the whole wait: act did not
// run.
type HeldError struct {
	// Lease is the Lease's "namespace/name".
	Lease string
	// Holder is the identity that held it when the wait ended.
	Holder string
	// Waited is how long Hold waited.
	Waited time.Duration
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease %s: held by %s for the whole wait (%s): another run or serve acts; nothing done", e.Lease, e.Holder, e.Waited.Round(time.Second))
}

// Config says which Lease to hold and how.
type Config struct {
	// Client reaches the API server (coordination.k8s.io/v1 Leases). Required.
	Client kubernetes.Interface
	// LeaderElection names the Lease (ResourceNamespace, ResourceName; ResourceLock "leases")
	// and its timings (LeaseDuration, RenewDeadline, RetryPeriod), as serve's leader election
	// does; LeaderElect is not read.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Identity is this process's identity in the Lease (hostname and a random suffix, as
	// serve's). Required.
	Identity string
	// Wait bounds the wait for a Lease another process holds, counted from the first attempt to
	// take it (which ends within a retry period): 0 gives up after that first attempt.
	Wait time.Duration
	// Clock measures the wait (the real clock when nil).
	Clock clock.WithTicker
	// Waiting, when set, is told who holds the Lease while Hold waits: when it first finds
	// another holder, then every ProgressInterval (besides the log lines).
	Waiting func(holder string, waited time.Duration)
}

// Validate checks cfg: a client and an identity, a Lease named, "leases" locks only, the renew
// deadline shorter than the lease duration, the retry period positive and shorter than the renew
// deadline, a wait that is not negative.
func (cfg Config) Validate() error {
	var errs []error
	if cfg.Client == nil || cfg.Identity == "" {
		errs = append(errs, errors.New("a client and an identity are required"))
	}
	if err := ValidateLeaderElection(cfg.LeaderElection); err != nil {
		errs = append(errs, err)
	}
	if cfg.Wait < 0 {
		errs = append(errs, fmt.Errorf("the wait (%s) must not be negative", cfg.Wait))
	}
	if len(errs) > 0 {
		return fmt.Errorf("lease: %w", errors.Join(errs...))
	}
	return nil
}

// ValidateLeaderElection checks a Lease's configuration as run and serve use it: "leases" locks
// only, a name and a namespace, the renew deadline shorter than the lease duration, the retry
// period positive and shorter than the renew deadline.
func ValidateLeaderElection(le componentbaseconfig.LeaderElectionConfiguration) error {
	switch {
	case le.ResourceLock != resourcelock.LeasesResourceLock:
		return fmt.Errorf("resource lock %q: only %q is supported", le.ResourceLock, resourcelock.LeasesResourceLock)
	case le.ResourceName == "" || le.ResourceNamespace == "":
		return errors.New("the Lease's name and namespace are required")
	case le.RenewDeadline.Duration >= le.LeaseDuration.Duration:
		return fmt.Errorf("the renew deadline (%s) must be shorter than the lease duration (%s)", le.RenewDeadline.Duration, le.LeaseDuration.Duration)
	case le.RetryPeriod.Duration <= 0 || le.RetryPeriod.Duration >= le.RenewDeadline.Duration:
		return fmt.Errorf("the retry period (%s) must be positive and shorter than the renew deadline (%s)", le.RetryPeriod.Duration, le.RenewDeadline.Duration)
	}
	return nil
}

// Held describes the Lease as Hold held it, or as another process kept it.
type Held struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Holder is this process's identity once it held the Lease, else the other holder's.
	Holder string
	// Waited is how long Hold waited before it held the Lease (or gave up).
	Waited time.Duration
}

// Hold takes the Lease, waiting cfg.Wait at most while another process holds it (a log line when
// it finds it held, then every ProgressInterval), runs act with a context that ends if the Lease
// cannot be renewed, and releases the Lease when act returns (ReleaseOnCancel: the next process
// takes it at its next retry, not after the lease duration). It returns what it held and act's
// error; a *HeldError when the Lease stayed held by another process for the whole wait (act did
// not run); ErrLost (joined with act's error) when the Lease was lost while act ran; ctx's error
// when ctx ended first. A Lease nobody else holds that cannot be taken (RBAC, API server) is an
// error once the wait ends, not a *HeldError.
func Hold(ctx context.Context, cfg Config, act func(ctx context.Context) error) (Held, error) {
	le := cfg.LeaderElection
	held := Held{Namespace: le.ResourceNamespace, Name: le.ResourceName}
	if err := cfg.Validate(); err != nil {
		return held, err
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	ref := klog.KRef(le.ResourceNamespace, le.ResourceName)
	start := clk.Now()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		acquired bool                  // act started (or is about to)
		gaveUp   bool                  // the wait ended first: act never runs
		lost     bool                  // the Lease was lost while act ran
		actErr   error                 // act's error
		done     = make(chan struct{}) // closed once OnStartedLeading has returned
		holder   string                // the last other holder observed
	)
	var fatal error // an answer that no retry changes, before the Lease was held
	lock := &checkedLock{
		Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: le.ResourceNamespace, Name: le.ResourceName},
			Client:     cfg.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
		},
		fatal: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if !acquired && fatal == nil {
				fatal, gaveUp = err, true
				cancel()
			}
		},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(done)
				mu.Lock()
				if gaveUp {
					mu.Unlock()
					return
				}
				acquired = true
				mu.Unlock()
				held.Waited = clk.Since(start)
				klog.InfoS("Holding the Lease: acting", "lease", ref, "identity", cfg.Identity, "waited", held.Waited.Round(time.Millisecond).String())
				err := act(lctx)
				mu.Lock()
				// lctx ends with runCtx (the parent's end; this process cancels runCtx only
				// below) or when a renewal fails: then the Lease is lost.
				lost, actErr = lctx.Err() != nil && runCtx.Err() == nil, err
				mu.Unlock()
				cancel() // release the Lease
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity == cfg.Identity || identity == "" {
					return
				}
				mu.Lock()
				first := holder == "" && !acquired
				holder = identity
				mu.Unlock()
				if !first {
					return
				}
				klog.InfoS("Lease held by another process: waiting", "lease", ref, "holder", identity, "wait", cfg.Wait.String())
				if cfg.Waiting != nil {
					cfg.Waiting(identity, clk.Since(start))
				}
			},
		},
	})
	if err != nil {
		return held, fmt.Errorf("lease: %w", err)
	}

	// The wait: progress lines, and give up when it ends without the Lease.
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		// The first attempt starts at once and ends within a retry period.
		deadline := clk.NewTimer(cfg.Wait + le.RetryPeriod.Duration)
		defer deadline.Stop()
		tick := clk.NewTicker(ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C():
				mu.Lock()
				waiting, h := !acquired, holder
				mu.Unlock()
				if waiting {
					waited := clk.Since(start)
					klog.InfoS("Still waiting for the Lease", "lease", ref, "holder", h, "waited", waited.Round(time.Second).String(), "wait", cfg.Wait.String())
					if cfg.Waiting != nil {
						cfg.Waiting(h, waited)
					}
				}
			case <-deadline.C():
				mu.Lock()
				if !acquired {
					gaveUp = true
					cancel()
				}
				mu.Unlock()
				return
			}
		}
	}()

	elector.Run(runCtx)
	mu.Lock()
	started := acquired
	mu.Unlock()
	if started {
		<-done
	}
	cancel()
	<-waitDone

	mu.Lock()
	defer mu.Unlock()
	if !started {
		held.Waited = clk.Since(start)
	}
	switch {
	case started && lost:
		held.Holder = cfg.Identity
		// act's error first: it names the cause (an API server that went away takes the Lease too).
		return held, errors.Join(actErr, ErrLost)
	case started:
		held.Holder = cfg.Identity
		return held, actErr
	case fatal != nil:
		return held, fmt.Errorf("lease %s: %w", ref, fatal)
	case ctx.Err() != nil:
		return held, fmt.Errorf("lease: %w", ctx.Err())
	}
	held.Holder = holder
	if holder == "" {
		return held, fmt.Errorf("lease %s: could not be taken in %s, and no other holder was seen (the API server's answers are in the log: RBAC needs get, create and update on the Lease)", ref, cfg.Wait)
	}
	return held, &HeldError{Lease: ref.String(), Holder: holder, Waited: held.Waited}
}

// checkedLock is a resource lock that reports the answers no retry changes (fatalAnswer) to
// fatal, so that Hold stops waiting at once instead of retrying until its wait ends.
type checkedLock struct {
	resourcelock.Interface
	fatal func(error)
}

// Get reads the Lease; NotFound is no error here (the Lease is created next).
func (l *checkedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	if err != nil && !apierrors.IsNotFound(err) && fatalAnswer(err) {
		l.fatal(err)
	}
	return r, raw, err
}

// Create creates the Lease; AlreadyExists is another process's race, no error here.
func (l *checkedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if err != nil && !apierrors.IsAlreadyExists(err) && fatalAnswer(err) {
		l.fatal(err)
	}
	return err
}

// Update updates the Lease; a Conflict is another process's race, no error here.
func (l *checkedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	if err != nil && !apierrors.IsConflict(err) && fatalAnswer(err) {
		l.fatal(err)
	}
	return err
}

// fatalAnswer reports whether the API server's answer stays the same however often it is asked:
// no right to the Lease (Forbidden, Unauthorized), or no Lease API where the request went
// (NotFound, MethodNotSupported, BadRequest).
func fatalAnswer(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsBadRequest(err)
}
