package execute

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// syncWriter serialises writes to w: clusters run in parallel share it.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func newSyncWriter(w io.Writer) *syncWriter { return &syncWriter{w: w} }

// Write writes p to w under the lock.
func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// prefixWriter writes whole lines to out, each starting with prefix, so that the progress of
// clusters run in parallel stays readable line by line. Flush writes a last partial line.
type prefixWriter struct {
	out    io.Writer
	prefix []byte
	buf    []byte
}

func newPrefixWriter(out io.Writer, prefix string) *prefixWriter {
	return &prefixWriter{out: out, prefix: []byte(prefix)}
}

// Write buffers p and writes every line it completes, prefixed, in one write.
func (w *prefixWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	end := bytes.LastIndexByte(w.buf, '\n')
	if end < 0 {
		return len(p), nil
	}
	var lines []byte
	for _, line := range bytes.SplitAfter(w.buf[:end+1], []byte("\n")) {
		if len(line) > 0 {
			lines = append(append(lines, w.prefix...), line...)
		}
	}
	w.buf = append(w.buf[:0], w.buf[end+1:]...)
	if _, err := w.out.Write(lines); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the buffered partial line, if any, with a newline.
func (w *prefixWriter) Flush() {
	if len(w.buf) > 0 {
		w.Write([]byte("\n"))
	}
}

// logWriter writes each whole line of progress as a structured log entry (klog's "Progress",
// with keysAndValues and the line under "text"; blank lines are dropped), so that a process
// logging JSON writes nothing else on its standard error (Config.ProgressLog). Flush logs a last
// partial line. Safe for concurrent use.
type logWriter struct {
	mu  sync.Mutex
	kv  []any
	buf []byte
}

func newLogWriter(keysAndValues ...any) *logWriter { return &logWriter{kv: keysAndValues} }

// Write buffers p and logs every line it completes.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		line, rest, found := bytes.Cut(w.buf, []byte("\n"))
		if !found {
			break
		}
		w.log(line)
		w.buf = append(w.buf[:0], rest...)
	}
	return len(p), nil
}

// Flush logs the buffered partial line, if any.
func (w *logWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log(w.buf)
	w.buf = w.buf[:0]
}

func (w *logWriter) log(line []byte) {
	text := strings.TrimRight(string(line), " \r")
	if strings.TrimSpace(text) == "" {
		return
	}
	klog.InfoS("Progress", append(w.kv[:len(w.kv):len(w.kv)], "text", text)...)
}
