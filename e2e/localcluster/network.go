package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
