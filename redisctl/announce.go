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
// pod's address instead, and reports every node it has reached there at that address: a node read
// at pod address D whose own line (flag myself) has node ID X and announces another IP A teaches
// the alias X → D, and from then on every line about node X (in any node's CLUSTER NODES) is
// reported at D, with Node.Announced keeping what Redis said. Aliases are keyed by node ID, not by
// IP: a node restarted on a new pod IP that still announces its old one (no cluster-announce-ip,
// nodes.conf kept) is reported at its new address, while another pod that was given the old IP is
// left alone. In INFO replication (a replica's master_host, a master's replica lines), which
// carries no node ID, an announced IP is replaced only when it is no pod address the Client has
// reached a node at. A pod address that answers with another node ID (a pod re-created with an
// empty data directory, or its IP reused) drops the aliases it held.
//
// Code that maps a pod to its node by pod IP (Topology.NodeByIP, the engine) then works unchanged,
// and no address outside the pod network is dialled for a node a pod answers for. A node the
// Client has not reached yet keeps its announced address; the engine matches it to its pod through
// the per-pod Services (policies.Member.ServiceAddrs).

// alias is what a node read at a pod address said of itself.
type alias struct {
	announced, pod string // IPs
}

// aliases holds the learned aliases by node ID, and the pod addresses nodes were read at.
type aliases struct {
	mu   sync.RWMutex
	byID map[string]alias
	// at maps each IP a node was read at to that node's ID.
	at map[string]string
}

// Announced returns the aliases the Client has learned: node ID → [announced IP, pod IP], for
// messages and tests.
func (c *Client) Announced() map[string][2]string {
	c.aliases.mu.RLock()
	defer c.aliases.mu.RUnlock()
	out := make(map[string][2]string, len(c.aliases.byID))
	for id, a := range c.aliases.byID {
		out[id] = [2]string{a.announced, a.pod}
	}
	return out
}

// learn records what the node read at addr says of itself: when its own line announces an IP
// other than addr's, its node ID is reported at addr's IP. Aliases of other node IDs at addr's IP
// are dropped (the pod there is another node now).
func (a *aliases) learn(addr string, nodes []Node) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return
	}
	for _, n := range nodes {
		if !n.IsMyself() {
			continue
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.byID == nil {
			a.byID, a.at = map[string]alias{}, map[string]string{}
		}
		ip := n.IP
		if n.Announced != "" {
			ip, _, _ = net.SplitHostPort(n.Announced)
		}
		if al, ok := a.byID[n.ID]; ok && sameIP(al.announced, host) && sameIP(ip, host) {
			// Read at the address it announces (its LoadBalancer's): nothing new.
			return
		}
		for id, al := range a.byID {
			if id != n.ID && sameIP(al.pod, host) {
				delete(a.byID, id)
			}
		}
		a.at[normIP(host)] = n.ID
		if ip == "" || sameIP(ip, host) {
			delete(a.byID, n.ID)
			return
		}
		a.byID[n.ID] = alias{announced: ip, pod: host}
		return
	}
}

// podOf returns the pod IP node id is reached at, and whether the Client knows one other than ip.
func (a *aliases) podOf(id, ip string) (string, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	al, ok := a.byID[id]
	return al.pod, ok && !sameIP(al.pod, ip)
}

// podOfIP returns the pod IP that announced IP ip stands for: that of the one node announcing ip
// that the Client reached at another address, when no node was read at ip itself.
func (a *aliases) podOfIP(ip string) (string, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if ip == "" {
		return "", false
	}
	if _, ok := a.at[normIP(ip)]; ok {
		return "", false
	}
	pod := ""
	for _, al := range a.byID {
		if sameIP(al.announced, ip) {
			if pod != "" && !sameIP(pod, al.pod) {
				return "", false
			}
			pod = al.pod
		}
	}
	return pod, pod != ""
}

// normIP returns ip in its canonical form ("::1" for "0:0:0:0:0:0:0:1"), or as it is when it
// does not parse.
func normIP(ip string) string {
	if p := net.ParseIP(ip); p != nil {
		return p.String()
	}
	return ip
}

// sameIP reports whether a and b are one IP address ("::1" and "0:0:0:0:0:0:0:1" are).
func sameIP(a, b string) bool {
	if a == b {
		return true
	}
	x, y := net.ParseIP(a), net.ParseIP(b)
	return x != nil && y != nil && x.Equal(y)
}

// localize learns from nodes, read at addr, then reports every node the Client reaches at a pod
// address other than the one announced at that pod address (port: the Client's), keeping the
// announced address in Node.Announced.
func (c *Client) localize(addr string, nodes []Node) {
	c.aliases.learn(addr, nodes)
	c.relocalize(nodes)
}

// relocalize is localize without learning: for views read before the last aliases were known.
// Nodes already localized are left as they are.
func (c *Client) relocalize(nodes []Node) {
	for i := range nodes {
		n := &nodes[i]
		if n.Announced != "" || n.IP == "" {
			continue
		}
		if ip, ok := c.aliases.podOf(n.ID, n.IP); ok {
			n.Announced = n.Addr()
			n.IP, n.Port = ip, c.opts.port()
		}
	}
}

// localizeReplication reports r's master and replicas at their pods' addresses (see localize).
func (c *Client) localizeReplication(r *Replication) {
	if ip, ok := c.aliases.podOfIP(r.MasterHost); ok {
		r.MasterHost, r.MasterPort = ip, c.opts.port()
	}
	for i := range r.Replicas {
		if ip, ok := c.aliases.podOfIP(r.Replicas[i].IP); ok {
			r.Replicas[i].IP, r.Replicas[i].Port = ip, c.opts.port()
		}
	}
}
