package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// The option groups the commands share. Each group's defaults are set once, by its new…Options
// function, and addFlags binds every field to its flag with the field's current value as the
// flag's default (the descheduler's options pattern).

// Defaults of the Kubernetes client.
const (
	// defaultKubeAPIQPS is --kube-api-qps: queries per second to the API server.
	defaultKubeAPIQPS = 50
	// defaultKubeAPIBurst is --kube-api-burst.
	defaultKubeAPIBurst = 100
)

// kubeOptions reach the Kubernetes API server.
type kubeOptions struct {
	kubeconfig, context string
	qps                 float32
	burst               int
	// requests counts the requests of the clients restConfig makes (run reports them).
	requests *observe.RequestCounter
}

func newKubeOptions() kubeOptions {
	return kubeOptions{qps: defaultKubeAPIQPS, burst: defaultKubeAPIBurst}
}

func (o *kubeOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "path to a kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	fs.StringVar(&o.context, "context", o.context, "kubeconfig context to use (default: the current context)")
	fs.Float32Var(&o.qps, "kube-api-qps", o.qps, "queries per second to the API server")
	fs.IntVar(&o.burst, "kube-api-burst", o.burst, "burst of queries to the API server")
}

// restConfig loads the kubeconfig the usual way (explicit path, $KUBECONFIG, ~/.kube/config),
// falling back to the in-cluster configuration. Its requests are counted in o.requests.
func (o *kubeOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	cfg.UserAgent = "redis-rebalancer/" + Version
	if o.requests == nil {
		o.requests = observe.NewRequestCounter()
	}
	o.requests.Wrap(cfg)
	return cfg, nil
}

func (o *kubeOptions) client() (kubernetes.Interface, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// redisOptions reach the Redis nodes.
type redisOptions struct {
	opts       redisctl.Options
	tls        bool
	tlsOptions redisctl.TLSOptions
}

func newRedisOptions() redisOptions {
	return redisOptions{opts: redisctl.Options{
		Port:        redisctl.DefaultPort,
		DialTimeout: redisctl.DefaultDialTimeout, ReadTimeout: redisctl.DefaultReadTimeout, WriteTimeout: redisctl.DefaultWriteTimeout,
		MaxLagBytes: redisctl.DefaultMaxLagBytes, MaxLastIOSeconds: redisctl.DefaultMaxLastIOSeconds,
	}}
}

func (o *redisOptions) addFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.opts.Port, "redis-port", o.opts.Port, "Redis client port of the pods")
	fs.StringVar(&o.opts.UsernameFile, "redis-username-file", o.opts.UsernameFile, "file holding the Redis ACL user (e.g. a mounted Secret)")
	fs.StringVar(&o.opts.UsernameEnv, "redis-username-env", o.opts.UsernameEnv, "environment variable holding the Redis ACL user")
	fs.StringVar(&o.opts.PasswordFile, "redis-password-file", o.opts.PasswordFile, "file holding the Redis password (e.g. a mounted Secret); never logged")
	fs.StringVar(&o.opts.PasswordEnv, "redis-password-env", o.opts.PasswordEnv, "environment variable holding the Redis password; never logged")
	fs.BoolVar(&o.tls, "redis-tls", o.tls, "connect to Redis with TLS")
	fs.StringVar(&o.tlsOptions.CAFile, "redis-tls-ca", o.tlsOptions.CAFile, "PEM CA bundle that signs the Redis certificates (default: system roots)")
	fs.StringVar(&o.tlsOptions.CertFile, "redis-tls-cert", o.tlsOptions.CertFile, "PEM client certificate (for tls-auth-clients)")
	fs.StringVar(&o.tlsOptions.KeyFile, "redis-tls-key", o.tlsOptions.KeyFile, "PEM client key")
	fs.StringVar(&o.tlsOptions.ServerName, "redis-tls-server-name", o.tlsOptions.ServerName, "name to verify in the Redis certificates (default: the pod IP)")
	fs.BoolVar(&o.tlsOptions.InsecureSkipVerify, "redis-tls-insecure-skip-verify", o.tlsOptions.InsecureSkipVerify, "do not verify Redis certificates (tests only)")
	fs.DurationVar(&o.opts.DialTimeout, "redis-dial-timeout", o.opts.DialTimeout, "timeout to connect to a Redis node")
	fs.DurationVar(&o.opts.ReadTimeout, "redis-read-timeout", o.opts.ReadTimeout, "timeout for a Redis reply")
	fs.DurationVar(&o.opts.WriteTimeout, "redis-write-timeout", o.opts.WriteTimeout, "timeout to send a Redis command")
	fs.Int64Var(&o.opts.MaxLagBytes, "max-lag-bytes", o.opts.MaxLagBytes, "largest replication offset lag (bytes) at which a replica counts as in sync")
	fs.IntVar(&o.opts.MaxLastIOSeconds, "max-last-io-seconds", o.opts.MaxLastIOSeconds, "largest master_last_io_seconds_ago at which a replica counts as in sync")
}

func (o *redisOptions) client() (*redisctl.Client, error) {
	opts := o.opts
	if o.tls {
		t := o.tlsOptions
		opts.TLS = &t
	}
	return redisctl.New(opts)
}

// releaseReplicaClaimsUsage is --release-replica-claims' help in check, plan and lint (run
// refuses the flag).
const releaseReplicaClaimsUsage = "allow moving a replica away from a zonal PersistentVolume (its claim is released; it resyncs from its master)"

// policyOptions select the Redis clusters and tune the rules that judge them.
type policyOptions struct {
	namespace, selector      string
	clusterLabel, shardLabel string
	relaxed                  bool
	releaseReplicaClaims     bool
}

func newPolicyOptions() policyOptions {
	return policyOptions{clusterLabel: policies.DefaultClusterLabel}
}

// addFlags binds the options; releaseUsage is --release-replica-claims' help.
func (o *policyOptions) addFlags(fs *pflag.FlagSet, releaseUsage string) {
	fs.StringVarP(&o.namespace, "namespace", "n", o.namespace, "only this namespace (default: all namespaces)")
	fs.StringVarP(&o.selector, "selector", "l", o.selector, "only Redis clusters with a pod matching this label selector (e.g. app.kubernetes.io/name=redis)")
	fs.StringVar(&o.clusterLabel, "cluster-label", o.clusterLabel, "pod label whose value names the Redis cluster (seed example: cloud.netease.com/cluster-name)")
	fs.StringVar(&o.shardLabel, "shard-label", o.shardLabel, "pod label whose value names the shard (default: the pod's StatefulSet)")
	fs.BoolVar(&o.relaxed, "relaxed-limits", o.relaxed, `seed 000 §四: allow "at most" N/3 pods per node and N/2 per zone instead of "fewer than"`)
	fs.BoolVar(&o.releaseReplicaClaims, "release-replica-claims", o.releaseReplicaClaims, releaseUsage)
}

// rules returns the rules' options (the role label is the snapshot options').
func (o *policyOptions) rules() policies.Options {
	return policies.Options{
		ClusterLabel: o.clusterLabel, ShardLabel: o.shardLabel,
		RelaxedLimits: o.relaxed, ReleaseReplicaClaims: o.releaseReplicaClaims,
	}
}

// selection returns the clusters --namespace and --selector pick.
func (o *policyOptions) selection() (observe.Selection, error) {
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return observe.Selection{}, fmt.Errorf("--selector: %w", err)
	}
	return observe.Selection{Namespace: o.namespace, Selector: sel}, nil
}

// snapshotOptions say where the cluster state comes from (the API server, or a file) and where
// the roles come from (Redis, or a pod label).
type snapshotOptions struct {
	file       string
	roleLabel  string
	redisRoles bool
	// redisDeadline bounds each pass that reads every cluster's Redis at once (roles, health).
	redisDeadline time.Duration
	chunkSize     int64
}

func newSnapshotOptions() snapshotOptions {
	return snapshotOptions{redisRoles: true, redisDeadline: observe.DefaultRedisDeadline, chunkSize: observe.DefaultPageSize}
}

func (o *snapshotOptions) addFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&o.chunkSize, "chunk-size", o.chunkSize, "live: objects per LIST request, as kubectl's --chunk-size (0: each resource in one request)")
	fs.StringVar(&o.file, "snapshot", o.file, "read the cluster state from `FILE` instead of the API server: what \"kubectl get nodes,pods,statefulsets,poddisruptionbudgets,pvc,pv -A -o yaml\" (or -o json) prints; - for stdin")
	fs.StringVar(&o.roleLabel, "role-label", o.roleLabel, "pod label giving the Redis role offline (master, replica/slave); roles are unknown without it")
	fs.BoolVar(&o.redisRoles, "redis-roles", o.redisRoles, "live: read each pod's Redis role from Redis (needs network access to the pod IPs)")
	fs.DurationVar(&o.redisDeadline, "redis-deadline", o.redisDeadline, "live: bound on reading the roles, then the health, of every Redis cluster (all clusters at once); what is not read by then stays unknown (roles) or unhealthy (health) (0: each node's read timeout only)")
}

// redisContext returns ctx bounded by --redis-deadline (unbounded when 0).
func (o *snapshotOptions) redisContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.redisDeadline <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, o.redisDeadline)
}

// modelOptions are what check, plan and lint need to build the model: the four groups above.
type modelOptions struct {
	kube     kubeOptions
	redis    redisOptions
	policy   policyOptions
	snapshot snapshotOptions
}

func newModelOptions() modelOptions {
	return modelOptions{kube: newKubeOptions(), redis: newRedisOptions(), policy: newPolicyOptions(), snapshot: newSnapshotOptions()}
}

func (o *modelOptions) addFlags(fs *pflag.FlagSet) {
	o.kube.addFlags(fs)
	o.policy.addFlags(fs, releaseReplicaClaimsUsage)
	o.redis.addFlags(fs)
	o.snapshot.addFlags(fs)
}

// model loads the snapshot (live or from the file), builds the model and keeps the selected
// clusters; live, when readRoles is set and no role label is given, it reads the roles from
// Redis. Notes and warnings go to errOut.
func (o *modelOptions) model(ctx context.Context, errOut io.Writer, readRoles bool) (*policies.Model, error) {
	opts := o.policy.rules()
	opts.RoleLabel = o.snapshot.roleLabel
	sel, err := o.policy.selection()
	if err != nil {
		return nil, err
	}
	var m *policies.Model
	if o.snapshot.file != "" {
		snap, skipped, err := observe.LoadSnapshotFile(o.snapshot.file)
		if err != nil {
			return nil, err
		}
		if err := observe.CheckSnapshot(snap); err != nil {
			return nil, err
		}
		if len(skipped) > 0 {
			var kinds []string
			for k, n := range skipped {
				kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
			}
			sort.Strings(kinds)
			fmt.Fprintf(errOut, "note: %s skipped (not used by the rules)\n", strings.Join(kinds, ", "))
		}
		if m, err = observe.Model(snap, opts, sel); err != nil {
			return nil, err
		}
		return m, nil
	}
	client, err := o.kube.client()
	if err != nil {
		return nil, err
	}
	snap, err := observe.ReadSnapshotPaged(ctx, client, sel.Namespace, o.snapshot.chunkSize)
	if err != nil {
		return nil, err
	}
	if m, err = observe.Model(snap, opts, sel); err != nil {
		return nil, err
	}
	if readRoles && o.snapshot.roleLabel == "" {
		rc, err := o.redis.client()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		rctx, cancel := o.snapshot.redisContext(ctx)
		defer cancel()
		errs := observe.ReadRoles(rctx, rc, m.Clusters)
		for _, c := range m.Clusters {
			if err, ok := errs[c.Key()]; ok {
				fmt.Fprintf(errOut, "warning: %s: roles unknown: %v\n", c.Key(), err)
			}
		}
	}
	return m, nil
}

// defaultGCPercent is the garbage collector's target (runtime/debug.SetGCPercent) of every
// command unless the GOGC environment variable sets one. A command's heap is mostly the snapshot
// and the model, built once and then read: collecting when the heap has grown by half its live
// size instead of all of it keeps the peak of `check` on the scale benchmark's 5,000 nodes under
// 1 GiB (issue 12), for about a quarter more CPU.
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent unless GOGC is set.
func setGCPercent() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// validateFlags rejects a negative value given to any number or duration flag of fs: no flag of
// redis-rebalancer takes one (each is a count, a bound, a size, a port, a rate or a timeout), and
// a negative value would otherwise mean "no bound" to one library and an odd answer to another.
// Flags left at their defaults are not looked at.
func validateFlags(fs *pflag.FlagSet) error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "int", "int8", "int16", "int32", "int64", "float32", "float64", "duration":
			if strings.HasPrefix(f.Value.String(), "-") {
				errs = append(errs, fmt.Errorf("--%s must not be negative, got %s", f.Name, f.Value))
			}
		}
	})
	return errors.Join(errs...)
}

// defaultTableOutput is -o of check, plan and lint.
const defaultTableOutput = "table"

// analysisOptions are check's and lint's options, and plan's but for the planner's bounds: where
// the model comes from, and the output format (-o table or json).
type analysisOptions struct {
	model  modelOptions
	output string
}

func newAnalysisOptions() analysisOptions {
	return analysisOptions{model: newModelOptions(), output: defaultTableOutput}
}

// addFlags binds the options; outputUsage is -o's help.
func (o *analysisOptions) addFlags(fs *pflag.FlagSet, outputUsage string) {
	o.model.addFlags(fs)
	fs.StringVarP(&o.output, "output", "o", o.output, outputUsage)
}

func (o *analysisOptions) validate() error {
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("-o must be table or json, got %q", o.output)
	}
	return nil
}

// contractUsage is -o's help in check and plan.
const contractUsage = "table or json (the JSON contract is in the README)"

// durationText writes d as the help texts do: "30s", "2m".
func durationText(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
