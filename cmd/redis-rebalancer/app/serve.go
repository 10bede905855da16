package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	componentbaseconfig "k8s.io/component-base/config"
	leoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/cache"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/handoff"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/metrics"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/serve"
)

// defaultListenAddress is serve's --listen-address.
const defaultListenAddress = ":8080"

// serveOptions are the serve command's options: run's (the policy and its flags), the policy's
// schedule (--schedule), and the leader election and the listener.
type serveOptions struct {
	run            *runOptions
	passOnStart    bool
	listenAddress  string
	leaderElection componentbaseconfig.LeaderElectionConfiguration
	guard          guardOptions
}

func newServeOptions() *serveOptions {
	return &serveOptions{
		run: newRunOptions(), passOnStart: true, listenAddress: defaultListenAddress,
		// The Lease's namespace is filled in when the command runs (the kubeconfig's namespace,
		// or the pod's own in a cluster) unless --leader-elect-resource-namespace is given.
		leaderElection: serve.DefaultLeaderElection(""),
		guard:          newGuardOptions(),
	}
}

func (o *serveOptions) addFlags(fs *pflag.FlagSet) {
	o.run.addFlags(fs)
	o.run.policy.addScheduleFlag(fs)
	fs.BoolVar(&o.passOnStart, "pass-on-start", o.passOnStart, "start a pass as soon as this process leads, then on the schedule")
	fs.StringVar(&o.listenAddress, "listen-address", o.listenAddress, "address of the HTTP listener serving /healthz, /readyz and /metrics")
	leoptions.BindLeaderElectionFlags(&o.leaderElection, fs)
	o.run.policy.addGuardFlags(fs)
	o.guard.addFlags(fs)
}

func newServeCommand() *cobra.Command {
	o := newServeOptions()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run passes on a schedule, as a long-running Deployment with leader election",
		Long: `serve is run as a long-running process: it makes a pass (what run does once) on its own
cron schedule (the policy's schedule, --schedule), and one at once when it starts leading
(--pass-on-start). With --leader-elect (the default) the replicas of a Deployment elect a leader
on a Lease (--leader-elect-resource-namespace, default the pod's namespace;
--leader-elect-resource-name; component-base's timings: lease duration 15s, renew deadline 10s,
retry period 2s): only the leader acts. A leader that cannot renew its Lease stops acting at once
and exits (status 1, to be restarted); a follower takes over when the Lease expires.

Between passes serve watches: informers keep the nodes, pods, StatefulSets,
PodDisruptionBudgets, PersistentVolumeClaims and PersistentVolumes it reads (after their first
LIST, a pass issues no LIST: its report's apiRequests say so), and every selected Redis
cluster's roles are read every --roles-interval (watch.rolesInterval, 5s). When a role change
breaks MasterQuorum (Redis's own promotions after a node loss can leave one zone holding most
masters), serve starts a pass off the schedule, at most one per --quorum-pass-interval
(watch.quorumPassInterval, 1m); the pass waits at its health gate for Redis to settle, respects
the maintenance windows, and restores MasterQuorum with failovers.

One HTTP listener (--listen-address) serves:
  /healthz  200 while the process runs (500 when it leads and has not renewed its Lease in time)
  /readyz   200 once the API server answered, 503 during a graceful stop, and with leader
            election 503 while this replica may not get and update the Lease (or create it
            when missing): checked with SelfSubjectAccessReviews at start and every 30s
  /metrics  Prometheus metrics, prefix redis_rebalancer_ (deploy/README.md "Metrics")

The first SIGTERM or SIGINT is a graceful stop: no further pass starts, the pass in flight
finishes its step or abandons a wait at a safe point (never an eviction after it), the Lease is
released so that another replica takes over at once, then serve exits 0. A second signal stops
every step at once.

The policy (--policy) and every flag of run apply to each pass; -o json prints one JSON report per
pass on stdout.

With --guard (guard.enabled) every replica also serves the eviction guard on a TLS listener
(--guard-listen-address, path /guard/evictions; certificate from --guard-cert-dir, or issued and
rotated here with --guard-self-signed): kube-apiserver sends it the evictions of the Redis
namespaces (a ValidatingWebhookConfiguration on CREATE pods/eviction; deploy/overlays/guard), and
it denies with 429 the eviction of a master serving slots, or of a replica whose shard would be
left without a serving master or an in-sync replica, for at most guard.maxHold. The leader fails
each held master, and every master on a node being emptied (cordoned, or tainted with one of
guard.drainTaints), over to an in-sync replica on a node that stays, one at a time per Redis
cluster (health gate, verified failover, client drain); the evictor's retry then passes. The
guard never evicts. deploy/README.md "The eviction guard" has the details and the security model.`,
		Example: `  # the policy's schedule and windows, leader-elected (deploy/overlays/deployment)
  redis-rebalancer serve --policy /etc/redis-rebalancer/policy.yaml
  # a pass every night at 02:00 Paris time, acting only in a 2h window
  redis-rebalancer serve --schedule "CRON_TZ=Europe/Paris 0 2 * * *" \
    --window "CRON_TZ=Europe/Paris 0 2 * * *|2h" --redis-password-file /etc/redis/password`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.serve(cmd)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// serve resolves the policy (a bad one stops here: nothing has been read; its validation parses
// the schedule as serve.ParseSchedule does), and wires the
// executor, the metrics and the listener into serve.Run.
func (o *serveOptions) serve(cmd *cobra.Command) error {
	p, err := o.run.resolve(cmd.Flags())
	if err != nil {
		return &exitError{ExitError, err}
	}
	if o.leaderElection.LeaderElect {
		if err := validateLease(o.leaderElection); err != nil {
			return &exitError{ExitError, err}
		}
	}
	// What needs no API server is checked, and the listeners bound, before anything starts.
	if err := checkAddress("listen-address", o.listenAddress); err != nil {
		return &exitError{ExitError, err}
	}
	if p.Guard.Enabled {
		if err := o.guard.check(); err != nil {
			return &exitError{ExitError, err}
		}
	}
	l, err := net.Listen("tcp", o.listenAddress)
	if err != nil {
		return &exitError{ExitError, fmt.Errorf("--listen-address: %w", err)}
	}
	defer l.Close()
	var guardL net.Listener
	if p.Guard.Enabled {
		if guardL, err = net.Listen("tcp", o.guard.listenAddress); err != nil {
			return &exitError{ExitError, fmt.Errorf("--guard-listen-address: %w", err)}
		}
		defer guardL.Close()
	}
	stop, ctx, release := gracefulSignals(cmd.Context())
	defer release()
	m := metrics.New(buildInfo())
	o.run.observer, o.run.serving = m, true
	client, err := o.run.kube.connect(ctx)
	if err != nil {
		return &exitError{ExitError, err}
	}
	watched, trigger, closeWatch, err := o.watch(ctx, client, p)
	if err != nil {
		return &exitError{ExitError, err}
	}
	defer closeWatch()
	o.run.source = watched
	// The passes leave a cluster to the hand-off while it moves the cluster's masters off nodes
	// being emptied (handoff.Controller.Busy): it is started below, with the guard.
	var handOff atomic.Pointer[handoff.Controller]
	o.run.yield = func(key string) (string, bool) {
		if h := handOff.Load(); h != nil {
			return h.Busy(key)
		}
		return "", false
	}
	// The passes plan again only the clusters whose objects or roles changed (plan.Memo).
	ex, closeRedis, err := o.run.executor(ctx, client, p, progressOut(cmd, p), stop, execute.Compliance{Memo: &plan.Memo{}})
	if err != nil {
		return &exitError{ExitError, err}
	}
	defer closeRedis()
	le := o.leaderElection
	if le.LeaderElect && le.ResourceNamespace == "" {
		if le.ResourceNamespace, err = o.run.kube.namespace(); err != nil {
			return &exitError{ExitError, err}
		}
	}
	identity := ""
	if le.LeaderElect {
		if identity, err = leaseIdentity(); err != nil {
			return &exitError{ExitError, err}
		}
	}
	scfg := serve.Config{
		Client: client, Schedule: p.Schedule, PassOnStart: o.passOnStart,
		LeaderElection: le, Identity: identity, Listener: l, Metrics: m, Stop: stop,
		Trigger: trigger, TriggerMinInterval: p.Watch.QuorumPassInterval.Duration,
		Pass: func(ctx context.Context, stop <-chan struct{}) {
			// The first sync is waited for until the graceful stop too: a cache that cannot sync
			// (RBAC, an API server gone) must not hold the stop up.
			sctx, cancel := untilStop(ctx, stop)
			err := watched.WaitForSync(sctx)
			cancel()
			if err != nil {
				klog.ErrorS(err, "Pass not started")
				return
			}
			start := time.Now()
			before := o.run.kube.requests.Counts()
			rep, runErr := ex.Run(ctx)
			// The pass's own requests: the counter counts the informers' too, since start-up.
			rep.APIRequests = observe.Since(rep.APIRequests, before)
			o.run.report(cmd, p, rep, runErr)
			m.RunDone(time.Now(), time.Since(start), rep.Outcome)
			if runErr != nil {
				klog.ErrorS(runErr, "Pass ended with an error")
			}
			klog.InfoS("Pass ended", "outcome", rep.Outcome, "clusters", len(rep.Clusters), "evictions", rep.Moves(), "seconds", rep.Seconds)
		},
	}
	if p.Guard.Enabled {
		gr, err := o.startGuard(ctx, stop, client, watched, guardL, p, ex, o.run.redis, m, o.run.dryRun)
		if errors.Is(err, errStopped) {
			klog.InfoS("Graceful stop before serving", "waitingFor", err.Error())
			return nil
		}
		if err != nil {
			return &exitError{ExitError, err}
		}
		defer gr.close()
		defer gr.listener.Close()
		scfg.GuardListener, scfg.Guard, scfg.GuardPath = gr.listener, gr.guard, guard.Path
		if gr.handOff != nil {
			handOff.Store(gr.handOff)
			scfg.Leading = append(scfg.Leading, gr.handOff.Run)
		}
	}
	err = serve.Run(ctx, scfg)
	if err != nil {
		// serve.ErrLeaseLost included: the process exits and is restarted.
		return &exitError{ExitError, err}
	}
	return nil
}

// errStopped is the cause of a wait that the graceful stop ended (untilStop).
var errStopped = errors.New("graceful stop")

// untilStop returns a context that ends with ctx or when stop is closed (its cause then
// errStopped), for the waits of serve's start and of a pass's start: the graceful stop must not
// wait for them.
func untilStop(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-stop:
			cancel(errStopped)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// checkAddress checks a listener flag's HOST:PORT (a port 0 to 65535, or a service name).
func checkAddress(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return fmt.Errorf("--%s %q: %w: HOST:PORT, the port 0 to 65535 (e.g. :8080)", flag, addr, err)
	}
	return nil
}

// watch starts serve's watched cache on client (the informers of what the rules read, and every
// selected Redis cluster's roles read every watch.rolesInterval through a Redis client of its
// own) and its MasterQuorum watch, which sends on the returned channel the reason to start a
// pass whenever it finds MasterQuorum broken. stop stops the informers and the roles' reads,
// waits for the informers to return, and closes the roles' client; the informers stop with ctx
// too.
func (o *serveOptions) watch(ctx context.Context, client kubernetes.Interface, p *policy) (*cache.Cache, <-chan string, func(), error) {
	sel, err := selection(&p.Selection)
	if err != nil {
		return nil, nil, nil, err
	}
	opts, err := rules(p)
	if err != nil {
		return nil, nil, nil, err
	}
	rc, err := redisClient(ctx, client, &p.Redis)
	if err != nil {
		return nil, nil, nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	c := cache.New(client, cache.Options{
		Namespace: sel.Namespace, ClusterLabel: p.Selection.ClusterLabel, Redis: rc, Selection: sel,
		RolesInterval: p.Watch.RolesInterval.Duration,
	})
	trigger := make(chan string, 1)
	c.QuorumWatch(opts, func(key string, vs []policies.Violation) {
		why := fmt.Sprintf("%s: %s", key, vs[0].Message)
		select {
		case trigger <- why:
		default: // a reason is pending already
		}
	})
	c.Start(wctx)
	return c, trigger, func() { cancel(); c.Wait(); rc.Close() }, nil
}
