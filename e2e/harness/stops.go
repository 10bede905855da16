package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// StopRecord is what Redis said about a pod's node just before the runtime stopped its server
// because the pod went away (an eviction, say).
type StopRecord struct {
	// Pod and UID name the pod that went away.
	Pod, UID string
	// Role is the node's role as ROLE's reply names it (redisctl.RoleMaster or
	// redisctl.RoleReplica); "" when Err is set.
	Role string
	// Err is why ROLE got no answer.
	Err string
	// At is when the server was about to be stopped.
	At time.Time
}

// stopRecorder asks each Redis node for its ROLE at the moment its pod goes away: the runtime
// calls beforeStop before it stops the server, so the answer is Redis's own, at that moment.
type stopRecorder struct {
	redis *redisctl.Client

	mu    sync.Mutex
	stops []StopRecord
}

func (r *stopRecorder) beforeStop(pod *corev1.Pod, addr string, ipChanged bool) {
	if ipChanged {
		return // the pod stays: kwok gave it another IP (redisrt.Config.BeforeStop)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rec := StopRecord{Pod: pod.Name, UID: string(pod.UID), At: time.Now()}
	if role, err := redisRole(ctx, r.redis, addr); err != nil {
		rec.Err = err.Error()
	} else {
		rec.Role = role
	}
	r.mu.Lock()
	r.stops = append(r.stops, rec)
	r.mu.Unlock()
}

// redisRole returns the first element of the node's ROLE reply ("master" or "slave").
func redisRole(ctx context.Context, rc *redisctl.Client, addr string) (string, error) {
	reply, err := rc.Do(ctx, addr, "ROLE")
	if err != nil {
		return "", err
	}
	arr, _ := reply.([]interface{})
	if len(arr) == 0 {
		return "", fmt.Errorf("ROLE %s: empty reply %v", addr, reply)
	}
	role, _ := arr[0].(string)
	return role, nil
}

// Stops returns what Redis said about each pod's node just before its server was stopped
// because the pod went away, in order; nil unless Options.RecordStops was set.
func (e *Env) Stops() []StopRecord {
	if e.stops == nil {
		return nil
	}
	e.stops.mu.Lock()
	defer e.stops.mu.Unlock()
	return append([]StopRecord(nil), e.stops.stops...)
}
