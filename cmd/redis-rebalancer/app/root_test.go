package app

import (
	"bytes"
	"strings"
	"testing"

	logsapi "k8s.io/component-base/logs/api/v1"
)

// runCLI runs the root command with args as Main would and returns stdout, stderr and the exit
// code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	// Each command applies the logging flags once per process; reset them between commands.
	if err := logsapi.ResetForTest(nil); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	code := exitCode(cmd)
	return out.String(), errOut.String(), code
}

const roleLabel = "redis.rebalancer.io/role"

// exitCase is a table row of the commands' tests: arguments, the exit code and phrases the
// output (stdout, or stderr when wantErr is set) must contain.
type exitCase struct {
	name     string
	args     []string
	wantCode int
	wantOut  []string
	wantErr  []string
}

func runExitCases(t *testing.T, cases []exitCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}
