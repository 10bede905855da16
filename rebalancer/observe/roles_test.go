package observe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// hangingClusters returns a model of n Redis clusters (test/synth, 6–12 pods each) whose pods
// have loopback IPs 127.77.x.y, and a hanging Redis on every one of them.
func hangingClusters(t testing.TB, n int) (*policies.Model, *redistest.Hanging) {
	t.Helper()
	snap := synth.Generate(synth.Config{Seed: 7, Nodes: 60, Zones: 3, Namespaces: 4, Pods: 12 * n, RedisClusters: n, MinPods: 6, MaxPods: 12})
	var ips []string
	for i, p := range snap.Pods {
		p.Status.PodIP = fmt.Sprintf("127.77.%d.%d", 1+i/250, 1+i%250)
		ips = append(ips, p.Status.PodIP)
	}
	m, err := policies.Build(snap, policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Clusters) != n {
		t.Fatalf("%d clusters, want %d", len(m.Clusters), n)
	}
	return m, redistest.StartHanging(t, ips)
}

// TestReadRedisHangingRedis reads the roles of 100 clusters whose Redis accepts connections and
// never answers: ReadRedis returns at the overall deadline, not after a read timeout per node,
// and says for every cluster why its roles are unknown.
func TestReadRedisHangingRedis(t *testing.T) {
	m, h := hangingClusters(t, 100)
	pods := 0
	for _, c := range m.Clusters {
		pods += len(c.Members)
	}
	for _, tc := range []struct {
		name string
		// readTimeout is the Redis client's; deadline the overall one (none when 0).
		readTimeout, deadline time.Duration
	}{
		// Each node's read alone would take an hour: only the overall deadline can end it.
		{name: "read timeout 1h, deadline 1s → every cluster unknown at the deadline", readTimeout: time.Hour, deadline: time.Second},
		// Without an overall deadline every node waits its read timeout, all clusters at once.
		{name: "read timeout 500ms, no deadline → every cluster unknown after its reads time out", readTimeout: 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := redisctl.New(redisctl.Options{Port: h.Port, DialTimeout: time.Second, ReadTimeout: tc.readTimeout, WriteTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			start := time.Now()
			errs := ReadRedis(ctx, rc, m.Clusters)
			t.Logf("%d clusters, %d pods: ReadRedis returned after %v", len(m.Clusters), pods, time.Since(start).Round(time.Millisecond))
			for _, c := range m.Clusters {
				err := errs[c.Key()]
				if err == nil {
					t.Errorf("%s: no error, want why its roles are unknown", c.Key())
					continue
				}
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("%s: %v, want a timeout", c.Key(), err)
					}
				}
				for _, mem := range c.Members {
					if mem.Role != policies.RoleUnknown {
						t.Errorf("%s: role %q, want unknown", mem.Pod.Name, mem.Role)
					}
				}
			}
			t.Logf("first cluster: %v", errs[m.Clusters[0].Key()])
		})
	}
}

// BenchmarkReadRedisHangingRedis prints how long `check` waits for the roles of 100 clusters
// whose Redis accepts connections and never answers, with the commands' defaults (read timeout
// redisctl.DefaultReadTimeout, overall deadline DefaultRedisDeadline).
func BenchmarkReadRedisHangingRedis(b *testing.B) {
	m, h := hangingClusters(b, 100)
	b.ResetTimer()
	for range b.N {
		rc, err := redisctl.New(redisctl.Options{Port: h.Port})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), DefaultRedisDeadline)
		errs := ReadRedis(ctx, rc, m.Clusters)
		cancel()
		rc.Close()
		if len(errs) != len(m.Clusters) {
			b.Fatalf("%d clusters with unknown roles, want %d", len(errs), len(m.Clusters))
		}
	}
}
