package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/cache"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/handoff"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/metrics"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Defaults of serve's guard flags.
const (
	defaultGuardListenAddress = ":9443"
	defaultGuardCertDir       = "/var/run/secrets/redis-rebalancer/guard-tls"
	defaultGuardCertSecret    = "redis-rebalancer-guard-tls"
	defaultGuardService       = "redis-rebalancer-guard"
	// guardCacheSyncTimeout bounds the first listing of pods and nodes.
	guardCacheSyncTimeout = 2 * time.Minute
	// guardCertTimeout bounds the wait for a self-issued certificate.
	guardCertTimeout = 2 * time.Minute
)

// guardOptions are serve's flags of the eviction guard that are not policy fields: where it
// listens and where its serving certificate comes from.
type guardOptions struct {
	listenAddress string
	certDir       string
	selfSigned    bool
	certSecret    string
	service       string
	extraDNSNames []string
}

func newGuardOptions() guardOptions {
	return guardOptions{listenAddress: defaultGuardListenAddress, certDir: defaultGuardCertDir, certSecret: defaultGuardCertSecret, service: defaultGuardService}
}

func (o *guardOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.listenAddress, "guard-listen-address", o.listenAddress, "address of the eviction guard's TLS listener (guard.enabled): kube-apiserver posts its AdmissionReviews there, on "+guard.Path)
	fs.StringVar(&o.certDir, "guard-cert-dir", o.certDir, "directory holding the guard's serving certificate, tls.crt and tls.key (a mounted Secret: cert-manager's, or the one --guard-self-signed writes); re-read when they change")
	fs.BoolVar(&o.selfSigned, "guard-self-signed", o.selfSigned, "issue and rotate the guard's serving certificate here (open-policy-agent/cert-controller): a CA and a certificate for the Service, kept in the Secret --guard-cert-secret (mount it at --guard-cert-dir: the kubelet projects it there), and the CA bundle written into the webhook configuration (guard.webhookConfigurationName)")
	fs.StringVar(&o.certSecret, "guard-cert-secret", o.certSecret, "with --guard-self-signed: the Secret, in serve's namespace, the certificate is kept in")
	fs.StringVar(&o.service, "guard-service", o.service, "with --guard-self-signed: the Service in front of the guard; the certificate names <service>.<namespace>.svc")
	fs.StringSliceVar(&o.extraDNSNames, "guard-extra-dns-names", o.extraDNSNames, "with --guard-self-signed: further DNS names the certificate carries")
}

// check refuses, before serve starts anything, the guard's flags that cannot work: a listen
// address that is no HOST:PORT, names that are no Kubernetes names, and a serving certificate
// that cannot be loaded from --guard-cert-dir (tls.crt and tls.key; with --guard-self-signed,
// only the directory must exist: the Secret is projected there once issued).
func (o *guardOptions) check() error {
	var errs []error
	if err := checkAddress("guard-listen-address", o.listenAddress); err != nil {
		errs = append(errs, err)
	}
	if o.selfSigned {
		for _, msg := range validation.IsDNS1123Subdomain(o.certSecret) {
			errs = append(errs, fmt.Errorf("--guard-cert-secret %q: not a Secret name: %s", o.certSecret, msg))
		}
		for _, msg := range validation.IsDNS1123Label(o.service) {
			errs = append(errs, fmt.Errorf("--guard-service %q: not a Service name: %s", o.service, msg))
		}
		for _, n := range o.extraDNSNames {
			for _, msg := range validation.IsDNS1123Subdomain(n) {
				errs = append(errs, fmt.Errorf("--guard-extra-dns-names %q: not a DNS name: %s", n, msg))
			}
		}
		if fi, err := os.Stat(o.certDir); err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			errs = append(errs, fmt.Errorf("--guard-cert-dir %s: %w: with --guard-self-signed it is where the Secret --guard-cert-secret is mounted (a Secret volume)", o.certDir, err))
		}
	} else if _, err := tls.LoadX509KeyPair(filepath.Join(o.certDir, "tls.crt"), filepath.Join(o.certDir, "tls.key")); err != nil {
		errs = append(errs, fmt.Errorf("--guard-cert-dir %s: no serving certificate: %w: mount the Secret holding tls.crt and tls.key there (cert-manager's), or give --guard-self-signed", o.certDir, err))
	}
	return errors.Join(errs...)
}

// guardRun is the eviction guard of one serve process: its answer handler on a TLS listener and
// the hand-off its leader runs.
type guardRun struct {
	guard    *guard.Guard
	handOff  *handoff.Controller
	listener net.Listener
	close    func()
}

// startGuard starts what the eviction guard needs (p.Guard.Enabled) on serve's watched cache src
// (synced before it answers, within guardCacheSyncTimeout): the serving certificate (from
// --guard-cert-dir, issued here first with --guard-self-signed), TLS on the listener l, the guard
// and, unless dryRun, the hand-off. It warns when the live webhook configuration's failure
// policy or timeout differ from the policy's. A graceful stop (stop closed) ends its waits: it
// returns an error that errors.Is errStopped, saying what it waited for.
func (o *serveOptions) startGuard(ctx context.Context, stop <-chan struct{}, client kubernetes.Interface, src *cache.Cache, l net.Listener, p *policy, ex *execute.Executor, rc *redisctl.Client, m *metrics.Metrics, dryRun bool) (_ *guardRun, err error) {
	var closers []func()
	gr := &guardRun{close: func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}}
	defer func() {
		if err != nil {
			gr.close()
		}
	}()
	sel, err := selection(&p.Selection)
	if err != nil {
		return nil, err
	}
	cfg, err := executorConfig(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	closers = append(closers, cancel)

	wctx, wcancel := untilStop(ctx, stop)
	defer wcancel()
	sctx, scancel := context.WithTimeout(wctx, guardCacheSyncTimeout)
	err = src.WaitForSync(sctx)
	scancel()
	if errors.Is(context.Cause(wctx), errStopped) {
		return nil, fmt.Errorf("%w while the guard waited for the cache: %v", errStopped, err)
	}
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	checkWebhookConfiguration(ctx, client, &p.Guard)

	// controller-runtime's parts (the certificate's watcher, the self-issued certificate's
	// rotator) log through klog, as the rest of serve: without a logger, controller-runtime
	// prints a warning and a goroutine's stack on stderr (not JSON under --logging-format json)
	// and drops their lines.
	ctrl.SetLogger(klog.NewKlogr().WithName("guard-certificate"))
	if o.guard.selfSigned {
		if err := o.selfSign(ctx, stop, &p.Guard); err != nil {
			return nil, err
		}
	}
	cw, err := certwatcher.New(filepath.Join(o.guard.certDir, "tls.crt"), filepath.Join(o.guard.certDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("guard: serving certificate (--guard-cert-dir): %w", err)
	}
	go func() {
		if err := cw.Start(ctx); err != nil {
			klog.ErrorS(err, "Watching the guard's serving certificate")
		}
	}()
	// HTTP/2 (kube-apiserver's webhook client multiplexes its reviews on one connection) or 1.1.
	gr.listener = tls.NewListener(l, &tls.Config{GetCertificate: cw.GetCertificate, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	closers = append(closers, broadcaster.Shutdown)
	recorder := broadcaster.NewRecorder(scheme.Scheme, execute.EventSource)

	maxHold := p.Guard.MaxHold.Duration
	holds := guard.NewHolds(nil, 2*maxHold)
	if !dryRun {
		gr.handOff, err = handoff.New(handoff.Config{
			Client: client, Source: src, Holds: holds, Executor: ex,
			Policy: cfg.Policy, Selection: sel, DrainTaints: p.Guard.DrainTaints, MaxHold: maxHold,
			Workers: int(p.Limits.MaxParallelClusters), Observer: m,
		})
		if err != nil {
			return nil, err
		}
	}
	members, err := rules(p)
	if err != nil {
		return nil, err
	}
	gcfg := guard.Config{
		Source: src, Redis: rc, ClusterLabel: p.Selection.ClusterLabel, Selection: sel, Members: members, MaxHold: maxHold,
		RedisTimeout: time.Duration(p.Guard.TimeoutSeconds) * time.Second / 2, DrainTaints: p.Guard.DrainTaints,
		MaxLagBytes: p.Redis.MaxLagBytes, MaxLastIOSeconds: int(p.Redis.MaxLastIOSeconds),
		Holds: holds, Recorder: recorder, Observer: m,
	}
	if gr.handOff != nil {
		gcfg.OnHold = gr.handOff.Enqueue
	}
	if gr.guard, err = guard.New(gcfg); err != nil {
		return nil, err
	}
	return gr, nil
}

// selfSign issues the guard's serving certificate with open-policy-agent/cert-controller's
// rotator on a controller-runtime manager of its own (its cache narrowed to the Secret and the
// webhook configuration by name: namedLists; no metrics, no probes, no leader election:
// every replica runs it, as Gatekeeper's do; the Secret's updates settle who wrote last) into the
// Secret --guard-cert-secret, and waits until the certificate is in --guard-cert-dir (the
// Secret's volume: the kubelet projects it there) and the CA bundle in the webhook configuration,
// or until the graceful stop (stop closed: an error that errors.Is errStopped).
func (o *serveOptions) selfSign(ctx context.Context, stop <-chan struct{}, g *v1alpha1.Guard) error {
	ns, err := o.run.kube.namespace()
	if err != nil {
		return err
	}
	rcfg, err := o.run.kube.restConfig()
	if err != nil {
		return err
	}
	// The rotator's cache lists and watches the certificate's Secret and the webhook
	// configuration by name only (RBAC: resourceNames on list and watch too).
	rcfg = namedLists(rcfg, map[string]string{
		"/api/v1/namespaces/" + ns + "/secrets":                                 o.guard.certSecret,
		"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": g.WebhookConfigurationName,
	})
	mgr, err := ctrl.NewManager(rcfg, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: ctrlcache.Options{DefaultNamespaces: map[string]ctrlcache.Config{ns: {}}},
	})
	if err != nil {
		return fmt.Errorf("guard: --guard-self-signed: %w", err)
	}
	ready := make(chan struct{})
	err = rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey: types.NamespacedName{Namespace: ns, Name: o.guard.certSecret},
		CertDir:   o.guard.certDir, CAName: "redis-rebalancer-guard-ca", CAOrganization: "redis-rebalancer",
		DNSName: o.guard.service + "." + ns + ".svc", ExtraDNSNames: o.guard.extraDNSNames,
		IsReady: ready, Webhooks: []rotator.WebhookInfo{{Name: g.WebhookConfigurationName, Type: rotator.Validating}},
		FieldOwner: "redis-rebalancer",
	})
	if err != nil {
		return fmt.Errorf("guard: --guard-self-signed: %w", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			klog.ErrorS(err, "The guard's certificate rotator stopped")
		}
	}()
	select {
	case <-ready:
		klog.InfoS("Guard certificate issued", "secret", klog.KRef(ns, o.guard.certSecret), "dir", o.guard.certDir)
		return nil
	case <-time.After(guardCertTimeout):
		return fmt.Errorf("guard: --guard-self-signed: no certificate within %s (the Secret %s/%s and the webhook configuration %s must exist)", guardCertTimeout, ns, o.guard.certSecret, g.WebhookConfigurationName)
	case <-stop:
		return fmt.Errorf("%w while the guard waited for its certificate", errStopped)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkWebhookConfiguration reads the webhook configuration the installs create and warns when its
// failure policy or timeout differ from the policy's, or when it is missing (the guard then
// answers nothing: kube-apiserver does not call it).
func checkWebhookConfiguration(ctx context.Context, client kubernetes.Interface, g *v1alpha1.Guard) {
	wc, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, g.WebhookConfigurationName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		klog.InfoS("Warning: the eviction guard's ValidatingWebhookConfiguration does not exist: kube-apiserver calls no guard (deploy/overlays/guard, or the Helm chart's guard.enabled, installs it)", "name", g.WebhookConfigurationName)
		return
	case err != nil:
		klog.InfoS("Warning: could not read the eviction guard's ValidatingWebhookConfiguration", "name", g.WebhookConfigurationName, "err", err)
		return
	}
	for _, w := range wc.Webhooks {
		if w.FailurePolicy != nil && string(*w.FailurePolicy) != string(g.FailurePolicy) {
			klog.InfoS("Warning: the webhook's failurePolicy differs from the policy's guard.failurePolicy", "webhook", w.Name, "configured", *w.FailurePolicy, "policy", g.FailurePolicy)
		}
		if w.TimeoutSeconds != nil && *w.TimeoutSeconds != g.TimeoutSeconds {
			klog.InfoS("Warning: the webhook's timeoutSeconds differs from the policy's guard.timeoutSeconds", "webhook", w.Name, "configured", *w.TimeoutSeconds, "policy", g.TimeoutSeconds)
		}
	}
}
