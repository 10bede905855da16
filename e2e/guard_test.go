package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The eviction guard end to end: `redis-rebalancer serve --guard` (the test binary re-executed)
// answers kube-apiserver's AdmissionReviews over TLS at https://127.0.0.1:PORT (its certificate
// has an IP SAN), behind a TCP proxy that stands in for the Service in front of serve's replicas;
// a ValidatingWebhookConfiguration sends it the evictions of the test's namespace. Drains go
// through k8s.io/kubectl/pkg/drain (kubectl's own code: cordon, evict, retry a 429 after
// EvictErrorRetryDelay). The writer writes 250 writes/s throughout; every pod's role is recorded
// as its redis-server stops.

// slowStart makes every (re-)created pod take 5 s to start: longer than the bed's Redis
// cluster-node-timeout (2 s), so that a master evicted without a failover is gone long enough for
// Redis to notice (on the instant bed it would be back first, and its writes would not fail).
var slowStart = map[string]string{localcluster.PodReadyDelayAnnotation: "5s"}

// guardedEnv is a faultEnv with serve's eviction guard in front of its evictions.
type guardedEnv struct {
	*faultEnv
	webhook harness.GuardWebhook
	serves  []*cliRun
	addrs   []string // each replica's guard address
	proxy   *harness.Proxy
}

// guardAddrRE finds the address in serve's log line "Serving the eviction guard".
var guardAddrRE = regexp.MustCompile(`"address":"([^"]+)"`)

// startGuard starts replicas of `redis-rebalancer serve --guard` on f (leader-elected on a Lease
// in f's namespace, no scheduled pass), a proxy in front of them, and a webhook configuration with
// failure policy fp sending f's namespace's evictions there; it waits until a dry-run eviction of
// a master is the guard's 429, and until one replica leads. extra are more flags of serve (a
// later flag wins). Everything is stopped and removed when the test ends.
func startGuard(t *testing.T, f *faultEnv, replicas int, fp admissionregistrationv1.FailurePolicyType, extra ...string) *guardedEnv {
	t.Helper()
	return startGuardWith(t, f, replicas, fp, "", extra...)
}

// startGuardWith is startGuard with more of the RebalancerPolicy's YAML (policyExtra: top-level
// fields other than guard and those of e2ePolicy, "failover: {drainQuiet: 5s}\n").
func startGuardWith(t *testing.T, f *faultEnv, replicas int, fp admissionregistrationv1.FailurePolicyType, policyExtra string, extra ...string) *guardedEnv {
	t.Helper()
	dir := t.TempDir()
	ca, err := harness.GuardTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := &guardedEnv{faultEnv: f}
	name := "guard-" + f.Namespace
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(e2ePolicy+policyExtra+"guard: {webhookConfigurationName: "+name+", maxHold: 3m}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range replicas {
		args := append(serveArgs(t, f.Env), "--policy", policy, "--pass-on-start=false", "--schedule", "@yearly",
			"--guard", "--guard-listen-address", "127.0.0.1:0", "--guard-cert-dir", dir, "-v", "2")
		r := startCLI(t, nil, append(args, extra...)...)
		m := guardAddrRE.FindStringSubmatch(r.waitLine(`"msg":"Serving the eviction guard"`, 2*time.Minute))
		if m == nil {
			t.Fatal("no guard address in serve's output")
		}
		g.serves, g.addrs = append(g.serves, r), append(g.addrs, m[1])
	}
	if g.proxy, err = harness.StartProxy(g.addrs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.proxy.Close() })
	g.webhook = harness.GuardWebhook{Name: name, Namespace: f.Namespace, URL: "https://" + g.proxy.Addr() + guard.Path, CABundle: ca, FailurePolicy: fp}
	ctx := t.Context()
	if err := g.webhook.Install(ctx, f.Client()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := g.webhook.Uninstall(ctx, f.Client()); err != nil {
			t.Error(err)
		}
	})
	byNode, _ := masterPlaces(t, f)
	_, n := most(byNode)
	if n == 0 {
		t.Fatal("no master serving slots")
	}
	var master string
	for _, pods := range byNode {
		master = pods[0]
	}
	if err := harness.WaitDryRunEviction(ctx, f.Client(), f.Namespace, master, time.Minute, guardHeld(guard.ReasonMaster)); err != nil {
		t.Fatal(err)
	}
	g.leader(time.Minute)
	return g
}

// guardHeld returns a predicate on an eviction's error: the guard's 429 with reason r.
func guardHeld(r guard.Reason) func(error) bool {
	return func(err error) bool { return apierrors.IsTooManyRequests(err) && guard.Denied(err.Error(), r) }
}

// leader waits until one of the replicas leads (its hand-off runs) and returns it.
func (g *guardedEnv) leader(timeout time.Duration) *cliRun {
	g.t().Helper()
	var lead *cliRun
	err := wait.PollUntilContextTimeout(g.t().Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, r := range g.serves {
			if r.exited() {
				continue
			}
			if strings.Contains(r.stderr(), `"msg":"Hand-off running`) {
				lead = r
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		g.t().Fatalf("no replica of serve leads after %s", timeout)
	}
	return lead
}

func (g *guardedEnv) t() *testing.T { return g.serves[0].t }

// TestGuardDrain drains the node holding the most masters (n1: 2 of 5) with the writer at 250
// writes/s and every re-created pod slower to start than Redis's node timeout. Without the guard
// the drain evicts masters and writes fail (the test must see some, or it proves nothing). With
// it, the drain completes, every pod it evicts is a replica as it stops, no write fails or is
// lost, and MasterQuorum holds afterwards (the hand-off made room in zone-b first). Both cordon a
// node of the shared bed, so they run alone.
func TestGuardDrain(t *testing.T) {
	t.Run("without the guard → masters evicted, writes fail", func(t *testing.T) {
		f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{PodAnnotations: slowStart}, true)
		kubectlDrain(t, f.Env, "n1", f.Namespace, time.Second)
		stats := f.drain(t) // no acknowledged write lost
		masters := 0
		for _, s := range f.Stops() {
			if s.Role == "master" {
				masters++
			}
		}
		t.Logf("without the guard: %d of %d pods evicted were masters; %d writes failed (%v)", masters, len(f.Stops()), stats.Failed, stats.Failures)
		if masters == 0 || stats.Failed == 0 {
			t.Errorf("%d masters evicted, %d writes failed: want some of each, or the guard's test below proves nothing", masters, stats.Failed)
		}
	})
	t.Run("with the guard → the masters handed off first, 0 failed writes, MasterQuorum holds", func(t *testing.T) {
		f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{PodAnnotations: slowStart}, true)
		g := startGuard(t, f, 1, admissionregistrationv1.Ignore)
		phase := startPhase(f.writer)
		start := time.Now()
		kubectlDrain(t, f.Env, "n1", f.Namespace, time.Second)
		t.Logf("drain with the guard: %s, writer %.0f writes/s", time.Since(start).Round(100*time.Millisecond), phase.rate(f.writer))
		assertDrained(t, f, []string{"n1"}, 2)
		assertLogged(t, g.serves[0], `"msg":"Handed off"`, 3)
	})
}

// TestGuardZoneDrain drains both nodes of zone-a (kubectl drain n1 n2: both cordoned, then each
// drained) with the guard: n1's two masters are handed off to the other zones before any
// eviction; every pod evicted is a replica, no write fails or is lost, and no node that stays
// holds half of the masters (with zone-a gone, 2 zones stay: MasterQuorum checks nodes).
func TestGuardZoneDrain(t *testing.T) {
	f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{}, true)
	startGuard(t, f, 1, admissionregistrationv1.Ignore)
	kubectlDrainNodes(t, f.Env, []string{"n1", "n2"}, f.Namespace, time.Second)
	assertDrained(t, f, []string{"n1", "n2"}, 4)
}

// TestGuardClusterAutoscalerTaint taints n1 as cluster-autoscaler does before it scales a node
// down (ToBeDeletedByClusterAutoscaler, NoSchedule): the leader hands n1's masters off before any
// eviction arrives; nothing is evicted, no write fails.
func TestGuardClusterAutoscalerTaint(t *testing.T) {
	f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{}, true)
	startGuard(t, f, 1, admissionregistrationv1.Ignore)
	taintNode(t, f, "n1", corev1.Taint{Key: "ToBeDeletedByClusterAutoscaler", Value: fmt.Sprint(time.Now().Unix()), Effect: corev1.TaintEffectNoSchedule})
	start := time.Now()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		byNode, _ := masterPlaces(t, f)
		return len(byNode["n1"]) == 0, nil
	})
	if err != nil {
		byNode, _ := masterPlaces(t, f)
		t.Fatalf("n1 still holds masters %v a minute after its ToBeDeletedByClusterAutoscaler taint", byNode["n1"])
	}
	t.Logf("n1's masters handed off %s after the taint", time.Since(start).Round(100*time.Millisecond))
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods stopped %+v: want none (the hand-off evicts nothing)", stops)
	}
	if stats := f.finish(t); stats.Failed != 0 {
		t.Errorf("%d writes failed, want 0: %v", stats.Failed, stats.Failures)
	}
}

// TestGuardLeaderKilledMidDrain runs two replicas of serve behind the proxy; once the leader has
// handed the first master off during `kubectl drain n1`, it is killed (SIGKILL). The other
// replica keeps answering the reviews, takes the Lease over and hands the rest off; the drain
// completes, every pod evicted is a replica, no acknowledged write is lost. The webhook's
// failurePolicy is Fail here: a review in flight to the killed leader fails, and under Ignore
// kube-apiserver admits that eviction unreviewed (a make test run beside a soak once saw both
// masters' evictions admitted so, the kill landing while both were reviewed); under Fail it is
// refused (kubectl drain stops on it, and the test drains again, as the drain's caller would) and
// the next review reaches the other replica, so a master evicted fails the test only when a
// guard admitted it. What Ignore admits while the guard is down is
// TestGuardForgedReviewAndGuardDown's and the soak's guard-down events'.
func TestGuardLeaderKilledMidDrain(t *testing.T) {
	f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{}, true)
	g := startGuard(t, f, 2, admissionregistrationv1.Fail)
	lead := g.leader(time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lead.waitLine(`"msg":"Handed off"`, 2*time.Minute)
		lead.kill()
		t.Log("the leader was killed after its first hand-off")
	}()
	kubectlDrainNodesAgain(t, f.Env, []string{"n1"}, f.Namespace, time.Second, func(err error) bool {
		return strings.Contains(err.Error(), "failed calling webhook")
	})
	<-done
	if !lead.exited() {
		t.Error("the leader was not killed during the drain")
	}
	var other *cliRun
	for _, r := range g.serves {
		if r != lead {
			other = r
		}
	}
	assertLogged(t, other, `"msg":"Handed off"`, 1)
	stats := f.finish(t) // every pod stopped a replica, no acknowledged write lost
	t.Logf("leader killed mid-drain: %d writes failed", stats.Failed)
}

// TestGuardForgedReviewAndGuardDown posts a forged AdmissionReview straight to the guard's port,
// as any client in the cluster could, without credentials: the guard answers it (TLS only; plain
// HTTP gets nothing), never evicts, and no write is lost; at most the leader fails a master over,
// verified. Then serve stops: with failurePolicy Ignore kube-apiserver lets an eviction through,
// with Fail it refuses it (500), which a drain does not retry.
func TestGuardForgedReviewAndGuardDown(t *testing.T) {
	f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{}, false)
	g := startGuard(t, f, 1, admissionregistrationv1.Ignore)
	byNode, _ := masterPlaces(t, f)
	master := byNode["n1"][0]
	pod, err := f.Client().CoreV1().Pods(f.Namespace).Get(t.Context(), master, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "forged", Operation: admissionv1.Create, Namespace: f.Namespace, Name: master, SubResource: "eviction",
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, DryRun: ptr.To(false),
			UserInfo: authenticationv1.UserInfo{Username: "system:admin", Groups: []string{"system:masters"}},
		},
	}
	ev, _ := json.Marshal(policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: master, Namespace: f.Namespace}})
	review.Request.Object.Raw = ev
	body, _ := json.Marshal(review)
	// Plain HTTP gets Go's TLS server's refusal (400 "Client sent an HTTP request to an HTTPS
	// server"), never a review's answer.
	if resp, err := http.Post("http://"+g.addrs[0]+guard.Path, "application/json", strings.NewReader(string(body))); err == nil {
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(text), "HTTPS server") {
			t.Errorf("plain HTTP to the guard's port: %s %q, want TLS only", resp.Status, text)
		}
	}
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for range 3 {
		resp, err := insecure.Post("https://"+g.addrs[0]+guard.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("forged review: %v", err)
		}
		var out admissionv1.AdmissionReview
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || out.Response == nil {
			t.Fatalf("forged review: answer %v, %+v", err, out)
		}
		t.Logf("forged review of %s: allowed %v (%v)", master, out.Response.Allowed, out.Response.Result)
	}
	// Whatever it answered, nothing is evicted: the pod stays (same UID) while the writer runs.
	phase := startPhase(f.writer)
	if err := f.writer.WaitAcked(t.Context(), f.writer.Stats().Acked+1500, time.Minute); err != nil {
		t.Fatal(err)
	}
	after, err := f.Client().CoreV1().Pods(f.Namespace).Get(t.Context(), master, metav1.GetOptions{})
	if err != nil || after.UID != pod.UID || after.DeletionTimestamp != nil {
		t.Errorf("pod %s after the forged reviews: %v, UID %s (was %s): want it untouched", master, err, after.UID, pod.UID)
	}
	if stops := f.Stops(); len(stops) != 0 {
		t.Errorf("pods stopped after forged reviews: %+v", stops)
	}
	t.Logf("after the forged reviews: writer %.0f writes/s", phase.rate(f.writer))

	// The guard down.
	g.serves[0].kill()
	replica := replicaOf(t, f, "n2")
	evict := func(name string) error {
		return f.Client().PolicyV1().Evictions(f.Namespace).Evict(t.Context(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace}})
	}
	if err := evict(replica); err != nil {
		t.Errorf("guard down, failurePolicy Ignore: eviction of %s: %v, want it let through", replica, err)
	}
	g.webhook.FailurePolicy = admissionregistrationv1.Fail
	if err := g.webhook.Install(t.Context(), f.Client()); err != nil {
		t.Fatal(err)
	}
	other := replicaOf(t, f, "n6")
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := harness.DryRunEvict(t.Context(), f.Client(), f.Namespace, other)
		return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed calling webhook"), nil
	})
	if err != nil {
		t.Fatalf("guard down, failurePolicy Fail: a dry-run eviction of %s is not refused with 500", other)
	}
	if err := evict(other); !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("guard down, failurePolicy Fail: eviction of %s: %v, want 500 failed calling webhook", other, err)
	}
	stats := f.finish(t) // the one pod evicted a replica, no acknowledged write lost
	if stats.Failed != 0 {
		t.Errorf("%d writes failed, want 0: %v", stats.Failed, stats.Failures)
	}
}

// replicaOf returns the name of a pod on node that Redis reports a replica.
func replicaOf(t *testing.T, f *faultEnv, node string) string {
	t.Helper()
	ctx := t.Context()
	topo, err := f.Redis.Topology(ctx, f.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	pods, err := f.Client().CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: f.Scenario.Selector()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if n, ok := topo.NodeByIP(p.Status.PodIP); ok && p.Spec.NodeName == node && n.IsReplica() {
			return p.Name
		}
	}
	t.Fatalf("no replica on %s", node)
	return ""
}

// assertDrained checks what a drain of nodes with the guard must leave: the cluster healthy
// (Ready pods aside: with a whole zone drained a re-created pod may wait Pending), no master on
// the drained nodes, no node or zone that stays holding half of the masters or more (zones only
// while 3 or more keep a node), the pods evicted (stopped) all replicas as they stopped, no write
// failed, none lost.
func assertDrained(t *testing.T, f *faultEnv, nodes []string, stopped int) {
	t.Helper()
	byNode, byZone := masterPlaces(t, f)
	t.Logf("after the drain of %v: masters by node %v, by zone %v", nodes, byNode, byZone)
	gone := map[string]bool{}
	for _, n := range nodes {
		gone[n] = true
		if len(byNode[n]) != 0 {
			t.Errorf("drained node %s holds masters %v", n, byNode[n])
		}
	}
	if node, n := most(byNode); n > 2 {
		t.Errorf("node %s holds %d of the 5 masters after the drain: MasterQuorum broken", node, n)
	}
	zones := 0
	for _, z := range f.Scenario.Zones {
		for _, n := range z.Nodes {
			if !gone[n] {
				zones++
				break
			}
		}
	}
	if zone, n := most(byZone); zones >= 3 && n > 2 {
		t.Errorf("zone %s holds %d of the 5 masters after the drain: MasterQuorum broken", zone, n)
	}
	if got := len(f.Stops()); got != stopped {
		t.Errorf("%d pods stopped (%+v), want the drained nodes' %d", got, f.Stops(), stopped)
	}
	stats := f.finish(t) // every pod stopped a replica, no acknowledged write lost
	if stats.Failed != 0 {
		t.Errorf("%d writes failed during the drain, want 0: %v", stats.Failed, stats.Failures)
	}
}

// assertLogged checks that r prints at least n lines containing substr within a minute (the last
// hand-off's line follows its re-observation, which may end after the drain).
func assertLogged(t *testing.T, r *cliRun, substr string, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return strings.Count(r.stderr(), substr) >= n, nil
	})
	if err != nil {
		t.Errorf("serve printed %q %d times, want at least %d; its output:\n%s", substr, strings.Count(r.stderr(), substr), n, r.stderr())
	}
}

// taintNode adds taint to node; the bed's nodes are restored when the test ends
// (harness.Bed.RestoreNodesOnCleanup).
func taintNode(t *testing.T, f *faultEnv, node string, taint corev1.Taint) {
	t.Helper()
	f.Bed.RestoreNodesOnCleanup(t)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := f.Client().CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == taint.Key }), taint)
		_, err = f.Client().CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("taint %s: %v", node, err)
	}
}

// exited reports whether the CLI's process has exited.
func (r *cliRun) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// TestGuardSelfSignedCertificate runs serve with --guard-self-signed: it issues a CA and a serving
// certificate (open-policy-agent/cert-controller) into an empty Secret in its namespace (the test
// projects the Secret into serve's certificate directory, as the kubelet does with a Secret
// volume) and writes the CA bundle into the webhook configuration, which names
// https://localhost:PORT (the certificate's extra DNS name); kube-apiserver then trusts it, and a
// dry-run eviction of a master is the guard's 429.
func TestGuardSelfSignedCertificate(t *testing.T) {
	f := newFaultEnv(t, scenario.TwoMastersOnN1(), harness.Options{}, false)
	ctx := t.Context()
	ns, secret, name := "default", "guard-tls-"+f.Namespace, "guard-"+f.Namespace
	_, err := f.Client().CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: {}, corev1.TLSPrivateKeyKey: {}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client().CoreV1().Secrets(ns).Delete(context.Background(), secret, metav1.DeleteOptions{})
	})
	port := freePort(t)
	w := harness.GuardWebhook{Name: name, Namespace: f.Namespace, URL: fmt.Sprintf("https://localhost:%d%s", port, guard.Path)}
	if err := w.Install(ctx, f.Client()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Uninstall(context.Background(), f.Client()) })
	dir, certs := t.TempDir(), t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(e2ePolicy+"guard: {webhookConfigurationName: "+name+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startCLI(t, nil, append(serveArgs(t, f.Env), "--policy", policy, "--pass-on-start=false", "--schedule", "@yearly",
		"--guard", "--guard-listen-address", fmt.Sprintf("127.0.0.1:%d", port), "--guard-cert-dir", certs,
		"--guard-self-signed", "--guard-cert-secret", secret, "--guard-extra-dns-names", "localhost")...)
	// The kubelet's part: project the Secret, once filled, into the certificate directory.
	projected := projectSecret(ctx, f.Client(), ns, secret, certs)
	r.waitLine(`"msg":"Guard certificate issued"`, 2*time.Minute)
	if err := <-projected; err != nil {
		t.Fatal(err)
	}
	r.waitLine(`"msg":"Serving the eviction guard"`, time.Minute)
	byNode, _ := masterPlaces(t, f)
	if err := harness.WaitDryRunEviction(ctx, f.Client(), f.Namespace, byNode["n1"][0], time.Minute, guardHeld(guard.ReasonMaster)); err != nil {
		t.Fatal(err)
	}
	got, err := f.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil || len(got.Webhooks) != 1 || len(got.Webhooks[0].ClientConfig.CABundle) == 0 {
		t.Errorf("webhook configuration %v, %v: want the CA bundle serve wrote", got, err)
	}
	s, err := f.Client().CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
	if err != nil || len(s.Data[corev1.TLSCertKey]) == 0 || len(s.Data["ca.crt"]) == 0 {
		t.Errorf("Secret %s/%s after serve issued its certificate: %v, keys %v", ns, secret, err, keysOf(s))
	}
	f.finish(t)
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func keysOf(s *corev1.Secret) []string {
	if s == nil {
		return nil
	}
	var out []string
	for k := range s.Data {
		out = append(out, k)
	}
	return out
}
