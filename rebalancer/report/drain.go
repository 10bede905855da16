package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Drain is what `prepare-drain` reports: for each Redis cluster with pods on the nodes a drain is
// about to empty, the hand-off (failover steps, like plan's) and what the drain will then do to
// each of its pods there. Its JSON form is part of the output contract: fields are added, never
// renamed or removed.
type Drain struct {
	// Nodes are the nodes the drain empties, sorted; Zone the zone named (--zone), if any.
	Nodes []string `json:"nodes"`
	Zone  string   `json:"zone,omitempty"`
	// DryRun is true when the hand-off was only planned (--dry-run, or offline --snapshot).
	DryRun bool `json:"dryRun"`
	// Safe reports whether the drain may start: in every cluster, no master serving slots stays
	// on those nodes (once the planned moves are made, when DryRun) and MasterQuorum holds over
	// the nodes that stay.
	Safe bool `json:"safe"`
	// Clusters are the Redis clusters with pods on those nodes or moves to make, by namespace
	// and name.
	Clusters []ClusterDrain `json:"clusters"`
	// Run is the executor's report of the hand-off carried out (live, without --dry-run).
	Run *Run `json:"run,omitempty"`
}

// ClusterDrain is one Redis cluster's part of a Drain.
type ClusterDrain struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Moves are the hand-off's failover steps (kind "failover", from/to as in plan's moves): to
	// make (DryRun), or made by the run (the plan it started from; Drain.Run says what happened).
	Moves []plan.Move `json:"moves"`
	// Failovers counts Moves.
	Failovers int `json:"failovers"`
	// MasterQuorum is what MasterQuorum asks over the nodes that stay; QuorumHolds whether it
	// holds once Moves are made.
	MasterQuorum policies.Quorum `json:"masterQuorum"`
	QuorumHolds  bool            `json:"quorumHolds"`
	// Stuck are the masters on those nodes that no replica on a node that stays can take over
	// from.
	Stuck []string `json:"stuck,omitempty"`
	// Pods are the cluster's pods on those nodes, by name: what the drain will do to each.
	Pods []DrainPod `json:"pods"`
	// Safe reports whether the drain may start as far as this cluster goes; Reasons say why not.
	Safe    bool     `json:"safe"`
	Reasons []string `json:"reasons"`
	// Notes say what will slow the drain or leave the cluster short without losing a write (a
	// PodDisruptionBudget that allows no eviction now, a pod no node that stays can take back).
	Notes []string `json:"notes"`
}

// DrainPod is one Redis pod on a node being drained, as the drain will find it.
type DrainPod struct {
	// Pod is "namespace/name"; Node the node it runs on; Shard its shard.
	Pod   string `json:"pod"`
	Node  string `json:"node"`
	Shard string `json:"shard"`
	// Role is its Redis role when the drain evicts it: after the hand-off (planned, with
	// DryRun).
	Role policies.Role `json:"role"`
	// Master is its shard's master then ("namespace/name"), on MasterNode.
	Master     string `json:"master,omitempty"`
	MasterNode string `json:"masterNode,omitempty"`
	// OtherReplicas are the other replicas of its shard on nodes that stay.
	OtherReplicas []ReplicaState `json:"otherReplicas"`
	// PodDisruptionBudget is the budget that covers it ("" when none), DisruptionsAllowed its
	// status, and EvictionAllowed whether an eviction is allowed now (no budget: true; nil when
	// the disruption controller has not computed the budget's status, as in a hand-written
	// snapshot); a drain retries a refused eviction until the budget allows it.
	PodDisruptionBudget string `json:"podDisruptionBudget,omitempty"`
	DisruptionsAllowed  int32  `json:"disruptionsAllowed"`
	EvictionAllowed     *bool  `json:"evictionAllowed,omitempty"`
	// ReturnsTo are the nodes that stay where the pod, re-created by its controller, passes the
	// scheduler's filter (its template's spread constraints, affinity, taints, resources, volume
	// topology) while the cluster's other pods on the drained nodes are not placed yet; empty:
	// it stays Pending until a node is back.
	ReturnsTo []string `json:"returnsTo"`
}

// ReplicaState is a replica and, when Redis was read, whether it is in sync with its master.
type ReplicaState struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// InSync is nil when unknown (offline, or Redis did not say).
	InSync *bool `json:"inSync,omitempty"`
}

// DrainInput is what AssessDrain judges: the cluster now, as it would be without the nodes
// (policies.Snapshot.Without, masters handed off, lost pods marked: policies.Cluster.MarkLost),
// the nodes, each cluster's hand-off, and, live, each cluster's replication (nil offline).
type DrainInput struct {
	Now, Without *policies.Model
	Leaving      policies.Leaving
	HandOff      map[string]plan.HandOffPlan
	// Planned applies the hand-off's moves to the roles (a dry run): the roles the drain will
	// find once they are made. Without it, the roles are those of Now.
	Planned bool
	// Replication is, by cluster key, the health gate's replication state (observe.Health's
	// Redis); a cluster missing has InSync unknown.
	Replication map[string]*redisctl.Health
}

// AssessDrain returns the Drain of in: for each cluster with pods on the leaving nodes (or moves
// or stuck masters), its hand-off, its pods there and whether the drain may start.
func AssessDrain(in DrainInput) *Drain {
	d := &Drain{Nodes: in.Leaving.Names(in.Now), DryRun: in.Planned, Safe: true, Clusters: []ClusterDrain{}}
	if d.Nodes == nil {
		d.Nodes = []string{}
	}
	without := map[string]*policies.Cluster{}
	if in.Without != nil {
		for _, c := range in.Without.Clusters {
			without[c.Key()] = c
		}
	}
	for _, c := range in.Now.Clusters {
		h := in.HandOff[c.Key()]
		cd := assessCluster(c, without[c.Key()], in.Leaving, h, in.Planned, in.Replication[c.Key()])
		if len(cd.Pods) == 0 && len(cd.Moves) == 0 && len(cd.Stuck) == 0 {
			continue
		}
		d.Safe = d.Safe && cd.Safe
		d.Clusters = append(d.Clusters, cd)
	}
	return d
}

func assessCluster(c, without *policies.Cluster, leaving policies.Leaving, h plan.HandOffPlan, planned bool, repl *redisctl.Health) ClusterDrain {
	nodes := c.Model().Nodes
	moves := h.Moves
	if moves == nil {
		moves = []plan.Move{}
	}
	cd := ClusterDrain{
		Namespace: c.Namespace, Name: c.Name, Moves: moves, Failovers: len(moves),
		MasterQuorum: h.Quorum, QuorumHolds: h.QuorumHolds, Stuck: h.Stuck,
		Pods: []DrainPod{}, Reasons: []string{}, Notes: []string{},
	}
	gone := func(mem *policies.Member) bool {
		return mem.Node >= 0 && mem.Node < len(leaving) && leaving[mem.Node] && !mem.Terminating
	}
	// Roles when the drain evicts: now, with the hand-off's moves made when planned.
	role := make([]policies.Role, len(c.Members))
	for i, mem := range c.Members {
		role[i] = mem.Role
		if mem.Role == policies.RoleMaster && mem.EmptyMaster {
			role[i] = policies.RoleUnknown // a master without slots: nothing to hand off
		}
	}
	if planned {
		for _, mv := range h.Moves {
			role[mv.Member], role[mv.FailoverTo] = policies.RoleReplica, policies.RoleMaster
		}
	}
	inSync := map[string]bool{} // Redis node ID → in sync
	if repl != nil {
		for _, r := range repl.Replicas {
			inSync[r.ID] = r.InSync
		}
	}
	lostIndex := map[string]int{}
	if without != nil {
		for i, mem := range without.Members {
			lostIndex[mem.Key()] = i
		}
	}
	rolesKnown := c.RolesKnown()
	for i, mem := range c.Members {
		if !gone(mem) {
			continue
		}
		yes := true
		dp := DrainPod{Pod: mem.Key(), Node: nodes[mem.Node].Name, Shard: mem.Shard, Role: role[i], OtherReplicas: []ReplicaState{}, ReturnsTo: []string{}, EvictionAllowed: &yes}
		for _, j := range c.Shards[mem.ShardIndex].Members {
			o := c.Members[j]
			if j == i || o.Node < 0 || o.Terminating {
				continue
			}
			switch {
			case role[j] == policies.RoleMaster:
				dp.Master, dp.MasterNode = o.Key(), nodes[o.Node].Name
			case role[j] == policies.RoleReplica && !gone(o):
				rs := ReplicaState{Pod: o.Key(), Node: nodes[o.Node].Name}
				if s, ok := inSync[o.RedisID]; ok && !planned {
					rs.InSync = &s
				}
				dp.OtherReplicas = append(dp.OtherReplicas, rs)
			}
		}
		if pdb, allowed, known, ok := budgetOf(c, mem); ok {
			dp.PodDisruptionBudget, dp.DisruptionsAllowed, dp.EvictionAllowed = pdb, allowed, nil
			if known {
				ok := allowed > 0
				dp.EvictionAllowed = &ok
			}
			if known && allowed <= 0 {
				cd.Notes = append(cd.Notes, fmt.Sprintf("%s: PodDisruptionBudget %s allows no eviction now: the drain retries until it does", mem.Key(), pdb))
			}
		}
		if k, ok := lostIndex[mem.Key()]; ok {
			for _, n := range without.Candidates(without.Current(), k) {
				dp.ReturnsTo = append(dp.ReturnsTo, without.Model().Nodes[n].Name)
			}
			if len(dp.ReturnsTo) == 0 {
				cd.Notes = append(cd.Notes, fmt.Sprintf("%s: no node that stays can take it back (%s): it stays Pending, and shard %s runs without it, until a node returns", mem.Key(), without.Explain(without.Current(), k).Summary(), mem.Shard))
			}
		}
		if role[i] == policies.RoleMaster {
			why := "still a master serving slots"
			if planned {
				why = "a master serving slots that the hand-off cannot move"
			}
			cd.Reasons = append(cd.Reasons, fmt.Sprintf("%s on %s is %s: the drain would evict it and fail its slots' writes until Redis promotes a replica", mem.Key(), dp.Node, why))
		}
		cd.Pods = append(cd.Pods, dp)
	}
	if !rolesKnown && len(cd.Pods) > 0 {
		cd.Reasons = append(cd.Reasons, "the Redis roles are unknown (Redis not read, no --role-label or --redis-nodes offline): no way to tell the masters there")
	}
	if !h.QuorumHolds {
		cd.Reasons = append(cd.Reasons, fmt.Sprintf("no failovers keep MasterQuorum over the nodes that stay (%s): losing another node during the drain could take the whole cluster down", quorumLimits(h.Quorum)))
	}
	if !planned && len(h.Moves) > 0 {
		cd.Reasons = append(cd.Reasons, fmt.Sprintf("%s of the hand-off not made (see the run's report)", plural(len(h.Moves), "failover")))
	}
	sort.Slice(cd.Pods, func(a, b int) bool { return cd.Pods[a].Pod < cd.Pods[b].Pod })
	cd.Safe = len(cd.Reasons) == 0
	return cd
}

// budgetOf returns the name of the PodDisruptionBudget of c that selects member mem, its
// status's disruptionsAllowed and whether the disruption controller has computed that status
// (observedGeneration set; ok false when no budget selects the pod; the first by name when
// several do, which the Eviction API refuses anyway).
func budgetOf(c *policies.Cluster, mem *policies.Member) (name string, allowed int32, known, ok bool) {
	var names []string
	byName := map[string]*policyv1.PodDisruptionBudget{}
	for _, pdb := range c.PodDisruptionBudgets {
		if pdb.Namespace != mem.Pod.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(mem.Pod.Labels)) {
			continue
		}
		names = append(names, pdb.Name)
		byName[pdb.Name] = pdb
	}
	if len(names) == 0 {
		return "", 0, false, false
	}
	sort.Strings(names)
	pdb := byName[names[0]]
	return pdb.Name, pdb.Status.DisruptionsAllowed, pdb.Status.ObservedGeneration > 0, true
}

// RenderDrain writes a Drain as text: per cluster the hand-off, MasterQuorum over the nodes that
// stay, each pod there, and the verdict.
func RenderDrain(w io.Writer, d *Drain) {
	w = newWrapWriter(w)
	what := strings.Join(d.Nodes, ", ")
	if d.Zone != "" {
		what = fmt.Sprintf("zone %s (%s)", d.Zone, what)
	}
	fmt.Fprintf(w, "\nprepare-drain %s:\n", what)
	if len(d.Clusters) == 0 {
		fmt.Fprintln(w, "  no Redis pod runs there: nothing to hand off")
	}
	for _, cd := range d.Clusters {
		fmt.Fprintf(w, "Redis cluster %s/%s:\n", cd.Namespace, cd.Name)
		state := "made"
		if d.DryRun {
			state = "to make"
		}
		switch {
		case len(cd.Moves) == 0 && d.DryRun:
			fmt.Fprintln(w, "  hand-off: none needed (no master there)")
		case len(cd.Moves) == 0:
			fmt.Fprintln(w, "  hand-off: nothing left to do")
		default:
			fmt.Fprintf(w, "  hand-off (%s): %s\n", state, plural(len(cd.Moves), "failover"))
			for i, mv := range cd.Moves {
				fmt.Fprintf(w, "  %d. %s\n     because: %s\n", i+1, MoveText(mv), mv.Reason)
			}
		}
		holds := "holds"
		if !cd.QuorumHolds {
			holds = "cannot hold"
		}
		fmt.Fprintf(w, "  MasterQuorum over the nodes that stay (%s): %s\n", quorumLimits(cd.MasterQuorum), holds)
		if len(cd.Pods) > 0 {
			fmt.Fprintln(w, "  what the drain does to each Redis pod there:")
		}
		for _, p := range cd.Pods {
			fmt.Fprintf(w, "    %s on %s: %s\n", p.Pod, p.Node, drainPodText(p))
		}
		for _, n := range cd.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for _, r := range cd.Reasons {
			fmt.Fprintf(w, "  ✗ %s\n", r)
		}
	}
	if d.Safe {
		fmt.Fprintln(w, "safe: the drain may start (no master serving slots stays on those nodes; MasterQuorum holds over the nodes that stay)")
	} else {
		fmt.Fprintln(w, "not safe: see ✗ above")
	}
}

// drainPodText describes what the drain finds of one pod.
func drainPodText(p DrainPod) string {
	role := string(p.Role)
	if role == "" {
		role = "role unknown"
	}
	parts := []string{role}
	if p.Master != "" && p.Role != policies.RoleMaster {
		parts = append(parts, fmt.Sprintf("master %s on %s", p.Master, p.MasterNode))
	}
	var reps []string
	for _, r := range p.OtherReplicas {
		s := r.Pod + " on " + r.Node
		if r.InSync != nil && *r.InSync {
			s += " (in sync)"
		} else if r.InSync != nil {
			s += " (not in sync)"
		}
		reps = append(reps, s)
	}
	if len(reps) == 0 {
		parts = append(parts, "no other replica stays")
	} else {
		parts = append(parts, "other replicas that stay: "+strings.Join(reps, ", "))
	}
	switch {
	case p.PodDisruptionBudget == "":
		parts = append(parts, "no PodDisruptionBudget")
	case p.EvictionAllowed == nil:
		parts = append(parts, fmt.Sprintf("PodDisruptionBudget %s (its status not computed yet)", p.PodDisruptionBudget))
	case *p.EvictionAllowed:
		parts = append(parts, fmt.Sprintf("PodDisruptionBudget %s allows %d now", p.PodDisruptionBudget, p.DisruptionsAllowed))
	default:
		parts = append(parts, fmt.Sprintf("PodDisruptionBudget %s allows none now", p.PodDisruptionBudget))
	}
	if len(p.ReturnsTo) == 0 {
		parts = append(parts, "no node that stays takes it back")
	} else {
		parts = append(parts, "returns to "+strings.Join(p.ReturnsTo, ", "))
	}
	return strings.Join(parts, "; ")
}
