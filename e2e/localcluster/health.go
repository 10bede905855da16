package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Waiting for the components: health probes, polls that stop when a component exits, and the
// default ServiceAccount that pods need.

const (
	pollInterval = 100 * time.Millisecond
	probeTimeout = 2 * time.Second
)

// waitHealthy polls probe until it succeeds, the component exits, or ctx ends, and prints how
// long the component took to become healthy since it started.
func (c *Cluster) waitHealthy(ctx context.Context, comp *component, probe func(context.Context) error) error {
	var last error
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		last = probe(pctx)
		return last == nil, nil
	})
	var exited *exitError
	switch {
	case errors.As(err, &exited):
		return err
	case err != nil:
		return fmt.Errorf("localcluster: %s: not healthy after %v: %w (last probe: %v); end of %s:\n%s",
			comp.name, roundDuration(time.Since(comp.started)), err, last, comp.logPath, comp.proc.LogTail(logTailBytes))
	}
	fmt.Fprintf(c.cfg.Log, "localcluster: %s ready in %v\n", comp.name, roundDuration(time.Since(comp.started)))
	return nil
}

// poll runs cond every pollInterval until it returns true or an error, a component exits, or
// ctx ends.
func (c *Cluster) poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	timeout := DefaultStartTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	return wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
}

// apiserverReady probes the apiserver's /readyz with the admin credentials.
func (c *Cluster) apiserverReady(ctx context.Context) error {
	body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %w: %s", err, body)
	}
	return nil
}

// waitServiceAccount waits until the default ServiceAccount of namespace exists.
func (c *Cluster) waitServiceAccount(ctx context.Context, namespace string) error {
	began := time.Now()
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		default:
			return false, nil // transient; retried until the deadline
		}
	})
	if err != nil {
		return fmt.Errorf("localcluster: namespace %s: no default ServiceAccount after %v (kube-controller-manager log: %s): %w",
			namespace, roundDuration(time.Since(began)), c.logPath("kube-controller-manager"), err)
	}
	return nil
}

// httpProbe returns a probe that GETs url (TLS without verification: health endpoints only) and
// wants status 200 and, when want is not empty, a body containing want.
func httpProbe(url, want string) func(context.Context) error {
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
		DisableKeepAlives: true,
	}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}

// roundDuration rounds d for progress lines.
func roundDuration(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
