package execute

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Waiting for a healthy cluster (every pod Ready, Redis healthy), for the health gate and the
// re-observation.

// gateStatus is one round of the health wait: the verdict in words, and whether it is an error
// of the API server rather than a verdict on the cluster.
type gateStatus struct {
	text   string
	apiErr bool
}

// sameGate reports whether two rounds of the health wait say the same thing: the same state and
// the same "code address" of each reason, whatever their messages (an i/o error names a new local
// port every time).
func sameGate(a, b gateStatus) bool {
	return a.apiErr == b.apiErr && gateKey(a.text) == gateKey(b.text)
}

// gateKey is text ("state: reason; reason") without the reasons' messages: "state: code addr; ...".
func gateKey(text string) string {
	state, reasons, _ := strings.Cut(text, ": ")
	parts := []string{state}
	for _, r := range strings.Split(reasons, "; ") {
		head, _, _ := strings.Cut(r, ": ")
		parts = append(parts, head)
	}
	return strings.Join(parts, "; ")
}

// waitHealthy waits up to HealthTimeout until every pod of c is Ready and Redis is healthy
// (observe.JudgeHealthExpecting on a fresh list of the pods c admits, the planned Pending pods
// accepted),
// reintroducing nodes that lost each other's address meanwhile. The first round judges first
// when given (the pods of an observation just made: they are not listed again), the others a
// fresh list. On timeout it returns the last whole round's status with the error.
func (cr *clusterRun) waitHealthy(ctx context.Context, c *policies.Cluster, first []*corev1.Pod) (observe.Health, gateStatus, error) {
	var h observe.Health
	met := map[[2]string]bool{} // (viewer, node ID) pairs reintroduced (reintroduce)
	sel := labels.SelectorFromSet(labels.Set{c.Model().Options.ClusterLabel: c.Name})
	status, err := poll(ctx, cr.cfg.PollInterval, cr.cfg.HealthTimeout, sameGate, func(s gateStatus) {
		cr.printf("    … waiting for a healthy cluster: %s\n", s.text)
	}, func(ctx context.Context) (bool, gateStatus) {
		pods := first
		if first != nil {
			first = nil
		} else {
			list, err := cr.cfg.Source.Pods(ctx, c.Namespace, sel)
			if err != nil {
				return false, gateStatus{text: err.Error(), apiErr: true}
			}
			pods = make([]*corev1.Pod, 0, len(list))
			for _, p := range list {
				if c.Admits(p) { // not a Job's pod, nor another app's of the release
					pods = append(pods, p)
				}
			}
		}
		got := observe.JudgeHealthExpecting(ctx, cr.cfg.Redis, c, pods, cr.pending)
		if got.Healthy() {
			h = got
			return true, gateStatus{}
		}
		if got.Redis != nil {
			cr.reintroduce(ctx, got.Redis.Topology, met)
		}
		return false, gateStatus{text: string(got.State) + ": " + strings.Join(got.Reasons, "; ")}
	})
	return h, status, err
}

// reintroduce sends CLUSTER MEET to each node whose view lists another node without an address
// (noaddr), with that node's address as the node itself reports it, once per pair (met). Two
// pods that swap nodes in one move may swap pod IPs too (a CNI that reuses a freed IP at once,
// kwok's does): each Redis node then finds the other's ID at its own new address, drops the
// address, and neither ever pings the other again; the others' gossip does not restore an
// address Redis has dropped. A MEET does: the handshake finds the known ID and updates its
// address. It changes no role and no slot.
func (cr *clusterRun) reintroduce(ctx context.Context, topo *redisctl.Topology, met map[[2]string]bool) {
	if topo == nil {
		return
	}
	self := map[string]redisctl.Node{} // node ID → its own line
	for _, v := range topo.Views {
		if me, ok := v.Myself(); ok {
			self[me.ID] = me
		}
	}
	for _, d := range topo.Disagreements {
		n, ok := self[d.NodeID]
		if d.Field != "addr" || !ok || n.IP == "" {
			continue
		}
		for viewer, addr := range d.Values {
			pair := [2]string{viewer, d.NodeID}
			if addr != "" || viewer == n.Addr() || met[pair] {
				continue
			}
			met[pair] = true
			if _, err := cr.cfg.Redis.Do(ctx, viewer, "CLUSTER", "MEET", n.IP, n.Port); err != nil {
				cr.printf("    … %s lists node %s without an address; CLUSTER MEET %s: %v\n", viewer, shortNodeID(d.NodeID), n.Addr(), err)
				continue
			}
			cr.printf("    … %s lists node %s without an address: CLUSTER MEET %s (its address, as it reports it)\n", viewer, shortNodeID(d.NodeID), n.Addr())
		}
	}
}

func shortNodeID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// healthText describes a healthy verdict.
func healthText(h observe.Health) string {
	pods := "all pods Ready"
	if len(h.Waiting) > 0 {
		pods = "every other pod Ready, " + strings.Join(h.Waiting, ", ") + " Pending (accepted)"
	}
	return fmt.Sprintf("cluster_state ok, %s served, %s in sync, %s", policies.Plural(h.Redis.SlotsServed, "slot"), policies.Plural(len(h.Redis.Replicas), "replica"), pods)
}

// healthResult turns a health wait's outcome into a step result: a verdict on the cluster skips,
// an API server error or an interruption aborts.
func (cr *clusterRun) healthResult(ctx context.Context, what string, status gateStatus, err error) result {
	switch {
	case ctx.Err() != nil:
		return abort(fmt.Errorf("%s: interrupted: %w (last seen: %s)", what, ctx.Err(), status.text))
	case status.apiErr:
		return abort(fmt.Errorf("%s: not healthy after %s: %s", what, cr.cfg.HealthTimeout, status.text))
	}
	return skip("%s: not healthy after %s: %s", what, cr.cfg.HealthTimeout, status.text)
}
