package app

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// testMainArgs is the environment variable that makes the test binary run redis-rebalancer: its
// value, a JSON list, is the command line (startChild).
const testMainArgs = "REDIS_REBALANCER_TEST_MAIN_ARGS"

// TestMain runs the tests or, with testMainArgs set, the redis-rebalancer command with those
// arguments, as the binary does: the child process of the tests that signal a real process.
func TestMain(m *testing.M) {
	if a := os.Getenv(testMainArgs); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", testMainArgs, err)
			os.Exit(2)
		}
		cmd := NewRootCommand()
		cmd.SetArgs(args)
		os.Exit(exitCode(cmd))
	}
	os.Exit(m.Run())
}
