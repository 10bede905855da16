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
	// Idle is the time since the connection's last command, in whole seconds.
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

// busyClients returns the normal client connections that ran a keyspace command less than quiet
// ago.
func busyClients(conns []ClientConn, quiet time.Duration) []ClientConn {
	var out []ClientConn
	for _, c := range conns {
		if !strings.Contains(c.Flags, "N") || adminCommand(c.Cmd) {
			continue
		}
		if c.Idle < quiet {
			out = append(out, c)
		}
	}
	return out
}

// WaitClientsDrained waits until no normal client of the node at addr has run a keyspace command
// for at least quiet (CLIENT LIST idle, whole seconds), or timeout passes. After a failover the
// old master answers its clients with MOVED until they have learned the new master; evicting it
// before that turns those redirects into connection errors. It returns the connections still
// busy when the timeout passed (with a nil error: the caller decides), or an error when the node
// cannot be read.
func (c *Client) WaitClientsDrained(ctx context.Context, addr string, quiet, timeout time.Duration) ([]ClientConn, error) {
	var busy []ClientConn
	var readErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		reply, err := c.Do(ctx, addr, "CLIENT", "LIST")
		if err != nil {
			readErr = err
			return false, nil
		}
		s, ok := reply.(string)
		if !ok {
			readErr = fmt.Errorf("unexpected reply %T", reply)
			return false, nil
		}
		readErr = nil
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
