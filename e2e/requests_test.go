package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// chartRequests gives every container of a template the Bitnami chart's default resources (its
// "nano" preset: requests cpu 100m, memory 128Mi, ephemeral-storage 50Mi).
func chartRequests(t *corev1.PodTemplateSpec) {
	for i := range t.Spec.Containers {
		t.Spec.Containers[i].Resources = corev1.ResourceRequirements{
			Requests: fixture.ResourceList("cpu=100m", "memory=128Mi", "ephemeral-storage=50Mi"),
			Limits:   fixture.ResourceList("cpu=150m", "memory=192Mi", "ephemeral-storage=2Gi"),
		}
	}
}

// chartRoomLeft is the ephemeral storage fillNode leaves on a node: less than the chart's 50Mi.
var chartRoomLeft = resource.MustParse("10Mi")

// fillNode binds to node a pod of env's namespace (not a Redis pod) requesting all of the
// node's allocatable ephemeral storage that the pods already there do not request, but
// chartRoomLeft, and removes it when the test ends. The pods there that request ephemeral
// storage must be env's, none terminating: another test's may come and go (the test bed settled
// before env was set up, so no earlier test's pod is left; a test that fills nodes does not run
// in parallel with the others).
func fillNode(t *testing.T, env *harness.Env, node string) {
	t.Helper()
	ctx := t.Context()
	client := env.Client()
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	free := n.Status.Allocatable.StorageEphemeral().DeepCopy()
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			req := c.Resources.Requests.StorageEphemeral()
			if p.Namespace != env.Namespace && !req.IsZero() {
				t.Fatalf("fill %s: pod %s/%s of another test requests ephemeral storage there: the fill would depend on it", node, p.Namespace, p.Name)
			}
			if p.DeletionTimestamp != nil && !req.IsZero() {
				t.Fatalf("fill %s: pod %s/%s, terminating, requests ephemeral storage there: the fill would depend on when it goes", node, p.Namespace, p.Name)
			}
			free.Sub(*req)
		}
	}
	free.Sub(chartRoomLeft)
	filler := fixture.Pod("fill-"+node, fixture.InNamespace(env.Namespace), fixture.WithTolerations(fixture.KwokToleration()), func(p *corev1.Pod) {
		p.UID, p.Spec.NodeName = "", node
		p.Status = corev1.PodStatus{}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: free}}
	})
	if _, err := client.CoreV1().Pods(env.Namespace).Create(ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := client.CoreV1().Pods(env.Namespace).Delete(ctx, filler.Name, *metav1.NewDeleteOptions(0)); err != nil {
			t.Error(err)
			return
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().Pods(env.Namespace).Get(ctx, filler.Name, metav1.GetOptions{})
			return err != nil, nil
		})
		if err != nil {
			t.Errorf("filler pod %s still there: %v", filler.Name, err)
		}
	})
}

// TestChartRequestsSomeNodesFull: the Bitnami-style post-scale-down drift with the chart's
// default requests (ephemeral-storage 50Mi), on nodes where n2 and n6 have less than 50Mi of
// ephemeral storage left (a filler pod takes the rest): the plan names neither as a node the
// re-created pod may land on, the run carries it out (exit 0, compliant), every re-created pod
// lands on a node with room, and no write is lost. It does not call t.Parallel: the room it
// leaves on n2 and n6 must not change under it, and the other tests in Bitnami's layout (the
// chart's requests, ephemeral storage included) move pods on and off those nodes.
func TestChartRequestsSomeNodesFull(t *testing.T) {
	sc := scenario.BitnamiPostScaleDown()
	sc.NoPersistence = true // the chart's claims are the zonal volumes' test
	f := newFaultEnv(t, sc, harness.Options{Templates: chartRequests}, true)
	full := []string{"n2", "n6"}
	for _, n := range full {
		fillNode(t, f.Env, n)
	}
	a := planJSON(t, cliArgs("plan", f.Env, "--layout", "bitnami", "-o", "json")...)
	evictions := 0
	for _, c := range a.Clusters {
		for _, mv := range c.Moves {
			if mv.Kind != "evict" {
				continue
			}
			evictions++
			t.Logf("planned: evict %s from %s → %s, candidates %v", mv.Pod, mv.Node, mv.Expected, mv.CandidateNodes)
			if slices.Contains(full, mv.Expected) || slices.ContainsFunc(mv.CandidateNodes, func(n string) bool { return slices.Contains(full, n) }) {
				t.Errorf("move of %s: expected %s, candidates %v; %v have no ephemeral-storage room", mv.Pod, mv.Expected, mv.CandidateNodes, full)
			}
		}
	}
	if evictions == 0 {
		t.Fatalf("the plan has no eviction: %+v", a)
	}
	run := startCLI(t, nil, runArgs(f.Env, "--layout", "bitnami")...)
	code := run.wait(5 * time.Minute)
	assertExit(t, code, app.ExitOK, run)
	cr := onlyCluster(t, run.report())
	moved := 0
	for _, m := range cr.Moves {
		if m.Evicted {
			moved++
			t.Logf("moved: %s %s → %s (expected %s)", m.Pod, m.From, m.To, m.Expected)
			if slices.Contains(full, m.To) {
				t.Errorf("move of %s landed on %s, which has no ephemeral-storage room", m.Pod, m.To)
			}
		}
	}
	if !cr.Compliant || moved == 0 {
		t.Errorf("compliant %v after %d evictions; want compliant after at least one", cr.Compliant, moved)
	}
	f.finish(t)
}

// TestChartRequestsNoRoom: every node runs out of ephemeral storage after the plan, before the
// eviction (a replica's redis-server is paused so that the health gate holds the run; once it
// waits, a filler pod takes all but 10Mi of every node's ephemeral storage, then the server
// resumes). The placeability check finds no node for the re-created pod, in kube-scheduler's
// words ("Insufficient ephemeral-storage"): the move is skipped before any failover (exit 3,
// stopped by placeable), nothing is failed over or evicted, no pod goes away and the roles stay
// as they were. It fills every node of the shared bed, so it does not call t.Parallel.
func TestChartRequestsNoRoom(t *testing.T) {
	sc := scenario.BitnamiPostScaleDown()
	sc.NoPersistence = true // the chart's claims are the zonal volumes' test
	f := newFaultEnv(t, sc, harness.Options{Templates: chartRequests}, true)
	roles := rolesOf(t, f.Env)
	_, resume := pauseServer(t, f, sc.PodName(2, 1))

	run := startCLI(t, nil, runArgs(f.Env, "--layout", "bitnami")...)
	pod := movedPod.FindStringSubmatch(run.waitLineWith(2*time.Minute, "): evict ", " from "))[1]
	run.waitLine("waiting for a healthy cluster", time.Minute)
	for _, n := range sc.NodeNames() {
		fillNode(t, f.Env, n)
	}
	resume()
	_, cr, first := waitStopped(t, run, app.ExitViolations, report.StepPlaceable, "placeability: "+pod+", re-created from its template now, fits no node")
	// n1 holds four pods already: the spread constraint rejects it first, in the scheduler's
	// plugin order; every other node lacks room.
	for _, want := range []string{fmt.Sprintf("0/%d nodes are available", len(sc.NodeNames())), "Insufficient ephemeral-storage"} {
		if !strings.Contains(first, want) {
			t.Errorf("reason %q lacks %q", first, want)
		}
	}
	assertSkippedAtPlaceable(t, f, cr, roles, "no node had room")
	f.drain(t)
}
