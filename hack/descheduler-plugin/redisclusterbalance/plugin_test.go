package redisclusterbalance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	frameworkfake "sigs.k8s.io/descheduler/pkg/framework/fake"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/lease"
)

// defaulted returns args with the defaults filled, as the descheduler hands them to New.
func defaulted(a *RedisClusterBalanceArgs) *RedisClusterBalanceArgs {
	SetDefaults(a)
	return a
}

// TestNewDryRunAndLease covers what New makes of the command line and the handle: a dry run
// (--dry-run passed by main, or the sandbox clientset the descheduler hands its plugins under
// --dry-run) takes no Lease and reads the cluster through the kubeconfig (the sandbox mirrors no
// StatefulSet), or the sandbox when none loads; otherwise the Lease is the one the args name, in
// the namespace they name, else the kubeconfig context's; disabled, none.
func TestNewDryRunAndLease(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, namespace: from-kubeconfig}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	real, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		client    kubernetes.Interface
		opts      Options
		lease     *LeaseArgs
		wantDry   bool
		wantLease string // "namespace/name", "" for none
		// wantReader: the cycle reads the cluster through the handle's client, or one of the
		// kubeconfig's.
		wantReader string
	}{
		{name: "--dry-run → dry run, no Lease, the cluster read through the kubeconfig", client: fake.NewClientset(), opts: Options{DryRun: true, Kubeconfig: kubeconfig}, wantDry: true, wantReader: "kubeconfig"},
		{name: "the dry run's sandbox clientset, --dry-run not passed → dry run, no Lease", client: fake.NewClientset(), opts: Options{Kubeconfig: kubeconfig}, wantDry: true, wantReader: "kubeconfig"},
		{name: "a dry run without a kubeconfig that loads → the sandbox read", client: fake.NewClientset(), opts: Options{DryRun: true, Kubeconfig: kubeconfig + ".missing"}, wantDry: true, wantReader: "handle"},
		{name: "a real clientset, no Lease namespace → the kubeconfig context's", client: real, opts: Options{Kubeconfig: kubeconfig}, wantLease: "from-kubeconfig/redis-rebalancer", wantReader: "handle"},
		{name: "a real clientset, the Lease named → that one", client: real, opts: Options{Kubeconfig: kubeconfig}, lease: &LeaseArgs{Namespace: "ops", Name: "rr"}, wantLease: "ops/rr", wantReader: "handle"},
		{name: "the Lease disabled → acts without one", client: real, opts: Options{Kubeconfig: kubeconfig}, lease: &LeaseArgs{Disabled: true}, wantReader: "handle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := defaulted(&RedisClusterBalanceArgs{Lease: tc.lease})
			pl, err := New(context.Background(), args, &frameworkfake.HandleImpl{ClientsetImpl: tc.client}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			p := pl.(*RedisClusterBalance)
			got := ""
			if p.lease != nil {
				got = p.lease.LeaderElection.ResourceNamespace + "/" + p.lease.LeaderElection.ResourceName
				if p.lease.Wait != 0 || p.lease.Identity == "" {
					t.Errorf("lease config %+v: want no wait and an identity", p.lease)
				}
			}
			if p.dryRun != tc.wantDry || got != tc.wantLease {
				t.Errorf("dry run %v, Lease %q; want %v, %q", p.dryRun, got, tc.wantDry, tc.wantLease)
			}
			reader := "kubeconfig"
			if p.reader == tc.client {
				reader = "handle"
			}
			if reader != tc.wantReader {
				t.Errorf("the cluster read through the %s's client, want the %s's", reader, tc.wantReader)
			}
		})
	}
}

// logLines is a logger that keeps every line it is given (verbosity up to 2).
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: 2})
}

func (l *logLines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestBalanceHoldsTheLease covers the Lease around a cycle, on a fake clientset with no Redis
// cluster (a cycle then only observes): while another identity holds the Lease the cycle skips
// with a log line naming the holder and makes no other request; once it is released the cycle
// takes it (held by the plugin while it observes), and releases it at the end; a dry run makes
// no request about the Lease at all.
func TestBalanceHoldsTheLease(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "redis-rebalancer"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("serve-0"), LeaseDurationSeconds: ptr.To(int32(3600)), AcquireTime: &now, RenewTime: &now},
	}
	for _, tc := range []struct {
		name   string
		dryRun bool
		lease  *coordinationv1.Lease // the Lease as the cycle finds it (nil: none)
		// wantSkip: the cycle skipped; wantObserved: it listed pods; wantHolder: the Lease's
		// holder while it did; wantAfter: the holder after ("" released).
		wantSkip     bool
		wantObserved bool
		wantHolder   string
		wantAfter    string
	}{
		{name: "held by serve-0 → skipped, nothing read", lease: held, wantSkip: true, wantAfter: "serve-0"},
		{name: "no Lease yet → taken, held while the cycle observes, released", wantObserved: true, wantHolder: "plugin", wantAfter: ""},
		{name: "released by serve-0 (no holder) → taken, released", lease: func() *coordinationv1.Lease {
			l := held.DeepCopy()
			l.Spec.HolderIdentity = ptr.To("")
			return l
		}(), wantObserved: true, wantHolder: "plugin", wantAfter: ""},
		{name: "dry run, held by serve-0 → observes and plans without asking for the Lease", dryRun: true, lease: held, wantObserved: true, wantHolder: "serve-0", wantAfter: "serve-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.lease != nil {
				objs = append(objs, tc.lease.DeepCopy())
			}
			client := fake.NewClientset(objs...)
			leaseGVR := coordinationv1.SchemeGroupVersion.WithResource("leases")
			holder := func() string {
				o, err := client.Tracker().Get(leaseGVR, "ops", "redis-rebalancer")
				if err != nil {
					return "(none)"
				}
				return ptr.Deref(o.(*coordinationv1.Lease).Spec.HolderIdentity, "")
			}
			var mu sync.Mutex
			var leaseRequests, otherRequests int
			holderWhileObserving := ""
			client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case a.GetResource().Resource == "leases":
					leaseRequests++
				default:
					otherRequests++
					if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
						holderWhileObserving = holder()
					}
				}
				return false, nil, nil
			})
			args := defaulted(&RedisClusterBalanceArgs{AllowEmpty: true, Lease: &LeaseArgs{Namespace: "ops"}})
			p := &RedisClusterBalance{handle: &frameworkfake.HandleImpl{ClientsetImpl: client}, args: args, dryRun: tc.dryRun, reader: client}
			if !tc.dryRun {
				p.lease = &lease.Config{Client: client, LeaderElection: leaderElection(args.Lease, "ops"), Identity: "plugin"}
				// Short timings: the first attempt ends within a retry period.
				p.lease.LeaderElection.RetryPeriod.Duration = 100 * time.Millisecond
			}
			var err error
			if p.redis, err = newRedis(args); err != nil {
				t.Fatal(err)
			}
			var logs logLines
			ctx := logr.NewContext(context.Background(), logs.logger())
			if st := p.Balance(ctx, []*corev1.Node{}); st != nil && st.Err != nil {
				t.Fatalf("Balance: %v", st.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			skipped := strings.Contains(logs.text(), `"msg"="Skipping this cycle: another redis-rebalancer holds the Lease (a run, or serve's leader, acts)" "plugin"="RedisClusterBalance" "lease"="ops/redis-rebalancer" "holder"="serve-0"`)
			if skipped != tc.wantSkip {
				t.Errorf("skipped %v, want %v; log:\n%s", skipped, tc.wantSkip, logs.text())
			}
			if observed := otherRequests > 0; observed != tc.wantObserved {
				t.Errorf("%d requests besides the Lease's: observed %v, want %v", otherRequests, observed, tc.wantObserved)
			}
			if tc.wantObserved && holderWhileObserving != tc.wantHolder {
				t.Errorf("the Lease's holder while the cycle observed: %q, want %q", holderWhileObserving, tc.wantHolder)
			}
			if tc.dryRun && leaseRequests > 0 {
				t.Errorf("a dry run made %d requests about the Lease, want none", leaseRequests)
			}
			if got := holder(); got != tc.wantAfter {
				t.Errorf("the Lease's holder after the cycle: %q, want %q", got, tc.wantAfter)
			}
		})
	}
}
