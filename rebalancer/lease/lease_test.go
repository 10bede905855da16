package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/utils/ptr"
)

// testConfig is a Lease redis-rebalancer/redis-rebalancer with short timings.
func testConfig(client *fake.Clientset, identity string, wait time.Duration) Config {
	return Config{
		Client:   client,
		Identity: identity,
		Wait:     wait,
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			ResourceLock: resourcelock.LeasesResourceLock, ResourceNamespace: "redis-rebalancer", ResourceName: "redis-rebalancer",
			LeaseDuration: metav1.Duration{Duration: 2 * time.Second},
			RenewDeadline: metav1.Duration{Duration: time.Second},
			RetryPeriod:   metav1.Duration{Duration: 50 * time.Millisecond},
		},
	}
}

func getLease(t *testing.T, client *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := client.CoordinationV1().Leases("redis-rebalancer").Get(context.Background(), "redis-rebalancer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestHoldFreeLease: nobody holds the Lease; act runs holding it (the Lease names this
// identity meanwhile), and the Lease is released when act returns.
func TestHoldFreeLease(t *testing.T) {
	client := fake.NewClientset()
	var during string
	held, err := Hold(t.Context(), testConfig(client, "run-a", time.Second), func(ctx context.Context) error {
		during = ptr.Deref(getLease(t, client).Spec.HolderIdentity, "")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if during != "run-a" || held.Holder != "run-a" || held.Namespace != "redis-rebalancer" || held.Name != "redis-rebalancer" {
		t.Errorf("holder during act %q, held %+v; want run-a on redis-rebalancer/redis-rebalancer", during, held)
	}
	if h := ptr.Deref(getLease(t, client).Spec.HolderIdentity, ""); h != "" {
		t.Errorf("after Hold the Lease is held by %q, want released", h)
	}
}

// TestHoldActError: act's error is Hold's.
func TestHoldActError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Hold(t.Context(), testConfig(fake.NewClientset(), "run-a", time.Second), func(context.Context) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Hold = %v, want act's error", err)
	}
}

// TestHoldHeldByAnother: serve's leader holds the Lease and renews it; a run with a short wait
// gives up with a *HeldError naming the holder, and never acts.
func TestHoldHeldByAnother(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "redis-rebalancer", Name: "redis-rebalancer"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("serve-0"), LeaseDurationSeconds: ptr.To(int32(3600)),
			AcquireTime: &now, RenewTime: &now,
		},
	})
	acted := false
	held, err := Hold(t.Context(), testConfig(client, "run-a", 200*time.Millisecond), func(context.Context) error {
		acted = true
		return nil
	})
	var he *HeldError
	if !errors.As(err, &he) || he.Holder != "serve-0" || he.Lease != "redis-rebalancer/redis-rebalancer" {
		t.Fatalf("Hold = %v, want a *HeldError naming serve-0", err)
	}
	if acted || held.Holder != "serve-0" || held.Waited < 200*time.Millisecond {
		t.Errorf("acted %v, held %+v: want no act, the holder, a wait of at least 200ms", acted, held)
	}
	if h := ptr.Deref(getLease(t, client).Spec.HolderIdentity, ""); h != "serve-0" {
		t.Errorf("the Lease is held by %q after the wait, want serve-0's still", h)
	}
}

// TestHoldOneAtATime: a second run that finds the Lease held waits, and acts only after the first
// has returned and released it.
func TestHoldOneAtATime(t *testing.T) {
	client := fake.NewClientset()
	release := make(chan struct{})
	var aDone, bStart atomic.Int64
	aHolds := make(chan struct{})
	aErr := make(chan error, 1)
	go func() {
		_, err := Hold(t.Context(), testConfig(client, "run-a", time.Second), func(context.Context) error {
			close(aHolds)
			<-release
			aDone.Store(time.Now().UnixNano())
			return nil
		})
		aErr <- err
	}()
	<-aHolds
	bErr := make(chan error, 1)
	bHeld := make(chan Held, 1)
	bWaits := make(chan string, 1)
	cfgB := testConfig(client, "run-b", 10*time.Second)
	cfgB.Waiting = func(holder string, _ time.Duration) {
		select {
		case bWaits <- holder:
		default:
		}
	}
	go func() {
		h, err := Hold(t.Context(), cfgB, func(context.Context) error {
			bStart.Store(time.Now().UnixNano())
			return nil
		})
		bHeld <- h
		bErr <- err
	}()
	// b finds the Lease held by a before a releases it.
	if holder := <-bWaits; holder != "run-a" {
		t.Errorf("run-b waited for %q, want run-a", holder)
	}
	close(release)
	if err := <-aErr; err != nil {
		t.Fatal(err)
	}
	if err := <-bErr; err != nil {
		t.Fatal(err)
	}
	h := <-bHeld
	if bStart.Load() < aDone.Load() {
		t.Errorf("run-b acted at %d, before run-a was done (%d)", bStart.Load(), aDone.Load())
	}
	if h.Holder != "run-b" || h.Waited <= 0 {
		t.Errorf("run-b held %+v, want run-b after a wait", h)
	}
}

// TestHoldLost: the Lease cannot be renewed while act runs (every update refused): act's context
// ends within the renew deadline and Hold returns ErrLost.
func TestHoldLost(t *testing.T) {
	client := fake.NewClientset()
	var refuse atomic.Bool
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		}
		return false, nil, nil
	})
	cfg := testConfig(client, "run-a", time.Second)
	var cut time.Duration
	_, err := Hold(t.Context(), cfg, func(ctx context.Context) error {
		refuse.Store(true)
		start := time.Now()
		<-ctx.Done()
		cut = time.Since(start)
		return ctx.Err()
	})
	if !errors.Is(err, ErrLost) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Hold = %v, want ErrLost joined with act's context error", err)
	}
	if max := cfg.LeaderElection.RenewDeadline.Duration + 2*cfg.LeaderElection.RetryPeriod.Duration + time.Second; cut > max {
		t.Errorf("act's context ended %s after the renewals started failing, want within %s", cut, max)
	}
}

// TestHoldForbidden: the Lease cannot be read or created (no RBAC): an error at once, naming
// the answer, not a *HeldError after the whole wait.
func TestHoldForbidden(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "redis-rebalancer", errors.New("RBAC"))
	})
	held, err := Hold(t.Context(), testConfig(client, "run-a", time.Minute), func(context.Context) error {
		t.Error("act ran without the Lease")
		return nil
	})
	var he *HeldError
	if !apierrors.IsForbidden(err) || errors.As(err, &he) {
		t.Errorf("Hold = %v, want the Forbidden answer, no *HeldError", err)
	}
	if held.Waited > 10*time.Second {
		t.Errorf("Hold waited %s before it gave up, want it at once", held.Waited)
	}
}

// TestValidate refuses what cannot work.
func TestValidate(t *testing.T) {
	good := testConfig(fake.NewClientset(), "a", 0)
	for _, c := range []struct {
		name string
		edit func(*Config)
	}{
		{"no identity → refused", func(c *Config) { c.Identity = "" }},
		{"configmaps lock → refused", func(c *Config) { c.LeaderElection.ResourceLock = "configmaps" }},
		{"no namespace → refused", func(c *Config) { c.LeaderElection.ResourceNamespace = "" }},
		{"renew deadline ≥ lease duration → refused", func(c *Config) { c.LeaderElection.RenewDeadline = c.LeaderElection.LeaseDuration }},
		{"retry period 0 → refused", func(c *Config) { c.LeaderElection.RetryPeriod = metav1.Duration{} }},
		{"negative wait → refused", func(c *Config) { c.Wait = -time.Second }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := good
			c.edit(&cfg)
			if cfg.Validate() == nil {
				t.Error("Validate accepted it")
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Errorf("good config: %v", err)
	}
}
