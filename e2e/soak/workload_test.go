package soak

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redis/redis/v8"
	"golang.org/x/time/rate"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// The application: a writer that writes "soak:<n>" = n at a fixed rate through a cluster-aware
// go-redis client and remembers every write Redis acknowledged and every one that failed (when,
// and why), and a reader that reads each acknowledged key back a second after it was
// acknowledged (and every one again at the end). The writer retries as docs/operations.md asks
// an application to around a failover: "CLUSTERDOWN Hash slot not served" and "TRYAGAIN" for up
// to retryFor, the slot map reloaded first; any other error counts at once.

// retryFor is how long the writer retries the errors a failover may show (docs/operations.md).
const retryFor = 3 * time.Second

// writeFailure is a write that failed after the client's retries.
type writeFailure struct {
	seq int64
	at  time.Time // when it failed
	err string
}

// lostWrite is an acknowledged write the reader did not read back.
type lostWrite struct {
	idx  int // its place in the batch read (check)
	seq  int64
	at   time.Time // when the reader found it missing
	got  string
	when time.Time // when it was acknowledged
}

// workload is the writer and the reader.
type workload struct {
	writer, reader *redis.ClusterClient
	rate           int
	cancel         context.CancelFunc
	done           sync.WaitGroup

	mu       sync.Mutex
	acked    []int64
	ackedAt  []time.Time
	failures []writeFailure
	retried  int
	lost     []lostWrite
	read     int // keys read back by the reader so far (a prefix of acked)
	readErrs int
	started  time.Time
	stopped  time.Time
}

// startWorkload starts the writer at rate writes per second and the reader.
func startWorkload(opts redisctl.Options, seeds []string, rate int) (*workload, error) {
	wc, err := redisctl.NewClusterClient(opts, seeds)
	if err != nil {
		return nil, err
	}
	rc, err := redisctl.NewClusterClient(opts, seeds)
	if err != nil {
		wc.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{writer: wc, reader: rc, rate: rate, cancel: cancel, started: time.Now()}
	w.done.Add(2)
	go w.write(ctx)
	go w.readBack(ctx)
	return w, nil
}

func key(seq int64) string { return "soak:" + strconv.FormatInt(seq, 10) }

// retryable reports whether err is what a failover may show for a moment (docs/operations.md).
func retryable(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "CLUSTERDOWN Hash slot not served") || strings.HasPrefix(s, "TRYAGAIN")
}

func (w *workload) write(ctx context.Context) {
	defer w.done.Done()
	limiter := rate.NewLimiter(rate.Limit(w.rate), w.rate)
	limiter.AllowN(time.Now(), w.rate)
	lastReload := time.Now()
	var seq int64
	for limiter.Wait(ctx) == nil {
		seq++
		var err error
		retried := false
		for start := time.Now(); ; retried = true {
			wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = w.writer.Set(wctx, key(seq), seq, 0).Err()
			cancel()
			if err == nil || !retryable(err) || time.Since(start) >= retryFor {
				break
			}
			w.writer.ReloadState(context.Background())
			time.Sleep(50 * time.Millisecond)
		}
		now := time.Now()
		w.mu.Lock()
		if retried {
			w.retried++
		}
		if err != nil {
			w.failures = append(w.failures, writeFailure{seq: seq, at: now, err: err.Error()})
		} else {
			w.acked = append(w.acked, seq)
			w.ackedAt = append(w.ackedAt, now)
		}
		w.mu.Unlock()
		if time.Since(lastReload) > time.Second {
			w.writer.ReloadState(context.Background())
			lastReload = time.Now()
		}
	}
}

// readBack reads the acknowledged keys back, in order, each at least a second after it was
// acknowledged, in pipelined batches; a key that cannot be read now is tried again.
func (w *workload) readBack(ctx context.Context) {
	defer w.done.Done()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastReload := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.mu.Lock()
		from := w.read
		to := from
		for to < len(w.acked) && to-from < 500 && time.Since(w.ackedAt[to]) > time.Second {
			to++
		}
		seqs := append([]int64(nil), w.acked[from:to]...)
		w.mu.Unlock()
		if len(seqs) == 0 {
			continue
		}
		n, lost, err := w.check(ctx, seqs)
		w.mu.Lock()
		w.read += n
		for _, l := range lost {
			l.when = w.ackedAt[from+l.idx]
			w.lost = append(w.lost, l)
		}
		if err != nil {
			w.readErrs++
		}
		w.mu.Unlock()
		if err != nil || time.Since(lastReload) > time.Second {
			w.reader.ReloadState(context.Background())
			lastReload = time.Now()
		}
	}
}

// check reads seqs back (a pipeline) and returns how many of them, from the first, were read,
// and those among them that were missing or wrong; it stops at the first error.
func (w *workload) check(ctx context.Context, seqs []int64) (int, []lostWrite, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pipe := w.reader.Pipeline()
	cmds := make([]*redis.StringCmd, len(seqs))
	for i, s := range seqs {
		cmds[i] = pipe.Get(rctx, key(s))
	}
	_, _ = pipe.Exec(rctx)
	var lost []lostWrite
	for i, c := range cmds {
		v, err := c.Result()
		switch {
		case errors.Is(err, redis.Nil):
			lost = append(lost, lostWrite{idx: i, seq: seqs[i], at: time.Now(), got: "(missing)"})
		case err != nil:
			return i, lost, err
		case v != strconv.FormatInt(seqs[i], 10):
			lost = append(lost, lostWrite{idx: i, seq: seqs[i], at: time.Now(), got: v})
		}
	}
	return len(seqs), lost, nil
}

// stop stops the writer and the reader.
func (w *workload) stop() {
	w.cancel()
	w.done.Wait()
	w.mu.Lock()
	w.stopped = time.Now()
	w.mu.Unlock()
}

// verifyAll reads every acknowledged key back (after stop), retrying errors for up to 2
// minutes, and adds the keys missing or wrong to the losses the reader found (each once).
func (w *workload) verifyAll(ctx context.Context) error {
	w.mu.Lock()
	acked := append([]int64(nil), w.acked...)
	ackedAt := append([]time.Time(nil), w.ackedAt...)
	seen := map[int64]bool{}
	for _, l := range w.lost {
		seen[l.seq] = true
	}
	w.mu.Unlock()
	w.reader.ReloadState(ctx)
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; i < len(acked); {
		to := min(i+1000, len(acked))
		n, lost, err := w.check(ctx, acked[i:to])
		w.mu.Lock()
		for _, l := range lost {
			if !seen[l.seq] {
				seen[l.seq] = true
				l.when = ackedAt[i+l.idx]
				w.lost = append(w.lost, l)
			}
		}
		w.mu.Unlock()
		i += n
		if err != nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("read back %s: %w", key(acked[i]), err)
			}
			w.reader.ReloadState(ctx)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

// close closes the clients.
func (w *workload) close() {
	w.writer.Close()
	w.reader.Close()
}

// perSecond returns, per whole second from start, the writes acknowledged and failed.
func (w *workload) perSecond(start time.Time) (acked, failed map[int]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	acked, failed = map[int]int{}, map[int]int{}
	for _, t := range w.ackedAt {
		acked[int(t.Sub(start)/time.Second)]++
	}
	for _, f := range w.failures {
		failed[int(f.at.Sub(start)/time.Second)]++
	}
	return acked, failed
}

// snapshot returns the writer's figures.
func (w *workload) snapshot() (acked int, failures []writeFailure, lost []lostWrite, retried, read int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	lost = append([]lostWrite(nil), w.lost...)
	sort.Slice(lost, func(a, b int) bool { return lost[a].seq < lost[b].seq })
	return len(w.acked), append([]writeFailure(nil), w.failures...), lost, w.retried, w.read
}
