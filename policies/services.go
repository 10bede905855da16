package policies

import (
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Nodes announced at a Service's address.
//
// With the Bitnami chart's cluster.externalAccess, every Redis pod is exposed by a Service of its
// own, "<release>-<i>-svc", type LoadBalancer, whose selector adds
// statefulset.kubernetes.io/pod-name=<release>-<i> to the chart's labels, and the pod's Redis
// node announces that LoadBalancer's IP (cluster-announce-ip; with hostMode, as its
// cluster-announce-hostname). CLUSTER NODES then names no pod IP. A member's ServiceAddrs are the
// external addresses of the Services that select it and no other pod, and ApplyRedis matches a
// node announced at one of them to that member.

// serviceAddrs returns the addresses a Service exposes outside the cluster, in this order:
// status.loadBalancer.ingress (IP, then hostname, of each), spec.loadBalancerIP, spec.externalIPs;
// none for a Service without a selector (its endpoints are not pods it selects).
func serviceAddrs(s *corev1.Service) []string {
	if len(s.Spec.Selector) == 0 {
		return nil
	}
	var out []string
	add := func(a string) {
		if a == "" {
			return
		}
		for _, b := range out {
			if b == a {
				return
			}
		}
		out = append(out, a)
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		add(in.IP)
		add(in.Hostname)
	}
	add(s.Spec.LoadBalancerIP)
	for _, ip := range s.Spec.ExternalIPs {
		add(ip)
	}
	return out
}

// buildServiceAddrs sets each member's ServiceAddrs (Build): for every Service of a cluster's
// namespace with external addresses, the member it selects when it selects exactly one pod of
// the snapshot that is neither terminating nor finished.
func (m *Model) buildServiceAddrs(snap *Snapshot) {
	if len(snap.Services) == 0 || len(m.Clusters) == 0 {
		return
	}
	members := map[*corev1.Pod]*Member{}
	for _, c := range m.Clusters {
		for _, mem := range c.Members {
			members[mem.Pod] = mem
		}
	}
	byNS := map[string][]*corev1.Pod{}
	for _, c := range m.Clusters {
		byNS[c.Namespace] = nil
	}
	for _, p := range snap.Pods {
		if _, ok := byNS[p.Namespace]; ok && p.DeletionTimestamp == nil && !isFinished(p) {
			byNS[p.Namespace] = append(byNS[p.Namespace], p)
		}
	}
	for _, s := range snap.Services {
		pods, ok := byNS[s.Namespace]
		addrs := serviceAddrs(s)
		if !ok || len(addrs) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		var only *corev1.Pod
		n := 0
		for _, p := range pods {
			if sel.Matches(labels.Set(p.Labels)) {
				only = p
				if n++; n > 1 {
					break
				}
			}
		}
		if mem := members[only]; n == 1 && mem != nil {
			mem.ServiceAddrs = append(mem.ServiceAddrs, addrs...)
		}
	}
}

// announcedAt reports whether a node announcing IP ip (or hostname host) is member mem by one of
// its ServiceAddrs. IPs are compared as addresses, hostnames case-insensitively.
func (mem *Member) announcedAt(ip, host string) bool {
	for _, a := range mem.ServiceAddrs {
		if ip != "" && sameIP(a, ip) || host != "" && strings.EqualFold(strings.TrimSuffix(host, "."), strings.TrimSuffix(a, ".")) {
			return true
		}
	}
	return false
}

// sameIP reports whether a and b are one IP address.
func sameIP(a, b string) bool {
	if a == b {
		return true
	}
	x, y := net.ParseIP(a), net.ParseIP(b)
	return x != nil && y != nil && x.Equal(y)
}
