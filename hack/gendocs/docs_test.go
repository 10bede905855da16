package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/doctable"
)

// moduleRootForTest is the module root, from this package's directory.
func moduleRootForTest(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// pages returns README.md and every docs/*.md, relative to root.
func pages(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, "docs/"+filepath.Base(d))
	}
	return out
}

var (
	fence      = regexp.MustCompile("(?ms)^```.*?^```[^\n]*$")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// links returns the targets of the Markdown links of page, outside code.
func links(page string) []string {
	page = inlineCode.ReplaceAllString(fence.ReplaceAllString(page, ""), "")
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// anchors returns the anchors GitHub gives the headings of a Markdown page: the heading's text
// lowercased, without punctuation but hyphens and underscores, spaces as hyphens, and -1, -2, ...
// after a repeated one.
func anchors(page string) map[string]bool {
	page = fence.ReplaceAllString(page, "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsAreLinked checks that README.md links every docs/*.md page, and that every relative
// link of README.md and docs/*.md names a file of the repository (and, into a Markdown page, one
// of its headings).
func TestDocsAreLinked(t *testing.T) {
	root := moduleRootForTest(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	fromReadme := map[string]bool{}
	for _, l := range links(string(readme)) {
		path, _, _ := strings.Cut(l, "#")
		fromReadme[filepath.Clean(path)] = true
	}
	for _, p := range pages(t, root)[1:] {
		if !fromReadme[p] {
			t.Errorf("README.md does not link %s", p)
		}
	}
	for _, p := range pages(t, root) {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(data)) {
			if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(l, "#")
			target := filepath.Join(root, filepath.Dir(p), path)
			if path == "" {
				target = filepath.Join(root, p)
			}
			body, err := os.ReadFile(target)
			if err != nil {
				if _, serr := os.Stat(target); serr != nil {
					t.Errorf("%s: link %q: %v", p, l, serr)
				}
				continue // a directory
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !anchors(string(body))[frag] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", p, l, path, frag)
			}
		}
	}
}

// TestDocsCiteNoOutsideDocument checks that the hand-written pages speak of the code, Kubernetes
// and Redis, not of design documents or issues a reader of the repository does not have.
// docs/policy.md, docs/cli.md and the folder table of docs/architecture.md are generated from the
// Go sources (whose comments are to be fixed there) and left out.
func TestDocsCiteNoOutsideDocument(t *testing.T) {
	root := moduleRootForTest(t)
	outside := regexp.MustCompile(`(?i:seed 000|the seed's|supplement \d|issue \d+)|§|\bSPEC\b`)
	for _, p := range append(pages(t, root), "examples/README.md", "deploy/README.md") {
		if p == policyDocs || p == cliDocs {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		generated := false
		for i, line := range lines {
			switch strings.TrimSpace(line) {
			case strings.TrimSpace(packagesBegin):
				generated = true
			case packagesEnd:
				generated = false
			}
			if generated {
				continue
			}
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q: name the rule and its reason instead", p, i+1, m)
			}
		}
	}
}

// TestReadmeFirstScreen checks the README's shape: under 250 lines, `make demo` and `make test` in
// its first 60, and the rules table between its markers exactly once.
func TestReadmeFirstScreen(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(moduleRootForTest(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) >= 250 {
		t.Errorf("README.md has %d lines, want under 250: the reference belongs in docs/", len(lines))
	}
	first := strings.Join(lines[:min(60, len(lines))], "\n")
	for _, cmd := range []string{"make demo", "make test"} {
		if !strings.Contains(first, cmd) {
			t.Errorf("README.md's first 60 lines do not show %q", cmd)
		}
	}
	for _, marker := range []string{"<!-- rules:begin -->", "<!-- rules:end -->"} {
		if n := strings.Count(string(data), marker); n != 1 {
			t.Errorf("README.md has %q %d times, want once", marker, n)
		}
	}
}

// jsonRoots are the documents the JSON reference describes, by the name its markers use.
var jsonRoots = map[string]reflect.Type{
	"Analysis": reflect.TypeFor[report.Analysis](), // check -o json, plan -o json
	"Run":      reflect.TypeFor[report.Run](),      // run -o json
	"Drain":    reflect.TypeFor[report.Drain](),    // prepare-drain -o json
}

// jsonObjects walks t and returns, by path ("." for t itself, "clusters[]", "clusters[].moves[]",
// ...), every object of this module's types it marshals: its type and its JSON field names.
func jsonObjects(t reflect.Type) map[string]jsonObject {
	out := map[string]jsonObject{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			if t.Kind() == reflect.Slice {
				path += "[]"
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || !strings.HasPrefix(t.PkgPath(), "github.com/redis-rebalancer/redis-rebalancer/") {
			return
		}
		obj := jsonObject{t: t}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			obj.fields = append(obj.fields, name)
			child := name
			if path != "." {
				child = path + "." + name
			}
			walk(f.Type, child)
		}
		sort.Strings(obj.fields)
		out[path] = obj
	}
	walk(t, ".")
	return out
}

type jsonObject struct {
	t      reflect.Type
	fields []string
}

var (
	fieldsMarker  = regexp.MustCompile(`^<!-- fields: (\w+) (\S+) -->$`)
	exampleMarker = regexp.MustCompile(`^<!-- example: (\w+) -->$`)
	backticked    = regexp.MustCompile("`([^`]+)`")
)

// TestJSONReferenceMatchesReports checks docs/json.md against the types check, plan and run
// marshal: each table after a `fields: ROOT PATH` marker lists exactly the JSON fields of the
// object at PATH, every object type is described by a table, and every JSON block after an
// `example: ROOT` marker decodes into ROOT's type with no unknown field.
func TestJSONReferenceMatchesReports(t *testing.T) {
	root := moduleRootForTest(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]map[string]jsonObject{}
	for name, typ := range jsonRoots {
		objects[name] = jsonObjects(typ)
	}
	described := map[reflect.Type]bool{}
	lines := strings.Split(string(data), "\n")
	examples := 0
	for i := 0; i < len(lines); i++ {
		if m := exampleMarker.FindStringSubmatch(lines[i]); m != nil {
			typ, ok := jsonRoots[m[1]]
			if !ok {
				t.Errorf("docs/json.md:%d: example of unknown document %q", i+1, m[1])
				continue
			}
			j := i + 1
			for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
				j++ // other markers (an output: marker) may stand between
			}
			end := j + 1
			for end < len(lines) && lines[end] != "```" {
				end++
			}
			if j >= len(lines) || end >= len(lines) {
				t.Fatalf("docs/json.md:%d: no fenced block after the example marker", i+1)
			}
			dec := json.NewDecoder(strings.NewReader(strings.Join(lines[j+1:end], "\n")))
			dec.DisallowUnknownFields()
			if err := dec.Decode(reflect.New(typ).Interface()); err != nil {
				t.Errorf("docs/json.md:%d: the example does not decode into %s: %v", j+1, typ, err)
			}
			examples++
			continue
		}
		m := fieldsMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		obj, ok := objects[m[1]][m[2]]
		if !ok {
			t.Errorf("docs/json.md:%d: %s has no object at %q", i+1, m[1], m[2])
			continue
		}
		described[obj.t] = true
		var got []string
		j := i + 3 // the marker, the table's header and its separator
		for ; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			first := strings.SplitN(lines[j], "|", 3)[1]
			for _, b := range backticked.FindAllStringSubmatch(first, -1) {
				got = append(got, b[1])
			}
		}
		if !strings.HasPrefix(lines[i+1], "|") || j == i+3 {
			t.Errorf("docs/json.md:%d: no table after the marker", i+1)
			continue
		}
		sort.Strings(got)
		if diff := cmp.Diff(obj.fields, got); diff != "" {
			t.Errorf("docs/json.md:%d: the table of %s %s (%s) lists other fields than it marshals (-marshalled +documented):\n%s", i+1, m[1], m[2], obj.t, diff)
		}
	}
	for name, objs := range objects {
		var paths []string
		for p := range objs {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			if !described[objs[p].t] {
				t.Errorf("docs/json.md has no table of %s (%s %s): add one after a `<!-- fields: %s %s -->` marker", objs[p].t, name, p, name, p)
				described[objs[p].t] = true // once per type
			}
		}
	}
	if examples < 2 {
		t.Errorf("docs/json.md has %d examples, want one of each document", examples)
	}
}

// TestLayoutsTableMatchesDefaults checks docs/layouts.md's table against what each layout sets:
// a row per layout of v1alpha1.Layouts, and in it the cluster label, shard source, role label,
// password key and re-creating owners of a policy with that layout once defaulted and the layout
// applied, as the command line runs it ("—": none).
func TestLayoutsTableMatchesDefaults(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(moduleRootForTest(t), "docs", "layouts.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "<!-- layouts:begin -->\n")
	table, _, ok2 := strings.Cut(table, "<!-- layouts:end -->")
	if !ok || !ok2 {
		t.Fatal("docs/layouts.md has no table between <!-- layouts:begin --> and <!-- layouts:end -->")
	}
	// first is the first backticked word of a cell, "" for a cell that starts with "—".
	first := func(cell string) string {
		if strings.HasPrefix(strings.TrimSpace(cell), "—") {
			return ""
		}
		if m := backticked.FindStringSubmatch(cell); m != nil {
			return m[1]
		}
		return ""
	}
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[2:] {
		cells := strings.Split(line, "|")[1:]
		if len(cells) < 8 {
			t.Errorf("docs/layouts.md: row %q has %d cells, want 8", line, len(cells))
			continue
		}
		layout := first(cells[0])
		rows = append(rows, layout)
		p := &v1alpha1.RebalancerPolicy{}
		p.Selection.Layout = v1alpha1.Layout(layout)
		v1alpha1.SetDefaults(p)
		v1alpha1.ApplyLayout(p)
		var owners []string
		for _, m := range backticked.FindAllStringSubmatch(cells[6], -1) {
			owners = append(owners, m[1])
		}
		want := []string{p.Selection.ClusterLabel, p.Selection.ShardSource, p.Selection.RoleLabel, p.Redis.PasswordSecretRef.Key, strings.Join(p.Selection.RecreatingOwners, ",")}
		got := []string{first(cells[2]), first(cells[3]), first(cells[4]), first(cells[5]), strings.Join(owners, ",")}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("docs/layouts.md: layout %q: cluster label, shards, role label, password key, re-creating owners (-defaults +table):\n%s", layout, diff)
		}
	}
	var want []string
	for _, l := range v1alpha1.Layouts {
		want = append(want, string(l))
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("docs/layouts.md: the table's layouts (-v1alpha1.Layouts +table):\n%s", diff)
	}
}

// TestTestingPageNamesRealTests checks docs/testing.md against the tests: every TestX it names is
// a test function of the module, and every end-to-end fault test (e2e's TestFault…) has a row in
// its fault matrix.
func TestTestingPageNamesRealTests(t *testing.T) {
	root := moduleRootForTest(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{} // name → file
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				rel, _ := filepath.Rel(root, path)
				tests[fn.Name.Name] = filepath.ToSlash(rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(Test\\w+)`").FindAllStringSubmatch(string(data), -1) {
		named[m[1]] = true
		if tests[m[1]] == "" {
			t.Errorf("docs/testing.md names %s, which is no test of the module", m[1])
		}
	}
	_, matrix, _ := strings.Cut(string(data), "<!-- faults:begin -->")
	matrix, _, _ = strings.Cut(matrix, "<!-- faults:end -->")
	for name, file := range tests {
		if strings.HasPrefix(name, "TestFault") && strings.HasPrefix(file, "e2e/") && !strings.Contains(matrix, "`"+name+"`") {
			t.Errorf("docs/testing.md's fault matrix has no row for %s (%s)", name, file)
		}
	}
}

// TestImportRules checks the import rules docs/architecture.md states: no product package imports
// test support, api/v1alpha1 imports no package of the module, policies and rebalancer/window
// import none but the API, and the top-level folders import each other without a cycle.
func TestImportRules(t *testing.T) {
	root := moduleRootForTest(t)
	pkgs, err := modulePackages(root, "github.com/redis-rebalancer/redis-rebalancer")
	if err != nil {
		t.Fatal(err)
	}
	product := regexp.MustCompile(`^(api|cmd/redis-rebalancer|policies|rebalancer|redisctl)(/|$)`)
	testSupport := regexp.MustCompile(`^(test|e2e)(/|$)`)
	top := func(dir string) string { f, _, _ := strings.Cut(dir, "/"); return f }
	folders := map[string]map[string]bool{}
	for _, p := range pkgs {
		for _, dep := range p.imports {
			if product.MatchString(p.dir) && testSupport.MatchString(dep) {
				t.Errorf("product package %s imports test support %s", p.dir, dep)
			}
			if from, to := top(p.dir), top(dep); from != to {
				if folders[from] == nil {
					folders[from] = map[string]bool{}
				}
				folders[from][to] = true
			}
		}
		switch p.dir {
		case "api/v1alpha1":
			if len(p.imports) > 0 {
				t.Errorf("%s imports %v; it imports no package of the module", p.dir, p.imports)
			}
		case "policies", "rebalancer/window":
			if len(p.imports) != 1 || p.imports[0] != "api/v1alpha1" {
				t.Errorf("%s imports %v; it imports no package of the module but api/v1alpha1", p.dir, p.imports)
			}
		}
	}
	// A depth-first search for a cycle among the top-level folders.
	state := map[string]int{} // 1: on the path, 2: done
	var visit func(f string, path []string)
	visit = func(f string, path []string) {
		switch state[f] {
		case 1:
			t.Errorf("import cycle between folders: %s", strings.Join(append(path, f), " → "))
			return
		case 2:
			return
		}
		state[f] = 1
		var next []string
		for to := range folders[f] {
			next = append(next, to)
		}
		sort.Strings(next)
		for _, to := range next {
			visit(to, append(path, f))
		}
		state[f] = 2
	}
	var from []string
	for f := range folders {
		from = append(from, f)
	}
	sort.Strings(from)
	for _, f := range from {
		visit(f, nil)
	}
}

// TestReadmeRunMatchesExample checks the README's picture of a run against the code where it can:
// the demo lays out the post-scale-down scenario, which examples/post-scale-down.yaml holds, so
// each line of the excerpt's "before:" map and violations (but the cut marks) must be a line that
// plan prints on that file now.
func TestReadmeRunMatchesExample(t *testing.T) {
	root := moduleRootForTest(t)
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, before, ok := strings.Cut(string(data), "\nbefore:\n")
	before, _, _ = strings.Cut(before, "\n\n")
	if !ok || before == "" {
		t.Fatal(`README.md's run excerpt has no "before:" block`)
	}
	out, err := commandOutput(root, strings.Fields("plan --snapshot examples/post-scale-down.yaml --role-label redis.rebalancer.io/role"))
	if err != nil {
		t.Fatal(err)
	}
	printed := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		printed[strings.TrimRight(line, " ")] = true
	}
	n := 0
	for _, line := range strings.Split(before, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "[…") {
			continue
		}
		n++
		if !printed[line] {
			t.Errorf("README.md's run excerpt shows %q, which plan no longer prints on examples/post-scale-down.yaml: take a fresh excerpt from make demo", line)
		}
	}
	if n < 10 {
		t.Errorf("README.md's before: block has %d lines, want the map and the violations", n)
	}
}

// TestOutcomeTableMatchesRun checks docs/operations.md's outcome table against run: one row per
// outcome (report.Outcomes, in their order of severity), the exit status app.ExitStatus gives,
// and the Job status that exit status gets from the manifests' podFailurePolicy (Complete on 0,
// Failed by the policy otherwise). e2e/jobs_test.go checks the same rows on a real control
// plane.
func TestOutcomeTableMatchesRun(t *testing.T) {
	rows, err := doctable.Read(filepath.Join(moduleRootForTest(t), "docs", "operations.md"), "outcomes")
	if err != nil {
		t.Fatal(err)
	}
	var got []report.Outcome
	for _, r := range rows {
		o := report.Outcome(r["outcome"])
		got = append(got, o)
		want := app.ExitStatus(o)
		if r["exit status"] != strconv.Itoa(want) {
			t.Errorf("outcome %s: the table says exit %q, run exits %d", o, r["exit status"], want)
		}
		wantJob := "Complete"
		if want != app.ExitOK {
			wantJob = "Failed (`PodFailurePolicy`)"
		}
		if r["Job status"] != wantJob {
			t.Errorf("outcome %s: the table says Job status %q, want %q for exit %d", o, r["Job status"], wantJob, want)
		}
		if o.Expected() != (want == app.ExitOK) {
			t.Errorf("outcome %s: Expected() %v but exit %d", o, o.Expected(), want)
		}
		if r["when"] == "" || r["alert"] == "" {
			t.Errorf("outcome %s: when %q, alert %q: both must be written", o, r["when"], r["alert"])
		}
	}
	if diff := cmp.Diff(report.Outcomes, got); diff != "" {
		t.Errorf("the table's outcomes (-report.Outcomes +table):\n%s", diff)
	}
}
