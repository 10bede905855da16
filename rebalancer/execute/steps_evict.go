package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/observe"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The steps that move the pod: the eviction through the policy/v1 Eviction API, the wait for
// its re-creation, its Redis node's rejoin as an in-sync replica, and the re-observation.

// evictionRefusedPrefix starts the text of the error the descheduler's PodEvictor returns for a
// 429 (it flattens the API error into text: evictions.go, evictPod).
const evictionRefusedPrefix = "error when evicting pod (ignoring)"

// evict is the eviction step: the run's PodEvictor (or Config.EvictPod) evicts the pod through the policy/v1 Eviction
// API (it records an event on the pod and counts the eviction against the limits). A 429 skips: the
// pod is never deleted instead. Any other error aborts.
func (cr *clusterRun) evict(ctx context.Context, m *moveRun) result {
	err := cr.evictor.evict(ctx, m.pod)
	var (
		total *evictions.EvictionTotalLimitError
		node  *evictions.EvictionNodeLimitError
		ns    *evictions.EvictionNamespaceLimitError
	)
	switch {
	case err == nil:
		m.rep.Evicted = true
		if m.mv.WaitsPending {
			// From now on the health gate accepts it Pending (and its absence from Redis).
			if cr.pending == nil {
				cr.pending = map[string]bool{}
			}
			cr.pending[m.pod.Name] = true
		}
		cr.cfg.Observer.Eviction(cr.key, EvictionEvicted)
		return proceed("evicted %s (a replica, as Redis reported just before)", m.pod.Name)
	case errors.As(err, &total) || errors.As(err, &node) || errors.As(err, &ns):
		cr.cfg.Observer.Eviction(cr.key, EvictionRefused)
		r := skip("eviction limit: %v", err)
		r.stoppedBy = report.StoppedEvictionLimit
		return r
	case strings.HasPrefix(err.Error(), evictionRefusedPrefix) && strings.Contains(err.Error(), guard.MessagePrefix):
		cr.cfg.Observer.Eviction(cr.key, EvictionRefused)
		return skip("the eviction guard refused the eviction of %s: %v", m.pod.Name, err)
	case strings.HasPrefix(err.Error(), evictionRefusedPrefix):
		cr.cfg.Observer.Eviction(cr.key, EvictionRefused)
		return skip("PodDisruptionBudget refused the eviction of %s: %v", m.pod.Name, err)
	}
	cr.cfg.Observer.Eviction(cr.key, EvictionFailed)
	return abort(fmt.Errorf("eviction: evict %s: %w", m.pod.Name, err))
}

// recreate is the first half of the pod's return: wait until the pod exists again with another UID,
// is scheduled, Running and Ready, and, when the move released its claims, until they are
// re-created and bound (in the zone the scheduler picked). A pod the plan lets wait Pending is not
// waited for: once re-created and still unscheduled, the step continues (the next move frees its
// room). A pod re-created with a released claim still in use (the StatefulSet was faster than the
// release) aborts: it runs with its old data where its volume is, and the claim goes once it
// stops.
func (cr *clusterRun) recreate(ctx context.Context, m *moveRun) result {
	old := m.pod
	var got *corev1.Pod
	raced := false
	status, err := poll(ctx, cr.cfg.PollInterval, cr.cfg.RecreateTimeout, nil, func(s string) {
		cr.printf("    … %s: %s\n", old.Name, s)
	}, func(ctx context.Context) (bool, string) {
		p, err := cr.cfg.Client.CoreV1().Pods(old.Namespace).Get(ctx, old.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, "deleted, not re-created yet"
		case err != nil:
			return false, "get: " + err.Error()
		case p.UID == old.UID:
			return false, "old pod still terminating"
		case p.Spec.NodeName == "" && m.mv.WaitsPending:
			got = p
			return true, ""
		case p.Spec.NodeName == "":
			status := "re-created, not scheduled yet"
			if why := observe.UnschedulableMessage(p); why != "" {
				status += ": " + why
			}
			if len(m.released) > 0 {
				if _, why, _ := cr.claimsBack(ctx, m); why != "" {
					status += "; " + why
				}
			}
			return false, status
		case !observe.PodReady(p):
			return false, fmt.Sprintf("scheduled on %s, %s, not Ready yet", p.Spec.NodeName, p.Status.Phase)
		case len(m.released) > 0:
			vols, why, stale := cr.claimsBack(ctx, m)
			if stale {
				got, raced = p, true
				return true, ""
			}
			if why != "" {
				return false, fmt.Sprintf("scheduled on %s, Ready; %s", p.Spec.NodeName, why)
			}
			m.rep.Volumes = vols
		}
		got = p
		return true, ""
	})
	if err != nil {
		if ctx.Err() != nil {
			return abort(fmt.Errorf("re-creation: interrupted waiting for %s: %w (last seen: %s)", old.Name, ctx.Err(), status))
		}
		return abort(fmt.Errorf("re-creation: pod %s not back after %s: %s", old.Name, cr.cfg.RecreateTimeout, status))
	}
	m.recreated = got
	if got.Spec.NodeName == "" {
		return proceed("%s re-created and Pending, as the plan says: the next move frees its room", got.Name)
	}
	m.rep.To = got.Spec.NodeName
	if raced {
		return abort(fmt.Errorf("re-creation: %s was re-created on %s before its claims %s were released: it runs with its old data where its volumes are, and the claims go once it stops (it then comes back empty, and a later run re-introduces it)", got.Name, got.Spec.NodeName, strings.Join(m.rep.ReleasedClaims, ", ")))
	}
	track := "as planned"
	if m.rep.To != m.mv.Expected {
		track = "the plan expected " + m.mv.Expected
	}
	if len(m.rep.Volumes) > 0 {
		return proceed("%s re-created on %s (%s), Ready; claim %s", got.Name, m.rep.To, track, volumesText(m.rep.Volumes))
	}
	return proceed("%s re-created on %s (%s), Ready", got.Name, m.rep.To, track)
}

// rejoin is the second half of the pod's return: wait until the re-created pod's Redis node is back
// as a connected, in-sync replica of its shard's master. A pod left Pending as planned rejoins
// later: the health gate of the next move waits for it once a node fits it.
func (cr *clusterRun) rejoin(ctx context.Context, m *moveRun) result {
	if m.recreated.Spec.NodeName == "" {
		return proceed("%s waits Pending: it rejoins once a later move frees its room; its shard runs without it meanwhile", m.recreated.Name)
	}
	addr := cr.cfg.Redis.AddrOf(m.recreated.Status.PodIP)
	progress := func(s string) { cr.printf("    … %s: %s\n", m.recreated.Name, s) }
	timeout, full := cr.cfg.RejoinTimeout, ""
	if len(m.rep.ReleasedClaims) > 0 {
		// Its claims were released: its node came back empty, a new node. It replicates its
		// shard's master again once re-introduced, after a full sync.
		timeout = cr.cfg.FullSyncTimeout
		start := cr.cfg.Clock.Now()
		var addrs []string
		for _, mem := range m.c.Members {
			if mem.Pod.Name != m.pod.Name && mem.Pod.Status.PodIP != "" {
				addrs = append(addrs, cr.cfg.Redis.AddrOf(mem.Pod.Status.PodIP))
			}
		}
		id, err := cr.cfg.Redis.Reintroduce(ctx, addr, m.nodeID, m.masterID, addrs, timeout, progress)
		if err != nil {
			return abort(fmt.Errorf("rejoin: %w", err))
		}
		if id != m.nodeID {
			full = fmt.Sprintf(" after a full sync (node %s in place of %s, forgotten)", short(id), short(m.nodeID))
		}
		timeout -= cr.cfg.Clock.Since(start)
	}
	if err := cr.cfg.Redis.WaitRejoin(ctx, addr, m.masterID, timeout, progress); err != nil {
		return abort(fmt.Errorf("rejoin: %w", err))
	}
	m.resynced = true
	if n := cr.usedMemory(ctx, addr); n > 0 {
		m.synced = n
	}
	return proceed("%s (%s) rejoined as an in-sync replica%s", m.recreated.Name, addr, full)
}

// reobserve observes the cluster after the move (the next plan starts from it) and waits until
// it is healthy again, so that the next move, or the run's verdict, sees it settled.
func (cr *clusterRun) reobserve(ctx context.Context, m *moveRun) result {
	octx, cancel := context.WithTimeout(ctx, cr.cfg.RequestTimeout)
	if w, ok := cr.cfg.Source.(observe.PodWaiter); ok && m.recreated != nil {
		if err := w.WaitForPod(octx, m.recreated); err != nil {
			cancel()
			return abort(fmt.Errorf("re-observe: the watched cache did not see %s re-created: %w", m.recreated.Name, err))
		}
	}
	after, err := cr.observe(octx)
	cancel()
	if err != nil {
		return abort(fmt.Errorf("re-observe: %w", err))
	}
	// The observation just listed the cluster's pods: the wait's first round judges them.
	h, status, err := cr.waitHealthy(ctx, after, observe.MemberPods(after))
	if err != nil {
		return cr.healthResult(ctx, "re-observe", status, err)
	}
	m.after = after
	return proceed("healthy again: %s", healthText(h))
}
