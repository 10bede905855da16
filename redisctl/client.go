package redisctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"

	"github.com/go-redis/redis/v8"
)

// Client talks to the nodes of one Redis cluster, each by its own address (pod IP:port), through
// a pool of single-node go-redis clients. It deliberately does not use go-redis' ClusterClient
// (see NewClusterClient for why). A Client is safe for concurrent use.
type Client struct {
	opts resolved
	// reads holds a token per node view being read (Options.MaxConcurrentReads).
	reads chan struct{}

	mu     sync.Mutex
	nodes  map[string]*redis.Client
	closed bool

	// aliases are what nodes read at pod addresses said of themselves (see "Announced
	// addresses" in announce.go).
	aliases aliases
}

// ErrClosed is returned by a Client's methods after Close.
var ErrClosed = errors.New("redisctl: client closed")

// New returns a Client for opts. It reads the credentials (PasswordFile, PasswordEnv, ...) and TLS
// files now; errors name the file or variable, never a secret. New does not connect.
func New(opts Options) (*Client, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	return &Client{opts: r, nodes: map[string]*redis.Client{}, reads: make(chan struct{}, r.MaxConcurrentReads)}, nil
}

// Options returns the options the client was created with (the password is redacted when
// printed).
func (c *Client) Options() Options { return c.opts.Options }

// AddrOf returns "ip:port" for a node's IP with the client's port.
func (c *Client) AddrOf(ip string) string { return c.opts.AddrOf(ip) }

// Close closes every pooled connection. The Client cannot be used afterwards.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for addr, n := range c.nodes {
		if err := n.Close(); err != nil {
			errs = append(errs, fmt.Errorf("redisctl: close %s: %w", addr, err))
		}
	}
	c.nodes = nil
	return c.redact(errors.Join(errs...))
}

// Forget closes and drops the pooled connections to addr, for example after its pod is gone.
func (c *Client) Forget(addr string) {
	c.mu.Lock()
	n := c.nodes[addr]
	delete(c.nodes, addr)
	c.mu.Unlock()
	if n != nil {
		_ = n.Close()
	}
}

// redisOptions returns go-redis options for one node address.
func (r resolved) redisOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:         addr,
		Username:     r.Username,
		Password:     r.Password,
		Dialer:       r.dialer(),
		DialTimeout:  r.DialTimeout,
		ReadTimeout:  r.ReadTimeout,
		WriteTimeout: r.WriteTimeout,
		// Every caller polls; a retry would only double the wait on a node that hangs.
		MaxRetries: -1,
		PoolSize:   4,
	}
}

// node returns the pooled client for addr.
func (c *Client) node(addr string) (*redis.Client, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("bad node address %q: %w", addr, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	n := c.nodes[addr]
	if n == nil {
		n = redis.NewClient(c.opts.redisOptions(addr))
		c.nodes[addr] = n
	}
	return n, nil
}

// Do sends one command to the node at addr and returns its reply, for commands this package has
// no method for. Errors are prefixed with the address.
func (c *Client) Do(ctx context.Context, addr string, args ...interface{}) (interface{}, error) {
	v, err := c.do(ctx, addr, args...)
	return v, prefixed(err)
}

// do is Do with errors not prefixed by "redisctl: ", for wrapping by the composite operations.
func (c *Client) do(ctx context.Context, addr string, args ...interface{}) (interface{}, error) {
	n, err := c.node(addr)
	if err != nil {
		return nil, err
	}
	v, err := n.Do(ctx, args...).Result()
	if err != nil {
		return nil, c.nodeErr(addr, cmdName(args), err)
	}
	return v, nil
}

// nodeErr formats the error of one operation on one node as "addr: op: err", password removed.
func (c *Client) nodeErr(addr, op string, err error) error {
	return c.redact(fmt.Errorf("%s: %s: %w", addr, op, err))
}

// prefixed adds the package prefix to an error of an internal helper.
func prefixed(err error) error {
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("redisctl: %w", err)
}

func cmdName(args []interface{}) string {
	var parts []string
	for i, a := range args {
		if i == 2 {
			break
		}
		parts = append(parts, strings.ToUpper(fmt.Sprint(a)))
	}
	return strings.Join(parts, " ")
}

// ClusterNodes returns the node at addr's CLUSTER NODES view, parsed.
func (c *Client) ClusterNodes(ctx context.Context, addr string) ([]Node, error) {
	nodes, err := c.clusterNodes(ctx, addr)
	return nodes, prefixed(err)
}

func (c *Client) clusterNodes(ctx context.Context, addr string) ([]Node, error) {
	n, err := c.node(addr)
	if err != nil {
		return nil, err
	}
	text, err := n.Do(ctx, "cluster", "nodes").Text()
	if err != nil {
		return nil, c.nodeErr(addr, "CLUSTER NODES", err)
	}
	nodes, err := parseClusterNodes(text)
	if err != nil {
		return nil, c.nodeErr(addr, "CLUSTER NODES", err)
	}
	c.localize(addr, nodes)
	return nodes, nil
}

// InfoReplication returns the node at addr's INFO replication, parsed.
func (c *Client) InfoReplication(ctx context.Context, addr string) (Replication, error) {
	r, err := c.infoReplication(ctx, addr)
	return r, prefixed(err)
}

func (c *Client) infoReplication(ctx context.Context, addr string) (Replication, error) {
	n, err := c.node(addr)
	if err != nil {
		return Replication{}, err
	}
	text, err := n.Info(ctx, "replication").Result()
	if err != nil {
		return Replication{}, c.nodeErr(addr, "INFO replication", err)
	}
	r := ParseInfo(text).Replication()
	c.localizeReplication(&r)
	return r, nil
}

// ClusterInfo returns the node at addr's CLUSTER INFO, parsed.
func (c *Client) ClusterInfo(ctx context.Context, addr string) (Info, error) {
	n, err := c.node(addr)
	if err != nil {
		return nil, err
	}
	text, err := n.ClusterInfo(ctx).Result()
	if err != nil {
		return nil, prefixed(c.nodeErr(addr, "CLUSTER INFO", err))
	}
	return ParseInfo(text), nil
}

// View is what one node reports about the cluster, read in one round trip.
type View struct {
	// Addr is the address the view was read from.
	Addr string
	// Nodes is its CLUSTER NODES reply.
	Nodes []Node
	// ClusterInfo is its CLUSTER INFO reply.
	ClusterInfo Info
	// Replication is its INFO replication reply.
	Replication Replication
}

// Myself returns the view's own line (flag myself).
func (v View) Myself() (Node, bool) {
	for _, n := range v.Nodes {
		if n.IsMyself() {
			return n, true
		}
	}
	return Node{}, false
}

// Node returns the view's line for node id.
func (v View) Node(id string) (Node, bool) {
	for _, n := range v.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// ReadView reads CLUSTER NODES, CLUSTER INFO and INFO replication from addr in one pipeline.
func (c *Client) ReadView(ctx context.Context, addr string) (View, error) {
	v, err := c.readView(ctx, addr)
	return v, prefixed(err)
}

func (c *Client) readView(ctx context.Context, addr string) (View, error) {
	n, err := c.node(addr)
	if err != nil {
		return View{}, err
	}
	pipe := n.Pipeline()
	nodesCmd := pipe.Do(ctx, "cluster", "nodes")
	infoCmd := pipe.ClusterInfo(ctx)
	replCmd := pipe.Info(ctx, "replication")
	if _, err := pipe.Exec(ctx); err != nil {
		return View{}, c.nodeErr(addr, "read view", err)
	}
	text, err := nodesCmd.Text()
	if err != nil {
		return View{}, c.nodeErr(addr, "CLUSTER NODES", err)
	}
	nodes, err := parseClusterNodes(text)
	if err != nil {
		return View{}, c.nodeErr(addr, "CLUSTER NODES", err)
	}
	c.localize(addr, nodes)
	repl := ParseInfo(replCmd.Val()).Replication()
	c.localizeReplication(&repl)
	return View{
		Addr:        addr,
		Nodes:       nodes,
		ClusterInfo: ParseInfo(infoCmd.Val()),
		Replication: repl,
	}, nil
}

// readViews reads the views of addrs concurrently, at most Options.MaxConcurrentReads at a time
// over every caller of c. It returns the views that answered, sorted by address, and the errors
// of those that did not; a node not read before ctx ends gets ctx's error.
func (c *Client) readViews(ctx context.Context, addrs []string) ([]View, map[string]error) {
	type res struct {
		v   View
		err error
	}
	out := make([]res, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		// A goroutine per node being read, not per node waiting: reading thousands of nodes
		// costs MaxConcurrentReads stacks.
		select {
		case c.reads <- struct{}{}:
		case <-ctx.Done():
			out[i] = res{err: c.nodeErr(a, "read view", fmt.Errorf("not read: %w", ctx.Err()))}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-c.reads }()
			v, err := c.readView(ctx, a)
			out[i] = res{v, err}
		}()
	}
	wg.Wait()
	var views []View
	errs := map[string]error{}
	for i, r := range out {
		if r.err != nil {
			errs[addrs[i]] = r.err
			continue
		}
		views = append(views, r.v)
	}
	sort.Slice(views, func(a, b int) bool { return views[a].Addr < views[b].Addr })
	return views, errs
}

// wrapf returns an error "redisctl: <format>: <err>" that wraps err, without repeating the
// "redisctl: " prefix of err's own message; the password is removed from the text.
func (c *Client) wrapf(err error, format string, args ...interface{}) error {
	msg := "redisctl: " + fmt.Sprintf(format, args...) + ": " + strings.TrimPrefix(err.Error(), "redisctl: ")
	return c.redact(&wrapError{msg: msg, err: err})
}

type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

// errf formats an error with the "redisctl: " prefix and removes the password from its text.
func (c *Client) errf(format string, args ...interface{}) error {
	return c.redact(fmt.Errorf("redisctl: "+format, args...))
}

// redact returns err with every occurrence of the password replaced, keeping it unwrappable.
// Redis and go-redis never echo a password; this is a second line of defence.
func (c *Client) redact(err error) error {
	return redactErr(err, c.opts.Password)
}

func redactErr(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), secret, "<redacted>"), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// uniq returns the sorted distinct non-empty strings of ss.
func uniq(ss []string) []string {
	m := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s != "" && !m[s] {
			m[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
