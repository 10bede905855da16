// Package redisserver runs real redis-server processes (Debian's package) in cluster mode for
// tests, the e2e Redis pod runtime and the demo. Each server binds to and announces one IP, keeps
// nodes.conf and its append-only file in its own directory, and never outlives its parent process.
package redisserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/test/proc"
)

// DefaultPort is the Redis port every server listens on unless Config.Port says otherwise.
const DefaultPort = 6379

// Config describes one redis-server. IP and Dir are required.
type Config struct {
	// Bin is the redis-server executable; "redis-server" on PATH when empty.
	Bin string
	// IP is the address the server binds to and announces to the cluster (a pod IP, 127.x.y.z).
	IP string
	// AnnounceIP, when set, is announced instead of IP (cluster-announce-ip), as a node exposed
	// through its own LoadBalancer Service announces the LoadBalancer's IP (the Bitnami chart's
	// cluster.externalAccess). The server binds it too, standing in for the LoadBalancer that
	// forwards it to the pod.
	AnnounceIP string
	// Port is the client port (DefaultPort when 0); the cluster bus is Port+10000.
	Port int
	// Dir holds nodes.conf, the append-only files and the log; created when missing. Reusing a
	// Dir keeps the node's cluster identity, as a PVC does.
	Dir string
	// Standalone disables cluster mode (cluster-enabled no).
	Standalone bool
	// NodeTimeout is cluster-node-timeout (2 s when 0).
	NodeTimeout time.Duration
	// ExtraArgs are appended to the command line, e.g. {"--requirepass", "x"} or TLS options.
	ExtraArgs []string
	// StartTimeout bounds the wait for the server to accept connections (10 s when 0).
	StartTimeout time.Duration
}

// Server is a running redis-server.
type Server struct {
	cfg  Config
	proc *proc.Process
}

// Addr returns "IP:Port".
func (s *Server) Addr() string { return net.JoinHostPort(s.cfg.IP, strconv.Itoa(s.cfg.Port)) }

// Dir returns the server's data directory.
func (s *Server) Dir() string { return s.cfg.Dir }

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.proc.Pid() }

// Done is closed when the server process has exited.
func (s *Server) Done() <-chan struct{} { return s.proc.Done() }

// Stop shuts the server down with SIGTERM (Redis then fsyncs its append-only file), and kills it
// if it has not exited after 10 s. Safe to call more than once.
func (s *Server) Stop() { s.proc.Stop(10 * time.Second) }

// StopWithin shuts the server down with SIGTERM and kills it (SIGKILL) if it has not exited
// after grace, as the kubelet stops a container within its pod's termination grace period. Safe
// to call more than once (the first call's grace holds).
func (s *Server) StopWithin(grace time.Duration) { s.proc.Stop(grace) }

// Kill kills the server with SIGKILL, as a node crash would.
func (s *Server) Kill() { s.proc.Kill() }

// LogTail returns the end of the server's log, for error messages.
func (s *Server) LogTail() string { return s.proc.LogTail(2048) }

// Start starts a redis-server for cfg and waits until it accepts TCP connections on its address.
// It returns an error (with the end of the server's log) when the server exits or does not listen
// within StartTimeout.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.IP == "" || cfg.Dir == "" {
		return nil, fmt.Errorf("redisserver: IP and Dir are required")
	}
	if cfg.Bin == "" {
		cfg.Bin = "redis-server"
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 2 * time.Second
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 10 * time.Second
	}
	bin, err := exec.LookPath(cfg.Bin)
	if err != nil {
		return nil, fmt.Errorf("redisserver: %w (install Debian's redis-server: apt-get install -y redis-server)", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("redisserver: data dir: %w", err)
	}
	bind, announce := cfg.IP, cfg.IP
	if cfg.AnnounceIP != "" && cfg.AnnounceIP != cfg.IP {
		bind, announce = cfg.IP+" "+cfg.AnnounceIP, cfg.AnnounceIP
	}
	args := []string{
		"--bind", bind,
		"--port", strconv.Itoa(cfg.Port),
		"--dir", cfg.Dir,
		"--daemonize", "no",
		"--save", "",
		"--appendonly", "yes",
		"--appendfsync", "everysec",
		"--protected-mode", "no",
		"--logfile", "",
	}
	if !cfg.Standalone {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(cfg.NodeTimeout.Milliseconds(), 10),
			"--cluster-announce-ip", announce,
			"--cluster-require-full-coverage", "yes",
		)
	}
	args = append(args, cfg.ExtraArgs...)
	p, err := proc.Start(proc.Spec{
		Name:    "redis-server " + cfg.IP,
		Path:    bin,
		Args:    args,
		Dir:     cfg.Dir,
		LogPath: filepath.Join(cfg.Dir, "redis.log"),
	})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, proc: p}
	addr := s.Addr()
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, cfg.StartTimeout, true, func(ctx context.Context) (bool, error) {
		if exited, werr := p.Exited(); exited {
			return false, fmt.Errorf("exited: %v", werr)
		}
		c, derr := (&net.Dialer{Timeout: 200 * time.Millisecond}).DialContext(ctx, "tcp", addr)
		if derr != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("redisserver: %s did not start: %w; log:\n%s", addr, err, s.LogTail())
	}
	return s, nil
}
