package report

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// TextWidth is the widest line the text reports print, the zones × nodes map's aside (RenderMap
// writes unwrapped: a node's pods stay on its row).
const TextWidth = 100

// wrapWriter writes each line it is given wrapped at spaces to TextWidth columns: the lines after
// the first are indented under the text that follows the line's leading spaces and its marker
// ("✗ ", "~ ", "✓ ", "! ", "1. "), or two columns deeper than the line when it has none. A word
// longer than the width stays whole on its line.
type wrapWriter struct {
	w   io.Writer
	buf []byte
}

// newWrapWriter returns a wrapWriter writing to w; Write takes whole lines (the rest is kept
// until its newline comes).
func newWrapWriter(w io.Writer) *wrapWriter { return &wrapWriter{w: w} }

// NewWrapWriter returns a writer that writes each line it is given to w wrapped at spaces to
// TextWidth columns, the lines after the first indented under the text that follows the line's
// marker ("✗ ", "1. "), or two columns deeper than the line; a partial line waits for its newline.
func NewWrapWriter(w io.Writer) io.Writer { return newWrapWriter(w) }

// Write wraps every complete line of p (and of what an earlier call left) and writes it.
func (ww *wrapWriter) Write(p []byte) (int, error) {
	ww.buf = append(ww.buf, p...)
	for {
		i := bytes.IndexByte(ww.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(ww.buf[:i])
		ww.buf = ww.buf[i+1:]
		if _, err := io.WriteString(ww.w, wrapLine(line, TextWidth)+"\n"); err != nil {
			return len(p), err
		}
	}
}

// wrapLine returns line wrapped to width columns (lines joined by "\n"), as wrapWriter does.
func wrapLine(line string, width int) string {
	if utf8.RuneCountInString(line) <= width {
		return line
	}
	body := strings.TrimLeft(line, " ")
	lead := len(line) - len(body)
	hang := lead + 2
	if first, _, ok := strings.Cut(body, " "); ok && isMarker(first) {
		hang = lead + utf8.RuneCountInString(first) + 1
	}
	pad := strings.Repeat(" ", hang)
	var out []string
	cur, n := line[:lead], lead
	empty := true
	for _, word := range strings.Fields(body) {
		wn := utf8.RuneCountInString(word)
		if !empty && n+1+wn > width {
			out = append(out, cur)
			cur, n, empty = pad, hang, true
		}
		if !empty {
			cur += " "
			n++
		}
		cur += word
		n += wn
		empty = false
	}
	return strings.Join(append(out, cur), "\n")
}

// isMarker reports whether s is a line's marker: a violation's or a warning's sign, or a step's
// number ("3.").
func isMarker(s string) bool {
	switch s {
	case "✗", "~", "✓", "!":
		return true
	}
	if len(s) < 2 || s[len(s)-1] != '.' {
		return false
	}
	for _, r := range s[:len(s)-1] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
