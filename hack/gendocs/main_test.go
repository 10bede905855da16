package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// generated returns the module root and the files gendocs writes there.
func generated(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// TestGeneratedFilesAreCurrent fails when docs/policy.md, api/v1alpha1/zz_generated.default.yaml,
// docs/rules.md or README.md's rule table differ from what gendocs writes from the current types,
// doc comments, defaults, flags and rule registry (or when README.md lost its rules block).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, files := generated(t)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%v: run `make generate`", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `make generate` (go generate ./api/v1alpha1)", name)
		}
	}
}

// TestGenerateIsRepeatable checks that a second generation in the same process writes the same
// files: tests generate in any order (make test shuffles them), and a rule that changed its own
// state (a pattern prefixed again at each call) made TestGeneratedFilesAreCurrent fail after
// another test had generated.
func TestGenerateIsRepeatable(t *testing.T) {
	_, first := generated(t)
	_, second := generated(t)
	for name, want := range first {
		if !bytes.Equal(second[name], want) {
			t.Errorf("%s: the second generation differs from the first", name)
		}
	}
}

// TestRunbookNamesEveryStop checks that docs/runbook.md has a table row for every value of a
// run report's stoppedBy (the Step… and Stopped… constants of rebalancer/report): a new way to
// stop needs its entry there.
func TestRunbookNamesEveryStop(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../rebalancer/report/run.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	runbook, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Step") && !strings.HasPrefix(name.Name, "Stopped") {
					continue
				}
				n++
				v, _ := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				if !regexp.MustCompile("(?m)^\\| [^|]*`" + v + "`[^|]*\\|").Match(runbook) {
					t.Errorf("docs/runbook.md has no row for stoppedBy %q (report.%s)", v, name.Name)
				}
			}
		}
	}
	if n < 16 {
		t.Errorf("found %d stoppedBy values in rebalancer/report/run.go, want at least 16", n)
	}
}
