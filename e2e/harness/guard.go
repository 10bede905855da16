package harness

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/test/pki"
)

// The eviction guard on a local cluster: kube-apiserver calls a webhook at
// https://127.0.0.1:PORT/..., whose serving certificate needs an IP SAN 127.0.0.1 (a CN alone is
// refused as legacy), and whose configuration carries the CA bundle.

// GuardTLS issues a CA and a serving certificate for 127.0.0.1 and localhost, writes the
// certificate and its key as tls.crt and tls.key into dir (what `serve --guard-cert-dir` reads),
// and returns the CA's PEM (the webhook configuration's caBundle).
func GuardTLS(dir string) ([]byte, error) {
	ca, err := pki.NewCA("redis-rebalancer-guard-test-ca")
	if err != nil {
		return nil, err
	}
	kp, err := ca.Issue(pki.Leaf{
		Subject: pkix.Name{CommonName: "redis-rebalancer-guard"}, IPs: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames: []string{"localhost"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	if err := kp.Write(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		return nil, err
	}
	return ca.CertPEM, nil
}

// GuardWebhook describes the eviction guard's ValidatingWebhookConfiguration on a test bed.
type GuardWebhook struct {
	// Name is the configuration's name (one per test: the bed is shared).
	Name string
	// Namespace is the only namespace whose evictions are sent to the guard (namespaceSelector
	// on kubernetes.io/metadata.name).
	Namespace string
	// URL is where kube-apiserver posts its reviews; CABundle the CA of its certificate.
	URL      string
	CABundle []byte
	// FailurePolicy is Ignore or Fail (Ignore when empty).
	FailurePolicy admissionregistrationv1.FailurePolicyType
}

// Object returns the configuration as the installs write it: CREATE pods/eviction, scoped to the
// namespace, timeoutSeconds 5, sideEffects NoneOnDryRun, admission.k8s.io/v1 only.
func (w GuardWebhook) Object() *admissionregistrationv1.ValidatingWebhookConfiguration {
	fp := w.FailurePolicy
	if fp == "" {
		fp = admissionregistrationv1.Ignore
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "evictions.guard.rebalancer.redis.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(w.URL), CABundle: w.CABundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": w.Namespace}},
			FailurePolicy:           ptr.To(fp),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// Install creates the configuration, or replaces the one of the same name.
func (w GuardWebhook) Install(ctx context.Context, client kubernetes.Interface) error {
	api := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	obj := w.Object()
	old, err := api.Get(ctx, w.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, obj, metav1.CreateOptions{})
	case err == nil:
		obj.ResourceVersion = old.ResourceVersion
		_, err = api.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("harness: webhook configuration %s: %w", w.Name, err)
	}
	return nil
}

// Uninstall deletes the configuration (gone already is fine).
func (w GuardWebhook) Uninstall(ctx context.Context, client kubernetes.Interface) error {
	err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, w.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("harness: delete webhook configuration %s: %w", w.Name, err)
	}
	return nil
}

// DryRunEvict asks for a dry-run eviction of pod namespace/name (?dryRun=All) and returns the
// API server's answer.
func DryRunEvict(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	return client.PolicyV1().Evictions(namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}},
	})
}

// WaitDryRunEviction asks for a dry-run eviction of namespace/name every 200 ms until answered
// says its answer is the one awaited (a configuration just installed is active within
// milliseconds; the guard behind it may still be starting), at most timeout. It returns the last
// answer with the error.
func WaitDryRunEviction(ctx context.Context, client kubernetes.Interface, namespace, name string, timeout time.Duration, answered func(error) bool) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = DryRunEvict(ctx, client, namespace, name)
		return answered(last), nil
	})
	if err != nil {
		return fmt.Errorf("harness: dry-run eviction of %s/%s: not the answer awaited after %s (last: %v)", namespace, name, timeout, last)
	}
	return nil
}

// Proxy is a TCP proxy on the loopback address that forwards each connection to the first of its
// backends that accepts one: a Service in front of several replicas of serve, as kube-proxy
// gives one in a cluster (kube-apiserver posts to one URL; a replica that dies is skipped).
type Proxy struct {
	l     net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	back  []string
	conns map[net.Conn]bool
}

// StartProxy listens on 127.0.0.1 (a free port) and forwards to backends. Close it.
func StartProxy(backends ...string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("harness: proxy: %w", err)
	}
	p := &Proxy{l: l, back: backends, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr returns the proxy's address.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// SetBackends replaces the backends.
func (p *Proxy) SetBackends(backends ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.back = backends
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(c)
		}()
	}
}

// track remembers c until its forwarding ends (Close closes every connection still open).
func (p *Proxy) track(c net.Conn, open bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if open {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	p.track(c, true)
	defer p.track(c, false)
	defer c.Close()
	p.mu.Lock()
	back := append([]string(nil), p.back...)
	p.mu.Unlock()
	var b net.Conn
	for _, addr := range back {
		var err error
		if b, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			break
		}
	}
	if b == nil {
		return
	}
	p.track(b, true)
	defer p.track(b, false)
	defer b.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(b, c)
	go cp(c, b)
	<-done
	<-done
}

// Close stops the proxy, closes the connections it forwards and waits for them to end.
func (p *Proxy) Close() error {
	err := p.l.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
