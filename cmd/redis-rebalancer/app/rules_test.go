package app

import (
	"strings"
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// TestHelpNamesEveryRule checks that the help built from the rule registry names every hard
// rule (redis-rebalancer --help) and every rule, soft ones after "soft:" (check --help), and that
// the paragraphs carrying the lists are wrapped to helpWidth.
func TestHelpNamesEveryRule(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		withSoft bool
	}{
		{name: "redis-rebalancer --help → every hard rule", args: []string{"--help"}},
		{name: "check --help → every rule, soft ones last", args: []string{"check", "--help"}, withSoft: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit code %d, want 0\nstderr:\n%s", code, errOut)
			}
			help, _, _ := strings.Cut(out, "\nUsage:")
			soft := strings.Index(help, "soft: ")
			for _, r := range policies.Rules() {
				at := strings.Index(help, string(r.Name))
				switch {
				case r.Soft && !tc.withSoft:
					continue
				case at < 0:
					t.Errorf("help lacks rule %s:\n%s", r.Name, help)
				case r.Soft && (soft < 0 || at < soft):
					t.Errorf("soft rule %s is not listed after \"soft:\":\n%s", r.Name, help)
				case !r.Soft && soft >= 0 && at > soft:
					t.Errorf("hard rule %s is listed after \"soft:\":\n%s", r.Name, help)
				}
			}
			first, _, _ := strings.Cut(help, "\n\n")
			for _, line := range strings.Split(first, "\n") {
				if n := len([]rune(line)); n > helpWidth {
					t.Errorf("help line of %d columns, want at most %d: %q", n, helpWidth, line)
				}
			}
		})
	}
}
