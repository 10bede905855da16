package localcluster

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"time"
)

const (
	// DefaultPodNetwork is the first pod network tried when Config.PodNetwork is empty.
	DefaultPodNetwork = "127.10"
	// DefaultStartTimeout is the default Config.StartTimeout.
	DefaultStartTimeout = 60 * time.Second
	// DefaultNodeLeaseDuration is the default Config.NodeLeaseDuration: the kubelet's default
	// nodeLeaseDurationSeconds.
	DefaultNodeLeaseDuration = 40 * time.Second
)

// Config describes a local cluster. The zero value is a valid configuration.
type Config struct {
	// Binaries locates the executables; DefaultBinaries() when zero.
	Binaries Binaries
	// WorkDir holds the certificates, kubeconfigs, etcd's data and each component's log
	// (<component>.log). A new temporary directory when empty, removed by Stop unless
	// KeepWorkDir is set. A given WorkDir must be empty or missing; it is created if needed
	// and never removed.
	WorkDir string
	// KeepWorkDir keeps a temporary WorkDir after Stop, for inspecting the logs. A temporary
	// WorkDir is also kept when Start fails.
	KeepWorkDir bool
	// PodNetwork is the first two octets of the loopback range of pod IPs, such as "127.10":
	// the i-th node added gets the pod CIDR <PodNetwork>.<i>.0/24 and the InternalIP
	// <PodNetwork>.0.<i>. Clusters running at once on a machine need different ranges, so a
	// cluster claims its range for its lifetime with a lock file in os.TempDir(); Start fails
	// if another cluster holds the range given here. When empty, the first free range from
	// DefaultPodNetwork (127.10, 127.11, ...) is used; see Cluster.PodNetwork.
	PodNetwork string
	// Log receives a progress line per component ("localcluster: etcd ready in 1.2s");
	// discarded when nil.
	Log io.Writer
	// StartTimeout bounds Start (DefaultStartTimeout when 0).
	StartTimeout time.Duration
	// NodeLeaseDuration is the duration of the Lease in kube-node-lease that kwok holds for every
	// node and renews every quarter of it, as the kubelet does (kwok's
	// --node-lease-duration-seconds, whole seconds; DefaultNodeLeaseDuration when 0). Without
	// node leases the node lifecycle controller marks every node NotReady, and every pod on it,
	// NodeMonitorGracePeriod after the node was created.
	NodeLeaseDuration time.Duration
	// NodeMonitorGracePeriod is how long a node may go without a renewed lease before the node
	// lifecycle controller marks it NotReady (kube-controller-manager's
	// --node-monitor-grace-period; its default, 50 s, when 0). It must exceed twice the lease's
	// renew interval (NodeLeaseDuration/4), or healthy nodes flap. Tests lower it to see a lost
	// lease quickly; the lease path is the same.
	NodeMonitorGracePeriod time.Duration
	// NodeMonitorPeriod is how often the node lifecycle controller checks the leases
	// (kube-controller-manager's --node-monitor-period; its default, 5 s, when 0).
	NodeMonitorPeriod time.Duration
}

// kube-controller-manager's defaults of the node lifecycle controller's periods, for validation.
const (
	kcmNodeMonitorGracePeriod = 50 * time.Second
	kcmNodeMonitorPeriod      = 5 * time.Second
)

// withDefaults returns cfg with defaults filled in, or an error if it is invalid.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Binaries.isZero() {
		b, err := DefaultBinaries()
		if err != nil {
			return cfg, err
		}
		cfg.Binaries = b
	} else if err := cfg.Binaries.Validate(); err != nil {
		return cfg, err
	}
	// 127.0 holds 127.0.0.1, where the control plane listens.
	if ip := net.ParseIP(cfg.PodNetwork + ".0.0").To4(); cfg.PodNetwork != "" && (ip == nil || ip[0] != 127 || ip[1] == 0) {
		return cfg, fmt.Errorf("localcluster: PodNetwork %q: want the first two octets of a 127.x.0.0/16 range (x > 0), such as %q", cfg.PodNetwork, DefaultPodNetwork)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StartTimeout < 0 {
		return cfg, fmt.Errorf("localcluster: negative StartTimeout %v", cfg.StartTimeout)
	}
	if cfg.NodeLeaseDuration == 0 {
		cfg.NodeLeaseDuration = DefaultNodeLeaseDuration
	}
	if cfg.NodeLeaseDuration < time.Second || cfg.NodeLeaseDuration%time.Second != 0 {
		return cfg, fmt.Errorf("localcluster: NodeLeaseDuration %v: want whole seconds, at least 1s", cfg.NodeLeaseDuration)
	}
	if cfg.NodeMonitorGracePeriod < 0 || cfg.NodeMonitorPeriod < 0 {
		return cfg, fmt.Errorf("localcluster: negative NodeMonitorGracePeriod %v or NodeMonitorPeriod %v", cfg.NodeMonitorGracePeriod, cfg.NodeMonitorPeriod)
	}
	grace := cmp.Or(cfg.NodeMonitorGracePeriod, kcmNodeMonitorGracePeriod)
	if renew := cfg.NodeLeaseDuration / 4; grace <= 2*renew {
		return cfg, fmt.Errorf("localcluster: NodeMonitorGracePeriod %v must exceed twice the lease renew interval %v (NodeLeaseDuration/4), or healthy nodes flap", grace, renew)
	}
	if period := cmp.Or(cfg.NodeMonitorPeriod, kcmNodeMonitorPeriod); period >= grace {
		return cfg, fmt.Errorf("localcluster: NodeMonitorPeriod %v must be shorter than NodeMonitorGracePeriod %v", period, grace)
	}
	return cfg, nil
}
