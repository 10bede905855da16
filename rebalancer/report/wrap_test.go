package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWrapLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"a short line → as it is", "  ✗ aaaa bbbb", []string{"  ✗ aaaa bbbb"}},
		{"a violation → continued under its text", "  ✗ aaaa bbbb cccc dddd", []string{"  ✗ aaaa bbbb", "    cccc dddd"}},
		{"a step → continued under its text", "  12. aaaa bbbb cccc", []string{"  12. aaaa", "      bbbb", "      cccc"}},
		{"no marker → continued two columns deeper", "  because: aaaa bbbb", []string{"  because:", "    aaaa bbbb"}},
		{"a word wider than the width → whole on its line", "  ✗ aaaaaaaaaaaaaaaaaaaa b", []string{"  ✗", "    aaaaaaaaaaaaaaaaaaaa", "    b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, strings.Split(wrapLine(tc.line, 14), "\n")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWrapWriterKeepsPartialLines(t *testing.T) {
	var b bytes.Buffer
	w := newWrapWriter(&b)
	w.Write([]byte("  ✗ one"))
	if b.Len() != 0 {
		t.Fatalf("wrote %q before the newline", b.String())
	}
	w.Write([]byte(" two\nthree\n"))
	if got, want := b.String(), "  ✗ one two\nthree\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
