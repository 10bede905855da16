package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
)

// outputMarker is the line before a fenced block that shows what a redis-rebalancer command
// prints, as `<!-- output: redis-rebalancer ARGS -->`: gendocs replaces the block's content with
// the command's standard output, run in-process from the module root (ARGS split on spaces;
// quotes are not supported). The command must succeed, or exit with the status of a broken rule
// (3): a sample of an error is not a sample of an output. `<!-- error: redis-rebalancer ARGS -->`
// shows the error line a failing command prints instead ("redis-rebalancer: ...", as app.Main
// writes it on stderr; the module root's path taken out of it); that command must fail.
var outputMarker = regexp.MustCompile(`^<!-- (output|error): redis-rebalancer (.+) -->$`)

// embedOutputs returns page with every command output block rewritten from the command, and the
// number of such blocks.
func embedOutputs(root string, page []byte) ([]byte, int, error) {
	lines := strings.SplitAfter(string(page), "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < len(lines); i++ {
		b.WriteString(lines[i])
		m := outputMarker.FindStringSubmatch(strings.TrimRight(lines[i], "\n"))
		if m == nil {
			continue
		}
		n++
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, 0, fmt.Errorf("line %d: %q is not followed by a fenced block", i+1, m[0])
		}
		i++
		b.WriteString(lines[i]) // the opening fence, with its info string
		end := i + 1
		for end < len(lines) && strings.TrimRight(lines[end], "\n") != "```" {
			end++
		}
		if end >= len(lines) {
			return nil, 0, fmt.Errorf("line %d: the fenced block after %q is not closed", i, m[0])
		}
		out, err := commandOutput(root, strings.Fields(m[2]))
		if m[1] == "error" {
			out, err = commandError(root, strings.Fields(m[2]))
		}
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: redis-rebalancer %s: %w", i, m[2], err)
		}
		b.WriteString(out)
		i = end - 1 // the closing fence is written next
	}
	return []byte(b.String()), n, nil
}

// commandOutput runs redis-rebalancer with args in this process and returns its standard output,
// ending with a newline. An argument that names a file or directory under root is given as its
// absolute path, so that the examples' paths read the same from any working directory.
func commandOutput(root string, args []string) (string, error) {
	s, errOut, err := execute(root, args)
	if err != nil && err.Error() != fmt.Sprintf("exit %d", app.ExitViolations) {
		return "", fmt.Errorf("%w (stderr: %s)", err, strings.TrimSpace(errOut))
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s, nil
}

// commandError runs redis-rebalancer with args in this process, as commandOutput does, and returns
// the error line it prints ("redis-rebalancer: " and the error, ending with a newline), with the
// module root's path taken out so that the files read name themselves as in the repository. It
// is an error when the command succeeds.
func commandError(root string, args []string) (string, error) {
	_, _, err := execute(root, args)
	if err == nil {
		return "", errors.New("the command succeeded: an error sample needs a failing command")
	}
	return strings.ReplaceAll("redis-rebalancer: "+err.Error()+"\n", root+string(filepath.Separator), ""), nil
}

// execute runs redis-rebalancer with args (the paths under root made absolute: absArgs) in this
// process and returns its standard output, its standard error and its error.
func execute(root string, args []string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := app.NewRootCommand()
	cmd.SetArgs(absArgs(root, args))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// absArgs returns args with each argument that names a file or directory under root given as its
// absolute path, so that the examples' paths read the same from any working directory.
func absArgs(root string, args []string) []string {
	abs := make([]string, len(args))
	for i, a := range args {
		abs[i] = a
		if !strings.HasPrefix(a, "-") && !filepath.IsAbs(a) {
			if _, err := os.Stat(filepath.Join(root, a)); err == nil {
				abs[i] = filepath.Join(root, a)
			}
		}
	}
	return abs
}
