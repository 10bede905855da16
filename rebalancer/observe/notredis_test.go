package observe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// unansweredReader is a TopologyReader none of whose nodes answers: each address's error is
// errOf(address index).
type unansweredReader struct{ errOf func(i int) error }

func (unansweredReader) AddrOf(ip string) string { return net.JoinHostPort(ip, "6379") }

func (r unansweredReader) Topology(_ context.Context, addrs []string) (*redisctl.Topology, error) {
	t := &redisctl.Topology{Unreachable: map[string]error{}}
	for i, a := range addrs {
		t.Unreachable[a] = r.errOf(i)
	}
	return t, errors.New("redisctl: topology: no node answered")
}

// TestApplyRedisNotRedis checks when ApplyRedis says a cluster's pods are no Redis Cluster
// (ErrNotRedis, which DropNotRedis leaves out): only when every pod is Ready and every node
// refused the connection or answered as no Redis Cluster node; a pod not Ready or a node that
// timed out may be a Redis Cluster that is down, which is never left out.
func TestApplyRedisNotRedis(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	disabled := errors.New("ERR This instance has cluster support disabled")
	notRESP := fmt.Errorf("redis: invalid reply: %q", "HTTP/1.1 400 Bad Request")
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		name     string
		errOf    func(i int) error
		notReady bool // the first pod not Ready
		want     bool // ErrNotRedis
	}{
		{name: "every Ready pod refuses the connection → not Redis", errOf: func(int) error { return refused }, want: true},
		{name: "every node answers without cluster mode, or not in Redis's protocol → not Redis", errOf: func(i int) error { return []error{disabled, notRESP}[i%2] }, want: true},
		{name: "one pod not Ready, every node refusing → maybe a Redis Cluster that is down: kept", errOf: func(int) error { return refused }, notReady: true},
		{name: "one node timing out → maybe Redis: kept", errOf: func(i int) error {
			if i == 3 {
				return timeout
			}
			return refused
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := scenario.PostScaleDown().MustSnapshot()
			for i, p := range snap.Pods {
				p.Status.PodIP = fmt.Sprintf("10.1.0.%d", i+1)
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			}
			if tc.notReady {
				snap.Pods[0].Status.Conditions = nil
			}
			m, err := policies.Build(snap, policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ApplyRedis(t.Context(), unansweredReader{tc.errOf}, m.Clusters[0])
			if got := errors.Is(err, ErrNotRedis); got != tc.want {
				t.Errorf("ApplyRedis: %v; ErrNotRedis %v, want %v", err, got, tc.want)
			}
			dropped := DropNotRedis(m, map[string]error{m.Clusters[0].Key(): err})
			if (len(dropped) == 1) != tc.want || (len(m.Clusters) == 0) != tc.want {
				t.Errorf("DropNotRedis dropped %v, %d clusters left; want dropped %v", dropped, len(m.Clusters), tc.want)
			}
		})
	}
}
