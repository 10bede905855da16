package execute

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// zonalBed is the test bed of a move that releases a pod's claims: post-scale-down with every
// pod's data on a claim "data-<pod>" of its StatefulSet's volumeClaimTemplate, bound to a
// PersistentVolume pinned to its pod's zone. It plays what Kubernetes does with such a pod:
// an eviction is accepted and leaves the pod terminating; a claim deleted while its pod exists
// stays terminating (kubernetes.io/pvc-protection); the old pod stops once the step stopAfter
// names is over; then the StatefulSet controller re-creates the pod, and its claims if they were
// deleted, each bound to a new PersistentVolume in the zone of the node the pod lands on
// (WaitForFirstConsumer); a pod whose claims were kept comes back on its old node.
type zonalBed struct {
	*testbed
	sc scenario.Scenario
	// stopAfter names the step after which the evicted pod stops (report.StepEvict: before the
	// release step; report.StepRelease: after it).
	stopAfter string
	// refuse makes the PodDisruptionBudget refuse the real eviction (the dry run passes).
	refuse bool
	// afterDelete, when set, runs after a claim's deletion is recorded.
	afterDelete func()

	mu sync.Mutex
	// seq lists what disrupted, in order: "failover <pod>", "evict <pod>", "delete claim <claim>
	// (pod <pod> present|gone)", "stop <pod>", and "end of move <pod>" after each move.
	seq []string
	// evictedPod is the pod evicted for real, not yet stopped.
	evictedPod string
}

// newZonalBed lays out post-scale-down on zonal claims; the re-created pods land where the plan
// with claims releasable expects.
func newZonalBed(t *testing.T) *zonalBed {
	t.Helper()
	sc := scenario.PostScaleDown()
	sc.Claims = &scenario.ClaimTemplate{Name: "data"}
	zb := &zonalBed{testbed: newTestbed(t, sc), sc: sc, stopAfter: report.StepRelease}
	// The plan, as a dry run makes it (Redis's roles, claims releasable).
	e, err := New(zb.testbed.config())
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.DryRun, e.cfg.Policy.ReleaseReplicaClaims = true, true
	rep, err := e.Run(t.Context())
	if err != nil || len(rep.Clusters) != 1 || rep.Clusters[0].Plan == nil {
		t.Fatalf("dry run: %v, %+v", err, rep)
	}
	for _, mv := range rep.Clusters[0].Plan.Moves {
		if mv.Kind == plan.KindEvict {
			zb.landOn[podName(mv.Pod)] = mv.Expected
		}
	}
	zb.out.Reset()
	zb.onEviction = zb.evict
	zb.redis.failover = func(replicaAddr string) error {
		zb.mu.Lock()
		defer zb.mu.Unlock()
		zb.seq = append(zb.seq, "failover "+zb.podAt(replicaAddr))
		return nil
	}
	zb.client.PrependReactor("delete", "persistentvolumeclaims", zb.deleteClaim)
	return zb
}

// podAt names the pod whose Redis address is addr.
func (zb *zonalBed) podAt(addr string) string {
	pods, err := zb.client.CoreV1().Pods("redis").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		zb.t.Error(err)
		return addr
	}
	for _, p := range pods.Items {
		if addrOf(p.Status.PodIP) == addr {
			return p.Name
		}
	}
	return addr
}

var (
	podsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	claimsGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	pvsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	nodesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

// evict accepts a real eviction (unless refuse) by marking the pod terminating.
func (zb *zonalBed) evict(ev *policyv1.Eviction, dryRun bool) (bool, error) {
	if dryRun {
		return true, nil
	}
	if zb.refuse {
		return true, tooManyRequests()
	}
	obj, err := zb.client.Tracker().Get(podsGVR, ev.Namespace, ev.Name)
	if err != nil {
		return true, err
	}
	p := obj.(*corev1.Pod).DeepCopy()
	now := metav1.NewTime(zb.clock.Now())
	p.DeletionTimestamp = &now
	if err := zb.client.Tracker().Update(podsGVR, p, p.Namespace); err != nil {
		return true, err
	}
	zb.mu.Lock()
	zb.seq = append(zb.seq, "evict "+p.Name)
	zb.evictedPod = p.Name
	zb.mu.Unlock()
	zb.testbed.set(func() { zb.evictions = append(zb.evictions, p.Name) })
	return true, nil
}

// deleteClaim marks a claim terminating (its pod may still use it) and records whether its pod
// was there.
func (zb *zonalBed) deleteClaim(action k8stesting.Action) (bool, runtime.Object, error) {
	da := action.(k8stesting.DeleteAction)
	obj, err := zb.client.Tracker().Get(claimsGVR, da.GetNamespace(), da.GetName())
	if err != nil {
		return true, nil, err
	}
	c := obj.(*corev1.PersistentVolumeClaim).DeepCopy()
	now := metav1.NewTime(zb.clock.Now())
	c.DeletionTimestamp = &now
	if err := zb.client.Tracker().Update(claimsGVR, c, c.Namespace); err != nil {
		return true, nil, err
	}
	pod := strings.TrimPrefix(c.Name, "data-")
	present := "gone"
	if _, err := zb.client.Tracker().Get(podsGVR, c.Namespace, pod); err == nil {
		present = "present"
	}
	zb.mu.Lock()
	zb.seq = append(zb.seq, "delete claim "+c.Name+" (pod "+pod+" "+present+")")
	after := zb.afterDelete
	zb.mu.Unlock()
	if after != nil {
		after()
	}
	return true, nil, nil
}

// Step is the bed's Observer: after step stopAfter, the evicted pod stops and comes back.
func (zb *zonalBed) Step(_ string, s report.Step) {
	zb.mu.Lock()
	pod := zb.evictedPod
	stop := pod != "" && s.Name == zb.stopAfter
	if stop {
		zb.evictedPod = ""
		zb.seq = append(zb.seq, "stop "+pod)
	}
	zb.mu.Unlock()
	if stop {
		zb.stopPod(pod)
	}
}

// Failover, Eviction and Cluster make zonalBed an Observer.
func (zb *zonalBed) Failover(string, FailoverResult) {}
func (zb *zonalBed) Eviction(string, EvictionResult) {}
func (zb *zonalBed) Cluster(report.ClusterRun)       {}

// Move marks the end of a move in seq.
func (zb *zonalBed) Move(_ string, m report.MoveResult) {
	zb.mu.Lock()
	defer zb.mu.Unlock()
	zb.seq = append(zb.seq, "end of move "+podName(m.Pod))
}

// firstMove returns what disrupted during the first move.
func (zb *zonalBed) firstMove() []string {
	zb.mu.Lock()
	defer zb.mu.Unlock()
	i := slices.IndexFunc(zb.seq, func(s string) bool { return strings.HasPrefix(s, "end of move ") })
	if i < 0 {
		return slices.Clone(zb.seq)
	}
	return slices.Clone(zb.seq[:i])
}

func (zb *zonalBed) must(err error) {
	zb.t.Helper()
	if err != nil {
		zb.t.Fatal(err)
	}
}
func (zb *zonalBed) claim(name string) *corev1.PersistentVolumeClaim {
	obj, err := zb.client.Tracker().Get(claimsGVR, "redis", name)
	zb.must(err)
	return obj.(*corev1.PersistentVolumeClaim)
}

// stopPod deletes the old pod and re-creates it as the StatefulSet controller does: its deleted
// claims go (and their volumes, reclaimPolicy Delete) and come back bound in the zone of landOn's
// node; with its claims kept, it comes back on its old node.
func (zb *zonalBed) stopPod(name string) {
	obj, err := zb.client.Tracker().Get(podsGVR, "redis", name)
	zb.must(err)
	old := obj.(*corev1.Pod)
	zb.must(zb.client.Tracker().Delete(podsGVR, old.Namespace, old.Name))
	node := old.Spec.NodeName
	for _, v := range old.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		c := zb.claim(v.PersistentVolumeClaim.ClaimName)
		if c.DeletionTimestamp == nil {
			continue
		}
		zb.must(zb.client.Tracker().Delete(claimsGVR, c.Namespace, c.Name))
		zb.must(zb.client.Tracker().Delete(pvsGVR, "", c.Spec.VolumeName))
		node = zb.landOn[name]
		nobj, err := zb.client.Tracker().Get(nodesGVR, "", node)
		zb.must(err)
		zone := nobj.(*corev1.Node).Labels[corev1.LabelTopologyZone]
		pvc, pv := fixture.BoundClaim(c.Namespace, c.Name, "pv-new-"+c.Name, corev1.LabelTopologyZone, zone)
		pvc.UID = types.UID(c.Name + "-new")
		pvc.Annotations = map[string]string{"volume.kubernetes.io/selected-node": node}
		pv.Spec.ClaimRef.UID = pvc.UID
		zb.must(zb.client.Tracker().Add(pv))
		zb.must(zb.client.Tracker().Add(pvc))
	}
	p := old.DeepCopy()
	p.UID = types.UID(string(old.UID) + "-again")
	p.ResourceVersion = ""
	p.DeletionTimestamp = nil
	fixture.On(node)(p)
	fixture.Ready()(p)
	zb.must(zb.client.Tracker().Add(p))
}

// zonalConfig is the executor's configuration on zb: claims releasable, one eviction, zb the
// observer.
func (zb *zonalBed) config(c *Config) {
	c.Policy.ReleaseReplicaClaims = true
	c.MaxMoves = 1
	c.FullSyncTimeout = 300 * time.Millisecond
	c.Observer = zb
}

// TestReleaseClaims drives the release step on post-scale-down with zonal claims, where the five
// pods of zone a are masters: the move fails a master over, evicts its pod, then deletes its
// claim, and only then; each check that says no keeps the claims (or stops the move before
// anything is disrupted). Every row checks the order of what disrupted.
func TestReleaseClaims(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(zb *zonalBed)
		// wantSeq is what disrupted, in order (%s the moved pod, %m the pod of the master that
		// replaced it).
		wantSeq            []string
		lastStep, outcome  string
		wantReleased, kept string // kept: a substring of ClaimsKept
		wantZoneChanged    bool
	}{
		{
			name:     "a master on its zone-a claim → failed over, evicted, claim deleted while the old pod is there, re-created and bound in the target zone; compliant",
			wantSeq:  []string{"failover %m", "evict %s", "delete claim data-%s (pod %s present)", "stop %s"},
			lastStep: report.StepReobserve, outcome: report.OutcomeContinue, wantReleased: "data-%s", wantZoneChanged: true,
		},
		{
			name:     "PodDisruptionBudget refuses the eviction → skip at evict after the failover; no claim deleted",
			setup:    func(zb *zonalBed) { zb.refuse = true },
			wantSeq:  []string{"failover %m"},
			lastStep: report.StepEvict, outcome: report.OutcomeSkip,
		},
		{
			name: "the shard's master reports cluster_state fail at the release → claims kept; the pod comes back on its volumes",
			setup: func(zb *zonalBed) {
				zb.redis.info = func(_, section string) (string, bool) {
					zb.mu.Lock()
					defer zb.mu.Unlock()
					return "cluster_state:fail\r\n", section == "cluster" && zb.evictedPod != ""
				}
			},
			wantSeq:  []string{"failover %m", "evict %s", "stop %s"},
			lastStep: report.StepReobserve, outcome: report.OutcomeContinue, kept: "reports cluster_state fail",
		},
		{
			name: "another replica of the shard is in a full sync → claims kept (one released claim per shard at a time)",
			setup: func(zb *zonalBed) {
				zb.redis.info = func(_, section string) (string, bool) {
					return "role:master\r\nconnected_slaves:1\r\nslave0:ip=10.9.9.9,port=6379,state=wait_bgsave,offset=0,lag=0\r\n", section == "replication"
				}
			},
			wantSeq:  []string{"failover %m", "evict %s", "stop %s"},
			lastStep: report.StepReobserve, outcome: report.OutcomeContinue, kept: "is syncing (state wait_bgsave)",
		},
		{
			name:     "the old pod gone before the release step → claims kept (the StatefulSet may re-create it with them)",
			setup:    func(zb *zonalBed) { zb.stopAfter = report.StepEvict },
			wantSeq:  []string{"failover %m", "evict %s", "stop %s"},
			lastStep: report.StepReobserve, outcome: report.OutcomeContinue, kept: "was gone before its claims could be released",
		},
		{
			name: "a claim of another pod of the shard is terminating (a release in flight) → skip at placeable; nothing disrupted",
			setup: func(zb *zonalBed) {
				// Every claim but the moved pod's: the other pod of its shard is among them.
				for _, p := range zb.sc.MustSnapshot().Pods {
					if zb.landOn[p.Name] != "" {
						continue
					}
					c := zb.claim("data-" + p.Name).DeepCopy()
					now := metav1.NewTime(zb.clock.Now())
					c.DeletionTimestamp = &now
					zb.must(zb.client.Tracker().Update(claimsGVR, c, c.Namespace))
				}
			},
			lastStep: report.StepPlaceable, outcome: report.OutcomeSkip,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zb := newZonalBed(t)
			if tc.setup != nil {
				tc.setup(zb)
			}
			before, zoneOf := map[string]*corev1.PersistentVolumeClaim{}, map[string]string{}
			for pod := range zb.landOn {
				before[pod] = zb.claim("data-" + pod).DeepCopy()
				zoneOf[pod] = volumeZoneOf(t, zb, before[pod])
			}
			rep, _ := runExecutor(t, zb.testbed, zb.config)
			if len(rep.Clusters) != 1 || len(rep.Clusters[0].Moves) == 0 {
				t.Fatalf("report: %+v", rep.Clusters)
			}
			m := rep.Clusters[0].Moves[0]
			pod := podName(m.Pod)
			if _, ok := zb.landOn[pod]; !ok || m.Kind != plan.KindEvict {
				t.Fatalf("first move %s %s, want an eviction of one of %v", m.Kind, m.Pod, zb.landOn)
			}
			master := pod
			if m.Failover != nil {
				master = m.Failover.NewMaster
			}
			expand := func(s string) string {
				return strings.NewReplacer("%s", pod, "%m", master).Replace(s)
			}
			var wantSeq []string
			for _, s := range tc.wantSeq {
				wantSeq = append(wantSeq, expand(s))
			}
			if diff := cmp.Diff(wantSeq, zb.firstMove(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("what disrupted, in order (-want +got):\n%s", diff)
			}
			want := allSteps
			if tc.lastStep != report.StepPlaceable && tc.lastStep != report.StepEvict {
				want = slices.Insert(slices.Clone(allSteps), slices.Index(allSteps, report.StepRecreate), report.StepRelease)
			}
			var wantSteps []string
			for _, s := range want {
				if s == tc.lastStep {
					wantSteps = append(wantSteps, s+" "+tc.outcome)
					break
				}
				wantSteps = append(wantSteps, s+" "+report.OutcomeContinue)
			}
			if diff := cmp.Diff(wantSteps, stepNames(m)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			var wantReleased []string
			if tc.wantReleased != "" {
				wantReleased = []string{expand(tc.wantReleased)}
			}
			if diff := cmp.Diff(wantReleased, m.ReleasedClaims); diff != "" || !strings.Contains(m.ClaimsKept, tc.kept) || (tc.kept == "") != (m.ClaimsKept == "") {
				t.Errorf("released %v (-want +got):\n%s\nkept %q, want it to say %q", m.ReleasedClaims, diff, m.ClaimsKept, tc.kept)
			}
			now := zb.claim("data-" + pod)
			zoneBefore, zoneNow := zoneOf[pod], volumeZoneOf(t, zb, now)
			if changed := now.UID != before[pod].UID; changed != tc.wantZoneChanged || (zoneNow != zoneBefore) != tc.wantZoneChanged {
				t.Errorf("claim data-%s: UID %q → %q, zone %s → %s; want a new claim in another zone: %v", pod, before[pod].UID, now.UID, zoneBefore, zoneNow, tc.wantZoneChanged)
			}
			if tc.wantZoneChanged {
				want := []report.Volume{{Claim: now.Name, PersistentVolume: now.Spec.VolumeName, Zone: zoneNow}}
				if diff := cmp.Diff(want, m.Volumes); diff != "" {
					t.Errorf("report's volumes (-want +got):\n%s", diff)
				}
				if cr := rep.Clusters[0]; !cr.Compliant {
					t.Errorf("cluster not compliant (MasterQuorum included) after the run: %+v", cr.After)
				}
			}
		})
	}
}

// volumeZoneOf returns the zone of claim c's volume.
func volumeZoneOf(t *testing.T, zb *zonalBed, c *corev1.PersistentVolumeClaim) string {
	t.Helper()
	obj, err := zb.client.Tracker().Get(pvsGVR, "", c.Spec.VolumeName)
	if err != nil {
		return "(volume " + c.Spec.VolumeName + " gone)"
	}
	return volumeZone(obj.(*corev1.PersistentVolume))
}

// TestReintroduceEmpty plays what a run killed between a release and its rejoin leaves: redis-s3-1
// came back (new IP 10.0.3.1) with empty volumes, its Redis node a new one that knows no other
// node, while the cluster still lists the replica it was (old ID, old IP 10.9.3.1), answering no
// more. The next run re-introduces it before its moves, only with claims releasable, and leaves a
// node back empty alone when it replaces no listed replica (a scale-up: its operator's).
func TestReintroduceEmpty(t *testing.T) {
	const emptyAddr = "10.0.3.1:6379"
	for _, tc := range []struct {
		name    string
		release bool
		// oldGone: the old replica is listed and answers no more; otherwise no node lists it.
		oldGone   bool
		wantCalls []string
		wantLines int
		wantOut   string
	}{
		{
			name:    "claims releasable, the old replica listed and gone → re-introduced as a replica of its shard's master, the old one forgotten, its full sync waited for",
			release: true, oldGone: true,
			wantCalls: []string{"reintroduce 10.0.3.1:6379 in place of old-s3-1, replica of %m", "rejoin 10.0.3.1:6379"},
			wantLines: 1, wantOut: "came back empty in place of replica old-s3-1",
		},
		{
			name:    "claims not releasable → left alone (a node back empty is its operator's to add)",
			oldGone: true,
		},
		{
			name:    "claims releasable, no listed replica it replaces (a scale-up) → left alone, said so",
			release: true,
			wantOut: "replaces no node the cluster lists: left to its operator",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestbed(t, scenario.PostScaleDown())
			cfg := tb.config()
			cfg.Policy.ReleaseReplicaClaims = tc.release
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			cr := &clusterRun{run: e.newRun(ctx), key: "redis/redis", out: &tb.out}
			c, err := cr.observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tb.redis.mu.Lock()
			base := tb.redis.topology()
			tb.redis.mu.Unlock()
			masterID := ""
			var merged []redisctl.Node
			var views []redisctl.View
			for _, n := range base.Nodes {
				if n.Addr() == emptyAddr {
					masterID = n.MasterID
					if tc.oldGone {
						old := n
						old.ID, old.IP, old.Flags = "old-s3-1", "10.9.3.1", []string{redisctl.FlagReplica, redisctl.FlagFail}
						old.LinkState = redisctl.LinkDisconnected
						merged = append(merged, old)
					}
					me := redisctl.Node{ID: "new-s3-1", IP: n.IP, Port: n.Port, LinkState: redisctl.LinkConnected, Flags: []string{redisctl.FlagMyself, redisctl.FlagMaster}}
					views = append(views, redisctl.View{Addr: emptyAddr, Nodes: []redisctl.Node{me}})
					merged = append(merged, me)
					continue
				}
				merged = append(merged, n)
			}
			for _, n := range base.Nodes {
				if n.Addr() == emptyAddr {
					continue
				}
				var lines []redisctl.Node
				for _, o := range merged {
					if o.ID == "new-s3-1" {
						continue // the others do not know it yet
					}
					if o.ID == n.ID {
						o.Flags = append([]string{redisctl.FlagMyself}, o.Flags...)
					}
					lines = append(lines, o)
				}
				views = append(views, redisctl.View{Addr: n.Addr(), Nodes: lines})
			}
			tb.redis.mu.Lock()
			tb.redis.topo = func() *redisctl.Topology { return &redisctl.Topology{Nodes: merged, Views: views} }
			tb.redis.mu.Unlock()

			lines, err := cr.reintroduceEmpty(ctx, c)
			t.Logf("progress:\n%s", tb.out.String())
			if err != nil {
				t.Fatal(err)
			}
			var wantCalls []string
			for _, s := range tc.wantCalls {
				wantCalls = append(wantCalls, strings.ReplaceAll(s, "%m", masterID))
			}
			got := append(tb.redis.called("reintroduce"), tb.redis.called("rejoin")...)
			if diff := cmp.Diff(wantCalls, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if len(lines) != tc.wantLines {
				t.Errorf("lines %q, want %d", lines, tc.wantLines)
			}
			if !strings.Contains(tb.out.String(), tc.wantOut) {
				t.Errorf("progress does not say %q", tc.wantOut)
			}
		})
	}
}
