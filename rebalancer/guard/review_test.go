package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/cache"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

const testLabel = "app.kubernetes.io/instance"

// fakeRedis answers CLUSTER NODES and INFO replication from text, per address; an address
// without text does not answer.
type fakeRedis struct {
	nodes map[string]string
	repl  map[string]redisctl.Replication
	mu    sync.Mutex
	reads []string
}

func (f *fakeRedis) AddrOf(ip string) string { return ip + ":6379" }

func (f *fakeRedis) ClusterNodes(_ context.Context, addr string) ([]redisctl.Node, error) {
	f.mu.Lock()
	f.reads = append(f.reads, "CLUSTER NODES "+addr)
	f.mu.Unlock()
	text, ok := f.nodes[addr]
	if !ok {
		return nil, errors.New("dial tcp " + addr + ": i/o timeout")
	}
	return redisctl.ParseClusterNodes(text)
}

func (f *fakeRedis) InfoReplication(_ context.Context, addr string) (redisctl.Replication, error) {
	f.mu.Lock()
	f.reads = append(f.reads, "INFO replication "+addr)
	f.mu.Unlock()
	r, ok := f.repl[addr]
	if !ok {
		return r, errors.New("dial tcp " + addr + ": i/o timeout")
	}
	return r, nil
}

// clusterNodes is shard slots-0-5460's view: master m (10.0.0.1, pod rc-0) and replica r
// (10.0.0.2, pod rc-1), from the node flagged myself.
func clusterNodes(self string) string {
	m := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 10.0.0.1:6379@16379 master - 0 0 1 connected 0-5460"
	r := "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 10.0.0.2:6379@16379 slave aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0 0 1 connected"
	if self == "m" {
		m = strings.Replace(m, " master ", " myself,master ", 1)
	} else {
		r = strings.Replace(r, " slave ", " myself,slave ", 1)
	}
	return m + "\n" + r + "\n"
}

// masterRepl is the master's INFO replication listing r online and in sync.
var masterRepl = redisctl.Replication{Role: "master", MasterReplOffset: 1000, Replicas: []redisctl.ReplicaEntry{{IP: "10.0.0.2", Port: 6379, State: "online", Offset: 990, Lag: 0}}}

func readyNode(name string, opts ...fixture.NodeOption) *corev1.Node {
	return fixture.Node(name, append([]fixture.NodeOption{func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	}}, opts...)...)
}

func redisPod(name, node, ip string) *corev1.Pod {
	return fixture.Pod(name, fixture.InNamespace("redis"), fixture.On(node), fixture.Ready(), fixture.WithLabels(testLabel, "rc"),
		func(p *corev1.Pod) { p.Status.PodIP = ip })
}

// bed is a Guard on serve's watched cache (rebalancer/cache) over a fake clientset holding pods rc-0 (master, n1) and
// rc-1 (replica, n2), with a fake clock, recorded Events and OnHold calls.
type bed struct {
	g      *Guard
	clock  *clocktesting.FakeClock
	redis  *fakeRedis
	rec    *events.FakeRecorder
	holds  *Holds
	onHold []Hold
}

func newBed(t *testing.T, mut ...func(*[]runtime.Object)) *bed {
	t.Helper()
	objs := []runtime.Object{
		readyNode("n1"), readyNode("n2"),
		redisPod("rc-0", "n1", "10.0.0.1"), redisPod("rc-1", "n2", "10.0.0.2"),
	}
	for _, m := range mut {
		m(&objs)
	}
	client := fake.NewClientset(objs...)
	src := cache.New(client, cache.Options{ClusterLabel: testLabel})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	src.Start(ctx)
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	b := &bed{
		clock: clocktesting.NewFakeClock(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)),
		redis: &fakeRedis{
			nodes: map[string]string{"10.0.0.1:6379": clusterNodes("m"), "10.0.0.2:6379": clusterNodes("r")},
			repl:  map[string]redisctl.Replication{"10.0.0.1:6379": masterRepl},
		},
		rec: events.NewFakeRecorder(10),
	}
	b.holds = NewHolds(b.clock, 10*time.Minute)
	var err error
	b.g, err = New(Config{
		Source: src, Redis: b.redis, ClusterLabel: testLabel, MaxHold: 5 * time.Minute,
		DrainTaints: []string{"ToBeDeletedByClusterAutoscaler"}, Holds: b.holds, Recorder: b.rec, Clock: b.clock,
		OnHold: func(h Hold) { b.onHold = append(b.onHold, h) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// evictionReview is the AdmissionRequest kube-apiserver sends for the eviction of redis/pod.
func evictionReview(pod string, dry ...func(*admissionv1.AdmissionRequest, *policyv1.Eviction)) *admissionv1.AdmissionRequest {
	ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "redis"}}
	req := &admissionv1.AdmissionRequest{
		UID: types.UID("review-" + pod), Operation: admissionv1.Create, Namespace: "redis", Name: pod,
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "eviction",
		Kind: metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, DryRun: ptr.To(false),
	}
	for _, d := range dry {
		d(req, ev)
	}
	req.Object.Raw, _ = json.Marshal(ev)
	return req
}

func requestDryRun(r *admissionv1.AdmissionRequest, _ *policyv1.Eviction) { r.DryRun = ptr.To(true) }

func bodyDryRun(_ *admissionv1.AdmissionRequest, ev *policyv1.Eviction) {
	ev.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
}

// answer is what a test compares of a response.
type answer struct {
	Allowed bool
	Code    int32
	Reason  metav1.StatusReason
}

func answerOf(r *admissionv1.AdmissionResponse) answer {
	a := answer{Allowed: r.Allowed}
	if r.Result != nil {
		a.Code, a.Reason = r.Result.Code, r.Result.Reason
	}
	return a
}

var (
	allowed  = answer{Allowed: true}
	held429  = answer{Code: 429, Reason: metav1.StatusReasonTooManyRequests}
	noEvents []string
)

func drainEvents(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestReview(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mut    func(*[]runtime.Object)
		redis  func(*fakeRedis)
		review *admissionv1.AdmissionRequest
		want   answer
		// events are the Events recorded ("Type Reason note" prefixes); holds the OnHold calls.
		events []string
		holds  int
	}{
		{
			name:   "the master's eviction → 429 TooManyRequests, held, one RedisEvictionHeld Event, the hand-off told",
			review: evictionReview("rc-0"),
			want:   held429,
			events: []string{"Normal RedisEvictionHeld MasterServingSlots: pod redis/rc-0 is the Redis master of shard slots-0-5460"},
			holds:  1,
		},
		{
			name:   "the master's eviction as a dry run (?dryRun=All) → the same 429, no hold, no Event",
			review: evictionReview("rc-0", requestDryRun),
			want:   held429,
			events: noEvents,
		},
		{
			name:   "the master's eviction as a dry run in the Eviction's deleteOptions (kubectl drain --dry-run=server) → the same 429, no side effect",
			review: evictionReview("rc-0", bodyDryRun),
			want:   held429,
			events: noEvents,
		},
		{
			name:   "the replica's eviction, its master serving → allowed, two bounded reads",
			review: evictionReview("rc-1"),
			want:   allowed,
			events: noEvents,
		},
		{
			name:   "the replica's eviction while its master's Redis does not answer INFO → 429 ShardExposed",
			redis:  func(f *fakeRedis) { delete(f.repl, "10.0.0.1:6379") },
			review: evictionReview("rc-1"),
			want:   held429,
			events: []string{"Normal RedisEvictionHeld ShardExposed: pod redis/rc-1 is a replica of shard slots-0-5460 whose master redis/rc-0 is not serving (INFO replication"},
			holds:  1,
		},
		{
			name: "the master's eviction on a NotReady node → allowed without a Redis read",
			mut: func(objs *[]runtime.Object) {
				(*objs)[0] = fixture.Node("n1", func(n *corev1.Node) {
					n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
				})
			},
			review: evictionReview("rc-0"),
			want:   allowed,
			events: noEvents,
		},
		{
			name: "a pod of no Redis cluster → allowed",
			mut: func(objs *[]runtime.Object) {
				*objs = append(*objs, fixture.Pod("web", fixture.InNamespace("redis"), fixture.On("n1")))
			},
			review: evictionReview("web"),
			want:   allowed,
			events: noEvents,
		},
		{
			name:   "a pod the cache does not know → allowed (the eviction 404s anyway)",
			review: evictionReview("gone"),
			want:   allowed,
			events: noEvents,
		},
		{
			name:   "the master's Redis does not answer, pod Ready → 429 RoleUnknown",
			redis:  func(f *fakeRedis) { delete(f.nodes, "10.0.0.1:6379") },
			review: evictionReview("rc-0"),
			want:   held429,
			events: []string{"Normal RedisEvictionHeld RoleUnknown: pod redis/rc-0 is Ready and its Redis node did not tell its role"},
			holds:  1,
		},
		{
			name: "an update of a pod, not an eviction → allowed untouched",
			review: func() *admissionv1.AdmissionRequest {
				r := evictionReview("rc-0")
				r.SubResource, r.Operation = "", admissionv1.Update
				return r
			}(),
			want:   allowed,
			events: noEvents,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var muts []func(*[]runtime.Object)
			if tc.mut != nil {
				muts = append(muts, tc.mut)
			}
			b := newBed(t, muts...)
			if tc.redis != nil {
				tc.redis(b.redis)
			}
			got := b.g.Review(context.Background(), tc.review)
			if got.UID != tc.review.UID {
				t.Errorf("response UID %q, want the request's %q", got.UID, tc.review.UID)
			}
			if diff := cmp.Diff(tc.want, answerOf(got)); diff != "" {
				t.Errorf("answer (-want +got):\n%s\nresult: %+v", diff, got.Result)
			}
			evs := drainEvents(b.rec)
			if len(evs) != len(tc.events) {
				t.Fatalf("events %q, want %d starting %q", evs, len(tc.events), tc.events)
			}
			for i := range evs {
				if !strings.HasPrefix(evs[i], tc.events[i]) {
					t.Errorf("event %q, want it to start %q", evs[i], tc.events[i])
				}
			}
			if len(b.onHold) != tc.holds {
				t.Errorf("OnHold called %d times (%v), want %d", len(b.onHold), b.onHold, tc.holds)
			}
		})
	}
}

func TestReviewHoldsAReplicaWhileItsHandOffRuns(t *testing.T) {
	b := newBed(t)
	end := b.holds.BeginHandOff("redis/rc-1")
	got := b.g.Review(context.Background(), evictionReview("rc-1"))
	if diff := cmp.Diff(held429, answerOf(got)); diff != "" {
		t.Fatalf("while the hand-off of rc-1 runs: answer (-want +got):\n%s", diff)
	}
	if want := "HandOffRunning: pod redis/rc-1 was just failed over by the hand-off"; !strings.Contains(got.Result.Message, want) {
		t.Errorf("message %q, want it to contain %q", got.Result.Message, want)
	}
	end()
	end() // a second call changes nothing
	if diff := cmp.Diff(allowed, answerOf(b.g.Review(context.Background(), evictionReview("rc-1")))); diff != "" {
		t.Errorf("once the hand-off is done: answer (-want +got):\n%s", diff)
	}
}

func TestReviewHoldExpiresAfterMaxHold(t *testing.T) {
	b := newBed(t)
	for i, want := range []answer{held429, held429, allowed} {
		got := b.g.Review(context.Background(), evictionReview("rc-0"))
		if diff := cmp.Diff(want, answerOf(got)); diff != "" {
			t.Fatalf("review %d at +%s (-want +got):\n%s", i, time.Duration(i)*150*time.Second, diff)
		}
		if i == 2 && (len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "guard.maxHold is 5m0s")) {
			t.Errorf("warnings %q, want one naming guard.maxHold", got.Warnings)
		}
		b.clock.Step(150 * time.Second)
	}
	evs := drainEvents(b.rec)
	if len(evs) != 2 || !strings.HasPrefix(evs[0], "Normal RedisEvictionHeld") || !strings.HasPrefix(evs[1], "Warning RedisEvictionHoldExpired") {
		t.Errorf("events %q, want one RedisEvictionHeld then one RedisEvictionHoldExpired", evs)
	}
	if hs := b.holds.List(); len(hs) != 0 {
		t.Errorf("holds %v after the expired hold was admitted, want none", hs)
	}
}

func TestReviewReadsRedisOnlyWithinTheBound(t *testing.T) {
	b := newBed(t)
	b.g.cfg.RedisTimeout = 50 * time.Millisecond
	slow := &slowRedis{fakeRedis: b.redis}
	b.g.cfg.Redis = slow
	start := time.Now()
	got := b.g.Review(context.Background(), evictionReview("rc-0"))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the review took %s with a Redis that never answers", took)
	}
	if diff := cmp.Diff(held429, answerOf(got)); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Result.Message, "RoleUnknown") || !strings.Contains(got.Result.Message, context.DeadlineExceeded.Error()) {
		t.Errorf("message %q, want RoleUnknown with the deadline", got.Result.Message)
	}
}

// slowRedis never answers before its context ends.
type slowRedis struct{ *fakeRedis }

func (s *slowRedis) ClusterNodes(ctx context.Context, _ string) ([]redisctl.Node, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestServeHTTP(t *testing.T) {
	b := newBed(t)
	srv := httptest.NewServer(b.g)
	defer srv.Close()
	for _, tc := range []struct {
		name     string
		body     string
		wantCode int
		want     *answer
	}{
		{name: "an AdmissionReview of a master's eviction → 200 with a 429 answer", body: reviewJSON(t, evictionReview("rc-0")), wantCode: 200, want: &held429},
		{name: "not JSON → 400", body: "hello", wantCode: 400},
		{name: "an AdmissionReview without a request → 400", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantCode: 400},
		{name: "another kind → 400", body: `{"apiVersion":"v1","kind":"Pod","request":{}}`, wantCode: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+Path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantCode)
			}
			if tc.want == nil {
				return
			}
			var out admissionv1.AdmissionReview
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
				t.Fatalf("answer %+v, want an admission.k8s.io/v1 AdmissionReview with a response", out)
			}
			if diff := cmp.Diff(*tc.want, answerOf(out.Response)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

func reviewJSON(t *testing.T, req *admissionv1.AdmissionRequest) string {
	t.Helper()
	var buf bytes.Buffer
	err := json.NewEncoder(&buf).Encode(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req,
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// owned makes a pod's controller kind/name.
func owned(kind, name string) fixture.PodOption {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: name, Controller: ptr.To(true)}}
	}
}

// TestReviewJudgesOnlyMembers: a pod that carries a guarded cluster's label but is no member of
// it (policies.WhyNotMember) is allowed without a Redis read, whatever its Redis would say; the
// members are judged as before. The workload selector names Bitnami's redis-cluster StatefulSet.
func TestReviewJudgesOnlyMembers(t *testing.T) {
	workloads, err := labels.Parse("app.kubernetes.io/name=redis-cluster")
	if err != nil {
		t.Fatal(err)
	}
	sts := func(name, app string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "redis"}, Spec: appsv1.StatefulSetSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{testLabel: "rc", "app.kubernetes.io/name": app}}},
		}}
	}
	member := func(p *corev1.Pod) { p.Labels["app.kubernetes.io/name"] = "redis-cluster" }
	for _, tc := range []struct {
		name, pod string
		obj       runtime.Object
		want      answer
		message   string // what the answer's message contains
		reads     int    // Redis reads the review made
	}{
		{name: "the chart's cluster-update Job's pod → allowed, not judged", pod: "rc-update",
			obj:  fixture.Pod("rc-update", fixture.InNamespace("redis"), fixture.On("n1"), fixture.Ready(), fixture.WithLabels(testLabel, "rc"), owned("Job", "rc-cluster-update")),
			want: allowed, message: "owned by Job rc-cluster-update: a Job's pod is never a Redis cluster member"},
		{name: "a web Deployment's pod of the same Helm release → allowed, not judged", pod: "web-1",
			obj:  fixture.Pod("web-1", fixture.InNamespace("redis"), fixture.On("n1"), fixture.Ready(), fixture.WithLabels(testLabel, "rc"), owned("ReplicaSet", "web-5d9f")),
			want: allowed, message: "owned by ReplicaSet web-5d9f: not a Redis workload"},
		{name: "a StatefulSet the workload selector does not name (the release's metrics) → allowed, not judged", pod: "metrics-0",
			obj:  fixture.Pod("metrics-0", fixture.InNamespace("redis"), fixture.On("n1"), fixture.Ready(), fixture.WithLabels(testLabel, "rc"), owned("StatefulSet", "metrics")),
			want: allowed, message: "whose template the workload selector app.kubernetes.io/name=redis-cluster does not match"},
		{name: "the master, of the Redis StatefulSet → held as before", pod: "rc-0",
			want: held429, message: "is the Redis master of shard slots-0-5460", reads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBed(t, func(objs *[]runtime.Object) {
				*objs = append(*objs, sts("redis-cluster", "redis-cluster"), sts("metrics", "metrics"))
				for _, o := range *objs {
					if p, ok := o.(*corev1.Pod); ok && strings.HasPrefix(p.Name, "rc-") {
						member(p)
						owned("StatefulSet", "redis-cluster")(p)
					}
				}
				if tc.obj != nil {
					*objs = append(*objs, tc.obj)
				}
			})
			b.g.cfg.Members = policies.Options{WorkloadSelector: workloads}
			got := b.g.Review(context.Background(), evictionReview(tc.pod))
			if diff := cmp.Diff(tc.want, answerOf(got)); diff != "" {
				t.Errorf("answer (-want +got):\n%s\nresult: %+v", diff, got.Result)
			}
			if len(b.redis.reads) != tc.reads {
				t.Errorf("Redis reads %q, want %d", b.redis.reads, tc.reads)
			}
			pod, _ := b.g.cfg.Source.Pod("redis", tc.pod)
			if v := Decide(b.g.State(context.Background(), pod)); !strings.Contains(v.Message, tc.message) {
				t.Errorf("verdict %q, want it to say %q", v.Message, tc.message)
			}
		})
	}
}

// TestHoldsRenewed: the holds a denial renewed within the window, oldest first; 0 → all.
func TestHoldsRenewed(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	h := NewHolds(clk, 10*time.Minute)
	h.Hold(Hold{Namespace: "redis", Name: "a", UID: "a"})
	clk.SetTime(clk.Now().Add(time.Second))
	h.Hold(Hold{Namespace: "redis", Name: "b", UID: "b"})
	clk.SetTime(clk.Now().Add(19 * time.Second))
	h.Hold(Hold{Namespace: "redis", Name: "c", UID: "c"})
	clk.SetTime(clk.Now().Add(20 * time.Second))
	h.Hold(Hold{Namespace: "redis", Name: "b", UID: "b"}) // b's evictor retries; a's gave up
	names := func(hs []Hold) []string {
		out := []string{}
		for _, x := range hs {
			out = append(out, x.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		within time.Duration
		want   []string
	}{
		{"within 30 s → b (renewed now) and c (20 s ago), not a (40 s ago)", 30 * time.Second, []string{"b", "c"}},
		{"within 10 s → b only", 10 * time.Second, []string{"b"}},
		{"0 → every hold remembered", 0, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(h.Renewed(tc.within))); diff != "" {
				t.Errorf("renewed (-want +got):\n%s", diff)
			}
		})
	}
}
