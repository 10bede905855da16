package redisctl

import (
	"net"
	"sync"
)

// Announced addresses.
//
// A Redis node tells the cluster the address it announces (cluster-announce-ip), which need not be
// its pod's: with the Bitnami chart's cluster.externalAccess every node announces the IP of the
// LoadBalancer Service that exposes its pod alone ("<release>-<i>-svc"), so CLUSTER NODES, CLUSTER
// SLOTS and a replica's master_host name LoadBalancer IPs. The Client reaches every node at its
// pod's address instead, and reports every node at the address it reaches it at: each address a
// node announces that the Client knows to be a pod's (an alias) is replaced, in everything it
// parses from Redis (CLUSTER NODES lines, master_host, INFO replication's replica lines), by that
// pod's address, and Node.Announced keeps what Redis said. Code that maps a pod to its node by pod
// IP (Topology.NodeByIP, the engine) then works unchanged, and no address outside the Kubernetes
// cluster's pod network is dialled for a node a pod answers for.
//
// The aliases come from two places:
//   - each node the Client reads: a node read at pod address D whose own line (flag myself)
//     announces another IP A makes A an alias of D's IP (learned, so a re-created pod's new IP
//     replaces its old one as soon as it answers);
//   - the caller (SetAnnounced): announced IP → pod IP, which the engine derives from the
//     per-pod Services (a LoadBalancer's status.loadBalancer.ingress, spec.loadBalancerIP,
//     spec.externalIPs) for the pods it has not read yet.

// aliases is the announced IP → pod IP table.
type aliases struct {
	mu sync.RWMutex
	// learned are the aliases nodes told about themselves; given, those SetAnnounced gave.
	learned, given map[string]string
}

// SetAnnounced replaces the aliases the caller gives: announced maps an IP some node announces
// (a LoadBalancer's IP) to the IP of the pod that node runs in. An alias a node told about itself
// (see the package's "Announced addresses") takes precedence over a given one for the same IP.
// Entries mapping an IP to itself, or with an empty side, are ignored. Safe for concurrent use.
func (c *Client) SetAnnounced(announced map[string]string) {
	m := make(map[string]string, len(announced))
	for a, ip := range announced {
		if a != "" && ip != "" && a != ip {
			m[a] = ip
		}
	}
	c.aliases.mu.Lock()
	c.aliases.given = m
	c.aliases.mu.Unlock()
}

// Announced returns the announced IP → pod IP aliases the Client knows (given and learned), for
// messages and tests.
func (c *Client) Announced() map[string]string {
	c.aliases.mu.RLock()
	defer c.aliases.mu.RUnlock()
	out := make(map[string]string, len(c.aliases.given)+len(c.aliases.learned))
	for a, ip := range c.aliases.given {
		out[a] = ip
	}
	for a, ip := range c.aliases.learned {
		out[a] = ip
	}
	return out
}

// podIP returns the pod IP announced IP a stands for, and whether it is an alias.
func (a *aliases) podIP(ip string) (string, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if p, ok := a.learned[ip]; ok {
		return p, true
	}
	p, ok := a.given[ip]
	return p, ok
}

// learn records what the node read at addr says of itself: when its own line announces an IP
// other than addr's, that IP is an alias of addr's.
func (a *aliases) learn(addr string, nodes []Node) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return
	}
	for _, n := range nodes {
		if !n.IsMyself() {
			continue
		}
		ip := n.IP
		if n.Announced != "" {
			ip, _, _ = net.SplitHostPort(n.Announced)
		}
		if ip == "" || sameIP(ip, host) {
			return
		}
		a.mu.Lock()
		if a.learned == nil {
			a.learned = map[string]string{}
		}
		a.learned[ip] = host
		a.mu.Unlock()
		return
	}
}

// sameIP reports whether a and b are one IP address ("::1" and "0:0:0:0:0:0:0:1" are).
func sameIP(a, b string) bool {
	if a == b {
		return true
	}
	x, y := net.ParseIP(a), net.ParseIP(b)
	return x != nil && y != nil && x.Equal(y)
}

// localize learns from nodes, read at addr, then reports every node announced at an alias at its
// pod's address (port: the Client's), keeping the announced address in Node.Announced. Nodes
// already localized are left as they are.
func (c *Client) localize(addr string, nodes []Node) {
	c.aliases.learn(addr, nodes)
	c.relocalize(nodes)
}

// relocalize is localize without learning: for views read before the last aliases were known.
func (c *Client) relocalize(nodes []Node) {
	for i := range nodes {
		n := &nodes[i]
		if n.Announced != "" || n.IP == "" {
			continue
		}
		if ip, ok := c.aliases.podIP(n.IP); ok {
			n.Announced = n.Addr()
			n.IP, n.Port = ip, c.opts.port()
		}
	}
}

// localizeReplication reports r's master and replicas at their pods' addresses (see localize).
func (c *Client) localizeReplication(r *Replication) {
	if ip, ok := c.aliases.podIP(r.MasterHost); ok {
		r.MasterHost, r.MasterPort = ip, c.opts.port()
	}
	for i := range r.Replicas {
		if ip, ok := c.aliases.podIP(r.Replicas[i].IP); ok {
			r.Replicas[i].IP, r.Replicas[i].Port = ip, c.opts.port()
		}
	}
}
