package redisctl_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis/v8"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/proc"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// lockedBuffer collects log output from several goroutines; it is go-redis' logger too.
type lockedBuffer struct{ proc.Buffer }

func (l *lockedBuffer) Printf(_ context.Context, format string, v ...interface{}) {
	fmt.Fprintf(l, "redis: "+format+"\n", v...)
}

// captureLogs sends klog (at -v=10) and go-redis' logger to a buffer until the test ends.
func captureLogs(t *testing.T) *lockedBuffer {
	buf := &lockedBuffer{}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"v": "10", "logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	klog.SetOutput(buf)
	redis.SetLogger(buf)
	t.Cleanup(func() {
		klog.Flush()
		_ = fs.Set("v", "0")
		_ = fs.Set("logtostderr", "true")
		klog.SetOutput(os.Stderr)
	})
	return buf
}

type badOptions struct {
	name    string
	opts    redisctl.Options
	wantAny []string // the error mentions one of these
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestAuthAndTLS runs the health gate, a verified failover and a cluster client against clusters
// that require AUTH or TLS, checks that wrong credentials or certificates are reported as
// unreachable nodes with a clear reason, and that no password ever shows in an error, a log
// line (klog at -v=10, go-redis' logger) or a printed Options.
func TestAuthAndTLS(t *testing.T) {
	ctx := context.Background()
	logs := captureLogs(t)
	const (
		pwFile = "s3cr3t-File-Pw-4711"
		pwEnv  = "s3cr3t-Env-Pw-0815"
		pwTLS  = "s3cr3t-Tls-Pw-2342"
	)
	secrets := []string{pwFile, pwEnv, pwTLS}
	var texts []string // every error and printed Options, checked for secrets at the end

	tests := []struct {
		name    string
		cluster redistest.Config
		// good returns working Options; bad returns wrong ones with the text their error must contain.
		good func(t *testing.T, c *redistest.Cluster) redisctl.Options
		bad  func(t *testing.T, c *redistest.Cluster) []badOptions
	}{
		{
			name:    "requirepass, password read from a file: gate, failover and cluster client work; wrong or no password refused",
			cluster: redistest.Config{Password: pwFile},
			good: func(t *testing.T, c *redistest.Cluster) redisctl.Options {
				f := filepath.Join(t.TempDir(), "password")
				if err := os.WriteFile(f, []byte(pwFile+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return redisctl.Options{PasswordFile: f}
			},
			bad: func(t *testing.T, c *redistest.Cluster) []badOptions {
				return []badOptions{
					{"wrong password", redisctl.Options{Password: pwFile + "-wrong"}, []string{"WRONGPASS"}},
					{"no password", redisctl.Options{}, []string{"NOAUTH"}},
				}
			},
		},
		{
			name:    "ACL user, user and password from environment variables: gate, failover and cluster client work; default user refused",
			cluster: redistest.Config{Username: "rebalancer", Password: pwEnv},
			good: func(t *testing.T, c *redistest.Cluster) redisctl.Options {
				t.Setenv("TEST_REDIS_USER", "rebalancer")
				t.Setenv("TEST_REDIS_PASSWORD", pwEnv)
				return redisctl.Options{UsernameEnv: "TEST_REDIS_USER", PasswordEnv: "TEST_REDIS_PASSWORD"}
			},
			bad: func(t *testing.T, c *redistest.Cluster) []badOptions {
				return []badOptions{
					{"the user's password for the disabled default user", redisctl.Options{Password: pwEnv}, []string{"WRONGPASS"}},
				}
			},
		},
		{
			name:    "TLS with client certificate and password: gate, failover and cluster client work; unknown CA and missing client certificate refused",
			cluster: redistest.Config{TLS: true, Password: pwTLS},
			good: func(t *testing.T, c *redistest.Cluster) redisctl.Options {
				return redisctl.Options{Password: pwTLS, TLS: &redisctl.TLSOptions{CAFile: c.TLS.CA, CertFile: c.TLS.ClientCert, KeyFile: c.TLS.ClientKey}}
			},
			bad: func(t *testing.T, c *redistest.Cluster) []badOptions {
				other, err := redistest.WriteTLSFiles(filepath.Join(t.TempDir(), "other"), c.Subnet)
				if err != nil {
					t.Fatal(err)
				}
				return []badOptions{
					{"servers' certificates checked against another CA",
						redisctl.Options{Password: pwTLS, TLS: &redisctl.TLSOptions{CAFile: other.CA, CertFile: c.TLS.ClientCert, KeyFile: c.TLS.ClientKey}},
						[]string{"certificate signed by unknown authority"}},
					// Redis drops the connection after the handshake (TLS 1.3 reports it on first use).
					{"no client certificate", redisctl.Options{Password: pwTLS, TLS: &redisctl.TLSOptions{CAFile: c.TLS.CA}},
						[]string{"certificate required", "EOF", "connection reset by peer"}},
					{"plain TCP to the TLS port", redisctl.Options{Password: pwTLS}, []string{"EOF", "connection reset by peer"}},
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := redistest.Start(t, tc.cluster)
			opts := tc.good(t, c)
			opts.ReadTimeout = 2 * time.Second
			texts = append(texts, fmt.Sprintf("%v|%+v|%#v|%v|%s", opts, opts, opts, &opts, opts))
			cl, err := redisctl.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			h, err := cl.CheckHealth(ctx, c.Addrs(), redisctl.HealthOptions{})
			if err != nil {
				t.Fatalf("CheckHealth: %v", err)
			}
			m := h.Topology.Masters()[0]
			r, err := cl.ChooseReplica(ctx, h.Topology, m.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cl.Failover(ctx, r.Addr(), redisctl.FailoverOptions{Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("failover verified in %s", res.Duration)
			cc, err := redisctl.NewClusterClient(opts, c.Addrs())
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			for i := 0; i < 50; i++ {
				k := fmt.Sprintf("auth:%d", i)
				if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
					t.Fatalf("cluster client SET: %v", err)
				}
				if v, err := cc.Get(ctx, k).Int(); err != nil || v != i {
					t.Fatalf("cluster client GET %s = %d, %v", k, v, err)
				}
			}

			for _, b := range tc.bad(t, c) {
				bad := b.opts
				bad.ReadTimeout, bad.DialTimeout = time.Second, time.Second
				texts = append(texts, fmt.Sprintf("%v|%+v|%#v", bad, bad, bad))
				bcl, err := redisctl.New(bad)
				if err != nil {
					t.Fatal(err)
				}
				_, err = bcl.CheckHealth(ctx, c.Addrs(), redisctl.HealthOptions{})
				bcl.Close()
				var he *redisctl.HealthError
				if !errors.As(err, &he) || !he.Has(redisctl.ReasonNodeUnreachable) || !containsAny(err.Error(), b.wantAny) {
					t.Errorf("CheckHealth with %s: %v, want node_unreachable reasons mentioning one of %q", b.name, err, b.wantAny)
				} else {
					t.Logf("with %s: %s", b.name, he.Reasons[0])
				}
				texts = append(texts, err.Error())
				bcc, err := redisctl.NewClusterClient(bad, c.Addrs())
				if err != nil {
					t.Fatal(err)
				}
				err = bcc.Set(ctx, "auth:x", 1, 0).Err()
				bcc.Close()
				if err == nil {
					t.Errorf("cluster client with wrong credentials could write")
				} else {
					texts = append(texts, err.Error())
				}
			}
			// Errors that name the credential sources, not their contents.
			for _, o := range []redisctl.Options{{PasswordFile: "/nonexistent/password"}, {PasswordEnv: "TEST_REDIS_UNSET_VARIABLE"}} {
				_, err := redisctl.New(o)
				if err == nil {
					t.Errorf("New(%v) succeeded", o)
					continue
				}
				texts = append(texts, err.Error())
			}
		})
	}
	klog.Flush()
	texts = append(texts, logs.String())
	if !strings.Contains(logs.String(), "Failover verified") {
		t.Errorf("klog output at -v=10 lacks the failover lines; capture broken? %q", logs.String())
	}
	for _, s := range secrets {
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				t.Errorf("secret %q appears in %q", s, txt)
			}
		}
	}
	t.Logf("checked %d errors, printed options and %d bytes of logs: no password", len(texts)-1, len(logs.String()))
}
