package redisctl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// Defaults used when the matching Options or HealthOptions field is zero: the policy's
// (api/v1alpha1, where each is explained), but DefaultMaxConcurrentReads.
const (
	// DefaultPort is the Redis client port of a pod (Options.Port).
	DefaultPort = v1alpha1.DefaultRedisPort
	// DefaultDialTimeout bounds opening one TCP (and TLS) connection to a node.
	DefaultDialTimeout = v1alpha1.DefaultDialTimeout
	// DefaultReadTimeout bounds waiting for one reply.
	DefaultReadTimeout = v1alpha1.DefaultReadTimeout
	// DefaultWriteTimeout bounds writing one command.
	DefaultWriteTimeout = v1alpha1.DefaultWriteTimeout
	// DefaultMaxLagBytes is the largest replication offset lag, in bytes, at which a replica is
	// still in sync: its master's master_repl_offset minus its own slave_repl_offset
	// (both from INFO replication).
	DefaultMaxLagBytes = v1alpha1.DefaultMaxLagBytes
	// DefaultMaxLastIOSeconds is the largest master_last_io_seconds_ago (INFO replication, on the
	// replica) at which a replica is still in sync.
	DefaultMaxLastIOSeconds = v1alpha1.DefaultMaxLastIOSeconds
	// DefaultMaxConcurrentReads is the number of nodes one Client reads at a time, over all
	// callers (Options.MaxConcurrentReads).
	DefaultMaxConcurrentReads = 512
)

// Options says how to reach and authenticate to the nodes of one Redis cluster. The zero value
// talks plain TCP without AUTH to port 6379, with the default timeouts.
//
// Credentials come from exactly one place each: Password, else PasswordFile, else PasswordEnv
// (same for Username). In Kubernetes they usually come from a Secret, mounted as a file or
// exposed as an environment variable. Options never prints its password: String and GoString
// redact it, and no error or log line of this package contains it.
type Options struct {
	// Port is the client port used by AddrOf for pod IPs; DefaultPort (6379) when 0.
	Port int

	// Username is the ACL user (Redis 6 and later, AUTH username password). Empty means the
	// "default" user (AUTH password only).
	Username string
	// UsernameFile is a file holding the ACL user (surrounding white space trimmed).
	UsernameFile string
	// UsernameEnv is an environment variable holding the ACL user.
	UsernameEnv string

	// Password is the password of Username, or of requirepass when Username is empty.
	Password string
	// PasswordFile is a file holding the password (trailing newline trimmed), for example a
	// mounted Secret key. Read once, by New.
	PasswordFile string
	// PasswordEnv is an environment variable holding the password. Read once, by New.
	PasswordEnv string

	// TLS, when not nil, makes every connection use TLS (Redis tls-port).
	TLS *TLSOptions

	// DialTimeout bounds opening a connection (TCP connect plus TLS handshake);
	// DefaultDialTimeout when 0.
	DialTimeout time.Duration
	// ReadTimeout bounds waiting for a reply; DefaultReadTimeout when 0.
	ReadTimeout time.Duration
	// WriteTimeout bounds sending a command; DefaultWriteTimeout when 0.
	WriteTimeout time.Duration

	// MaxLagBytes is the client-wide "in sync" lag limit in bytes used by ChooseReplica, Failover,
	// WaitRejoin and, when HealthOptions leaves it 0, CheckHealth; DefaultMaxLagBytes when 0.
	MaxLagBytes int64
	// MaxLastIOSeconds is the client-wide "in sync" limit on master_last_io_seconds_ago, used like
	// MaxLagBytes; DefaultMaxLastIOSeconds when 0.
	MaxLastIOSeconds int

	// MaxConcurrentReads bounds the nodes whose views (Topology, CheckHealth) are read at once,
	// over every goroutine using the Client, so that reading many clusters at once opens a
	// bounded number of connections; DefaultMaxConcurrentReads when 0.
	MaxConcurrentReads int
}

// TLSOptions configures TLS to the nodes. Server certificates are verified unless
// InsecureSkipVerify is set.
type TLSOptions struct {
	// CAFile is a PEM file of the CA certificates that sign the nodes' certificates. The
	// system roots are used when empty.
	CAFile string
	// CertFile and KeyFile are an optional PEM client certificate and key, needed when the
	// nodes run with tls-auth-clients yes (the Redis default).
	CertFile string
	KeyFile  string
	// ServerName is the name checked against the nodes' certificates. When empty, each node's
	// own host (its pod IP) is checked, so certificates need IP SANs (or set a shared DNS name
	// here).
	ServerName string
	// InsecureSkipVerify turns off certificate verification. Tests only.
	InsecureSkipVerify bool
}

// String describes o with the password redacted.
func (o Options) String() string {
	pw := ""
	if o.Password != "" {
		pw = "<redacted>"
	}
	tlsOn := o.TLS != nil
	return fmt.Sprintf("redisctl.Options{Port:%d Username:%q UsernameFile:%q UsernameEnv:%q Password:%q PasswordFile:%q PasswordEnv:%q TLS:%t DialTimeout:%s ReadTimeout:%s WriteTimeout:%s MaxLagBytes:%d MaxLastIOSeconds:%d}",
		o.Port, o.Username, o.UsernameFile, o.UsernameEnv, pw, o.PasswordFile, o.PasswordEnv, tlsOn,
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxLagBytes, o.MaxLastIOSeconds)
}

// GoString is String, so that %#v redacts the password too.
func (o Options) GoString() string { return o.String() }

// AddrOf returns "ip:port" for a node's IP (a pod IP), with Options.Port.
func (o Options) AddrOf(ip string) string { return net.JoinHostPort(ip, strconv.Itoa(o.port())) }

// port returns Options.Port, DefaultPort when 0.
func (o Options) port() int {
	if o.Port == 0 {
		return DefaultPort
	}
	return o.Port
}

// resolved holds Options with credentials read and defaults applied.
type resolved struct {
	Options
	tlsConfig *tls.Config
}

func (o Options) resolve() (resolved, error) {
	r := resolved{Options: o}
	if r.Port == 0 {
		r.Port = DefaultPort
	}
	if r.DialTimeout == 0 {
		r.DialTimeout = DefaultDialTimeout
	}
	if r.ReadTimeout == 0 {
		r.ReadTimeout = DefaultReadTimeout
	}
	if r.WriteTimeout == 0 {
		r.WriteTimeout = DefaultWriteTimeout
	}
	if r.MaxLagBytes == 0 {
		r.MaxLagBytes = DefaultMaxLagBytes
	}
	if r.MaxLastIOSeconds == 0 {
		r.MaxLastIOSeconds = DefaultMaxLastIOSeconds
	}
	if r.MaxConcurrentReads <= 0 {
		r.MaxConcurrentReads = DefaultMaxConcurrentReads
	}
	var err error
	if r.Username, err = credential("username", o.Username, o.UsernameFile, o.UsernameEnv, true); err != nil {
		return r, err
	}
	if r.Password, err = credential("password", o.Password, o.PasswordFile, o.PasswordEnv, false); err != nil {
		return r, err
	}
	if o.TLS != nil {
		if r.tlsConfig, err = o.TLS.config(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// credential returns value, else the content of file, else the value of env. Errors name the
// file or variable, never the content.
func credential(what, value, file, env string, trimAll bool) (string, error) {
	if value != "" {
		return value, nil
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is already in our message
			}
			return "", fmt.Errorf("redisctl: read %s file %s: %w", what, file, err)
		}
		s := string(b)
		if trimAll {
			s = strings.TrimSpace(s)
		} else {
			s = strings.TrimRight(s, "\r\n")
		}
		if s == "" {
			return "", fmt.Errorf("redisctl: %s file %s is empty", what, file)
		}
		return s, nil
	}
	if env != "" {
		s, ok := os.LookupEnv(env)
		if !ok || s == "" {
			return "", fmt.Errorf("redisctl: %s environment variable %s is not set", what, env)
		}
		return s, nil
	}
	return "", nil
}

func (t *TLSOptions) config() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // explicit opt-in, tests only
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redisctl: read TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redisctl: TLS CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, fmt.Errorf("redisctl: TLS client certificate needs both CertFile and KeyFile")
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("redisctl: load TLS client certificate %s: %w", t.CertFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// tlsForAddr returns the TLS config for one node: ServerName defaults to the node's host so that
// certificates with IP SANs verify.
func (r resolved) tlsForAddr(addr string) *tls.Config {
	if r.tlsConfig == nil {
		return nil
	}
	cfg := r.tlsConfig.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	return cfg
}
