// Package redistest is the Redis side of the test-support layer. It starts real Redis Clusters
// (Debian's redis-server, through test/redisserver) on loopback for the tests of redisctl and
// of other packages: K shards × R pods, each pod a redis-server on its own 127.x.y.z IP with its
// own data directory, formed deterministically and stopped when the test ends. It owns the
// test-only Redis Cluster forming (FormCluster, AddReplica, WaitFormed, SlotShares) that the e2e
// harness also uses, a write-load Writer, the TLS files of a test PKI (through test/pki), and
// a Redis that accepts connections and never answers (StartHanging).
//
// It may import redisctl, test/redisserver, test/pki, go-redis and apimachinery's wait;
// redisctl's own tests reach it from the external test package redisctl_test.
package redistest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis/v8"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redisserver"
)

// Config describes a test cluster. The zero value is 3 shards × 2 pods, no AUTH, no TLS.
type Config struct {
	// Shards is K, the number of shards (masters); 3 when 0.
	Shards int
	// PodsPerShard is R, the pods of each shard: one master and R-1 replicas; 2 when 0.
	PodsPerShard int
	// Password turns on AUTH: requirepass (and masterauth) for the default user, or, with
	// Username, the password of that ACL user.
	Password string
	// Username, with Password, creates an ACL user allowed everything, turns the default user
	// off, and makes replicas authenticate as that user (masteruser).
	Username string
	// TLS serves clients, the cluster bus and replication over TLS only, with client
	// certificates required (tls-auth-clients yes). Certificates are made by WriteTLSFiles.
	TLS bool
	// NodeTimeout is cluster-node-timeout; 2 s when 0.
	NodeTimeout time.Duration
	// ExtraArgs are added to every redis-server's command line.
	ExtraArgs []string
	// FormTimeout bounds forming the cluster; 60 s when 0.
	FormTimeout time.Duration
	// NoForm skips forming: the servers are only started (each a lone master without slots).
	NoForm bool
	// AnnounceLoadBalancer makes every pod announce a LoadBalancer stand-in IP of its own
	// (Pod.AnnounceIP, the subnet's .101 upward, kept across restarts) instead of its pod IP, as
	// the Bitnami chart's cluster.externalAccess does.
	AnnounceLoadBalancer bool
}

// Pod is one redis-server of a test cluster, named like a StatefulSet pod: shard-<K>-<i>, i = 0
// being the pod created as master.
type Pod struct {
	Shard, Index int
	// IP is the pod's current IP; Dir its data directory (kept across restarts, like a PVC).
	IP  string
	Dir string
	// AnnounceIP is the IP the pod announces when Config.AnnounceLoadBalancer is set ("" when
	// it announces IP).
	AnnounceIP string

	c      *Cluster
	mu     sync.Mutex
	server *redisserver.Server
}

// Name returns "shard-K-i".
func (p *Pod) Name() string { return fmt.Sprintf("shard-%d-%d", p.Shard, p.Index) }

// Addr returns "IP:6379".
func (p *Pod) Addr() string { return net.JoinHostPort(p.IP, strconv.Itoa(redisctl.DefaultPort)) }

// Server returns the running server, nil when stopped.
func (p *Pod) Server() *redisserver.Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.server
}

// Cluster is a running test cluster.
type Cluster struct {
	// Config is the configuration, defaults applied.
	Config Config
	// Options reach the nodes: credentials and TLS files set as configured.
	Options redisctl.Options
	// Client is a redisctl client with Options, closed at cleanup.
	Client *redisctl.Client
	// Shards[k][i] is pod i of shard k.
	Shards [][]*Pod
	// TLS are the certificate files when Config.TLS is set.
	TLS *TLSFiles
	// Subnet is the cluster's "127.a.b" prefix; pods use .1 upward, restarts on a new IP .200
	// upward.
	Subnet string

	tb     testing.TB
	mu     sync.Mutex
	nextIP int
	all    []*redisserver.Server
}

// Start starts Config.Shards × Config.PodsPerShard redis-servers and, unless NoForm, forms the
// cluster with FormCluster: masters first, each with its contiguous share of the slots,
// then every replica joined with CLUSTER MEET and CLUSTER REPLICATE; it returns once
// cluster_state is ok and every replica is in sync. Every server is stopped at the end of the
// test (t.Cleanup), even when Start fails; failures end the test (t.Fatal).
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.Shards == 0 {
		cfg.Shards = 3
	}
	if cfg.PodsPerShard == 0 {
		cfg.PodsPerShard = 2
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 2 * time.Second
	}
	if cfg.FormTimeout == 0 {
		cfg.FormTimeout = 60 * time.Second
	}
	c := &Cluster{Config: cfg, tb: t, nextIP: 200}
	c.Subnet = allocSubnet(t)
	// The test's temporary directory is made before the servers' stop is registered: cleanups run
	// last-registered first, so the servers stop before their data directories are removed (a
	// server still rewriting its AOF made the removal fail).
	root := t.TempDir()
	t.Cleanup(c.stopAll)
	c.Options = redisctl.Options{
		Username:    cfg.Username,
		Password:    cfg.Password,
		DialTimeout: 2 * time.Second,
		ReadTimeout: 3 * time.Second,
	}
	if cfg.TLS {
		f, err := WriteTLSFiles(filepath.Join(t.TempDir(), "tls"), c.Subnet)
		if err != nil {
			t.Fatalf("redistest: TLS files: %v", err)
		}
		c.TLS = f
		c.Options.TLS = &redisctl.TLSOptions{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey}
	}
	cl, err := redisctl.New(c.Options)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	c.Client = cl
	t.Cleanup(func() { _ = cl.Close() })

	host := 1
	for k := 0; k < cfg.Shards; k++ {
		var shard []*Pod
		for i := 0; i < cfg.PodsPerShard; i++ {
			p := &Pod{Shard: k, Index: i, c: c, IP: fmt.Sprintf("%s.%d", c.Subnet, host)}
			if cfg.AnnounceLoadBalancer {
				p.AnnounceIP = fmt.Sprintf("%s.%d", c.Subnet, 100+host)
			}
			p.Dir = filepath.Join(root, p.Name())
			shard = append(shard, p)
			host++
		}
		c.Shards = append(c.Shards, shard)
	}
	pods := c.Pods()
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.start()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
	if cfg.NoForm {
		return c
	}
	var layout [][]string
	for _, s := range c.Shards {
		var addrs []string
		for _, p := range s {
			addrs = append(addrs, p.Addr())
		}
		layout = append(layout, addrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.FormTimeout)
	defer cancel()
	if _, err := FormCluster(ctx, cl, layout, cfg.FormTimeout); err != nil {
		t.Fatalf("redistest: form %d×%d cluster on %s.x: %v", cfg.Shards, cfg.PodsPerShard, c.Subnet, err)
	}
	return c
}

// Args returns the redis-server arguments for a node at ip: AUTH, TLS and test-friendly
// replication settings, then Config.ExtraArgs.
func (c *Cluster) Args(ip string) []string {
	cfg := c.Config
	args := []string{
		// Full syncs start at once instead of after the 5 s diskless-sync delay.
		"--repl-diskless-sync-delay", "0",
		// All pods connect from 127.0.0.1 on loopback; announce the pod IP as a pod would have.
		"--replica-announce-ip", ip,
	}
	switch {
	case cfg.Username != "":
		args = append(args,
			"--user", cfg.Username, "on", ">"+cfg.Password, "~*", "&*", "+@all",
			"--user", "default", "off",
			"--masteruser", cfg.Username, "--masterauth", cfg.Password)
	case cfg.Password != "":
		args = append(args, "--requirepass", cfg.Password, "--masterauth", cfg.Password)
	}
	if c.TLS != nil {
		args = append(args,
			"--port", "0", "--tls-port", strconv.Itoa(redisctl.DefaultPort),
			"--tls-cert-file", c.TLS.ServerCert, "--tls-key-file", c.TLS.ServerKey,
			"--tls-ca-cert-file", c.TLS.CA,
			"--tls-cluster", "yes", "--tls-replication", "yes", "--tls-auth-clients", "yes")
	}
	return append(args, cfg.ExtraArgs...)
}

func (p *Pod) start() error {
	s, err := redisserver.Start(context.Background(), redisserver.Config{
		IP:          p.IP,
		AnnounceIP:  p.AnnounceIP,
		Dir:         p.Dir,
		NodeTimeout: p.c.Config.NodeTimeout,
		ExtraArgs:   p.c.Args(p.IP),
	})
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	p.mu.Lock()
	p.server = s
	p.mu.Unlock()
	p.c.mu.Lock()
	p.c.all = append(p.c.all, s)
	p.c.mu.Unlock()
	return nil
}

// ClusterClient returns a cluster-aware go-redis client (redisctl.NewClusterClient) seeded with
// every pod's address and the cluster's Options, closed when the test ends. It ends the test
// (t.Fatal) when the client cannot be made.
func (c *Cluster) ClusterClient() *redis.ClusterClient {
	c.tb.Helper()
	cc, err := redisctl.NewClusterClient(c.Options, c.Addrs())
	if err != nil {
		c.tb.Fatalf("redistest: cluster client: %v", err)
	}
	c.tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Pods returns every pod, shard by shard.
func (c *Cluster) Pods() []*Pod {
	var out []*Pod
	for _, s := range c.Shards {
		out = append(out, s...)
	}
	return out
}

// Addrs returns the current address of every pod.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, p := range c.Pods() {
		out = append(out, p.Addr())
	}
	return out
}

// Pod returns the pod at addr, or nil.
func (c *Cluster) Pod(addr string) *Pod {
	for _, p := range c.Pods() {
		if p.Addr() == addr {
			return p
		}
	}
	return nil
}

// NewIP returns an unused IP of the cluster's subnet, for a pod restarted elsewhere.
func (c *Cluster) NewIP() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nextIP > 254 {
		c.tb.Fatalf("redistest: subnet %s.x has no IP left", c.Subnet)
	}
	ip := fmt.Sprintf("%s.%d", c.Subnet, c.nextIP)
	c.nextIP++
	return ip
}

// AddPod starts a new, fresh redis-server for shard on a new IP with its own data directory and
// appends it to Shards[shard], without joining it to the cluster (see AddReplica).
func (c *Cluster) AddPod(shard int) (*Pod, error) {
	p := &Pod{Shard: shard, Index: len(c.Shards[shard]), c: c, IP: c.NewIP()}
	p.Dir = filepath.Join(c.tb.TempDir(), p.Name())
	if err := p.start(); err != nil {
		return nil, err
	}
	c.Shards[shard] = append(c.Shards[shard], p)
	return p, nil
}

// Stop stops the pod's server with SIGTERM (as a pod deletion does).
func (p *Pod) Stop() {
	if s := p.Server(); s != nil {
		s.Stop()
		p.mu.Lock()
		p.server = nil
		p.mu.Unlock()
	}
}

// Kill kills the pod's server with SIGKILL (a crash).
func (p *Pod) Kill() {
	if s := p.Server(); s != nil {
		s.Kill()
		p.mu.Lock()
		p.server = nil
		p.mu.Unlock()
	}
}

// Restart stops the pod if it runs and starts it again with the same data directory (so the
// same node ID), on ip when not empty (a pod rescheduled to another node gets a new IP).
func (p *Pod) Restart(ip string) error {
	p.Stop()
	if ip != "" {
		p.IP = ip
	}
	return p.start()
}

// Start starts a stopped pod again on its current IP.
func (p *Pod) Start() error {
	if p.Server() != nil {
		return nil
	}
	return p.start()
}

func (c *Cluster) stopAll() {
	c.mu.Lock()
	all := append([]*redisserver.Server(nil), c.all...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Stop()
		}()
	}
	wg.Wait()
}

var (
	subnetMu   sync.Mutex
	subnetBase = 100 + rand.IntN(150) // second octet, random per process to avoid other test processes
	subnetNext = 0
)

// allocSubnet returns a "127.a.b" prefix no other cluster of this process uses and whose .1
// address is free on port 6379 (a rough check against other processes).
func allocSubnet(t testing.TB) string {
	subnetMu.Lock()
	defer subnetMu.Unlock()
	for tries := 0; tries < 1000; tries++ {
		a := subnetBase + subnetNext/250
		b := 1 + subnetNext%250
		subnetNext++
		if a > 254 {
			subnetBase, subnetNext = 100, 0
			continue
		}
		prefix := fmt.Sprintf("127.%d.%d", a, b)
		l, err := net.Listen("tcp", prefix+".1:"+strconv.Itoa(redisctl.DefaultPort))
		if err != nil {
			continue
		}
		l.Close()
		return prefix
	}
	t.Fatalf("redistest: no free 127.x.y.0/24 subnet")
	return ""
}
