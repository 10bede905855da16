package harness

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redis/redis/v8"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Writer writes keys "seq:<n>" = n through a cluster-aware go-redis client at a fixed rate, and
// remembers which writes Redis acknowledged, so that a test can read every acknowledged key back.
//
// Its client retries as go-redis v8 does by default (MaxRedirects 3: a CLUSTERDOWN, TRYAGAIN,
// LOADING, MOVED or ASK reply, or a connection error, retried 3 times over 24 ms to 136 ms). A
// write that still fails with "CLUSTERDOWN Hash slot not served" is then retried for up to
// UnboundSlotRetry, the slot map reloaded before each try, as an application must do around a
// failover on Redis 7.0: the old master, or another node, can serve none of the shard's slots for
// a while during a CLUSTER FAILOVER (redisctl.Failover says why), and answers that to every
// command of the shard. Any other error counts at once, so that a master taken down without a
// failover (connection refused, "CLUSTERDOWN The cluster is down") still shows.
type Writer struct {
	client *redis.ClusterClient
	rate   int
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	retried   int // writes that needed the UnboundSlotRetry
	acked     []int64
	ackedAt   []time.Time // when each of acked was acknowledged
	failures  []string
	latencies []time.Duration
	started   time.Time
	stopped   time.Time
}

// WriterStats are a Writer's figures.
type WriterStats struct {
	// Acked and Failed count the writes acknowledged and the writes that failed after the
	// client's retries.
	Acked, Failed int
	// Retried counts the writes that got "CLUSTERDOWN Hash slot not served" after go-redis's
	// own retries and were retried (UnboundSlotRetry), acknowledged in the end or not.
	Retried int
	// Rate is the acknowledged writes per second over the writer's life.
	Rate float64
	// P50, P99 and Max are write latencies.
	P50, P99, Max time.Duration
	// Failures are the first failures' messages (up to 10).
	Failures []string
}

// String formats the stats on one line.
func (s WriterStats) String() string {
	return fmt.Sprintf("%d writes acknowledged (%.0f/s), %d failed, %d retried after CLUSTERDOWN Hash slot not served; latency p50 %s, p99 %s, max %s", s.Acked, s.Rate, s.Failed, s.Retried, s.P50, s.P99, s.Max)
}

// StartWriter starts writing to the cluster that seeds belong to, rate writes per second (one
// goroutine; each write waits for its reply), with redisctl's default options. Call Stop, then
// Verify.
func StartWriter(seeds []string, rate int) (*Writer, error) {
	return StartWriterWith(redisctl.Options{}, seeds, rate)
}

// StartWriterWith is StartWriter with the given Redis options (a password, say).
func StartWriterWith(opts redisctl.Options, seeds []string, rate int) (*Writer, error) {
	client, err := redisctl.NewClusterClient(opts, seeds)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{client: client, rate: rate, cancel: cancel, done: make(chan struct{}), started: time.Now()}
	go w.loop(ctx)
	return w, nil
}

func (w *Writer) loop(ctx context.Context) {
	defer close(w.done)
	var seq int64
	lastReload := time.Now()
	// A token bucket paces the writes; its burst of one second's writes lets the writer catch up
	// after a stall (a slow reply, a busy machine), so that it keeps its rate on average.
	limiter := rate.NewLimiter(rate.Limit(w.rate), w.rate)
	limiter.AllowN(time.Now(), w.rate) // start with an empty bucket: no burst at the start
	for limiter.Wait(ctx) == nil {
		seq++
		t0 := time.Now()
		retried, err := w.set(seq)
		d := time.Since(t0)
		w.mu.Lock()
		if retried {
			w.retried++
		}
		if err != nil {
			w.failures = append(w.failures, fmt.Sprintf("seq %d: %v", seq, err))
		} else {
			w.acked = append(w.acked, seq)
			w.ackedAt = append(w.ackedAt, time.Now())
			w.latencies = append(w.latencies, d)
		}
		w.mu.Unlock()
		// Pods that moved have new IPs: refresh the slot map now and then (go-redis otherwise
		// keeps an old address for up to a minute).
		if time.Since(lastReload) > time.Second {
			w.client.ReloadState(context.Background())
			lastReload = time.Now()
		}
	}
}

// UnboundSlotRetry is how long a Writer retries a write that fails with "CLUSTERDOWN Hash slot
// not served" (see Writer): longer than the time a node can serve none of a shard's slots after
// a CLUSTER FAILOVER on the test beds, where every node hears from every other within
// cluster-node-timeout/2 (1 s), and redisctl.Failover makes the new master MEET such a node
// as soon as it sees it (every 25 ms).
const UnboundSlotRetry = 3 * time.Second

// unboundRetryInterval is the time between two of those retries.
const unboundRetryInterval = 50 * time.Millisecond

// set writes seq:<seq> = seq: one go-redis call with a 10 s deadline, retried for up to
// UnboundSlotRetry while it fails with "CLUSTERDOWN Hash slot not served" (a write in flight when
// the writer stops is finished, as before). It returns whether it retried, and the last error.
func (w *Writer) set(seq int64) (retried bool, err error) {
	for start := time.Now(); ; retried = true {
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = w.client.Set(wctx, "seq:"+strconv.FormatInt(seq, 10), seq, 0).Err()
		cancel()
		if err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN Hash slot not served") || time.Since(start) >= UnboundSlotRetry {
			return retried, err
		}
		w.client.ReloadState(context.Background())
		<-time.After(unboundRetryInterval)
	}
}

// WaitAcked waits up to timeout until the writer has n acknowledged writes. Its error gives the
// writer's figures and first failures.
func (w *Writer) WaitAcked(ctx context.Context, n int, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return w.Stats().Acked >= n, nil
	})
	if err != nil {
		s := w.Stats()
		return fmt.Errorf("writer stalled before %d writes: %s (%v): %w", n, s, s.Failures, err)
	}
	return nil
}

// Stop stops writing and waits for the last write to finish.
func (w *Writer) Stop() {
	w.cancel()
	<-w.done
	w.mu.Lock()
	if w.stopped.IsZero() {
		w.stopped = time.Now()
	}
	w.mu.Unlock()
}

// Stats returns the writer's figures so far.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	end := w.stopped
	if end.IsZero() {
		end = time.Now()
	}
	s := WriterStats{Acked: len(w.acked), Failed: len(w.failures), Retried: w.retried}
	s.Rate = float64(len(w.acked)) / end.Sub(w.started).Seconds()
	lat := append([]time.Duration(nil), w.latencies...)
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	if n := len(lat); n > 0 {
		s.P50, s.P99, s.Max = lat[n/2], lat[n*99/100], lat[n-1]
	}
	if len(w.failures) > 10 {
		s.Failures = append(s.Failures, w.failures[:10]...)
	} else {
		s.Failures = append(s.Failures, w.failures...)
	}
	return s
}

// Verify reads every acknowledged key back and returns an error naming the keys that are missing
// or hold another value (an acknowledged write was lost).
func (w *Writer) Verify(ctx context.Context) error {
	lost, err := w.LostWrites(ctx)
	if err != nil {
		return err
	}
	return LostError(lost)
}

// LostError returns nil for no lost writes, else an error naming them (the first 20).
func LostError(lost []LostWrite) error {
	if len(lost) == 0 {
		return nil
	}
	var names []string
	for _, l := range lost[:min(len(lost), 20)] {
		names = append(names, l.String())
	}
	if len(lost) > 20 {
		names = append(names, fmt.Sprintf("... (%d in all)", len(lost)))
	}
	return fmt.Errorf("%d acknowledged writes lost: %v", len(lost), names)
}

// LostWrite is an acknowledged write that was not read back.
type LostWrite struct {
	// Key is the key written ("seq:12"), Got what it holds now ("(missing)" when it is gone).
	Key, Got string
	// Slot is the key's hash slot (CLUSTER KEYSLOT), Acked when Redis acknowledged the write.
	Slot  int
	Acked time.Time
}

// String gives the key and what it holds: "seq:12=(missing)".
func (l LostWrite) String() string { return l.Key + "=" + l.Got }

// Lost reads every acknowledged key back and returns the ones that are missing or hold another
// value ("seq:12=(missing)"), in write order. It fails when a key cannot be read within 10 s.
func (w *Writer) Lost(ctx context.Context) ([]string, error) {
	lost, err := w.LostWrites(ctx)
	var out []string
	for _, l := range lost {
		out = append(out, l.String())
	}
	return out, err
}

// LostWrites is Lost with each lost write's hash slot and acknowledgement time, so that a test
// can tell a write Redis Cluster may lose by design (see harness.Loss) from one the rebalancer
// lost. It fails when a key cannot be read, or its slot asked, within 10 s.
func (w *Writer) LostWrites(ctx context.Context) ([]LostWrite, error) {
	w.mu.Lock()
	acked := append([]int64(nil), w.acked...)
	ackedAt := append([]time.Time(nil), w.ackedAt...)
	w.mu.Unlock()
	w.client.ReloadState(ctx)
	var lost []LostWrite
	for i, seq := range acked {
		key := "seq:" + strconv.FormatInt(seq, 10)
		var v string
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := w.client.Get(ctx, key).Result()
			if err == redis.Nil {
				v = "(missing)"
				return true, nil
			}
			if err != nil {
				return false, nil // a transient error: retry
			}
			v = got
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("read %s back: %w", key, err)
		}
		if v == strconv.FormatInt(seq, 10) {
			continue
		}
		var slot int64
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			slot, err = w.client.ClusterKeySlot(ctx, key).Result()
			return err == nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("CLUSTER KEYSLOT %s: %w", key, err)
		}
		lost = append(lost, LostWrite{Key: key, Got: v, Slot: int(slot), Acked: ackedAt[i]})
	}
	return lost, nil
}

// Close closes the writer's client.
func (w *Writer) Close() error { return w.client.Close() }
