package redisctl

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-redis/redis/v8"
)

// NewClusterClient returns a go-redis v8 cluster-aware client for the cluster that seeds belong
// to, working with Redis 6 and 7.
//
// go-redis v8.11.5 builds its slot map from CLUSTER SLOTS, and rejects Redis 7's reply (a fourth,
// metadata element per node: "got 4 elements in cluster info address, expected 2 or 3"). This
// client sets ClusterOptions.ClusterSlots to a function that builds the map from CLUSTER NODES
// instead: each master's slot ranges, the master first, then its replicas not flagged
// fail/fail?. It asks the nodes of the last map it built, then the seeds, and uses the first view
// that answers, so the client follows nodes that move to new IPs as long as one known node
// remains. After a topology change, call ReloadState (asynchronous) so that the client does not
// keep routing to an old address. Username, password, TLS and timeouts come from opts; errors
// reading them are returned. Each of tune, in order, may then change the go-redis options (its
// retries: MaxRedirects, MinRetryBackoff, MaxRetryBackoff; see FailoverRetryRedirects).
func NewClusterClient(opts Options, seeds []string, tune ...func(*redis.ClusterOptions)) (*redis.ClusterClient, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("redisctl: cluster client: no seed address")
	}
	src := &slotSource{opts: r, seeds: uniq(seeds)}
	co := &redis.ClusterOptions{
		Addrs:        src.seeds,
		ClusterSlots: src.load,
		Username:     r.Username,
		Password:     r.Password,
		Dialer:       commandCompatDialer(r.dialer()),
		DialTimeout:  r.DialTimeout,
		ReadTimeout:  r.ReadTimeout,
		WriteTimeout: r.WriteTimeout,
	}
	for _, f := range tune {
		f(co)
	}
	return redis.NewClusterClient(co), nil
}

// FailoverRetryRedirects is the go-redis ClusterOptions.MaxRedirects that a client that must not
// see an error while a master fails over sets, with go-redis v8's default retry backoff (retry k
// waits 8 ms plus a random part of up to 8 ms·2^k, at most 512 ms each): 16 retries wait
// 3.6 s to 6.1 s in all (2 million draws of go-redis's RetryBackoff), where the default of 3
// waits 24 ms to 136 ms. go-redis retries a command that gets CLUSTERDOWN, TRYAGAIN, LOADING or
// READONLY, a MOVED or ASK redirection or a connection error up to MaxRedirects times; a
// CLUSTERDOWN at the node its slot map names (the map is not reloaded on it). During a CLUSTER
// FAILOVER, Redis 7.0 can leave the old master, or another node, answering "CLUSTERDOWN Hash
// slot not served" for the shard's slots until it hears from the new master (Failover says why
// and makes the new master MEET such a node at once, which ends it within a few hundred
// milliseconds; after a failover made otherwise, Redis's own next exchange ends it, within
// cluster-node-timeout/2). 3 retries do not outlast that; 16 outlast Failover's.
const FailoverRetryRedirects = 16

// dialer returns a go-redis Dialer that uses TLS (with the node's host as ServerName unless one
// is configured) when TLS is on, and plain TCP otherwise.
func (r resolved) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: r.DialTimeout, KeepAlive: 5 * time.Minute}
		if r.tlsConfig == nil {
			return d.DialContext(ctx, network, addr)
		}
		td := &tls.Dialer{NetDialer: d, Config: r.tlsForAddr(addr)}
		return td.DialContext(ctx, network, addr)
	}
}

// go-redis v8.11.5 also cannot parse Redis 7's COMMAND reply (10 elements per command, it
// accepts 6 or 7: "got 10 elements in COMMAND reply, wanted 7"). Its ClusterClient needs that
// reply to find each command's first key, and, failing, asks up to three nodes for COMMAND again
// before every single command, then sends the command to a random node and follows the MOVED
// redirection: about 25 ms and 3 large replies per command. commandCompatDialer's connections
// replace the exact request "COMMAND" (which go-redis sends alone in one write) by an EVAL of
// legacyCommandScript, which returns COMMAND's reply cut to its first 7 elements per command
// (name, arity, flags, first key, last key, step, ACL categories): the Redis 6 format, which
// both versions produce that way. Every other byte passes unchanged.
const legacyCommandScript = "local out = {} for i, c in ipairs(redis.call('COMMAND')) do " +
	"out[i] = {c[1], c[2], c[3], c[4], c[5], c[6], c[7]} end return out"

var (
	commandRequest       = []byte("*1\r\n$7\r\ncommand\r\n")
	legacyCommandRequest = []byte(fmt.Sprintf("*3\r\n$4\r\neval\r\n$%d\r\n%s\r\n$1\r\n0\r\n", len(legacyCommandScript), legacyCommandScript))
)

func commandCompatDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return commandCompatConn{c}, nil
	}
}

type commandCompatConn struct{ net.Conn }

func (c commandCompatConn) Write(b []byte) (int, error) {
	if bytes.Equal(b, commandRequest) {
		if _, err := c.Conn.Write(legacyCommandRequest); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

type slotSource struct {
	opts  resolved
	seeds []string

	mu    sync.Mutex
	known []string // node addresses of the last map built
}

func (s *slotSource) load(ctx context.Context) ([]redis.ClusterSlot, error) {
	s.mu.Lock()
	try := uniqKeepOrder(append(append([]string(nil), s.known...), s.seeds...))
	s.mu.Unlock()
	var errs []string
	for _, addr := range try {
		slots, addrs, err := s.loadFrom(ctx, addr)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		s.mu.Lock()
		s.known = addrs
		s.mu.Unlock()
		return slots, nil
	}
	return nil, redactErr(fmt.Errorf("redisctl: cluster client: no node answered CLUSTER NODES: %s", strings.Join(errs, "; ")), s.opts.Password)
}

func (s *slotSource) loadFrom(ctx context.Context, addr string) ([]redis.ClusterSlot, []string, error) {
	cl := redis.NewClient(s.opts.redisOptions(addr))
	defer cl.Close()
	text, err := cl.Do(ctx, "cluster", "nodes").Text()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", addr, err)
	}
	nodes, err := parseClusterNodes(text)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", addr, err)
	}
	slots := ClusterSlotsFromNodes(nodes)
	if len(slots) == 0 {
		return nil, nil, fmt.Errorf("%s: no master serves slots", addr)
	}
	var addrs []string
	for _, n := range nodes {
		if n.IsUsable() && !n.IsFailing() {
			addrs = append(addrs, n.Addr())
		}
	}
	return slots, addrs, nil
}

// ClusterSlotsFromNodes builds go-redis' slot map from a CLUSTER NODES view: for every slot
// range of every master with an address, the master then its replicas that are not flagged
// fail/fail?, replicas sorted by address.
func ClusterSlotsFromNodes(nodes []Node) []redis.ClusterSlot {
	t := &Topology{Nodes: nodes}
	var out []redis.ClusterSlot
	for _, n := range nodes {
		if !n.IsMaster() || !n.IsUsable() || len(n.Slots) == 0 {
			continue
		}
		members := []redis.ClusterNode{{ID: n.ID, Addr: n.Addr()}}
		reps := t.ReplicasOf(n.ID)
		sort.Slice(reps, func(a, b int) bool { return reps[a].Addr() < reps[b].Addr() })
		for _, r := range reps {
			if r.IsUsable() && !r.IsFailing() {
				members = append(members, redis.ClusterNode{ID: r.ID, Addr: r.Addr()})
			}
		}
		for _, sr := range n.Slots {
			out = append(out, redis.ClusterSlot{Start: sr.Start, End: sr.End, Nodes: members})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Start < out[b].Start })
	return out
}

func uniqKeepOrder(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
