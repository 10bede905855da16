package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// TestJSONLogsOnStderr: with --logging-format=json every line a command writes on its standard
// error is one JSON object: a refused policy's error, a failed connection's, and the notes of an
// offline model (a snapshot with objects the rules do not use).
func TestJSONLogsOnStderr(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "snap.yaml")
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "post-scale-down.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unused\n  namespace: redis\n")...)
	if err := os.WriteFile(snap, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantMsgs []string
	}{
		{name: "a bad flag value → 1, the error as one entry", args: []string{"run", "--max-moves", "-2", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantMsgs: []string{"Command failed"}},
		{name: "no kubeconfig → 1, the error as one entry", args: []string{"run", "-o", "json", "--kubeconfig", "does-not-exist"}, wantCode: ExitError, wantMsgs: []string{"Command failed"}},
		{name: "an offline check with a skipped kind → 3, the note as one entry", args: []string{"check", "--snapshot", snap, "--role-label", roleLabel}, wantCode: ExitViolations, wantMsgs: []string{"Note"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, append(tc.args, "--logging-format", "json")...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, errOut)
			}
			var msgs []string
			for _, line := range strings.Split(strings.TrimSuffix(errOut, "\n"), "\n") {
				var entry map[string]any
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					t.Errorf("stderr line %q is not one JSON object: %v", line, err)
					continue
				}
				msgs = append(msgs, fmt.Sprint(entry["msg"]))
			}
			for _, w := range tc.wantMsgs {
				if !slices.Contains(msgs, w) {
					t.Errorf("stderr has no %q entry: %v", w, msgs)
				}
			}
		})
	}
}
