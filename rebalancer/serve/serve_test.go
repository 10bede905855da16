package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/metrics"
)

// replica is one Run on the shared fake API server, with a pass that records itself and blocks
// until the graceful stop (as a long pass would) or ctx ends.
type replica struct {
	name   string
	addr   string
	stop   chan struct{}
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned err
	err    error

	mu     sync.Mutex
	passes int
	ended  []string // how each pass ended: "graceful" or "cancelled"
}

func startReplica(t *testing.T, client *fake.Clientset, name string) *replica {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, addr: l.Addr().String(), stop: make(chan struct{}), done: make(chan struct{})}
	le := DefaultLeaderElection("kube-system")
	le.LeaseDuration = metav1.Duration{Duration: 2 * time.Second}
	le.RenewDeadline = metav1.Duration{Duration: time.Second}
	le.RetryPeriod = metav1.Duration{Duration: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	cfg := Config{
		Client: client, Schedule: "@every 1h", PassOnStart: true, LeaderElection: le, Identity: name,
		Listener: l, Metrics: metrics.New(metrics.BuildInfo{Version: "test"}), Stop: r.stop,
		Pass: func(ctx context.Context, stop <-chan struct{}) {
			r.mu.Lock()
			r.passes++
			r.mu.Unlock()
			how := "graceful"
			select {
			case <-stop:
			case <-ctx.Done():
				how = "cancelled"
			}
			r.mu.Lock()
			r.ended = append(r.ended, how)
			r.mu.Unlock()
		},
	}
	go func() { r.err = Run(ctx, cfg); close(r.done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Run did not return after its context ended", name)
		}
	})
	return r
}

// electionClient returns a fake API server whose SelfSubjectAccessReviews answer allow(verb) for
// the Lease (the fake's default answer is "denied"); every verb is allowed when allow is nil.
func electionClient(allow func(verb string) bool) *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		r := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = allow == nil || allow(r.Spec.ResourceAttributes.Verb)
		return true, r, nil
	})
	return client
}

func (r *replica) passCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passes
}

func (r *replica) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + r.addr + path)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", r.name, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

// TestLeaderElection runs two replicas on one API server: only the leader passes; a graceful
// stop lets its pass end at the stop, releases the Lease, and the other replica takes over at
// once (well within the lease duration) and passes.
func TestLeaderElection(t *testing.T) {
	client := electionClient(nil)
	a := startReplica(t, client, "a")
	waitFor(t, "a leads and passes", 5*time.Second, func() bool { return a.passCount() == 1 })
	b := startReplica(t, client, "b")
	waitFor(t, "b serves", 5*time.Second, func() bool { code, _ := b.get(t, "/readyz"); return code == http.StatusOK })

	// b waits while a renews the Lease past a whole lease duration after b started (b would have
	// taken a Lease left unrenewed that long).
	bStarted := time.Now()
	waitFor(t, "a renews the Lease for a lease duration", 10*time.Second, func() bool {
		l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
		return err == nil && *l.Spec.HolderIdentity == "a" && l.Spec.RenewTime.Time.After(bStarted.Add(2*time.Second))
	})
	if n := b.passCount(); n != 0 {
		t.Fatalf("b passed %d times while a led", n)
	}
	_, body := a.get(t, "/metrics")
	if !strings.Contains(body, "redis_rebalancer_leader 1") {
		t.Errorf("a's /metrics lacks redis_rebalancer_leader 1")
	}
	_, body = b.get(t, "/metrics")
	if !strings.Contains(body, "redis_rebalancer_leader 0") {
		t.Errorf("b's /metrics lacks redis_rebalancer_leader 0")
	}

	close(a.stop)
	select {
	case <-a.done:
		if a.err != nil {
			t.Errorf("a: Run after a graceful stop: %v", a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a did not stop")
	}
	a.mu.Lock()
	ended := append([]string(nil), a.ended...)
	a.mu.Unlock()
	if len(ended) != 1 || ended[0] != "graceful" {
		t.Errorf("a's pass ended %v, want [graceful]", ended)
	}
	waitFor(t, "b takes over and passes", 5*time.Second, func() bool { return b.passCount() == 1 })
	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := *lease.Spec.HolderIdentity; got != "b" {
		t.Errorf("Lease holder %q, want b", got)
	}
}

// TestWithoutLeaderElection passes at once and on the schedule, serves the three endpoints, and
// a graceful stop ends Run without an error.
func TestWithoutLeaderElection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var mu sync.Mutex
	passes := 0
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{
			Client: fake.NewClientset(), Schedule: "@every 1s", PassOnStart: true, Listener: l,
			Metrics: metrics.New(metrics.BuildInfo{Version: "test"}), Stop: stop,
			Pass: func(context.Context, <-chan struct{}) { mu.Lock(); passes++; mu.Unlock() },
		})
	}()
	waitFor(t, "three passes", 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return passes >= 3 })
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get("http://" + l.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
	}
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the graceful stop")
	}
}

func TestValidate(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	valid := func() Config {
		return Config{
			Client: fake.NewClientset(), Pass: func(context.Context, <-chan struct{}) {}, Schedule: "*/10 * * * *",
			LeaderElection: DefaultLeaderElection("ns"), Identity: "me", Listener: l, Metrics: metrics.New(metrics.BuildInfo{Version: "test"}),
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string // "" = valid
	}{
		{name: "defaults → valid", change: func(*Config) {}},
		{name: "CRON_TZ and @every → valid", change: func(c *Config) { c.Schedule = "CRON_TZ=Europe/Paris 0 2 * * 1-5" }},
		{name: "bad cron → error", change: func(c *Config) { c.Schedule = "61 * * * *" }, want: `schedule "61 * * * *": end of range (61) above maximum (59)`},
		{name: "no schedule → error", change: func(c *Config) { c.Schedule = "" }, want: "a schedule is required"},
		{name: "@every 0s → error, not silently every second", change: func(c *Config) { c.Schedule = "@every 0s" }, want: `schedule "@every 0s": @every 0s never fires: the duration must be positive`},
		{name: "February 30 → error, never fires", change: func(c *Config) { c.Schedule = "0 0 30 2 *" }, want: `schedule "0 0 30 2 *": never fires`},
		{name: "renew deadline ≥ lease duration → error", change: func(c *Config) { c.LeaderElection.RenewDeadline = c.LeaderElection.LeaseDuration },
			want: "the renew deadline (15s) must be shorter than the lease duration (15s)"},
		{name: "endpoints lock → error", change: func(c *Config) { c.LeaderElection.ResourceLock = "endpoints" }, want: `resource lock "endpoints"`},
		{name: "no identity → error", change: func(c *Config) { c.Identity = "" }, want: "an identity is required"},
		{name: "no identity without election → valid", change: func(c *Config) { c.Identity = ""; c.LeaderElection.LeaderElect = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLeaseLost takes the Lease away from the leader (another holder renews it): the leader's
// pass is cancelled at once and Run returns ErrLeaseLost.
func TestLeaseLost(t *testing.T) {
	client := electionClient(nil)
	// The fake keeps no resource versions: play the API server refusing a's updates once the Lease
	// was taken (a's cached copy is stale then). The reactor is installed before any request: the
	// fake's reaction chain is not safe to change while in use.
	var stolen atomic.Bool
	client.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		lease := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if stolen.Load() && *lease.Spec.HolderIdentity == "a" {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), lease.Name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	a := startReplica(t, client, "a")
	waitFor(t, "a leads and passes", 5*time.Second, func() bool { return a.passCount() == 1 })
	leases := client.CoordinationV1().Leases("kube-system")
	l, err := leases.Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := "someone-else"
	l.Spec.HolderIdentity = &other
	now := metav1.NewMicroTime(time.Now().Add(time.Hour))
	l.Spec.RenewTime = &now
	stolen.Store(true)
	if _, err := leases.Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
		if !errors.Is(a.err, ErrLeaseLost) {
			t.Errorf("Run: %v, want ErrLeaseLost", a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a still runs after losing its Lease")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ended) != 1 || a.ended[0] != "cancelled" {
		t.Errorf("a's pass ended %v, want [cancelled]", a.ended)
	}
}

// TestPassesNeverOverlap: passes longer than the schedule's period (and the pass at start) never
// run at once; the ticks that find a pass running are skipped.
func TestPassesNeverOverlap(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var mu sync.Mutex
	running, most, passes := 0, 0, 0
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{
			Client: fake.NewClientset(), Schedule: "@every 1s", PassOnStart: true, Listener: l,
			Metrics: metrics.New(metrics.BuildInfo{Version: "test"}), Stop: stop,
			Pass: func(ctx context.Context, stop <-chan struct{}) {
				mu.Lock()
				running++
				passes++
				most = max(most, running)
				mu.Unlock()
				select { // a pass of 2.5 s: two or three ticks come meanwhile
				case <-time.After(2500 * time.Millisecond):
				case <-stop:
				}
				mu.Lock()
				running--
				mu.Unlock()
			},
		})
	}()
	waitFor(t, "three passes", 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return passes >= 3 })
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if most != 1 {
		t.Errorf("%d passes ran at once, want 1", most)
	}
}

// TestReadyzNeedsLeaseRights: a replica that may not update the Lease cannot take part in the
// election: /readyz answers 503 naming what it may not do (/healthz stays 200: restarting it
// would not help), and it never passes; once the rights are granted, the next check makes it
// ready and it leads.
func TestReadyzNeedsLeaseRights(t *testing.T) {
	leaseAccessInterval = 100 * time.Millisecond
	t.Cleanup(func() { leaseAccessInterval = LeaseAccessInterval })
	var granted atomic.Bool
	client := electionClient(func(verb string) bool { return verb == "get" || granted.Load() })
	// Without the rights the API server refuses the election's create too.
	client.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if granted.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), DefaultLeaseName, errors.New("RBAC: access denied"))
	})
	r := startReplica(t, client, "a")
	waitFor(t, "a serves", 5*time.Second, func() bool { code, _ := r.get(t, "/healthz"); return code == http.StatusOK })
	// The first check of the Lease rights may not have run yet when /healthz first answers.
	var code int
	var body string
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		code, body = r.get(t, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "may not update, create Lease kube-system/redis-rebalancer"), nil
	}); err != nil {
		t.Errorf("/readyz without Lease rights: %d %q, want 503 naming update and create", code, body)
	}
	if code, _ := r.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz without Lease rights: %d, want 200", code)
	}
	if n := r.passCount(); n != 0 {
		t.Errorf("%d passes without Lease rights, want 0", n)
	}
	granted.Store(true)
	waitFor(t, "ready once granted", 5*time.Second, func() bool { code, _ := r.get(t, "/readyz"); return code == http.StatusOK })
	waitFor(t, "leads and passes once granted", 10*time.Second, func() bool { return r.passCount() == 1 })
}

// TestTrigger: with a schedule that never comes and no pass at start, a reason on Trigger starts
// a pass at once; reasons sent while TriggerMinInterval has not passed since are dropped, and
// one sent after it starts the next pass.
func TestTrigger(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	trigger := make(chan string)
	var passes atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{
			Client: fake.NewClientset(), Schedule: "0 0 1 1 *", Listener: l,
			Metrics: metrics.New(metrics.BuildInfo{Version: "test"}), Stop: stop,
			Trigger: trigger, TriggerMinInterval: 700 * time.Millisecond,
			Pass: func(context.Context, <-chan struct{}) { passes.Add(1) },
		})
	}()
	send := func() {
		select {
		case trigger <- "MasterQuorum broken":
		case <-time.After(10 * time.Second):
			t.Fatal("nobody reads Trigger")
		}
	}
	start := time.Now()
	send()
	waitFor(t, "the triggered pass", 10*time.Second, func() bool { return passes.Load() == 1 })
	for time.Since(start) < 500*time.Millisecond {
		send() // within the interval: dropped
	}
	if n := passes.Load(); n != 1 {
		t.Fatalf("%d passes after reasons sent within the interval, want 1", n)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		send()
		return passes.Load() == 2, nil
	})
	if err != nil || time.Since(start) < 700*time.Millisecond {
		t.Fatalf("second pass after %v (%v), want one once the interval has passed", time.Since(start), err)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
