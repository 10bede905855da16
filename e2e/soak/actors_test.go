package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/drain"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
)

// The disruptions as the tools that make them do: kubectl's drain library (cordon, evict through
// the Eviction API, retry a 429 every 5 s as kubectl does, wait until the pods are gone),
// cluster-autoscaler's and Karpenter's taints before theirs, the bed's node loss, the
// StatefulSet's rolling update, a container crash, a pod of serve killed, kube-apiserver
// restarted, the guard's Service without endpoints.

// kubectlRetry is kubectl drain's delay before it retries an eviction answered 429.
const kubectlRetry = 5 * time.Second

// Taints the autoscalers put on a node before they empty it.
const (
	taintAutoscaler = "ToBeDeletedByClusterAutoscaler"
	taintKarpenter  = "karpenter.sh/disrupted"
)

// note records what an event did, in its notes and the soak's log.
func (s *Soak) note(e *Event, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	e.Notes = append(e.Notes, fmt.Sprintf("+%s %s", time.Since(s.start).Round(time.Second), msg))
	s.mu.Unlock()
	s.logf("#%d %s: %s", e.Index, e.Kind, msg)
}

// act runs one event from its start to its end.
func (s *Soak) act(ctx context.Context, e *Event) {
	s.mu.Lock()
	e.Started = time.Now()
	s.mu.Unlock()
	s.logf("start: %s", e)
	err := s.run(ctx, e)
	s.mu.Lock()
	e.Ended, e.Err = time.Now(), err
	s.mu.Unlock()
	if err != nil {
		s.logf("#%d %s ended after %s: %v", e.Index, e.Kind, e.Ended.Sub(e.Started).Round(time.Second), err)
	} else {
		s.logf("#%d %s ended after %s", e.Index, e.Kind, e.Ended.Sub(e.Started).Round(time.Second))
	}
}

func (s *Soak) run(ctx context.Context, e *Event) error {
	switch e.Kind {
	case KindDrainNode, KindDrainZone:
		return s.drainAndUncordon(ctx, e)
	case KindAutoscaler:
		return s.autoscaler(ctx, e)
	case KindKarpenter:
		return s.karpenter(ctx, e)
	case KindNodeLost:
		return s.nodeLost(ctx, e)
	case KindPoolScaleDown:
		return s.poolScaleDown(ctx, e)
	case KindRollingRestart:
		return s.rollingRestart(ctx, e)
	case KindReplicaKilled:
		return s.killReplica(ctx, e)
	case KindLeaderKilled:
		return s.killLeader(ctx, e)
	case KindAPIServerRestart:
		return s.restartAPIServer(ctx, e)
	case KindGuardDown:
		return s.guardOff(ctx, e)
	}
	return fmt.Errorf("unknown kind %s", e.Kind)
}

// drainHelper returns kubectl drain's helper (its defaults: no timeout, the pods' own grace
// periods, retry a 429 every 5 s) with timeout, writing to e's notes.
func (s *Soak) drainHelper(ctx context.Context, e *Event, timeout time.Duration) *drain.Helper {
	w := noteWriter{s, e}
	return &drain.Helper{
		Ctx: ctx, Client: s.env.Client(), GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true,
		Timeout: timeout, EvictErrorRetryDelay: kubectlRetry, Out: w, ErrOut: w,
		OnPodDeletionOrEvictionFinished: func(p *corev1.Pod, _ bool, err error) {
			if err != nil {
				s.note(e, "%s/%s: %v", p.Namespace, p.Name, err)
			} else {
				s.note(e, "%s/%s evicted and gone", p.Namespace, p.Name)
			}
		},
	}
}

// noteWriter writes the drain helper's output into an event's notes.
type noteWriter struct {
	s *Soak
	e *Event
}

func (w noteWriter) Write(p []byte) (int, error) {
	if msg := strings.TrimSpace(string(p)); msg != "" {
		w.s.note(w.e, "drain: %s", msg)
	}
	return len(p), nil
}

// node returns a node, or nil when it does not exist.
func (s *Soak) node(ctx context.Context, name string) (*corev1.Node, error) {
	n, err := s.env.Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return n, err
}

// cordon cordons (or uncordons) the nodes as kubectl does; a node gone is skipped.
func (s *Soak) cordon(ctx context.Context, e *Event, nodes []string, on bool) error {
	h := s.drainHelper(ctx, e, 0)
	var errs []error
	for _, name := range nodes {
		err := retry.OnError(retry.DefaultBackoff, func(error) bool { return true }, func() error {
			n, err := s.node(ctx, name)
			if err != nil || n == nil {
				return err
			}
			return drain.RunCordonOrUncordon(h, n, on)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("cordon %s (%v): %w", name, on, err))
		}
	}
	return errors.Join(errs...)
}

// taint adds (or removes) a NoSchedule taint with key on node.
func (s *Soak) taint(ctx context.Context, node, key string, on bool) error {
	return retry.OnError(retry.DefaultBackoff, func(error) bool { return true }, func() error {
		n, err := s.node(ctx, node)
		if err != nil || n == nil {
			return err
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
		if on {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: strconv.FormatInt(time.Now().Unix(), 10), Effect: corev1.TaintEffectNoSchedule})
		}
		_, err = s.env.Client().CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// drainNodes drains the nodes one after the other, as `kubectl drain A B` does, until done or
// ctx ends; it reports whether every drain completed.
func (s *Soak) drainNodes(ctx context.Context, e *Event, nodes []string, timeout time.Duration) bool {
	h := s.drainHelper(ctx, e, timeout)
	for _, n := range nodes {
		if nd, err := s.node(ctx, n); nd == nil || err != nil {
			s.note(e, "node %s is gone: not drained", n)
			continue
		}
		t0 := time.Now()
		if err := drain.RunNodeDrain(h, n); err != nil {
			s.note(e, "drain of %s given up after %s: %v", n, time.Since(t0).Round(time.Second), err)
			return false
		}
		s.note(e, "%s drained in %s", n, time.Since(t0).Round(time.Second))
	}
	return true
}

// drainAndUncordon cordons the event's nodes, drains them, and uncordons them Hold after the
// start (giving up a drain still running then, as an SRE would).
func (s *Soak) drainAndUncordon(ctx context.Context, e *Event) error {
	if err := s.cordon(ctx, e, e.Nodes, true); err != nil {
		return err
	}
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan bool, 1)
	go func() { done <- s.drainNodes(dctx, e, e.Nodes, 0) }()
	select {
	case <-done:
		sleep(ctx, time.Until(e.Started.Add(e.Hold)))
	case <-time.After(time.Until(e.Started.Add(e.Hold))):
		s.note(e, "still draining after %s: given up", e.Hold)
		cancel()
		<-done
	case <-ctx.Done():
	}
	cancel()
	return s.cordon(context.WithoutCancel(ctx), e, e.Nodes, false)
}

// addNodes adds the event's new nodes.
func (s *Soak) addNodes(ctx context.Context, e *Event) error {
	var errs []error
	for i, n := range e.NewNodes {
		if _, err := s.env.Cluster.AddNode(ctx, localcluster.NodeSpec{Name: n, Zone: e.NewZones[i]}); err != nil {
			errs = append(errs, err)
			continue
		}
		s.note(e, "node %s added in %s", n, e.NewZones[i])
	}
	return errors.Join(errs...)
}

// deleteNode deletes a drained node (its leftover pods with it: localcluster.DeleteNode).
func (s *Soak) deleteNode(ctx context.Context, e *Event, node string) error {
	if err := s.env.Cluster.DeleteNode(ctx, node); err != nil {
		return err
	}
	s.note(e, "node %s deleted", node)
	return nil
}

// autoscaler scales a node down as cluster-autoscaler does: the taint, the evictions (given up
// after 2 minutes: then the taint goes and the node stays), the Node deleted; the new node of the
// zone comes Hold later.
func (s *Soak) autoscaler(ctx context.Context, e *Event) error {
	n := e.Nodes[0]
	if nd, err := s.node(ctx, n); nd == nil || err != nil {
		return fmt.Errorf("node %s is gone: %v", n, err)
	}
	if err := s.taint(ctx, n, taintAutoscaler, true); err != nil {
		return err
	}
	if !s.drainNodes(ctx, e, []string{n}, 2*time.Minute) {
		s.note(e, "scale-down of %s failed: taint removed, the node stays", n)
		return s.taint(context.WithoutCancel(ctx), n, taintAutoscaler, false)
	}
	if err := s.deleteNode(ctx, e, n); err != nil {
		return err
	}
	if !sleep(ctx, e.Hold) {
		return ctx.Err()
	}
	return s.addNodes(ctx, e)
}

// karpenter disrupts a node as Karpenter does: the replacement first, then the taint, the
// evictions (retried until done), the Node deleted.
func (s *Soak) karpenter(ctx context.Context, e *Event) error {
	n := e.Nodes[0]
	if nd, err := s.node(ctx, n); nd == nil || err != nil {
		return fmt.Errorf("node %s is gone: %v", n, err)
	}
	if err := s.addNodes(ctx, e); err != nil {
		return err
	}
	if err := s.taint(ctx, n, taintKarpenter, true); err != nil {
		return err
	}
	if !s.drainNodes(ctx, e, []string{n}, 15*time.Minute) {
		return s.taint(context.WithoutCancel(ctx), n, taintKarpenter, false)
	}
	return s.deleteNode(ctx, e, n)
}

// nodeLost loses a node (harness.Bed.LoseNode); Hold later it comes back, or it is deleted with
// its pods and a new node of its zone is added 30 s after.
func (s *Soak) nodeLost(ctx context.Context, e *Event) error {
	n := e.Nodes[0]
	if nd, err := s.node(ctx, n); nd == nil || err != nil {
		return fmt.Errorf("node %s is gone: %v", n, err)
	}
	s.note(e, "%s holds %v", n, s.mon.podsOn(n))
	if err := s.bed.LoseNode(ctx, n); err != nil {
		return err
	}
	if !sleep(ctx, e.Hold) {
		return ctx.Err()
	}
	if !e.Deleted {
		s.note(e, "%s back", n)
		return s.bed.RecoverNode(context.WithoutCancel(ctx), n)
	}
	if err := s.bed.DeleteLostNode(context.WithoutCancel(ctx), n); err != nil {
		return err
	}
	s.note(e, "%s deleted with its pods", n)
	if !sleep(ctx, 30*time.Second) {
		return ctx.Err()
	}
	return s.addNodes(ctx, e)
}

// poolScaleDown drains the event's nodes at once (a node pool resized down), deletes those
// drained, and adds the new nodes Hold later.
func (s *Soak) poolScaleDown(ctx context.Context, e *Event) error {
	if err := s.cordon(ctx, e, e.Nodes, true); err != nil {
		return err
	}
	var wg sync.WaitGroup
	drained := make([]bool, len(e.Nodes))
	for i, n := range e.Nodes {
		wg.Go(func() { drained[i] = s.drainNodes(ctx, e, []string{n}, 10*time.Minute) })
	}
	wg.Wait()
	var errs []error
	for i, n := range e.Nodes {
		if !drained[i] {
			errs = append(errs, s.cordon(context.WithoutCancel(ctx), e, []string{n}, false))
			continue
		}
		errs = append(errs, s.deleteNode(ctx, e, n))
	}
	if !sleep(ctx, e.Hold) {
		return ctx.Err()
	}
	errs = append(errs, s.addNodes(ctx, e))
	return errors.Join(errs...)
}

// rollingRestart changes the StatefulSet's template as `kubectl rollout restart` does, and waits
// until the rollout is done (every pod updated and Ready), at most 20 minutes.
func (s *Soak) rollingRestart(ctx context.Context, e *Event) error {
	name := s.env.Scenario.BitnamiFullname()
	sts := s.env.Client().AppsV1().StatefulSets(s.env.Namespace)
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339))
	if _, err := sts.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	s.note(e, "StatefulSet %s restarted", name)
	var last string
	err := waitFor(ctx, 20*time.Minute, func() bool {
		st, err := sts.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		want := int32(1)
		if st.Spec.Replicas != nil {
			want = *st.Spec.Replicas
		}
		last = fmt.Sprintf("%d of %d updated, %d ready", st.Status.UpdatedReplicas, want, st.Status.ReadyReplicas)
		return st.Status.ObservedGeneration >= st.Generation && st.Status.UpdatedReplicas == want && st.Status.ReadyReplicas == want &&
			st.Status.CurrentRevision == st.Status.UpdateRevision
	})
	if err != nil {
		return fmt.Errorf("rollout not done: %s: %w", last, err)
	}
	s.note(e, "rollout done")
	return nil
}

// killReplica kills the redis-server of the replica of the event's shard (by slot order); the
// Redis runtime restarts it, as the kubelet restarts a container that crashed.
func (s *Soak) killReplica(ctx context.Context, e *Event) error {
	topo, err := s.env.Redis.Topology(ctx, s.env.Addrs())
	if topo == nil {
		return err
	}
	masters := topo.Masters()
	var shards []string
	for _, m := range masters {
		if len(m.Slots) > 0 {
			shards = append(shards, m.ID)
		}
	}
	slices.SortFunc(shards, func(a, b string) int {
		ma, _ := topo.Node(a)
		mb, _ := topo.Node(b)
		return ma.Slots[0].Start - mb.Slots[0].Start
	})
	if e.Shard >= len(shards) {
		return fmt.Errorf("shard %d: only %d masters serve slots", e.Shard, len(shards))
	}
	reps := topo.ReplicasOf(shards[e.Shard])
	if len(reps) == 0 {
		return fmt.Errorf("shard %d has no replica now", e.Shard)
	}
	for _, srv := range s.env.Runtime.Servers() {
		if srv.Addr == reps[0].Addr() && !srv.Paused {
			if err := syscall.Kill(srv.Pid, syscall.SIGKILL); err != nil {
				return err
			}
			s.note(e, "killed the redis-server of %s (pid %d), the replica of shard %d", srv.Name, srv.Pid, e.Shard)
			return waitFor(ctx, 2*time.Minute, func() bool {
				for _, x := range s.env.Runtime.Servers() {
					if x.Name == srv.Name && x.Pid != srv.Pid {
						return true
					}
				}
				return false
			})
		}
	}
	return fmt.Errorf("no running server for the replica %s of shard %d", reps[0].Addr(), e.Shard)
}

// killLeader kills the serve replica that leads (SIGKILL); Hold later its Deployment's new pod
// starts.
func (s *Soak) killLeader(ctx context.Context, e *Event) error {
	lead := s.leader()
	if lead == nil {
		return errors.New("no serve replica leads")
	}
	lead.kill()
	s.note(e, "%s (the leader) killed", lead.name)
	s.updateProxy()
	if !sleep(ctx, e.Hold) {
		return ctx.Err()
	}
	r, err := s.startServe(ctx)
	if err != nil {
		return err
	}
	s.note(e, "%s started in its place", r.name)
	return nil
}

// restartAPIServer kills kube-apiserver and starts it again.
func (s *Soak) restartAPIServer(ctx context.Context, e *Event) error {
	if err := s.env.Cluster.StopAPIServer(); err != nil {
		return err
	}
	t0 := time.Now()
	if err := s.env.Cluster.StartAPIServer(ctx); err != nil {
		return err
	}
	s.note(e, "kube-apiserver back in %s", time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// guardOff leaves the guard's Service without endpoints for Hold: kube-apiserver cannot call
// the webhook, and with failurePolicy Ignore lets every eviction through.
func (s *Soak) guardOff(ctx context.Context, e *Event) error {
	s.mu.Lock()
	s.guardDown = true
	s.mu.Unlock()
	s.updateProxy()
	sleep(ctx, e.Hold)
	s.mu.Lock()
	s.guardDown = false
	s.mu.Unlock()
	s.updateProxy()
	s.note(e, "the guard reachable again")
	return nil
}
