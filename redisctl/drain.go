package redisctl

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ClientConn is one connection of CLIENT LIST (https://redis.io/commands/client-list/).
type ClientConn struct {
	// ID and Addr identify the connection; Flags are its flags (N normal, S replica, M master...).
	ID, Addr, Flags string
	// Idle is CLIENT LIST's idle: Redis's clock now minus its clock at the connection's last
	// read or reply, both in whole seconds (networking.c, catClientInfoString). It is not the time
	// since the last command: idle n only proves that more than n−1 s have passed (quietIdle).
	Idle time.Duration
	// Cmd is the last command ("set", "cluster|nodes" for subcommands in Redis 7).
	Cmd string
}

// ParseClientList parses the reply of CLIENT LIST: one line per connection of space-separated
// key=value fields. Lines without an id are skipped.
func ParseClientList(text string) []ClientConn {
	var out []ClientConn
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var c ClientConn
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			switch k {
			case "id":
				c.ID = v
			case "addr":
				c.Addr = v
			case "flags":
				c.Flags = v
			case "idle":
				if n, err := strconv.Atoi(v); err == nil {
					c.Idle = time.Duration(n) * time.Second
				}
			case "cmd":
				c.Cmd = v
			}
		}
		if c.ID != "" {
			out = append(out, c)
		}
	}
	return out
}

// adminCommand reports whether cmd is a connection, cluster or introspection command (what
// health checks, cluster clients refreshing their slot map, and this package send), as opposed to
// a command on the keyspace.
func adminCommand(cmd string) bool {
	base, _, _ := strings.Cut(cmd, "|")
	switch base {
	case "", "NULL", "cluster", "client", "ping", "info", "role", "command", "hello", "auth",
		"select", "readonly", "readwrite", "config", "echo", "quit", "time", "debug", "memory",
		"latency", "slowlog", "replconf", "psync", "sync", "wait", "monitor", "acl":
		return true
	}
	return false
}

// quietIdle returns the smallest CLIENT LIST idle that proves a connection has been quiet for at
// least quiet. idle is the difference of two whole-second timestamps, so idle n only proves more
// than n−1 s: idle 1 may come a millisecond after a command. The answer is quiet rounded up to
// whole seconds, plus one second (quiet 1s: idle ≥ 2s; quiet 0: idle ≥ 1s).
func quietIdle(quiet time.Duration) time.Duration {
	whole := (quiet + time.Second - 1) / time.Second
	return (whole + 1) * time.Second
}

// busyClients returns the normal client connections whose last command is a keyspace command and
// whose idle does not prove quiet (quietIdle): those that may have run it less than quiet ago.
func busyClients(conns []ClientConn, quiet time.Duration) []ClientConn {
	need := quietIdle(quiet)
	var out []ClientConn
	for _, c := range conns {
		if !strings.Contains(c.Flags, "N") || adminCommand(c.Cmd) {
			continue
		}
		if c.Idle < need {
			out = append(out, c)
		}
	}
	return out
}

// WaitClientsDrained waits until no normal client of the node at addr has run a keyspace command
// for at least quiet, or timeout passes. CLIENT LIST's idle counts whole seconds of Redis's clock,
// so a connection counts as quiet only once its idle proves it (quietIdle: quiet rounded up, plus
// one second); a quiet of 1 s takes 1 to 2 s after the last command. After a failover the
// old master answers its clients with MOVED until they have learned the new master; evicting it
// before that turns those redirects into connection errors. It returns the connections still
// busy when the timeout passed (with a nil error: the caller decides), or an error when the node
// cannot be read.
func (c *Client) WaitClientsDrained(ctx context.Context, addr string, quiet, timeout time.Duration) ([]ClientConn, error) {
	var busy []ClientConn
	var readErr error
	read := false
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(pctx context.Context) (bool, error) {
		reply, err := c.Do(pctx, addr, "CLIENT", "LIST")
		if err != nil {
			// A read the deadline cut short: the context is done, or the connection's i/o timeout,
			// set at the deadline, fired just before the context noticed.
			deadline, ok := pctx.Deadline()
			cut := pctx.Err() != nil || ok && !time.Now().Before(deadline)
			switch {
			case !cut: // the node's own answer
				readErr = err
			case !read && readErr == nil: // cut short before any whole round: all there is
				readErr = err
			}
			// Otherwise the deadline cut this read short: it says nothing about the clients, and
			// the last whole round stands.
			return false, nil
		}
		s, ok := reply.(string)
		if !ok {
			readErr = fmt.Errorf("unexpected reply %T", reply)
			return false, nil
		}
		read, readErr = true, nil
		busy = busyClients(ParseClientList(s), quiet)
		return len(busy) == 0, nil
	})
	switch {
	case err == nil:
		return nil, nil
	case readErr != nil:
		return nil, fmt.Errorf("redisctl: client list %s: %w", addr, readErr)
	case ctx.Err() != nil:
		return busy, ctx.Err()
	}
	return busy, nil
}
