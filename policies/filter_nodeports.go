package policies

import (
	corev1 "k8s.io/api/core/v1"
)

// hostPort is a (host IP, protocol, port) a container binds on its node, as kube-scheduler's
// HostPortInfo keeps it: the IP "0.0.0.0" when none is given, the protocol TCP when none is given.
type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

// bindAllHostIP is kube-scheduler's DefaultBindAllHostIP.
const bindAllHostIP = "0.0.0.0"

// hostPortsOf returns the host ports of a pod as kube-scheduler's util.GetHostPorts lists them:
// the ports with a hostPort of its restartable init containers (sidecars, which run as long as
// the pod) and of its containers, sanitized as HostPortInfo does. nil when there are none.
func hostPortsOf(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c *corev1.Container) {
		for _, cp := range c.Ports {
			if cp.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: cp.HostIP, protocol: cp.Protocol, port: cp.HostPort}
			if hp.ip == "" {
				hp.ip = bindAllHostIP
			}
			if hp.protocol == "" {
				hp.protocol = corev1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for k := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[k]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for k := range p.Spec.Containers {
		add(&p.Spec.Containers[k])
	}
	return out
}

// conflicts is HostPortInfo.CheckConflict for one wanted port against one port in use: the same
// protocol and port, and either the wanted IP is 0.0.0.0 (it binds every address), or the used
// one is, or they are the same IP.
func (w hostPort) conflicts(u hostPort) bool {
	return w.port == u.port && w.protocol == u.protocol && (w.ip == bindAllHostIP || u.ip == bindAllHostIP || w.ip == u.ip)
}

// portsConflict reports whether any of want conflicts with any of used (NodePorts' fitsPorts,
// negated).
func portsConflict(want, used []hostPort) bool {
	for _, w := range want {
		for _, u := range used {
			if w.conflicts(u) {
				return true
			}
		}
	}
	return false
}

// portKey indexes the host ports in use by protocol and port (Model.hostPorts).
type portKey struct {
	protocol corev1.Protocol
	port     int32
}

// portUse is one scheduled pod's host port: the pod (index into Model.pods) and the IP it binds.
type portUse struct {
	pod int32
	ip  string
}

// portMask returns, per node, whether a scheduled pod that is not a member of c binds a host
// port conflicting with ports (NodePorts' Filter against the node's UsedPorts, the members left
// out: they are counted where the placement puts them). nil when no node has such a pod.
func (c *Cluster) portMask(ports []hostPort) []bool {
	m := c.model
	var mask []bool
	for _, w := range ports {
		for _, u := range m.hostPorts[portKey{w.protocol, w.port}] {
			if !w.conflicts(hostPort{u.ip, w.protocol, w.port}) || c.memberOf(m.pods[u.pod]) {
				continue
			}
			if mask == nil {
				mask = make([]bool, len(m.Nodes))
			}
			mask[m.podNode[u.pod]] = true
		}
	}
	return mask
}

// nodePortsFit is NodePorts' Filter on node n: no pod on the node, a non-member (spec.portMask)
// or another member as placed (f.portNodes), binds a conflicting host port.
func (f *fitter) nodePortsFit(n int) bool {
	if mask := f.spec.portMask; mask != nil && mask[n] {
		return false
	}
	for _, pn := range f.portNodes {
		if pn == n {
			return false
		}
	}
	return true
}
