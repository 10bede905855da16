package cli

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// kubeFlags are the flags that reach the Kubernetes API server.
type kubeFlags struct {
	kubeconfig, context string
	qps                 float32
	burst               int
}

func (f *kubeFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context to use (default: the current context)")
	fs.Float32Var(&f.qps, "kube-api-qps", 50, "queries per second to the API server")
	fs.IntVar(&f.burst, "kube-api-burst", 100, "burst of queries to the API server")
}

// restConfig loads the kubeconfig the usual way (explicit path, $KUBECONFIG, ~/.kube/config),
// falling back to the in-cluster configuration.
func (f *kubeFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	cfg.UserAgent = "redis-rebalancer/" + Version
	return cfg, nil
}

func (f *kubeFlags) client() (kubernetes.Interface, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// policyFlags select and judge the Redis clusters.
type policyFlags struct {
	namespace, selector         string
	clusterLabel, shardLabel    string
	relaxed, releaseReplicaPVCs bool
}

func (f *policyFlags) add(fs *pflag.FlagSet) {
	fs.StringVarP(&f.namespace, "namespace", "n", "", "only this namespace (default: all namespaces)")
	fs.StringVarP(&f.selector, "selector", "l", "", "only Redis clusters with a pod matching this label selector (e.g. app.kubernetes.io/name=redis)")
	fs.StringVar(&f.clusterLabel, "cluster-label", policies.DefaultClusterLabel, "pod label whose value names the Redis cluster (seed example: cloud.netease.com/cluster-name)")
	fs.StringVar(&f.shardLabel, "shard-label", "", "pod label whose value names the shard (default: the pod's StatefulSet)")
	fs.BoolVar(&f.relaxed, "relaxed-limits", false, `seed 000 §四: allow "at most" N/3 pods per node and N/2 per zone instead of "fewer than"`)
	fs.BoolVar(&f.releaseReplicaPVCs, "release-replica-claims", false, "allow moving a replica away from a zonal PersistentVolume (its claim is released; it resyncs from its master)")
}

func (f *policyFlags) options() policies.Options {
	return policies.Options{
		ClusterLabel: f.clusterLabel, ShardLabel: f.shardLabel,
		RelaxedLimits: f.relaxed, ReleaseReplicaClaims: f.releaseReplicaPVCs,
	}
}

// redisFlags reach the Redis nodes.
type redisFlags struct {
	opts       redisctl.Options
	tls        bool
	tlsOptions redisctl.TLSOptions
}

func (f *redisFlags) add(fs *pflag.FlagSet) {
	fs.IntVar(&f.opts.Port, "redis-port", redisctl.DefaultPort, "Redis client port of the pods")
	fs.StringVar(&f.opts.UsernameFile, "redis-username-file", "", "file holding the Redis ACL user (e.g. a mounted Secret)")
	fs.StringVar(&f.opts.UsernameEnv, "redis-username-env", "", "environment variable holding the Redis ACL user")
	fs.StringVar(&f.opts.PasswordFile, "redis-password-file", "", "file holding the Redis password (e.g. a mounted Secret); never logged")
	fs.StringVar(&f.opts.PasswordEnv, "redis-password-env", "", "environment variable holding the Redis password; never logged")
	fs.BoolVar(&f.tls, "redis-tls", false, "connect to Redis with TLS")
	fs.StringVar(&f.tlsOptions.CAFile, "redis-tls-ca", "", "PEM CA bundle that signs the Redis certificates (default: system roots)")
	fs.StringVar(&f.tlsOptions.CertFile, "redis-tls-cert", "", "PEM client certificate (for tls-auth-clients)")
	fs.StringVar(&f.tlsOptions.KeyFile, "redis-tls-key", "", "PEM client key")
	fs.StringVar(&f.tlsOptions.ServerName, "redis-tls-server-name", "", "name to verify in the Redis certificates (default: the pod IP)")
	fs.BoolVar(&f.tlsOptions.InsecureSkipVerify, "redis-tls-insecure-skip-verify", false, "do not verify Redis certificates (tests only)")
	fs.DurationVar(&f.opts.DialTimeout, "redis-dial-timeout", redisctl.DefaultDialTimeout, "timeout to connect to a Redis node")
	fs.DurationVar(&f.opts.ReadTimeout, "redis-read-timeout", redisctl.DefaultReadTimeout, "timeout for a Redis reply")
	fs.DurationVar(&f.opts.WriteTimeout, "redis-write-timeout", redisctl.DefaultWriteTimeout, "timeout to send a Redis command")
	fs.Int64Var(&f.opts.MaxLagBytes, "max-lag-bytes", redisctl.DefaultMaxLagBytes, "largest replication offset lag (bytes) at which a replica counts as in sync")
	fs.IntVar(&f.opts.MaxLastIOSeconds, "max-last-io-seconds", redisctl.DefaultMaxLastIOSeconds, "largest master_last_io_seconds_ago at which a replica counts as in sync")
}

func (f *redisFlags) client() (*redisctl.Client, error) {
	o := f.opts
	if f.tls {
		t := f.tlsOptions
		o.TLS = &t
	}
	return redisctl.New(o)
}
