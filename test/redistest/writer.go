package redistest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-redis/redis/v8"
)

// Writer writes unique keys ("<prefix>:<worker>:<n>" = n) through a cluster client as fast as it
// can, from several goroutines, and remembers which writes Redis acknowledged, so that a test can
// check that none of them was lost (Verify).
type Writer struct {
	cc      redis.UniversalClient
	prefix  string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	workers []*writerWorker
	stopped atomic.Bool
}

type writerWorker struct {
	next   int64   // number of writes attempted
	failed []int64 // n whose write returned an error (unacknowledged)
	acked  atomic.Int64
	errs   atomic.Int64
	last   atomic.Value // last error string
}

// WriterStats counts a writer's writes.
type WriterStats struct {
	// Acked writes returned OK; Failed returned an error (they may or may not have been applied).
	Acked, Failed int64
	// LastError is the last write error, "" when none.
	LastError string
}

// StartWriter starts workers goroutines writing through cc until Stop.
func StartWriter(cc redis.UniversalClient, prefix string, workers int) *Writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{cc: cc, prefix: prefix, cancel: cancel}
	for i := 0; i < workers; i++ {
		ww := &writerWorker{}
		w.workers = append(w.workers, ww)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for ctx.Err() == nil {
				n := ww.next
				ww.next++
				if err := cc.Set(ctx, w.key(i, n), n, 0).Err(); err != nil {
					if ctx.Err() != nil { // cancelled by Stop: not acknowledged
						ww.failed = append(ww.failed, n)
						return
					}
					ww.failed = append(ww.failed, n)
					ww.errs.Add(1)
					ww.last.Store(err.Error())
					continue
				}
				ww.acked.Add(1)
			}
		}()
	}
	return w
}

func (w *Writer) key(worker int, n int64) string {
	return w.prefix + ":" + strconv.Itoa(worker) + ":" + strconv.FormatInt(n, 10)
}

// Stats returns the counts so far (safe while running).
func (w *Writer) Stats() WriterStats {
	var s WriterStats
	for _, ww := range w.workers {
		s.Acked += ww.acked.Load()
		s.Failed += ww.errs.Load()
		if v, ok := ww.last.Load().(string); ok {
			s.LastError = v
		}
	}
	return s
}

// Stop stops the writers and waits for them.
func (w *Writer) Stop() WriterStats {
	w.cancel()
	w.wg.Wait()
	w.stopped.Store(true)
	return w.Stats()
}

// Verify reads back every acknowledged write (after Stop) through the client and returns an
// error listing the lost or wrong ones (at most 10 named).
func (w *Writer) Verify(ctx context.Context) error {
	if !w.stopped.Load() {
		return fmt.Errorf("redistest: Verify before Stop")
	}
	var lost int
	var examples []string
	for i, ww := range w.workers {
		failed := map[int64]bool{}
		for _, n := range ww.failed {
			failed[n] = true
		}
		const batch = 1000
		for start := int64(0); start < ww.next; start += batch {
			var cmds map[int64]*redis.StringCmd
			// A transport error (not a missing key) is retried: it says nothing about the data.
			for attempt := 0; attempt < 3; attempt++ {
				pipe := w.cc.Pipeline()
				cmds = map[int64]*redis.StringCmd{}
				for n := start; n < start+batch && n < ww.next; n++ {
					if !failed[n] {
						cmds[n] = pipe.Get(ctx, w.key(i, n))
					}
				}
				if _, err := pipe.Exec(ctx); err == nil || err == redis.Nil {
					break
				}
			}
			for n, cmd := range cmds {
				v, err := cmd.Result()
				if err == nil && v == strconv.FormatInt(n, 10) {
					continue
				}
				lost++
				if len(examples) < 10 {
					examples = append(examples, fmt.Sprintf("%s: got %q, %v", w.key(i, n), v, err))
				}
			}
		}
	}
	if lost > 0 {
		return fmt.Errorf("redistest: %d acknowledged writes lost or wrong, e.g. %v", lost, examples)
	}
	return nil
}
