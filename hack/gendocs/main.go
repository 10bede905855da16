// Command gendocs writes the documentation that is generated from the code:
//   - from the doc comments of api/v1alpha1/types.go and the defaults of api/v1alpha1/defaults.go,
//     docs/policy.md (every field: type, default, the flags that override it, its documentation,
//     and the complete default policy) and api/v1alpha1/zz_generated.default.yaml (the complete
//     default policy with every field's documentation as YAML comments, which `redis-rebalancer
//     policy default` prints);
//   - from the cobra commands, docs/cli.md (cli.go);
//   - from the rule registry (policies.Rules), docs/rules.md and README.md's rule table, between
//     the <!-- rules:begin --> and <!-- rules:end --> markers (rules.go);
//   - from the package doc comments and imports, the folder table of docs/architecture.md
//     (packages.go);
//   - in README.md and docs/*.md, every command output shown after an `output:` marker
//     (outputs.go);
//   - from the same types, doc comments and the ranges of the policy's validation, the policy's
//     part (properties.policy) of the Helm chart's values.schema.json (schema.go).
//
// Run it with `go generate ./api/v1alpha1` or `make generate`; TestGeneratedFilesAreCurrent fails
// when the files on disk differ from what it would write, and the tests of docs_test.go check
// what cannot be generated (links, the JSON reference against the report types, the layouts
// table against the policy's defaults, the tests the testing page names).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
)

// The files gendocs writes, relative to the module root.
const (
	typesFile  = "api/v1alpha1/types.go"
	yamlFile   = "api/v1alpha1/zz_generated.default.yaml"
	policyDocs = "docs/policy.md"
)

// commentWidth is the width the YAML comments are wrapped to, indentation included.
const commentWidth = 100

func main() {
	root, err := moduleRoot()
	if err == nil {
		var files map[string][]byte
		if files, err = generate(root); err == nil {
			for name, data := range files {
				if err = os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// moduleRoot is the nearest directory above the working directory with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// generate returns the files gendocs writes, by path relative to root.
func generate(root string) (map[string][]byte, error) {
	docs, err := parseDocs(filepath.Join(root, typesFile))
	if err != nil {
		return nil, err
	}
	g := &generator{docs: docs, flags: app.PolicyFlags()}
	fields, err := g.fields(reflect.TypeFor[v1alpha1.RebalancerPolicy](), reflect.ValueOf(*v1alpha1.Default()), "")
	if err != nil {
		return nil, err
	}
	y, err := g.yaml(fields)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{yamlFile: y, policyDocs: g.markdown(fields, y)}
	if err := addChartSchema(root, g, fields, files); err != nil {
		return nil, err
	}
	if err := addRuleFiles(root, files); err != nil {
		return nil, err
	}
	if err := addReferenceDocs(root, files); err != nil {
		return nil, err
	}
	return files, nil
}

// typeDoc is a type's doc comment and its fields' (by JSON name).
type typeDoc struct {
	doc    string
	fields map[string]string
	// values are the constants of the type (an enumeration's values).
	values []string
}

// parseDocs reads the doc comments of the types declared in file, and the string constants of
// each named type.
func parseDocs(file string) (map[string]*typeDoc, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	docs := map[string]*typeDoc{}
	get := func(name string) *typeDoc {
		if docs[name] == nil {
			docs[name] = &typeDoc{fields: map[string]string{}}
		}
		return docs[name]
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				td := get(s.Name.Name)
				td.doc = text(gd.Doc)
				st, ok := s.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					if fld.Tag == nil {
						continue
					}
					tag, _ := strconv.Unquote(fld.Tag.Value)
					name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
					if name != "" {
						td.fields[name] = text(fld.Doc)
					}
				}
			case *ast.ValueSpec:
				id, ok := s.Type.(*ast.Ident)
				if !ok || len(s.Values) != 1 {
					continue
				}
				if lit, ok := s.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					get(id.Name).values = append(get(id.Name).values, v)
				}
			}
		}
	}
	return docs, nil
}

// text is a comment's text as one paragraph, without the +k8s markers.
func text(cg *ast.CommentGroup) string {
	var words []string
	for _, line := range strings.Split(cg.Text(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "+") {
			continue
		}
		words = append(words, strings.Fields(line)...)
	}
	return strings.Join(words, " ")
}

// field is one field of the policy, in file order: a section (an object of this package's types)
// with its fields, a list of such objects (with its item's fields), or a value.
type field struct {
	name, path, doc string
	t               reflect.Type
	v               reflect.Value
	// children are a section's fields, or a list's item's fields (path "list[].name").
	children []*field
	flags    []string
}

type generator struct {
	docs  map[string]*typeDoc
	flags map[string][]string
}

// ours reports whether t is a struct type of the api package (a section, or a list's item).
func ours(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.PkgPath() == reflect.TypeFor[v1alpha1.RebalancerPolicy]().PkgPath()
}

// fields returns the fields of struct type t (value v) under path, with their documentation.
func (g *generator) fields(t reflect.Type, v reflect.Value, path string) ([]*field, error) {
	td := g.docs[t.Name()]
	if td == nil {
		return nil, fmt.Errorf("%s: type %s has no documentation in %s", path, t.Name(), typesFile)
	}
	var out []*field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous {
			continue // TypeMeta: apiVersion and kind are written by the caller
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		doc := td.fields[name]
		if doc == "" {
			return nil, fmt.Errorf("%s: field %s.%s has no doc comment", p, t.Name(), sf.Name)
		}
		if v1alpha1.IsPositiveField(p) {
			doc += " 0 is refused (leave the field out for its default)."
		}
		f := &field{name: name, path: p, doc: doc, t: sf.Type, v: v.Field(i), flags: g.flags[p]}
		var err error
		switch {
		case ours(sf.Type):
			f.children, err = g.fields(sf.Type, v.Field(i), p)
		case sf.Type.Kind() == reflect.Slice && ours(sf.Type.Elem()):
			f.children, err = g.fields(sf.Type.Elem(), defaultItem(sf.Type.Elem()), p+"[]")
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// defaultItem returns the value of a list item of type t as defaulted: a policy whose windows
// list holds one zero item is defaulted, and that item returned. (Windows are the policy's only
// list of objects.)
func defaultItem(t reflect.Type) reflect.Value {
	p := &v1alpha1.RebalancerPolicy{}
	if t == reflect.TypeFor[v1alpha1.Window]() {
		p.Windows.Windows = []v1alpha1.Window{{}}
		v1alpha1.SetDefaults(p)
		return reflect.ValueOf(p.Windows.Windows[0])
	}
	return reflect.Zero(t)
}

// valueText is v as the policy file writes it (JSON, which YAML reads); an empty list is [].
func valueText(v reflect.Value) string {
	if v.Kind() == reflect.Slice && v.Len() == 0 {
		return "[]"
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		panic(err)
	}
	return string(b)
}

// typeText names t for the reference.
func (g *generator) typeText(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[metav1.Duration]():
		return "duration (30s, 2m, 1h30m)"
	case t == reflect.TypeFor[metav1.LabelSelector]():
		return "label selector (matchLabels, matchExpressions)"
	case ours(t):
		return "object"
	case t.Kind() == reflect.Slice && ours(t.Elem()):
		return "list of objects"
	case t.Kind() == reflect.Slice:
		return "list of " + g.typeText(t.Elem()) + "s"
	case t.Kind() == reflect.String:
		if td := g.docs[t.Name()]; td != nil && len(td.values) > 0 {
			return "string: " + strings.Join(quoteAll(td.values), ", ")
		}
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "integer"
	}
	return t.String()
}

func quoteAll(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = "`" + v + "`"
	}
	return out
}

// comment is a field's YAML comment: its documentation, the flags that override it, and for a
// list of objects its item's fields.
func (g *generator) comment(f *field, indent int) string {
	doc := f.doc
	if len(f.flags) > 0 {
		doc += " Flag: " + strings.Join(f.flags, ", ") + "."
	}
	lines := wrap(doc, commentWidth-indent-2)
	if f.t.Kind() == reflect.Slice && len(f.children) > 0 {
		lines = append(lines, "Each item has:")
		for _, c := range f.children {
			for i, l := range wrap(c.doc+" Default: "+valueText(c.v)+".", commentWidth-indent-6) {
				if i == 0 {
					lines = append(lines, "- "+l)
				} else {
					lines = append(lines, "  "+l)
				}
			}
		}
	}
	return strings.Join(lines, "\n")
}

// wrap breaks s into lines of at most width characters (longer words stand alone).
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// yaml writes the complete default policy with every field's documentation as comments.
func (g *generator) yaml(fields []*field) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	root.Content = append(root.Content,
		scalar("apiVersion", "the policy's version"), scalar(v1alpha1.SchemeGroupVersion.String(), ""),
		scalar("kind", ""), scalar(v1alpha1.Kind, ""))
	root.Content[0].HeadComment = strings.Join([]string{
		"A complete RebalancerPolicy: every field at its default, with its documentation.",
		"Printed by `redis-rebalancer policy default`; check a policy with `redis-rebalancer policy",
		"validate FILE`; reference: docs/policy.md. Generated by hack/gendocs from the doc comments",
		"of api/v1alpha1/types.go and the defaults of api/v1alpha1/defaults.go.",
	}, "\n")
	root.Content[0].HeadComment += "\n\n" + wrapJoin(g.docs["RebalancerPolicy"].doc, commentWidth-2)
	if err := g.mapping(root, fields, 0); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func wrapJoin(s string, width int) string { return strings.Join(wrap(s, width), "\n") }

func scalar(v, comment string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: v, HeadComment: comment}
}

// mapping appends fields to node, at indent (for the comments' width).
func (g *generator) mapping(node *yaml.Node, fields []*field, indent int) error {
	for _, f := range fields {
		key := scalar(f.name, g.comment(f, indent))
		var val *yaml.Node
		if ours(f.t) {
			val = &yaml.Node{Kind: yaml.MappingNode}
			if err := g.mapping(val, f.children, indent+2); err != nil {
				return err
			}
		} else {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(valueText(f.v)), &doc); err != nil {
				return fmt.Errorf("%s: %w", f.path, err)
			}
			val = doc.Content[0]
			plain(val)
		}
		node.Content = append(node.Content, key, val)
	}
	return nil
}

// plain drops the JSON styles (quotes, flow) the value was read with, but for empty objects and
// lists, which keep {} and [].
func plain(n *yaml.Node) {
	n.Style = 0
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && len(n.Content) == 0 {
		n.Style = yaml.FlowStyle
	}
	for _, c := range n.Content {
		plain(c)
	}
}

// markdown writes docs/policy.md: the reference table of every field, then the complete policy.
func (g *generator) markdown(fields []*field, policyYAML []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!-- Code generated by hack/gendocs from %s and api/v1alpha1/defaults.go. DO NOT EDIT. -->\n\n", typesFile)
	fmt.Fprintf(&b, "# RebalancerPolicy reference (`%s`)\n\n", v1alpha1.SchemeGroupVersion)
	fmt.Fprintf(&b, "%s\n\n", g.docs["RebalancerPolicy"].doc)
	b.WriteString("A policy file starts with `apiVersion: " + v1alpha1.SchemeGroupVersion.String() + "` and `kind: " + v1alpha1.Kind + "`; every other field may be left out and takes the default below. " +
		"Loading is strict: an unknown field is an error naming its path. The policy is then validated and every problem is listed at once (`redis-rebalancer policy validate FILE` does only that); " +
		"only a valid policy is defaulted and used. A flag of the \"Flags\" column, given on the command line, overrides the file's field; each flag's default is the field's default. " +
		"A count or a duration whose 0 would mean nothing (no time, no move, no port) refuses 0, in the file and from its flag; the fields where 0 means something say what.\n\n")
	b.WriteString("Generated from the doc comments of `api/v1alpha1/types.go` by `go generate ./api/v1alpha1` (`make generate`); `go test ./hack/gendocs` fails when this file is stale.\n\n")
	for _, f := range fields {
		fmt.Fprintf(&b, "## `%s`\n\n%s\n\n", f.name, f.doc)
		b.WriteString("| Field | Type | Default | Flags | Description |\n|---|---|---|---|---|\n")
		g.rows(&b, f)
		b.WriteString("\n")
	}
	b.WriteString("## The complete default policy\n\n`redis-rebalancer policy default` prints it:\n\n```yaml\n")
	b.Write(policyYAML)
	b.WriteString("```\n")
	return b.Bytes()
}

// rows writes the table rows of f (and of its children): every value, every list, and the objects
// a flag sets as a whole (--namespace sets selection.namespaces).
func (g *generator) rows(b *bytes.Buffer, f *field) {
	if len(f.children) == 0 || f.t.Kind() == reflect.Slice || len(f.flags) > 0 {
		def := "`" + valueText(f.v) + "`"
		if ours(f.t) {
			def = "(its fields)"
		}
		flags := strings.Join(quoteAll(f.flags), ", ")
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", f.path, g.typeText(f.t), def, flags, strings.ReplaceAll(f.doc, "|", `\|`))
	}
	for _, c := range f.children {
		g.rows(b, c)
	}
}
