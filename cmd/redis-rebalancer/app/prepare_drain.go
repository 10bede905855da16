package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/execute"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// prepareDrainOptions are prepare-drain's options: run's (the API server, the policy and its
// flags, --dry-run, --ignore-windows, -o), where the state comes from (--snapshot and the Redis
// flags of check and plan) and the zone to drain.
type prepareDrainOptions struct {
	run      *runOptions
	snapshot snapshotOptions
	zone     string
}

func newPrepareDrainOptions() *prepareDrainOptions {
	return &prepareDrainOptions{run: newRunOptions(), snapshot: newSnapshotOptions()}
}

func (o *prepareDrainOptions) addFlags(fs *pflag.FlagSet) {
	o.run.addFlags(fs)
	o.snapshot.addFlags(fs)
	fs.StringVar(&o.zone, "zone", o.zone, "drain every node of `ZONE` (its topology.kubernetes.io/zone label, or the legacy failure-domain one)")
}

// models returns the model options prepare-drain reads the cluster with (run's API server and
// policy, its own snapshot flags).
func (o *prepareDrainOptions) models() *modelOptions {
	return &modelOptions{kube: o.run.kube, policy: o.run.policy, snapshot: o.snapshot}
}

func newPrepareDrainCommand() *cobra.Command {
	o := newPrepareDrainOptions()
	cmd := &cobra.Command{
		Use:   "prepare-drain NODE... | --zone ZONE",
		Short: "Hand Redis masters off the nodes a drain will empty, then say if the drain is safe",
		Long: `prepare-drain gets Redis Clusters ready for "kubectl drain" (a kernel or Kubernetes upgrade, a
node-pool upgrade) of the nodes named, or of every node of --zone. A PodDisruptionBudget cannot
tell a Redis master from a replica, so a drain evicts masters blindly: their slots' writes fail
until Redis promotes a replica. prepare-drain first moves every master serving slots off those
nodes, with the fewest failovers (CLUSTER FAILOVER on an in-sync replica on a node that stays; no
pod moves) chosen so that MasterQuorum holds over the nodes that stay (no staying node, nor with
3 zones or more a staying zone, holds half of the masters); a master on a staying node is failed
over too when the masters coming off need its room. Each failover is a failover step of run:
   window      a maintenance window is open (--ignore-windows acts anyway);
   healthGate  every pod Ready and Redis healthy;
   failover    CLUSTER FAILOVER on the replica the plan names, verified;
   drain       the old master's clients go quiet;
   reobserve   the cluster is observed again and healthy again; the rest is re-planned.
Then it reports what the drain will do to each Redis pod there: its role, its shard's master and
other replicas (in sync or not, live), whether its PodDisruptionBudget allows an eviction now, and
the nodes that stay where its re-created pod fits (the scheduler's filter: the template's spread
constraints, anti-affinity, taints, resources, volumes).

--dry-run plans and reports, and changes nothing; offline (--snapshot FILE, with --role-label or
--redis-nodes for the roles) it always only plans. "plan --without NODE" shows the rest: the
cluster without the nodes, and what would restore the rules.

It never cordons, drains nor evicts: run "kubectl drain" next (the eviction guard of serve, when
installed, holds any master a drain still finds).

Exit status:
  0  the drain is safe to start: no master serving slots stays on those nodes (once the planned
     failovers are made, with --dry-run) and MasterQuorum holds over the nodes that stay
  1  error (an invalid policy or flag, an unknown node or zone, an aborted step)
  3  not safe, with the reason: a master no replica on a staying node can take over from, a
     failover skipped (unhealthy cluster, refused, outside the windows), roles unknown, or
     MasterQuorum cannot hold over the nodes that stay

-o json prints {"nodes", "dryRun", "safe", "clusters": [{"moves": [{"kind": "failover", "from",
"to", "toNode", ...}], "masterQuorum", "quorumHolds", "stuck", "pods": [{"pod", "node", "role",
"master", "otherReplicas", "podDisruptionBudget", "evictionAllowed", "returnsTo"}], "safe",
"reasons", "notes"}], "run": <run's report>}.`,
		Example: `  # what it would do before draining n1
  redis-rebalancer prepare-drain n1 --dry-run
  # hand the masters off n3 and n4, then drain them
  redis-rebalancer prepare-drain n3 n4 --redis-password-file /etc/redis/password \
    && kubectl drain n3 n4 --ignore-daemonsets
  # a zone, outside the maintenance windows
  redis-rebalancer prepare-drain --zone zone-b --ignore-windows
  # offline, from a dump and the roles a label gives
  redis-rebalancer prepare-drain n1 --snapshot snap.yaml --role-label redis.rebalancer.io/role \
    -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && o.zone == "" {
				return &exitError{ExitError, errors.New("name the nodes to drain, or --zone ZONE")}
			}
			return o.prepare(cmd, args)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// prepare is prepare-drain: plan (and, live without --dry-run, carry out) the hand-off, then
// judge the drain from a fresh observation.
func (o *prepareDrainOptions) prepare(cmd *cobra.Command, nodes []string) error {
	p, err := o.run.resolve(cmd.Flags())
	if err != nil {
		return &exitError{ExitError, err}
	}
	stop, ctx, release := gracefulSignals(cmd.Context())
	defer release()
	errOut := cmd.ErrOrStderr()
	mo := o.models()
	planned := o.run.dryRun || o.snapshot.file != ""
	if o.snapshot.file != "" && !o.run.dryRun {
		fmt.Fprintln(errOut, "note: offline (--snapshot): the hand-off is only planned")
	}
	lm, err := mo.buildWithout(ctx, errOut, p, nodes, o.zone)
	if err != nil {
		return &exitError{ExitError, err}
	}
	var rep *report.Run
	var runErr error
	if !planned {
		client, err := o.run.kube.connect(ctx)
		if err != nil {
			return &exitError{ExitError, err}
		}
		ex, closeRedis, err := o.run.executor(ctx, client, p, progressOut(cmd, p), stop, execute.HandOff{Nodes: lm.names})
		if err != nil {
			return &exitError{ExitError, err}
		}
		rep, runErr = ex.Run(ctx)
		closeRedis()
		// The verdict comes from a fresh observation: the roles after the failovers.
		if lm, err = mo.buildWithout(ctx, errOut, p, lm.names, ""); err != nil {
			return &exitError{ExitError, errors.Join(runErr, err)}
		}
	}
	in := report.DrainInput{Now: lm.now, Without: lm.without, Leaving: lm.leaving, HandOff: lm.handOff, Planned: planned}
	if o.snapshot.file == "" {
		in.Replication = o.replication(ctx, errOut, p, lm)
	}
	d := report.AssessDrain(in)
	d.Zone, d.Run = o.zone, rep
	if p.Output == v1alpha1.OutputJSON {
		if err := printJSON(cmd.OutOrStdout(), d); err != nil {
			return &exitError{ExitError, err}
		}
	} else {
		report.RenderDrain(cmd.OutOrStdout(), d)
	}
	switch {
	case runErr != nil:
		return &exitError{ExitError, runErr}
	case !d.Safe:
		return &exitError{ExitViolations, nil}
	}
	return nil
}

// replication reads, live, the replication state of each cluster with pods on the leaving nodes
// (the health gate, under --redis-deadline), for the in-sync marks; what cannot be read stays
// unknown (a warning says why).
func (o *prepareDrainOptions) replication(ctx context.Context, errOut io.Writer, p *policy, lm *leavingModels) map[string]*redisctl.Health {
	if !o.snapshot.redisRoles {
		return nil
	}
	client, err := o.run.kube.connect(ctx)
	if err != nil {
		fmt.Fprintf(errOut, "warning: replication not read: %v\n", err)
		return nil
	}
	rc, err := redisClient(ctx, client, &p.Redis)
	if err != nil {
		fmt.Fprintf(errOut, "warning: replication not read: %v\n", err)
		return nil
	}
	defer rc.Close()
	rctx, cancel := o.snapshot.redisContext(ctx)
	defer cancel()
	out := map[string]*redisctl.Health{}
	for _, c := range lm.now.Clusters {
		if len(lm.lost[c.Key()]) == 0 {
			continue
		}
		h := observe.JudgeHealth(rctx, rc, c, observe.MemberPods(c))
		if h.Redis == nil {
			fmt.Fprintf(errOut, "warning: %s: replication not read: %s\n", c.Key(), h.Summary())
			continue
		}
		out[c.Key()] = h.Redis
	}
	return out
}
