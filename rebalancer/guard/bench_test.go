package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/cache"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// BenchmarkReviewAt1000PerSecond measures the guard's answer as kube-apiserver gets it: an
// AdmissionReview posted over TLS on loopback (HTTP/2, as kube-apiserver's webhook client speaks
// it), answered from serve's watched cache (rebalancer/cache) and the bounded Redis read of a real
// Redis Cluster (5 shards × 2 redis-servers on loopback), at a fixed rate of 1,000 reviews/s (open
// loop: each review is sent on time whatever the ones before are doing). The cache holds the
// Redis cluster's 10 pods among 10,000 other pods on 1,000 nodes. Half of the evictions are of
// masters (denied 429 after one CLUSTER NODES), half of replicas (allowed after CLUSTER NODES and
// the master's INFO replication). It prints the latencies (p50, p90, p99, max), the rate achieved
// and the CPU time the process (the guard and its client) spent per review; nothing is asserted.
// Run it with a fixed count of reviews:
//
//	go test -run '^$' -bench ReviewAt1000PerSecond -benchtime 5000x ./rebalancer/guard
func BenchmarkReviewAt1000PerSecond(b *testing.B) {
	const rate = 1000
	rc := redistest.Start(b, redistest.Config{Shards: 5})
	var objs []runtime.Object
	for n := range 1000 {
		objs = append(objs, readyNode(fmt.Sprintf("node-%d", n)))
	}
	for k := range 10000 {
		objs = append(objs, fixture.Pod(fmt.Sprintf("web-%d", k), fixture.InNamespace("web"), fixture.On(fmt.Sprintf("node-%d", k%1000)), fixture.Ready(),
			fixture.WithLabels("app", "web")))
	}
	var names []string
	for _, shard := range rc.Shards {
		for _, p := range shard {
			pod := redisPod(p.Name(), fmt.Sprintf("node-%d", p.Shard*2+p.Index), p.IP)
			objs = append(objs, pod)
			names = append(names, p.Name())
		}
	}
	client := fake.NewClientset(objs...)
	src := cache.New(client, cache.Options{ClusterLabel: testLabel})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src.Start(ctx)
	if err := src.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	g, err := New(Config{Source: src, Redis: rc.Client, ClusterLabel: testLabel, MaxHold: time.Hour, Holds: NewHolds(nil, time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	// HTTP/2, as kube-apiserver's webhook client speaks it: one TLS connection, the reviews
	// multiplexed on it.
	srv := httptest.NewUnstartedServer(g)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	httpc := srv.Client()
	httpc.Timeout = 10 * time.Second
	bodies := make([][]byte, len(names))
	for i, name := range names {
		r := evictionReview(name)
		r.Namespace, r.Name = "redis", name
		bodies[i], _ = json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: r})
	}
	post := func(body []byte) (time.Duration, bool, error) {
		start := time.Now()
		resp, err := httpc.Post(srv.URL+Path, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, false, err
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
			return 0, false, fmt.Errorf("answer: %v", err)
		}
		return time.Since(start), out.Response.Allowed, nil
	}
	for _, body := range bodies { // warm the connections and the Redis clients
		if _, _, err := post(body); err != nil {
			b.Fatal(err)
		}
	}

	lat := make([]time.Duration, b.N)
	var allowedN, failed int
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for i := range b.N {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, allowed, err := post(bodies[i%len(bodies)])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				d = 10 * time.Second
			}
			if allowed {
				allowedN++
			}
			lat[i] = d
		}()
	}
	wg.Wait()
	took := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	sort.Slice(lat, func(a, c int) bool { return lat[a] < lat[c] })
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(q(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(q(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/review")
	fmt.Printf("guard reviews over TLS at %d/s: %d reviews in %s (%.0f/s achieved), %d allowed, %d denied, %d failed; latency p50 %s, p90 %s, p99 %s, max %s (goal p99 ≤ 10ms); CPU of this process (guard and client) %s per review\n",
		rate, b.N, took.Round(time.Millisecond), float64(b.N)/took.Seconds(), allowedN, b.N-allowedN-failed, failed,
		q(0.50).Round(time.Microsecond), q(0.90).Round(time.Microsecond), q(0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond),
		(cpu / time.Duration(b.N)).Round(time.Microsecond))
}

// cpuTime returns the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
