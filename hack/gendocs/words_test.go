package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
)

// maxColumns is the widest line a command's help or text output may print.
const maxColumns = 100

// outsideDocument matches a reference to a document a user of redis-rebalancer does not have: a
// design document, a seed scenario's section, an issue number.
var outsideDocument = regexp.MustCompile(`(?i:seed 000|the seed's|supplement \d|issue \d+)|§|\bSPEC\b`)

// mapHeader is the first line of the zones × nodes map report.RenderMap prints.
var mapHeader = regexp.MustCompile(`^(\s*)ZONE\s+NODE\s+PODS$`)

// textOutputs returns what the user reads, by name: every command's --help, and the text output
// of check, plan, lint and prepare-drain (of node n1) on every examples/*.yaml snapshot with the
// flags its header names (those the command has).
func textOutputs(t *testing.T, root string) map[string]string {
	t.Helper()
	outs := map[string]string{}
	for _, c := range commands(app.NewRootCommand()) {
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		out, err := commandOutput(root, args)
		if err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		outs[c.CommandPath()+" --help"] = out
	}
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v, %d files", err, len(files))
	}
	for _, f := range files {
		args := exampleCommand(t, f)
		for _, verb := range []string{"plan", "check", "lint", "prepare-drain"} {
			args := flagsOf(t, verb, args)
			if verb == "prepare-drain" {
				args = append(args, "n1")
			}
			out, err := commandOutput(root, args)
			if err != nil {
				t.Fatalf("redis-rebalancer %s: %v", strings.Join(args, " "), err)
			}
			outs["redis-rebalancer "+strings.Join(args, " ")] = out
		}
	}
	return outs
}

// flagsOf returns the plan command args as the command verb takes them: verb first, and the
// flags verb does not have left out (with their values).
func flagsOf(t *testing.T, verb string, args []string) []string {
	t.Helper()
	root := app.NewRootCommand()
	planCmd, _, err := root.Find([]string{"plan"})
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, err := root.Find([]string{verb})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{verb}
	for i := 1; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		f := planCmd.Flags().Lookup(name)
		takesNext := f != nil && !hasValue && f.NoOptDefVal == ""
		if strings.HasPrefix(args[i], "--") && cmd.Flags().Lookup(name) == nil {
			if takesNext {
				i++
			}
			continue
		}
		out = append(out, args[i])
		if strings.HasPrefix(args[i], "--") && takesNext && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// exampleCommand returns the plan command an example's header names (its second line, "#
// redis-rebalancer plan --snapshot examples/NAME.yaml ..."), without the program's name.
func exampleCommand(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; i < 2 && sc.Scan(); i++ {
		if fields := strings.Fields(sc.Text()); len(fields) > 3 && fields[0] == "#" && fields[1] == "redis-rebalancer" && fields[2] == "plan" {
			return fields[2:]
		}
	}
	t.Fatalf("%s: no `# redis-rebalancer plan ...` header line", file)
	return nil
}

// mapLines returns the indices of the lines of a zones × nodes map: a mapHeader line and the rows
// under it, whose text before the NODE column is at most one word (the zone) and whose NODE
// column starts with a node name (or the count of nodes without pods).
func mapLines(lines []string) map[int]bool {
	in := map[int]bool{}
	for i := 0; i < len(lines); i++ {
		if !mapHeader.MatchString(lines[i]) {
			continue
		}
		col := utf8.RuneCountInString(lines[i][:strings.Index(lines[i], "NODE")])
		in[i] = true
		for i+1 < len(lines) {
			r := []rune(lines[i+1])
			if len(r) <= col || r[col-1] != ' ' || r[col] == ' ' || len(strings.Fields(string(r[:col]))) > 1 {
				break
			}
			i++
			in[i] = true
		}
	}
	return in
}

// TestOutputsWrapAndCiteNothing checks every command's --help and the text output of check, plan,
// lint and prepare-drain on every example: no line wider than 100 columns but the zones × nodes map's, and no
// reference to a document a user does not have (name the rule and its reason instead).
func TestOutputsWrapAndCiteNothing(t *testing.T) {
	root := moduleRootForTest(t)
	for name, out := range textOutputs(t, root) {
		lines := strings.Split(out, "\n")
		inMap := mapLines(lines)
		for i, line := range lines {
			if n := utf8.RuneCountInString(line); n > maxColumns && !inMap[i] {
				t.Errorf("%s: line %d has %d columns (at most %d): %s", name, i+1, n, maxColumns, line)
			}
			if m := outsideDocument.FindString(line); m != "" {
				t.Errorf("%s: line %d cites %q: %s", name, i+1, m, line)
			}
		}
	}
}

// TestMapLines checks that the map's rows are told from the lines after them.
func TestMapLines(t *testing.T) {
	lines := []string{
		"Redis cluster redis/rc: 6 pods (N=6), 1 shard, zones [zone-a zone-b]",
		"  ZONE    NODE  PODS",
		"  zone-a  n1    rc-0 M",
		"          n2    ",
		"  zone-b  n4    rc-1 M, rc-2 R",
		"          (+2 nodes without pods)",
		"  ✗ ShardSeparation: shard rc has 2 pods in zone zone-a",
		"  ✗ MasterQuorum: zone zone-b holds 2 of the 3 masters",
	}
	got := mapLines(lines)
	for i := range lines {
		if want := i >= 1 && i <= 5; got[i] != want {
			t.Errorf("line %d %q: in the map %v, want %v", i, lines[i], got[i], want)
		}
	}
}

// TestErrorSample checks the error marker: a failing command's error line replaces the block, the
// module root's path taken out; a command that succeeds is refused.
func TestErrorSample(t *testing.T) {
	root := moduleRootForTest(t)
	page := "<!-- error: redis-rebalancer policy validate examples/policies/invalid.yaml -->\n```text\nstale\n```\n"
	got, n, err := embedOutputs(root, []byte(page))
	if err != nil || n != 1 {
		t.Fatalf("embedOutputs: %d blocks, %v", n, err)
	}
	if want := "```text\nredis-rebalancer: policy examples/policies/invalid.yaml: invalid policy (4 problems):\n"; !strings.Contains(string(got), want) {
		t.Errorf("got %q, want it to hold %q", got, want)
	}
	ok := "<!-- error: redis-rebalancer policy validate examples/policies/invalid.yaml --help -->\n```text\n```\n"
	if _, _, err := embedOutputs(root, []byte(ok)); err == nil || !strings.Contains(err.Error(), "the command succeeded") {
		t.Errorf("a succeeding command under an error marker: err %v, want it refused", err)
	}
}
