package execute

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// A move that releases the pod's claims (plan.Move.ReleaseClaims, Options.ReleaseReplicaClaims):
// the pod, a replica (a master was failed over and checked a replica just before), is evicted;
// then the release step deletes its claims, which its StatefulSet re-creates empty once the old
// pod is gone (the claims stay, terminating, while it exists: the StatefulSet controller waits
// for them to go); the claims bind in the zone the scheduler picks (WaitForFirstConsumer); the
// pod's Redis node starts empty, the rejoin step re-introduces it as a replica of its shard's
// master (redisctl.Client.Reintroduce) and waits for its full sync. The claims are deleted only
// after the eviction is accepted, only while the old pod still exists (so that the StatefulSet
// cannot re-create it with them), only while the shard's master is healthy and holds the data,
// and only when no other pod of the shard is without its data (one released claim per shard at
// a time). A check that says no keeps the claims: the pod comes back where its volumes are.

// release is the release step: it deletes the claims the plan releases, once the checks pass;
// otherwise it keeps them and the move goes on (the pod returns to its volumes' zone, its data
// intact).
func (cr *clusterRun) release(ctx context.Context, m *moveRun) result {
	keep := func(format string, args ...any) result {
		m.rep.ClaimsKept = fmt.Sprintf(format, args...)
		cr.events.pod(m.pod, corev1.EventTypeWarning, ReasonClaimsKept, ActionRelease, "claims %s of %s kept: %s", strings.Join(m.mv.ReleaseClaims, ", "), m.pod.Name, m.rep.ClaimsKept)
		return proceed("claims kept: %s; %s comes back where its volumes are, with its data", m.rep.ClaimsKept, m.pod.Name)
	}
	if why := cr.masterHoldsData(ctx, m); why != "" {
		return keep("%s", why)
	}
	pods := cr.cfg.Client.CoreV1().Pods(m.pod.Namespace)
	p, err := pods.Get(ctx, m.pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && p.UID != m.pod.UID:
		return keep("%s was gone before its claims could be released: its StatefulSet may re-create it with them", m.pod.Name)
	case err != nil:
		return abort(fmt.Errorf("release: get pod %s: %w", m.pod.Name, err))
	}
	claims := cr.cfg.Client.CoreV1().PersistentVolumeClaims(m.pod.Namespace)
	var found []*corev1.PersistentVolumeClaim
	for _, name := range m.mv.ReleaseClaims {
		c, err := claims.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return keep("claim %s is gone already", name)
		case err != nil:
			return abort(fmt.Errorf("release: get claim %s: %w", name, err))
		case !mounts(p, name):
			return keep("pod %s does not mount claim %s", p.Name, name)
		}
		found = append(found, c)
	}
	m.released = map[string]types.UID{}
	var what []string
	for _, c := range found {
		if c.DeletionTimestamp == nil {
			uid := c.UID
			err := claims.Delete(ctx, c.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return abort(fmt.Errorf("release: delete claim %s: %w (claims released so far: %v)", c.Name, err, m.rep.ReleasedClaims))
			}
		}
		m.released[c.Name] = c.UID
		m.rep.ReleasedClaims = append(m.rep.ReleasedClaims, c.Name)
		what = append(what, c.Name+" ("+cr.volumeText(ctx, c.Spec.VolumeName)+")")
	}
	cr.events.pod(m.pod, corev1.EventTypeNormal, ReasonClaimsReleased, ActionRelease, "claims %s of %s released after its eviction (a replica): its StatefulSet re-creates them empty and it resyncs in full from its master", strings.Join(m.rep.ReleasedClaims, ", "), m.pod.Name)
	return proceed("released claim %s: the StatefulSet re-creates it empty once %s is gone, and the pod resyncs in full from its master", strings.Join(what, ", "), m.pod.Name)
}

// mounts reports whether pod p mounts claim.
func mounts(p *corev1.Pod, claim string) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
	})
}

// volumeText names PersistentVolume pv and its zone: "pv in zone-a" ("pv" when it has no zone,
// "no volume" when name is empty, the error when it cannot be read).
func (cr *clusterRun) volumeText(ctx context.Context, name string) string {
	if name == "" {
		return "no volume"
	}
	pv, err := cr.cfg.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return name + ": " + err.Error()
	}
	if z := volumeZone(pv); z != "" {
		return name + " in " + z
	}
	return name
}

// volumeZone returns the zone a PersistentVolume is pinned to: the value of a zone key in its
// required node affinity (one term, one value), else its zone label; "" when none.
func volumeZone(pv *corev1.PersistentVolume) string {
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
		for _, t := range na.Required.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				if (e.Key == policies.LabelZone || e.Key == policies.LabelZoneLegacy) && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
					return e.Values[0]
				}
			}
		}
	}
	if z := pv.Labels[policies.LabelZone]; z != "" {
		return z
	}
	return pv.Labels[policies.LabelZoneLegacy]
}

// masterHoldsData says why the pod's shard's master may not be the only copy of its data now ("" when
// it may): it must be a master of the cluster, not flagged failing, serving slots, its
// cluster_state ok, and none of its other replicas in a full sync (one released claim per shard
// at a time).
func (cr *clusterRun) masterHoldsData(ctx context.Context, m *moveRun) string {
	var addrs []string
	for _, mem := range m.c.Members {
		if mem.Pod.Name != m.pod.Name && mem.Pod.Status.PodIP != "" {
			addrs = append(addrs, cr.cfg.Redis.AddrOf(mem.Pod.Status.PodIP))
		}
	}
	if m.masterID == "" {
		return "the shard's master is unknown"
	}
	topo, err := cr.cfg.Redis.Topology(ctx, addrs)
	if err != nil {
		return "Redis could not be read: " + err.Error()
	}
	var master redisctl.Node
	for _, n := range topo.Nodes {
		if n.ID == m.masterID {
			master = n
		}
	}
	switch {
	case master.ID == "":
		return fmt.Sprintf("the shard's master %s is not in the cluster", short(m.masterID))
	case !master.IsMaster() || !master.IsUsable():
		return fmt.Sprintf("node %s is no usable master (flags %s)", short(m.masterID), strings.Join(master.Flags, ","))
	case master.IsFailing():
		return fmt.Sprintf("the shard's master %s is flagged %s", master.Addr(), strings.Join(master.Flags, ","))
	case len(master.Slots) == 0:
		return fmt.Sprintf("the shard's master %s serves no slot", master.Addr())
	}
	if v, err := cr.cfg.Redis.Do(ctx, master.Addr(), "CLUSTER", "INFO"); err != nil {
		return "the shard's master does not answer: " + err.Error()
	} else if state := redisctl.ParseInfo(fmt.Sprint(v)).ClusterState(); state != "ok" {
		return fmt.Sprintf("the shard's master %s reports cluster_state %s", master.Addr(), state)
	}
	v, err := cr.cfg.Redis.Do(ctx, master.Addr(), "INFO", "replication")
	if err != nil {
		return "the shard's master does not answer: " + err.Error()
	}
	repl := redisctl.ParseInfo(fmt.Sprint(v)).Replication()
	if !repl.IsMaster() {
		return fmt.Sprintf("%s reports role %s", master.Addr(), repl.Role)
	}
	for _, e := range repl.Replicas {
		if e.IP != m.pod.Status.PodIP && e.State != "online" {
			return fmt.Sprintf("another replica of the shard (%s) is syncing (state %s): one released claim per shard at a time", e.IP, e.State)
		}
	}
	return ""
}

// shardSettled says why a released claim of m's shard may be in flight ("" when none is): another
// pod of the shard (Redis's, as last observed) is missing, terminating, not scheduled or not
// Ready, or one of its claims is missing, terminating or not bound. One released claim per shard
// at a time.
func (cr *clusterRun) shardSettled(ctx context.Context, m *moveRun) string {
	i := slices.IndexFunc(m.c.Members, func(mem *policies.Member) bool { return mem.Pod.Name == m.pod.Name })
	if i < 0 {
		return ""
	}
	shard := m.c.Members[i].ShardIndex
	pods := cr.cfg.Client.CoreV1().Pods(m.pod.Namespace)
	claims := cr.cfg.Client.CoreV1().PersistentVolumeClaims(m.pod.Namespace)
	for _, j := range m.c.Shards[shard].Members {
		other := m.c.Members[j].Pod
		if j == i {
			continue
		}
		p, err := pods.Get(ctx, other.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			return fmt.Sprintf("pod %s of shard %s: %v", other.Name, m.c.Shards[shard].Name, err)
		case p.DeletionTimestamp != nil || p.Spec.NodeName == "" || !observe.PodReady(p):
			return fmt.Sprintf("pod %s of shard %s is not back yet (terminating, Pending or not Ready): one released claim per shard at a time", p.Name, m.c.Shards[shard].Name)
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			c, err := claims.Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
			switch {
			case err != nil:
				return fmt.Sprintf("claim %s of pod %s (shard %s): %v", v.PersistentVolumeClaim.ClaimName, p.Name, m.c.Shards[shard].Name, err)
			case c.DeletionTimestamp != nil || c.Status.Phase != corev1.ClaimBound:
				return fmt.Sprintf("claim %s of pod %s (shard %s) is being released or not bound (%s): one released claim per shard at a time", c.Name, p.Name, m.c.Shards[shard].Name, c.Status.Phase)
			}
		}
	}
	return ""
}

// claimsBack says whether the claims m released are back: re-created (another UID) and bound;
// it returns them, or what is still awaited (old: a claim still has its old UID).
func (cr *clusterRun) claimsBack(ctx context.Context, m *moveRun) (vols []report.Volume, why string, old bool) {
	claims := cr.cfg.Client.CoreV1().PersistentVolumeClaims(m.pod.Namespace)
	var out []report.Volume
	for _, name := range m.rep.ReleasedClaims {
		c, err := claims.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Sprintf("claim %s deleted, not re-created yet", name), false
		case err != nil:
			return nil, fmt.Sprintf("claim %s: %v", name, err), false
		case c.UID == m.released[name]:
			return nil, fmt.Sprintf("claim %s still terminating (it goes once the old pod is gone)", name), true
		case c.Spec.VolumeName == "":
			node := c.Annotations["volume.kubernetes.io/selected-node"]
			if node == "" {
				return nil, fmt.Sprintf("claim %s re-created, waiting for the scheduler to pick a node (WaitForFirstConsumer)", name), false
			}
			return nil, fmt.Sprintf("claim %s re-created, waiting for its volume on node %s's zone", name, node), false
		}
		pv, err := cr.cfg.Client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Sprintf("volume %s of claim %s: %v", c.Spec.VolumeName, name, err), false
		}
		out = append(out, report.Volume{Claim: name, PersistentVolume: pv.Name, Zone: volumeZone(pv)})
	}
	return out, "", false
}

// volumesText writes vs as "claim bound to pv in zone, ...".
func volumesText(vs []report.Volume) string {
	var parts []string
	for _, v := range vs {
		s := v.Claim + " bound to " + v.PersistentVolume
		if v.Zone != "" {
			s += " in " + v.Zone
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// short abbreviates a Redis node ID for messages.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
