package localcluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Second octets tried, in order, when Config.PodNetwork is empty.
const (
	firstAutoOctet = 10
	lastAutoOctet  = 250
)

// errNetworkInUse means another cluster on this machine holds the pod network.
var errNetworkInUse = errors.New("in use by another local cluster")

// networkLock is a claim on a pod network (127.x.0.0/16) shared by every process on the
// machine: an exclusive flock on a file in os.TempDir(). The kernel releases it when the holder
// exits, however it exits.
type networkLock struct{ f *os.File }

// lockNetwork claims network ("127.x") or returns an error wrapping errNetworkInUse.
func lockNetwork(network string) (*networkLock, error) {
	path := filepath.Join(os.TempDir(), "localcluster-podnetwork-"+network+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("pod network %s.0.0/16: %w (lock %s)", network, errNetworkInUse, path)
		}
		return nil, fmt.Errorf("pod network %s.0.0/16: lock %s: %w", network, path, err)
	}
	return &networkLock{f: f}, nil
}

// lockFreeNetwork claims the first free pod network from 127.10 on and returns it.
func lockFreeNetwork() (string, *networkLock, error) {
	for octet := firstAutoOctet; octet <= lastAutoOctet; octet++ {
		network := fmt.Sprintf("127.%d", octet)
		l, err := lockNetwork(network)
		if errors.Is(err, errNetworkInUse) {
			continue
		}
		return network, l, err
	}
	return "", nil, fmt.Errorf("no free pod network between 127.%d and 127.%d", firstAutoOctet, lastAutoOctet)
}

// unlock releases the claim. Safe on a nil lock.
func (l *networkLock) unlock() {
	if l != nil {
		l.f.Close() // releases the flock
	}
}

// Ports of a cluster's listeners: portBase + portStride*x + k for the k-th listener of the
// cluster whose pod network is 127.x. Clusters on a machine hold different pod networks, so they
// never compete for ports, and the ports lie below the kernel's ephemeral range, so the
// components' own outgoing connections cannot take one before its listener binds it.
const (
	portBase   = 20000
	portStride = 10
	// minRandomPort is the lowest port tried when a port of the block is busy.
	minRandomPort = 10000
)

// clusterPorts returns n distinct ports on 127.0.0.1, free when it returns, for the cluster
// whose pod network is network ("127.x"). A busy port of the cluster's block is replaced by a
// random free one below the ephemeral range.
func clusterPorts(network string, n int) ([]int, error) {
	octet, err := strconv.Atoi(strings.TrimPrefix(network, "127."))
	if err != nil {
		return nil, fmt.Errorf("pod network %q: %w", network, err)
	}
	ephemeral := ephemeralPortStart()
	var ports []int
	for k := range n {
		port := portBase + portStride*octet + k
		l, err := listen(port, ephemeral)
		for tries := 0; err != nil && tries < 100; tries++ {
			port = minRandomPort + rand.IntN(ephemeral-minRandomPort)
			l, err = listen(port, ephemeral)
		}
		if err != nil {
			return nil, fmt.Errorf("no free port below %d: %w", ephemeral, err)
		}
		defer l.Close() // once all are chosen, so that none is chosen twice
		ports = append(ports, port)
	}
	return ports, nil
}

// listen listens on 127.0.0.1:port, a port below limit.
func listen(port, limit int) (net.Listener, error) {
	if port >= limit {
		return nil, fmt.Errorf("port %d is in the ephemeral range", port)
	}
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// ephemeralPortStart returns the first port of the kernel's ephemeral range (32768 when unknown).
func ephemeralPortStart() int {
	const fallback = 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return fallback
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start <= minRandomPort {
		return fallback
	}
	return start
}
