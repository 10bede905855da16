package redisclusterbalance

import (
	"bytes"
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// logWriter turns the executor's progress text (execute.Config.Out) into log lines, one per line
// of text, at the descheduler's verbosity 2.
type logWriter struct {
	logger logr.Logger

	mu  sync.Mutex
	buf bytes.Buffer
}

// Write logs every complete line of b; a partial line waits for its end.
func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			// No newline yet: keep the partial line for the next write.
			w.buf.Reset()
			w.buf.WriteString(line)
			return len(b), nil
		}
		if s := strings.TrimRight(line, "\n"); s != "" {
			w.logger.V(2).Info(s)
		}
	}
}
