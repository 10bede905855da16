package guard

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Hold is one pod whose eviction the guard has denied.
type Hold struct {
	// Namespace and Name are the pod's; UID tells it from a pod re-created under the same name.
	Namespace, Name string
	UID             types.UID
	// Node is the node the pod ran on; Reason why the last denial was made.
	Node   string
	Reason Reason
	// Since is the first denial this process made for the pod; Last the latest.
	Since, Last time.Time
}

// Holds remembers the evictions this process has denied, by pod UID: when each hold began
// (guard.maxHold counts from it) and which pods the hand-off should fail over. A hold not renewed
// by a denial for a while is forgotten. Safe for concurrent use.
type Holds struct {
	clock  clock.PassiveClock
	forget time.Duration

	mu    sync.Mutex
	byUID map[types.UID]*Hold
	// handingOff counts the hand-offs running per pod ("namespace/name"): BeginHandOff.
	handingOff map[string]int
}

// NewHolds returns an empty Holds on clk (the real clock when nil) that forgets a hold once no
// denial has renewed it for forget.
func NewHolds(clk clock.PassiveClock, forget time.Duration) *Holds {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Holds{clock: clk, forget: forget, byUID: map[types.UID]*Hold{}, handingOff: map[string]int{}}
}

// BeginHandOff records that this process's hand-off of pod ("namespace/name": the master it
// fails over) runs, until the returned end is called (once): from before its failover until its
// clients have moved to the new master and the cluster has been observed again. Meanwhile the
// guard holds the pod's eviction as a replica (ReasonHandOffRunning): the evictor's retry right
// after the failover would otherwise pass, and refuse the connections of clients whose slot map
// still names the pod. Holds are per process: a guard replica that is not the hand-off's leader
// does not see it.
func (h *Holds) BeginHandOff(pod string) (end func()) {
	h.mu.Lock()
	h.handingOff[pod]++
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.handingOff[pod]--; h.handingOff[pod] <= 0 {
				delete(h.handingOff, pod)
			}
		})
	}
}

// HandingOff reports whether a hand-off of pod ("namespace/name") runs (BeginHandOff).
func (h *Holds) HandingOff(pod string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.handingOff[pod] > 0
}

// HeldFor returns how long the pod with uid has been held, and whether it is.
func (h *Holds) HeldFor(uid types.UID) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	e, ok := h.byUID[uid]
	if !ok || now.Sub(e.Last) > h.forget {
		return 0, false
	}
	return now.Sub(e.Since), true
}

// Hold records a denial of hold's pod now: a new hold starts unless one is remembered for its UID.
// It returns the hold as recorded and whether it is new.
func (h *Holds) Hold(hold Hold) (Hold, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	h.gc(now)
	e, ok := h.byUID[hold.UID]
	if !ok {
		hold.Since = now
		e = &hold
		h.byUID[hold.UID] = e
	}
	e.Last, e.Reason, e.Node = now, hold.Reason, hold.Node
	return *e, !ok
}

// Release forgets the hold of the pod with uid (its eviction passed, or the pod is gone).
func (h *Holds) Release(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byUID, uid)
}

// List returns the holds remembered, oldest first.
func (h *Holds) List() []Hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gc(h.clock.Now())
	out := make([]Hold, 0, len(h.byUID))
	for _, e := range h.byUID {
		out = append(out, *e)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Since.Before(out[b].Since) })
	return out
}

// Renewed returns the holds a denial renewed within the last within (all remembered when within
// is 0), oldest first: those of an evictor still retrying. kubectl drain retries a denied eviction
// every 5 s, cluster-autoscaler and Karpenter within 10 s; a hold not renewed for longer belongs
// to an evictor that has stopped asking (a drain given up, the descheduler's one try per cycle),
// and is kept only to count guard.maxHold should it ask again.
func (h *Holds) Renewed(within time.Duration) []Hold {
	all := h.List()
	if within <= 0 {
		return all
	}
	now := h.clock.Now()
	out := all[:0]
	for _, e := range all {
		if now.Sub(e.Last) <= within {
			out = append(out, e)
		}
	}
	return out
}

// gc forgets the holds no denial has renewed for h.forget.
func (h *Holds) gc(now time.Time) {
	for uid, e := range h.byUID {
		if now.Sub(e.Last) > h.forget {
			delete(h.byUID, uid)
		}
	}
}
