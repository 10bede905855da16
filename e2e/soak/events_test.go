package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// Kind is a kind of disruption.
type Kind string

// The disruptions the soak draws from.
const (
	// KindDrainNode: `kubectl drain` of one node (k8s.io/kubectl/pkg/drain, kubectl's retry
	// delay and default timeout), uncordoned after Hold.
	KindDrainNode Kind = "drain-node"
	// KindDrainZone: every node of a zone cordoned, then drained one by one; uncordoned after
	// Hold (a drain still waiting on a PodDisruptionBudget is given up then, as an SRE would).
	KindDrainZone Kind = "drain-zone"
	// KindAutoscaler: cluster-autoscaler's scale-down of a node: taint ToBeDeletedByClusterAutoscaler,
	// evict its pods (given up after 2 minutes, as cluster-autoscaler's MaxPodEvictionTime: the
	// taint is then removed and the node stays), delete the Node; a new node of the zone is added
	// after Hold.
	KindAutoscaler Kind = "autoscaler-scale-down"
	// KindKarpenter: Karpenter's disruption of a node: a replacement node of the zone first,
	// then taint karpenter.sh/disrupted, evict its pods, delete the Node.
	KindKarpenter Kind = "karpenter-disruption"
	// KindNodeLost: a node lost without warning (harness.Bed.LoseNode: its redis-servers stopped,
	// its Lease no longer renewed); after Hold it comes back, or (Deleted) it is deleted with its
	// pods and a new node of the zone is added.
	KindNodeLost Kind = "node-lost"
	// KindPoolScaleDown: a node pool scaled down by a node per zone (drained and deleted), then,
	// after Hold, scaled up by new nodes: the Redis pods stay crowded on the nodes that stayed
	// (post-scale-down drift).
	KindPoolScaleDown Kind = "pool-scale-down"
	// KindRollingRestart: the StatefulSet's template changed (a chart upgrade, `kubectl rollout
	// restart`): the StatefulSet controller deletes and re-creates every pod, one at a time.
	KindRollingRestart Kind = "rolling-restart"
	// KindReplicaKilled: a replica's redis-server killed (SIGKILL, a container crash); the
	// kubelet (the Redis runtime) restarts it.
	KindReplicaKilled Kind = "replica-killed"
	// KindLeaderKilled: the serve replica that leads killed (SIGKILL); its Deployment's new pod
	// starts after Hold.
	KindLeaderKilled Kind = "serve-leader-killed"
	// KindAPIServerRestart: kube-apiserver killed and started again.
	KindAPIServerRestart Kind = "apiserver-restart"
	// KindGuardDown: the guard unreachable (its Service has no endpoint) for Hold; with
	// failurePolicy Ignore every eviction then passes unguarded.
	KindGuardDown Kind = "guard-down"
)

// kinds are every kind, in the order the summary lists them.
var kinds = []Kind{KindDrainNode, KindDrainZone, KindAutoscaler, KindKarpenter, KindNodeLost, KindPoolScaleDown,
	KindRollingRestart, KindReplicaKilled, KindLeaderKilled, KindAPIServerRestart, KindGuardDown}

// Unguarded reports whether a kind disrupts Redis without the Eviction API, or turns the guard
// off: the only windows in which a write may fail (a node lost, pods deleted or killed, the
// guard down under Ignore). The others go through the Eviction API with the guard up (drains,
// autoscalers, Karpenter), or disrupt no Redis pod (serve, kube-apiserver).
func (k Kind) Unguarded() bool {
	switch k {
	case KindNodeLost, KindRollingRestart, KindReplicaKilled, KindGuardDown:
		return true
	}
	return false
}

// placement reports whether a kind moves Redis pods or takes nodes away: MasterQuorum is judged
// after the last of an overlapping run of them ends.
func (k Kind) placement() bool {
	switch k {
	case KindLeaderKilled, KindAPIServerRestart, KindGuardDown:
		return false
	}
	return true
}

// Event is one disruption of the sequence: what the seed drew (Index to Deleted), and what
// happened when it ran (Started to Notes).
type Event struct {
	// Index is the event's place in the seed's sequence (from 1): -soak.events names events by it.
	Index int
	Kind  Kind
	// At is when it starts, from the start of the disruptions.
	At time.Duration
	// Hold is how long it lasts before it is undone: a drain's uncordon, a lost node's return,
	// a new node, the guard back, serve's new pod.
	Hold time.Duration
	// Nodes are the nodes it disrupts; Zone the zone of a zone drain; NewNodes the nodes it adds
	// (with their zones in NewZones).
	Nodes    []string
	Zone     string
	NewNodes []string
	NewZones []string
	// Shard is the shard (by slot order) whose replica is killed.
	Shard int
	// Deleted: a lost node is deleted with its pods instead of coming back.
	Deleted bool

	// Started and Ended are when it ran; Ended is zero while it runs.
	Started, Ended time.Time
	// Notes are what it did and saw, in order ("drain n4: evicted redis-cluster-3").
	Notes []string
	// Err is why it could not do what it meant to (the soak goes on).
	Err error
}

// String describes the event as the seed drew it: "#7 +2m10s drain-node n4 (uncordoned after 1m30s)".
func (e *Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d +%s %s", e.Index, e.At.Round(time.Second), e.Kind)
	switch e.Kind {
	case KindDrainNode:
		fmt.Fprintf(&b, " %s (uncordoned after %s)", e.Nodes[0], e.Hold)
	case KindDrainZone:
		fmt.Fprintf(&b, " %s %v (uncordoned after %s)", e.Zone, e.Nodes, e.Hold)
	case KindAutoscaler:
		fmt.Fprintf(&b, " %s (new node %s after %s)", e.Nodes[0], e.NewNodes[0], e.Hold)
	case KindKarpenter:
		fmt.Fprintf(&b, " %s (replaced by %s)", e.Nodes[0], e.NewNodes[0])
	case KindNodeLost:
		if e.Deleted {
			fmt.Fprintf(&b, " %s (deleted after %s, new node %s)", e.Nodes[0], e.Hold, e.NewNodes[0])
		} else {
			fmt.Fprintf(&b, " %s (back after %s)", e.Nodes[0], e.Hold)
		}
	case KindPoolScaleDown:
		fmt.Fprintf(&b, " %v (new nodes %v after %s)", e.Nodes, e.NewNodes, e.Hold)
	case KindReplicaKilled:
		fmt.Fprintf(&b, " shard %d", e.Shard)
	case KindLeaderKilled:
		fmt.Fprintf(&b, " (new replica after %s)", e.Hold)
	case KindGuardDown:
		fmt.Fprintf(&b, " for %s", e.Hold)
	}
	return b.String()
}

// planConfig bounds a sequence.
type planConfig struct {
	// Duration: events start within it.
	Duration time.Duration
	// Zones are the bed's nodes by zone at the start.
	Zones map[string][]string
	// Shards is the number of shards.
	Shards int
	// MinGap and MaxGap bound the time between two starts (at least one every MaxGap).
	MinGap, MaxGap time.Duration
}

// weights are how often each kind is drawn.
var weights = map[Kind]int{
	KindDrainNode: 6, KindDrainZone: 2, KindAutoscaler: 4, KindKarpenter: 4, KindNodeLost: 3, KindPoolScaleDown: 2,
	KindRollingRestart: 1, KindReplicaKilled: 3, KindLeaderKilled: 2, KindAPIServerRestart: 1, KindGuardDown: 2,
}

// span is how long the planner reserves what an event disrupts: its Hold and what it takes to
// drain and come back on this bed (pods Ready 5–30 s after they are scheduled, a
// PodDisruptionBudget that lets one pod go at a time).
func span(e *Event) time.Duration {
	switch e.Kind {
	case KindDrainNode:
		return e.Hold + 30*time.Second
	case KindDrainZone, KindNodeLost:
		return e.Hold + time.Minute
	case KindAutoscaler:
		return 90*time.Second + e.Hold
	case KindKarpenter:
		return 3 * time.Minute
	case KindPoolScaleDown:
		return 4*time.Minute + e.Hold
	case KindRollingRestart:
		return 8 * time.Minute
	case KindReplicaKilled:
		return 30 * time.Second
	case KindLeaderKilled, KindGuardDown:
		return e.Hold + 10*time.Second
	case KindAPIServerRestart:
		return 30 * time.Second
	}
	return time.Minute
}

// plannedNode is a node of the planner's world.
type plannedNode struct {
	zone string
	// busyUntil: an event disrupts it until then; gone: deleted from then on.
	busyUntil time.Duration
	gone      bool
	from      time.Duration // added then (new nodes)
}

// world is what the planner knows of the bed as the sequence goes on.
type world struct {
	nodes      map[string]*plannedNode
	heavyUntil time.Duration          // a zone drain, a pool scale-down or a rolling restart until then
	pending    Kind                   // a heavy kind drawn while the bed was busy: it starts once the bed is quiet
	kindUntil  map[Kind]time.Duration // the control events: one of each kind at a time
	next       int                    // the next new node is n<next>
}

// usable returns the nodes of zone present and not disrupted at t, sorted.
func (w *world) usable(zone string, t time.Duration) []string {
	var out []string
	for name, n := range w.nodes {
		if n.zone == zone && !n.gone && n.from <= t && n.busyUntil <= t {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// present returns the number of nodes of zone that exist at t.
func (w *world) present(zone string, t time.Duration) int {
	n := 0
	for _, x := range w.nodes {
		if x.zone == zone && !x.gone && x.from <= t {
			n++
		}
	}
	return n
}

// zoneBusy reports whether an event disrupts a node of zone at t (a node it deletes included).
func (w *world) zoneBusy(zone string, t time.Duration) bool {
	for _, n := range w.nodes {
		if n.zone == zone && n.busyUntil > t {
			return true
		}
	}
	return false
}

func (w *world) anyBusy(t time.Duration) bool {
	for _, n := range w.nodes {
		if n.busyUntil > t {
			return true
		}
	}
	return false
}

func (w *world) newNode(zone string, from time.Duration) string {
	name := fmt.Sprintf("n%d", w.next)
	w.next++
	w.nodes[name] = &plannedNode{zone: zone, from: from}
	return name
}

// Plan draws the sequence of seed: an event every MinGap to MaxGap from the first MinGap on,
// until Duration. Each draw picks a kind by weight among those the bed can take then (a node
// event takes a zone none other disrupts, and leaves its zone at least two nodes; a zone drain,
// a pool scale-down and a rolling restart take the bed alone; serve, kube-apiserver and the
// guard one disruption of each at a time), then its targets and durations. The same seed gives
// the same sequence.
func Plan(seed uint64, cfg planConfig) []*Event {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	w := &world{nodes: map[string]*plannedNode{}, kindUntil: map[Kind]time.Duration{}, next: 1}
	zones := make([]string, 0, len(cfg.Zones))
	for z, nodes := range cfg.Zones {
		zones = append(zones, z)
		for _, n := range nodes {
			w.nodes[n] = &plannedNode{zone: z}
			var k int
			if _, err := fmt.Sscanf(n, "n%d", &k); err == nil && k >= w.next {
				w.next = k + 1
			}
		}
	}
	sort.Strings(zones)
	between := func(lo, hi time.Duration) time.Duration {
		return (lo + time.Duration(rng.Int64N(int64(hi-lo)+1))).Round(time.Second)
	}
	total := 0
	for _, k := range kinds {
		total += weights[k]
	}
	var events []*Event
	lastHeavy := time.Duration(0)
	for t := cfg.MinGap; t < cfg.Duration; t += between(cfg.MinGap, cfg.MaxGap) {
		var e *Event
		if w.pending != "" && !w.anyBusy(t) && w.heavyUntil <= t {
			e = draw(rng, w, zones, cfg, t, between, w.pending, true)
			w.pending = ""
		}
		if e == nil {
			pick := rng.IntN(total)
			var k Kind
			for _, x := range kinds {
				if pick -= weights[x]; pick < 0 {
					k = x
					break
				}
			}
			switch {
			case heavyKind(k) && t-max(lastHeavy, w.heavyUntil) <= heavyEvery && lastHeavy > 0:
				// another heavy event so soon after one: draw again below
			case heavyKind(k) && (w.anyBusy(t) || w.heavyUntil > t):
				if w.pending == "" {
					w.pending = k // it waits for the bed to be quiet; node events wait for it
				}
			default:
				e = draw(rng, w, zones, cfg, t, between, k, true)
			}
		}
		// Nothing else fits: a node drained beside another event of its zone, a replica killed,
		// serve, kube-apiserver or the guard (within their cooldowns); else a replica killed.
		for _, k := range []Kind{KindDrainNode, KindReplicaKilled, KindGuardDown, KindLeaderKilled, KindAPIServerRestart} {
			if e == nil {
				e = draw(rng, w, zones, cfg, t, between, k, k != KindDrainNode)
			}
		}
		if e == nil {
			e = draw(rng, w, zones, cfg, t, between, KindReplicaKilled, false)
		}
		if e == nil {
			continue
		}
		if heavyKind(e.Kind) {
			lastHeavy = t
		}
		e.Index, e.At = len(events)+1, t
		events = append(events, e)
	}
	return events
}

// heavyEvery: a heavy kind drawn while the bed is busy waits for the bed to be quiet (node events
// wait for it) when no heavy event has run for this long; otherwise another kind is drawn.
const heavyEvery = 8 * time.Minute

// cooldown is how long after its span a control event of the same kind is not drawn again
// (unless nothing else fits then): serve, kube-apiserver and the guard are not disrupted back to
// back all the time.
var cooldown = map[Kind]time.Duration{
	KindLeaderKilled: 4 * time.Minute, KindAPIServerRestart: 5 * time.Minute, KindGuardDown: 2 * time.Minute, KindReplicaKilled: time.Minute,
}

// heavyKind reports whether a kind takes the bed alone.
func heavyKind(k Kind) bool {
	return k == KindDrainZone || k == KindPoolScaleDown || k == KindRollingRestart
}

// draw tries to draw an event of kind k at t; nil when it does not fit the bed then. With cool, a control kind is not drawn within its cooldown.
func draw(rng *rand.Rand, w *world, zones []string, cfg planConfig, t time.Duration, between func(lo, hi time.Duration) time.Duration, k Kind, cool bool) *Event {
	e := &Event{Kind: k}
	heavy := w.heavyUntil > t || w.pending != ""
	// A free zone: no event disrupts it, and it has usable nodes.
	freeZones := func(minPresent int) []string {
		var out []string
		for _, z := range zones {
			// A zone no event disrupts; without cool (nothing else fits), a drain may also take
			// a zone another event disrupts when two of its nodes stay usable.
			free := !w.zoneBusy(z, t) || !cool && k == KindDrainNode && len(w.usable(z, t)) >= 3
			if free && w.present(z, t) >= minPresent && len(w.usable(z, t)) > 0 {
				out = append(out, z)
			}
		}
		return out
	}
	reserve := func(nodes ...string) {
		for _, n := range nodes {
			w.nodes[n].busyUntil = t + span(e)
		}
	}
	switch k {
	case KindDrainNode, KindAutoscaler, KindKarpenter, KindNodeLost:
		if heavy {
			return nil
		}
		minPresent := 2 // a drained or lost node leaves its zone one node at least
		if k == KindAutoscaler || k == KindNodeLost {
			minPresent = 3 // a node deleted leaves two
		}
		zs := freeZones(minPresent)
		if len(zs) == 0 {
			return nil
		}
		z := zs[rng.IntN(len(zs))]
		nodes := w.usable(z, t)
		n := nodes[rng.IntN(len(nodes))]
		e.Nodes = []string{n}
		switch k {
		case KindDrainNode:
			e.Hold = between(45*time.Second, 2*time.Minute)
		case KindAutoscaler:
			e.Hold = between(30*time.Second, 90*time.Second)
		case KindNodeLost:
			e.Hold = between(time.Minute, 3*time.Minute)
			e.Deleted = rng.IntN(2) == 0
		}
		reserve(n)
		switch k {
		case KindAutoscaler:
			w.nodes[n].gone = true
			e.NewNodes, e.NewZones = []string{w.newNode(z, t+span(e))}, []string{z}
		case KindNodeLost:
			if e.Deleted {
				w.nodes[n].gone = true
				e.NewNodes, e.NewZones = []string{w.newNode(z, t+span(e))}, []string{z}
			}
		case KindKarpenter:
			w.nodes[n].gone = true
			e.NewNodes, e.NewZones = []string{w.newNode(z, t)}, []string{z}
			w.nodes[e.NewNodes[0]].busyUntil = t + span(e)
		}
	case KindDrainZone, KindPoolScaleDown, KindRollingRestart:
		if w.heavyUntil > t || w.anyBusy(t) {
			return nil
		}
		switch k {
		case KindDrainZone:
			z := zones[rng.IntN(len(zones))]
			e.Zone, e.Nodes = z, w.usable(z, t)
			e.Hold = between(2*time.Minute, 4*time.Minute)
			reserve(e.Nodes...)
		case KindPoolScaleDown:
			for _, z := range zones {
				if w.present(z, t) < 3 {
					return nil
				}
			}
			e.Hold = between(time.Minute, 3*time.Minute)
			for _, z := range zones {
				nodes := w.usable(z, t)
				n := nodes[rng.IntN(len(nodes))]
				e.Nodes = append(e.Nodes, n)
			}
			reserve(e.Nodes...)
			for i, n := range e.Nodes {
				w.nodes[n].gone = true
				z := zones[i]
				e.NewNodes, e.NewZones = append(e.NewNodes, w.newNode(z, t+span(e))), append(e.NewZones, z)
			}
		}
		w.heavyUntil = t + span(e)
	default: // the control events and a replica killed: one of each kind at a time, and not
		// again within its cooldown (but a replica killed when nothing else fits)
		if cool && (w.kindUntil[k] > t || w.kindUntil[k]+cooldown[k] > t) {
			return nil
		}
		switch k {
		case KindReplicaKilled:
			e.Shard = rng.IntN(cfg.Shards)
		case KindLeaderKilled:
			e.Hold = between(10*time.Second, 20*time.Second)
		case KindGuardDown:
			e.Hold = between(30*time.Second, 90*time.Second)
		}
		w.kindUntil[k] = t + span(e)
	}
	return e
}

// only keeps the events of seq whose Index is in keep (all when keep is empty), as the seed drew
// them (their times unchanged).
func only(seq []*Event, keep []int) []*Event {
	if len(keep) == 0 {
		return seq
	}
	var out []*Event
	for _, e := range seq {
		if slices.Contains(keep, e.Index) {
			out = append(out, e)
		}
	}
	return out
}
