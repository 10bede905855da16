package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/provisioner"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// claimState is a claim as the test saw it: its UID, its volume and the volume's zone.
type claimState struct {
	uid          types.UID
	volume, zone string
}

// TestZonalVolumesReleaseClaims runs the post-scale-down drift on a Bitnami-style cluster whose
// every pod keeps its data on a zonal PersistentVolume (the chart's default 8Gi claim
// "redis-data-<pod>", provisioned by the test bed's CSI-style provisioner, WaitForFirstConsumer,
// pinned to the zone of the pod's node), with a writer at 250 writes/s. Zone-a's five pods are
// masters, pinned by their volumes: without --release-replica-claims there is no plan; with it,
// `run` fails a master of zone-a over, evicts its pod, releases its claim, and the StatefulSet
// re-creates pod and claim in another zone, where the claim binds to a new volume; the pod's
// Redis node, back empty, is re-introduced by the rebalancer (the harness's operator stand-in adds
// nothing, as Bitnami's chart would not) and full-syncs from its master. The cluster ends
// compliant (MasterQuorum included) and healthy, with no write failed or lost; the old claim and
// its volume are gone, the new claim bound in the target zone.
func TestZonalVolumesReleaseClaims(t *testing.T) {
	const password = "bitnami-e2e-password"
	sc := scenario.BitnamiZonalPostScaleDown()
	if sc.Claims.StorageClass != provisioner.StorageClass {
		t.Fatalf("the scenario's claims are of StorageClass %q, the test bed provisions %q", sc.Claims.StorageClass, provisioner.StorageClass)
	}
	opts := harness.Options{
		RedisArgs: []string{"--requirepass", password, "--masterauth", password},
		Redis:     redisctl.Options{Password: password},
		// A pod takes a second to go once evicted, as a container's shutdown does.
		PodAnnotations: map[string]string{localcluster.PodDeleteDelayAnnotation: "1s"},
		NoMemberAdds:   true,
	}
	var policyArgs []string
	claimsBefore := map[string]claimState{} // by claim name
	nodeIDs := map[string]string{}          // pod → Redis node ID before the run
	syncFull := map[string]int64{}          // Redis node ID → INFO stats sync_full before the run
	res := runScenarioWith(t, sc, opts, false, func(ctx context.Context, env *harness.Env) error {
		policy := e2ePolicy + fmt.Sprintf("redis: {passwordSecretRef: {namespace: %s, name: %s, key: %s}}\n",
			env.Namespace, sc.BitnamiFullname(), scenario.BitnamiPasswordKey)
		file := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(file, []byte(policy), 0o600); err != nil {
			return err
		}
		policyArgs = []string{"--policy", file, "--layout", "bitnami"}
		// Every claim is bound to a volume the provisioner pinned to its pod's zone.
		pods, err := env.Client().CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sc.Selector()})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			claim := scenario.BitnamiClaimTemplate + "-" + p.Name
			cs, err := claimOf(ctx, env, claim)
			if err != nil {
				return err
			}
			if want := zoneOfNode(env, p.Spec.NodeName); cs.zone != want {
				return fmt.Errorf("claim %s of pod %s on %s: volume %s in zone %q, want %q", claim, p.Name, p.Spec.NodeName, cs.volume, cs.zone, want)
			}
			claimsBefore[claim] = cs
			id, err := nodeIDOf(ctx, env, p.Status.PodIP)
			if err != nil {
				return err
			}
			nodeIDs[p.Name] = id
			if syncFull[id], err = syncFullOf(ctx, env, p.Status.PodIP); err != nil {
				return err
			}
		}
		// No plan while the claims are kept: the volumes pin zone-a's masters.
		r := startCLI(t, nil, cliArgs("plan", env, append(policyArgs, "-o", "json")...)...)
		if code := r.wait(time.Minute); code != app.ExitViolations {
			return fmt.Errorf("plan without --release-replica-claims exited %d (%s), want %d (violations, no plan)", code, r.errorLine(), app.ExitViolations)
		}
		var kept report.Analysis
		if err := json.Unmarshal(r.stdout.Bytes(), &kept); err != nil {
			return fmt.Errorf("plan output: %w\n%s", err, r.stdout.String())
		}
		if len(kept.Clusters) != 1 || kept.Clusters[0].LimitedBy == "" || !strings.Contains(kept.Clusters[0].Infeasible, "zonal PersistentVolumes keep them there") {
			return fmt.Errorf("plan without --release-replica-claims: %+v, want no plan because of the zonal volumes", kept.Clusters)
		}
		t.Logf("plan without --release-replica-claims: %s", kept.Clusters[0].Infeasible)
		return nil
	}, func(*harness.Env) []string { return append(slices.Clone(policyArgs), "--release-replica-claims") })
	env := res.env
	ctx := t.Context()
	evictions, failovers := assertSafeAndCompliant(t, res)

	// The move that released a claim: a master of zone-a, failed over first, then evicted, then
	// its claim released, re-created, rejoined after a full sync.
	var moved *report.MoveResult
	for _, cr := range res.report.Clusters {
		for k := range cr.Moves {
			if len(cr.Moves[k].ReleasedClaims) > 0 {
				if moved != nil {
					t.Errorf("two moves released claims: %s and %s", moved.Pod, cr.Moves[k].Pod)
				}
				moved = &cr.Moves[k]
			}
		}
	}
	if moved == nil {
		t.Fatalf("no move released a claim: %+v", res.report.Clusters)
	}
	pod := podName(moved.Pod)
	claim := scenario.BitnamiClaimTemplate + "-" + pod
	if moved.Failover == nil || moved.Failover.OldMaster != pod || moved.RoleAtEviction != "replica" {
		t.Errorf("move of %s: failover %+v, role at eviction %q; want the master failed over first, a replica when evicted", pod, moved.Failover, moved.RoleAtEviction)
	}
	var order []string
	for _, s := range moved.Steps {
		order = append(order, s.Name)
		t.Logf("  %s (%.3fs): %s", s.Name, s.Seconds, s.Reason)
	}
	want := []string{report.StepWindow, report.StepHealthGate, report.StepPlaceable, report.StepPDBDryRun, report.StepFailover, report.StepDrain,
		report.StepRoleCheck, report.StepEvict, report.StepRelease, report.StepRecreate, report.StepRejoin, report.StepReobserve}
	if !slices.Equal(order, want) {
		t.Errorf("steps of the move: %v, want %v (failover, then eviction, then release)", order, want)
	}
	if !slices.Equal(moved.ReleasedClaims, []string{claim}) || moved.ClaimsKept != "" {
		t.Errorf("released %v (kept: %q), want [%s]", moved.ReleasedClaims, moved.ClaimsKept, claim)
	}
	oldZone, newZone := claimsBefore[claim].zone, zoneOfNode(env, moved.To)
	if oldZone == newZone {
		t.Errorf("%s moved from %s (%s) to %s (%s): not across zones", pod, moved.From, oldZone, moved.To, newZone)
	}
	// The old claim and its volume are gone; the new claim is bound in the target zone.
	now, err := claimOf(ctx, env, claim)
	if err != nil {
		t.Fatal(err)
	}
	if now.uid == claimsBefore[claim].uid || now.volume == claimsBefore[claim].volume || now.zone != newZone {
		t.Errorf("claim %s now %+v (before %+v): want a new claim bound to a new volume in %s", claim, now, claimsBefore[claim], newZone)
	}
	if len(moved.Volumes) != 1 || moved.Volumes[0] != (report.Volume{Claim: claim, PersistentVolume: now.volume, Zone: newZone}) {
		t.Errorf("report volumes %+v, want %s bound to %s in %s", moved.Volumes, claim, now.volume, newZone)
	}
	if err := waitVolumeGone(ctx, env, claimsBefore[claim].volume); err != nil {
		t.Error(err)
	}
	// The pod's Redis node is a new one, fully synced from its master (the master served a full
	// sync more than before), and the cluster forgot the old one (the health gate passed with
	// every node answering).
	newPod, err := env.Client().CoreV1().Pods(env.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newID, err := nodeIDOf(ctx, env, newPod.Status.PodIP)
	if err != nil {
		t.Fatal(err)
	}
	if newID == nodeIDs[pod] {
		t.Errorf("%s's Redis node is still %s: its data survived the release", pod, newID)
	}
	topo, err := env.Redis.Topology(ctx, env.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	var master redisctl.Node
	for _, n := range topo.Nodes {
		if n.ID == nodeIDs[pod] {
			t.Errorf("the cluster still lists the old node %s of %s", n.ID, pod)
		}
		if n.ID == newID {
			for _, m := range topo.Nodes {
				if m.ID == n.MasterID {
					master = m
				}
			}
		}
	}
	if master.ID == "" {
		t.Fatalf("%s's node %s replicates no known master", pod, newID)
	}
	full, err := syncFullOf(ctx, env, master.IP)
	if err != nil {
		t.Fatal(err)
	}
	if full <= syncFull[master.ID] {
		t.Errorf("master %s served %d full syncs, %d before the run: the re-created replica did not full-sync", master.Addr(), full, syncFull[master.ID])
	}
	t.Logf("zonal volumes: %s moved %s (%s) → %s (%s) with claim %s released (volume %s → %s), node %s → %s full-synced from %s; %d evictions, %d failovers; writer %s",
		pod, moved.From, oldZone, moved.To, newZone, claim, claimsBefore[claim].volume, now.volume, nodeIDs[pod][:8], newID[:8], master.Addr(), evictions, failovers, res.writer)
}

// claimOf returns claim's state in env's namespace: its UID, its volume and the volume's zone.
func claimOf(ctx context.Context, env *harness.Env, claim string) (claimState, error) {
	c, err := env.Client().CoreV1().PersistentVolumeClaims(env.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return claimState{}, err
	}
	if c.Spec.VolumeName == "" || c.Status.Phase != corev1.ClaimBound {
		return claimState{}, fmt.Errorf("claim %s is not bound (%s)", claim, c.Status.Phase)
	}
	pv, err := env.Client().CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return claimState{}, err
	}
	zone := ""
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil && len(na.Required.NodeSelectorTerms) == 1 {
		for _, e := range na.Required.NodeSelectorTerms[0].MatchExpressions {
			if e.Key == corev1.LabelTopologyZone && len(e.Values) == 1 {
				zone = e.Values[0]
			}
		}
	}
	return claimState{uid: c.UID, volume: pv.Name, zone: zone}, nil
}

// zoneOfNode returns the zone of one of the bed's nodes.
func zoneOfNode(env *harness.Env, node string) string {
	for _, z := range env.Bed.Zones {
		if slices.Contains(z.Nodes, node) {
			return z.Name
		}
	}
	return ""
}

// waitVolumeGone waits until PersistentVolume name is deleted (the provisioner deletes a volume
// whose claim is gone).
func waitVolumeGone(ctx context.Context, env *harness.Env, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pv, err := env.Client().CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			last = string(pv.Status.Phase)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("volume %s of the released claim not deleted (phase %s): %w", name, last, err)
	}
	return nil
}

// nodeIDOf returns the Redis node ID of the pod at ip.
func nodeIDOf(ctx context.Context, env *harness.Env, ip string) (string, error) {
	v, err := env.Redis.ReadView(ctx, env.Redis.AddrOf(ip))
	if err != nil {
		return "", err
	}
	me, ok := v.Myself()
	if !ok {
		return "", fmt.Errorf("%s: no myself line", ip)
	}
	return me.ID, nil
}

// syncFullOf returns the number of full syncs the Redis node at ip has served (INFO stats
// sync_full).
func syncFullOf(ctx context.Context, env *harness.Env, ip string) (int64, error) {
	v, err := env.Redis.Do(ctx, env.Redis.AddrOf(ip), "INFO", "stats")
	if err != nil {
		return 0, err
	}
	return redisctl.ParseInfo(fmt.Sprint(v)).Int("sync_full", -1), nil
}
