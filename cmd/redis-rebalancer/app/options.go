package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// The option groups the commands share. Each group's defaults are set once, by its new…Options
// function, and addFlags binds every field to its flag with the field's current value as the
// flag's default (the descheduler's options pattern). The policy's flags are policyOptions'
// (policyflags.go): their defaults are the RebalancerPolicy's (api/v1alpha1/defaults.go).

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
	// reached is set once connect found the API server answering.
	reached bool
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

// clientConfig is the kubeconfig the usual way (explicit path, $KUBECONFIG, ~/.kube/config),
// falling back to the in-cluster configuration.
func (o *kubeOptions) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// namespace is the kubeconfig context's namespace, or in a cluster the pod's own ("default"
// when neither says).
func (o *kubeOptions) namespace() (string, error) {
	ns, _, err := o.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("kubeconfig: namespace: %w", err)
	}
	return ns, nil
}

// restConfig loads the kubeconfig the usual way (explicit path, $KUBECONFIG, ~/.kube/config),
// falling back to the in-cluster configuration; the clients made from it count their requests
// (o.requests).
func (o *kubeOptions) restConfig() (*rest.Config, error) {
	cfg, err := o.loadConfig()
	if err != nil {
		return nil, err
	}
	if o.requests == nil {
		o.requests = observe.NewRequestCounter()
	}
	o.requests.Wrap(cfg)
	return cfg, nil
}

// serviceAccountTokenFile is where a pod's service account token is mounted (client-go's
// in-cluster configuration reads it there).
const serviceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// loadConfig is restConfig without the request counter. When no configuration is found it says
// why: in a cluster without the service account token (automountServiceAccountToken: false),
// or outside one without a kubeconfig (client-go only says "try setting KUBERNETES_MASTER").
func (o *kubeOptions) loadConfig() (*rest.Config, error) {
	cfg, err := o.clientConfig().ClientConfig()
	if err != nil {
		if !clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		switch {
		case host != "" && port != "":
			return nil, fmt.Errorf("kubeconfig: none, and in a cluster (KUBERNETES_SERVICE_HOST is set) there is no service account token at %s: mount it (automountServiceAccountToken: true on the pod or its ServiceAccount), or give --kubeconfig", serviceAccountTokenFile)
		case host != "" || port != "":
			return nil, errors.New("kubeconfig: none, and of the in-cluster variables KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT only one is set: give --kubeconfig")
		}
		return nil, errors.New("kubeconfig: none found (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a cluster: give --kubeconfig FILE")
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	cfg.UserAgent = "redis-rebalancer/" + Version
	return cfg, nil
}

func (o *kubeOptions) client() (kubernetes.Interface, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// apiProbeTimeout bounds connect's first request: an API server that does not answer /version
// in this long is named as unreachable instead of being waited for by every later step.
const apiProbeTimeout = 10 * time.Second

// connect returns a client of the API server after checking, once per kubeOptions and within
// apiProbeTimeout, that the server answers (GET /version, not counted in o.requests): an
// unreachable server, or one that refuses the credentials, is named at once with its address
// instead of surfacing minutes later as a Lease or a cache that cannot sync.
func (o *kubeOptions) connect(ctx context.Context) (kubernetes.Interface, error) {
	if !o.reached {
		cfg, err := o.loadConfig()
		if err != nil {
			return nil, err
		}
		if err := probeAPIServer(ctx, cfg); err != nil {
			return nil, err
		}
		o.reached = true
	}
	return o.client()
}

// probeAPIServer asks the API server of cfg for its version, within apiProbeTimeout.
func probeAPIServer(ctx context.Context, cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return fmt.Errorf("API server %s: %w", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, apiProbeTimeout)
	defer cancel()
	_, err = dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("API server %s refuses the credentials (401 Unauthorized): check the kubeconfig's user, or the service account token: %w", cfg.Host, err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("API server %s did not answer within %s: check the kubeconfig's server address and the network", cfg.Host, apiProbeTimeout)
	case apierrors.ReasonForError(err) != metav1.StatusReasonUnknown:
		return fmt.Errorf("API server %s: GET /version: %w", cfg.Host, err)
	}
	return fmt.Errorf("API server %s unreachable: %w (check the kubeconfig's server address and the network)", cfg.Host, err)
}

// snapshotOptions say where the cluster state comes from (the API server, or a file) and Redis's
// view of it (read live, or CLUSTER NODES files offline).
type snapshotOptions struct {
	file string
	// redisNodes is --redis-nodes: CLUSTER NODES files (observe.LoadRedisNodes), offline.
	redisNodes string
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
	fs.StringVar(&o.file, "snapshot", o.file, "read the cluster state from `FILE` instead of the API server: what \"kubectl get nodes,pods,sts,pdb,pvc,pv,csinodes,services -A -o yaml\" (or -o json) prints, at most 8 GiB and 64 MiB an object; - for stdin")
	fs.StringVar(&o.redisNodes, "redis-nodes", o.redisNodes, "with --snapshot: Redis's view, as `FILE` or a directory of files, each what \"redis-cli cluster nodes\" prints for one Redis cluster, named <namespace>_<cluster>[.ext] (the cluster label's value), at most 16 MiB each: roles and, by --shard-source, shards come from it exactly as live")
	fs.BoolVar(&o.redisRoles, "redis-roles", o.redisRoles, "live: read each pod's Redis role (and, by --shard-source, shard) from Redis (needs network access to the pod IPs)")
	fs.DurationVar(&o.redisDeadline, "redis-deadline", o.redisDeadline, "live: bound on reading the roles, then the health, of every Redis cluster (all clusters at once); what is not read by then stays unknown (roles) or unhealthy (health) (0: each node's read timeout only)")
	zeroMeans(fs, "chunk-size", "redis-deadline")
}

// redisContext returns ctx bounded by --redis-deadline (unbounded when 0).
func (o *snapshotOptions) redisContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.redisDeadline <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, o.redisDeadline)
}

// modelOptions are what check, plan and lint need to build the model: the API server, the policy
// (selection, rules, Redis) and the snapshot.
type modelOptions struct {
	kube     kubeOptions
	policy   *policyOptions
	snapshot snapshotOptions
}

func newModelOptions() modelOptions {
	return modelOptions{kube: newKubeOptions(), policy: newPolicyOptions(), snapshot: newSnapshotOptions()}
}

// addFlags binds the options; releaseUsage is --release-replica-claims' help.
func (o *modelOptions) addFlags(fs *pflag.FlagSet, releaseUsage string) {
	o.kube.addFlags(fs)
	o.policy.addPolicyFlag(fs)
	o.policy.addSelectionFlags(fs, releaseUsage)
	o.policy.addRedisFlags(fs)
	o.snapshot.addFlags(fs)
}

// model loads the snapshot (live or from the file), builds the model with p's rules and keeps the
// clusters p selects; live, when readRedis is set, it reads the roles and shards from Redis,
// offline from --redis-nodes' files. Notes and warnings go to errOut. The Redis client it read
// Redis with (live with readRedis only; nil otherwise) is returned open, for the caller's further
// reads (check's health) and to close.
func (o *modelOptions) model(ctx context.Context, errOut io.Writer, p *policy, readRedis bool) (*policies.Model, *redisctl.Client, error) {
	snap, err := o.readSnapshot(ctx, errOut, p)
	if err != nil {
		return nil, nil, err
	}
	return o.build(ctx, errOut, p, snap, readRedis)
}

// readSnapshot loads the snapshot from the file (checked: CheckSnapshot; the kinds it skipped
// noted on errOut) or lists it from the API server (the namespace p selects).
func (o *modelOptions) readSnapshot(ctx context.Context, errOut io.Writer, p *policy) (*policies.Snapshot, error) {
	sel, err := selection(&p.Selection)
	if err != nil {
		return nil, err
	}
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
		return snap, nil
	}
	if o.snapshot.redisNodes != "" {
		return nil, errors.New("--redis-nodes needs --snapshot: live, Redis is read")
	}
	client, err := o.kube.connect(ctx)
	if err != nil {
		return nil, err
	}
	return observe.ReadSnapshotPaged(ctx, client, sel.Namespace, o.snapshot.chunkSize)
}

// build builds the model of snap with p's rules, keeps the clusters p selects and reads the roles
// and shards: offline from --redis-nodes' files, live from Redis when readRedis is set (model's
// Redis client returned open).
func (o *modelOptions) build(ctx context.Context, errOut io.Writer, p *policy, snap *policies.Snapshot, readRedis bool) (*policies.Model, *redisctl.Client, error) {
	opts, err := rules(p)
	if err != nil {
		return nil, nil, err
	}
	sel, err := selection(&p.Selection)
	if err != nil {
		return nil, nil, err
	}
	m, err := observe.Model(snap, opts, sel)
	if err != nil {
		return nil, nil, err
	}
	// A selection that matches nothing is an error (a typo), unless allowed.
	if err := sel.Check(snap, opts, m); err != nil {
		return nil, nil, err
	}
	if o.snapshot.file != "" {
		var nodes map[string][]policies.RedisNode
		if o.snapshot.redisNodes != "" {
			if nodes, err = observe.LoadRedisNodes(o.snapshot.redisNodes); err != nil {
				return nil, nil, err
			}
		}
		for _, k := range observe.ApplyRedisNodes(m, nodes) {
			fmt.Fprintf(errOut, "note: --redis-nodes: no selected Redis cluster %s in the snapshot; its file is not used\n", k)
		}
		if err := shardsRead(m, "no CLUSTER NODES was given", `offline, give --redis-nodes FILE|DIR (what "redis-cli cluster nodes" prints, a file per cluster named <namespace>_<cluster>)`); err != nil {
			return nil, nil, err
		}
		return m, nil, nil
	}
	if !readRedis {
		if err := shardsRead(m, "Redis is not read (--redis-roles=false)", "give --redis-roles"); err != nil {
			return nil, nil, err
		}
		return m, nil, nil
	}
	client, err := o.kube.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	rc, err := redisClient(ctx, client, &p.Redis)
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := o.snapshot.redisContext(ctx)
	defer cancel()
	errs := observe.ReadRedis(rctx, rc, m.Clusters)
	if !observe.NamesWorkloads(opts) {
		// No workload selector: a workload is Redis when its pods answer as Redis Cluster nodes.
		dropped := observe.DropNotRedis(m, errs)
		for _, k := range dropped {
			klog.V(2).InfoS("Left out: no Redis Cluster", "cluster", k, "reason", errs[k])
		}
		if err := sel.CheckRedis(m, dropped, errs); err != nil {
			rc.Close()
			return nil, nil, err
		}
	}
	for _, c := range m.Clusters {
		if err, ok := errs[c.Key()]; ok {
			fmt.Fprintf(errOut, "warning: %s: roles unknown: %v\n", c.Key(), err)
		}
	}
	return m, rc, nil
}

// shardsRead refuses a model whose shards come from Redis when Redis's view was not given (why),
// live or offline: every pod would be a shard of its own and the rules that read shards would
// pass on nothing. fix is the first remedy the error offers.
func shardsRead(m *policies.Model, why, fix string) error {
	var unread []string
	for _, c := range m.Clusters {
		if c.ShardsUnread() {
			unread = append(unread, c.Key())
		}
	}
	if len(unread) > 0 {
		return fmt.Errorf("shards come from Redis (shardSource redis, set or by the layout) and %s for %s: %s or --shard-source label:KEY", why, strings.Join(unread, ", "), fix)
	}
	return nil
}

// defaultGCPercent is the garbage collector's target (runtime/debug.SetGCPercent) of every
// command unless the GOGC environment variable sets one. A command's heap is mostly the snapshot
// and the model, built once and then read: collecting when the heap has grown by half its live
// size instead of all of it keeps the peak of `check` on the scale benchmark's 5,000 nodes under
// 1 GiB, for about a quarter more CPU.
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent unless GOGC is set.
func setGCPercent() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// zeroMeansAnnotation marks a number or duration flag whose 0 means something its help says
// ("0: each resource in one request"); validateFlags refuses 0 for every other one.
const zeroMeansAnnotation = "rebalancer.redis.io/zero-means"

// zeroMeans marks the flags of fs named names with zeroMeansAnnotation.
func zeroMeans(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		_ = fs.SetAnnotation(n, zeroMeansAnnotation, []string{"true"})
	}
}

// nonEmptyFlags are the string flags whose empty value means nothing (a file, an address, a
// name, an enumeration): given as "" on the command line (-o ”, --snapshot "" from an unset
// variable) they are refused instead of being taken as left out. Each maps to what to give.
var nonEmptyFlags = map[string]string{
	"output":                     "a format (--help lists them)",
	"snapshot":                   "a FILE (- for standard input), or leave the flag out to read the API server",
	"redis-nodes":                "a FILE or a directory",
	"policy":                     "a FILE (- for standard input), or leave the flag out for the defaults",
	"schedule":                   "a cron expression, or leave the flag out for the policy's schedule",
	"window-step-estimate":       "bound or p95",
	"failover-mode":              "default, force or takeover",
	"shard-source":               "owner, redis, label:KEY or auto",
	"window-history-configmap":   "a ConfigMap name",
	"listen-address":             "HOST:PORT",
	"guard-listen-address":       "HOST:PORT",
	"guard-cert-dir":             "a directory",
	"guard-cert-secret":          "a Secret name",
	"guard-service":              "a Service name",
	"leader-elect-resource-name": "a Lease name",
}

// validateFlags rejects a negative value given to any number or duration flag of fs, and 0 given
// to one whose help does not say what 0 means (zeroMeansAnnotation): no flag of redis-rebalancer
// takes a negative value (each is a count, a bound, a size, a port, a rate or a timeout), and
// such a value, or a 0 with no meaning of its own, would otherwise mean "no bound" to one library,
// the default to another, and an odd answer to a third. It also rejects NaN and infinities given
// to a float flag, a size (a quantity flag: the logging buffers) that is negative or does not fit
// in 64 bits (1e30), and "" given to a flag of nonEmptyFlags. Flags left at their defaults are
// not looked at, nor the numbers of flags bound to the policy (policyFieldAnnotation): the
// policy's validation judges those and names the field.
func validateFlags(fs *pflag.FlagSet) error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if what, ok := nonEmptyFlags[f.Name]; ok && strings.TrimSpace(v) == "" && f.Value.Type() == "string" {
			errs = append(errs, fmt.Errorf("--%s is empty: give %s", f.Name, what))
			return
		}
		if _, ok := f.Annotations[policyFieldAnnotation]; ok {
			return
		}
		switch f.Value.Type() {
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "duration":
			if x, err := strconv.ParseFloat(v, 64); err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
				errs = append(errs, fmt.Errorf("--%s must be a number, got %s", f.Name, v))
				return
			}
			if strings.HasPrefix(v, "-") {
				errs = append(errs, fmt.Errorf("--%s must not be negative, got %s", f.Name, f.Value))
				return
			}
			if _, ok := f.Annotations[zeroMeansAnnotation]; !ok && zeroText(v) {
				errs = append(errs, fmt.Errorf("--%s must be positive, got %s: 0 has no meaning here (leave the flag out for its default, %s)", f.Name, v, f.DefValue))
			}
		case "quantity":
			q, err := resource.ParseQuantity(v)
			if n, ok := q.AsInt64(); err != nil || !ok || n < 0 {
				errs = append(errs, fmt.Errorf("--%s %s: not a size in bytes: a whole number under 8Ei, such as 512, 4Ki or 64Mi", f.Name, v))
			}
		}
	})
	return errors.Join(errs...)
}

// zeroText reports whether a number or duration flag's value is 0.
func zeroText(v string) bool {
	if d, err := time.ParseDuration(v); err == nil {
		return d == 0
	}
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && f == 0
}

// analysisOptions are check's and lint's options, and plan's but for the planner's bounds: where
// the model comes from, and the output format.
type analysisOptions struct {
	model modelOptions
}

func newAnalysisOptions() analysisOptions {
	return analysisOptions{model: newModelOptions()}
}

// addFlags binds the options; usage is -o's help.
func (o *analysisOptions) addFlags(fs *pflag.FlagSet, usage string) {
	o.model.addFlags(fs, releaseReplicaClaimsUsage)
	o.model.policy.addOutputFlag(fs, usage)
}

// contractUsage is -o's help in check and plan.
var contractUsage = outputUsage("the JSON contract is in the README")
