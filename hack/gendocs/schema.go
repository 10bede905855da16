package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// chartSchema is the Helm chart's values schema; gendocs writes its properties.policy from the
// policy's types (the rest of the file is written by hand).
const chartSchema = "deploy/helm/redis-rebalancer/values.schema.json"

// The patterns of the policy's strings (the same checks as api/v1alpha1's validation, in JSON
// schema terms).
const (
	// durationPattern is a non-negative Go duration as metav1.Duration reads it (time.ParseDuration):
	// "0", or numbers with units (1h30m, 1.5s).
	durationPattern = `^(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`
	// zeroDurationPattern matches the durations that are 0 ("0", "0s", "0h0m").
	zeroDurationPattern = `^(0|(0+(\.0*)?|\.0+)(ns|us|µs|μs|ms|s|m|h))+$`
	// dnsLabelPattern is a namespace name (validation.IsDNS1123Label).
	dnsLabelPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// dnsSubdomainPattern is an object name (validation.IsDNS1123Subdomain).
	dnsSubdomainPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// qualifiedNamePattern is a label key or taint key (validation.IsQualifiedName): an optional
	// DNS subdomain prefix and a name of at most 63 characters.
	qualifiedNamePattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// kindPattern is a Kubernetes kind (InstanceSet).
	kindPattern = `^[A-Za-z][A-Za-z0-9]*$`
)

// node is a JSON object whose members keep their order (a schema reads better with type first
// and the properties in the policy's field order).
type node []member

type member struct {
	key   string
	value any // string, bool, int64, float64, []any, node, json.RawMessage
}

// set returns n with key set to value (replaced in place, or appended).
func (n node) set(key string, value any) node {
	for i := range n {
		if n[i].key == key {
			n[i].value = value
			return n
		}
	}
	return append(n, member{key, value})
}

// get returns the value of key.
func (n node) get(key string) (any, bool) {
	for _, m := range n {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// writeJSON writes v compactly, strings without HTML escaping (the schema's patterns and the
// documentation keep their < > &).
func writeJSON(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case node:
		b.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, m.key); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeJSON(b, m.value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case json.RawMessage:
		return json.Compact(b, x)
	default:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	return nil
}

// readNode reads a JSON object keeping its members' order; nested objects are read as nodes too,
// everything else as json.RawMessage.
func readNode(dec *json.Decoder) (node, error) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %v (%v)", t, err)
	}
	var n node
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		var value any = raw
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			if value, err = readNode(json.NewDecoder(bytes.NewReader(raw))); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
		n = append(n, member{key, value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return n, nil
}

// addChartSchema sets properties.policy of the chart's values schema to the policy's schema
// (policySchema) and the enum of properties.layout to selection.layout's values (layouts), and
// adds the file to files.
func addChartSchema(root string, g *generator, fields []*field, files map[string][]byte) error {
	data, err := os.ReadFile(filepath.Join(root, chartSchema))
	if err != nil {
		return err
	}
	top, err := readNode(json.NewDecoder(bytes.NewReader(data)))
	if err != nil {
		return fmt.Errorf("%s: %w", chartSchema, err)
	}
	props, ok := top.get("properties")
	pn, isNode := props.(node)
	if !ok || !isNode {
		return fmt.Errorf("%s: no properties object", chartSchema)
	}
	policy := g.objectSchema(fields, "The RebalancerPolicy the chart writes into its ConfigMap, without apiVersion and kind (the chart adds them, and schedule, redis.passwordSecretRef, selection.namespaces, windows.historyConfigMap and guard's webhook fields from the values of the same names). Generated by hack/gendocs from api/v1alpha1 (docs/policy.md): every field, its type and the ranges the policy's validation accepts.")
	pn = pn.set("policy", policy)
	// The chart's layout value is the policy's selection.layout: the same values.
	if l, ok := pn.get("layout"); ok {
		ln, isNode := l.(node)
		if !isNode {
			return fmt.Errorf("%s: properties.layout is no object", chartSchema)
		}
		pn = pn.set("layout", ln.set("enum", layouts()))
	}
	top = top.set("properties", pn)
	var b bytes.Buffer
	if err := writeJSON(&b, top); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	files[chartSchema] = out.Bytes()
	return nil
}

// objectSchema is the schema of an object with fields: no other key, each field's schema.
func (g *generator) objectSchema(fields []*field, doc string) node {
	props := node{}
	for _, f := range fields {
		props = props.set(f.name, g.fieldSchema(f))
	}
	n := node{{"type", "object"}}
	if doc != "" {
		n = n.set("description", doc)
	}
	n = n.set("additionalProperties", false).set("properties", props)
	if extra := objectRules[strings.TrimSuffix(pathOf(fields), "[]")]; extra != nil {
		n = extra(n)
	}
	return n
}

// pathOf is the path of the object holding fields ("" for the policy).
func pathOf(fields []*field) string {
	if len(fields) == 0 {
		return ""
	}
	p := fields[0].path
	if i := strings.LastIndex(p, "."); i >= 0 {
		return p[:i]
	}
	return ""
}

// fieldSchema is the schema of one field: its type's, the field's documentation, and the
// constraints of fieldRules.
func (g *generator) fieldSchema(f *field) node {
	var n node
	switch {
	case ours(f.t):
		n = g.objectSchema(f.children, f.doc)
	case f.t.Kind() == reflect.Slice && ours(f.t.Elem()):
		n = node{{"type", "array"}, {"description", f.doc}, {"items", g.objectSchema(f.children, "")}}
	default:
		n = append(node{{"description", f.doc}}, g.typeSchema(f.t, f.path)...)
	}
	if rule := fieldRules[f.path]; rule != nil {
		n = rule(n)
	}
	return n
}

// typeSchema is the schema of a value of type t at path: a duration, a label selector, an
// enumeration of the api package (its constants, and "" for the default), a boolean, an integer
// (0 and up: the validation refuses negative counts; 1 and up for the fields of PositiveFields;
// at most the type's largest value), or a list of strings.
func (g *generator) typeSchema(t reflect.Type, path string) node {
	positive := v1alpha1.IsPositiveField(path)
	switch {
	case t == reflect.TypeFor[metav1.Duration]():
		n := node{{"type", "string"}, {"pattern", durationPattern}}
		if positive {
			n = n.set("not", node{{"pattern", zeroDurationPattern}})
		}
		return n
	case t == reflect.TypeFor[metav1.LabelSelector]():
		return labelSelectorSchema()
	case t.Kind() == reflect.String:
		if td := g.docs[t.Name()]; td != nil && len(td.values) > 0 {
			enum := []any{""}
			for _, v := range td.values {
				if v != "" {
					enum = append(enum, v)
				}
			}
			return node{{"type", "string"}, {"enum", enum}}
		}
		return node{{"type", "string"}}
	case t.Kind() == reflect.Bool:
		return node{{"type", "boolean"}}
	case t.Kind() == reflect.Int32 || t.Kind() == reflect.Int64:
		minimum := int64(0)
		if positive {
			minimum = 1
		}
		n := node{{"type", "integer"}, {"minimum", minimum}}
		if t.Kind() == reflect.Int32 {
			n = n.set("maximum", int64(math.MaxInt32))
		}
		return n
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return node{{"type", "array"}, {"items", node{{"type", "string"}}}}
	}
	panic(fmt.Sprintf("%s: no schema for type %s", path, t))
}

// labelSelectorSchema is a metav1.LabelSelector's: matchLabels and matchExpressions.
func labelSelectorSchema() node {
	expr := node{{"type", "object"}, {"additionalProperties", false}, {"required", []any{"key", "operator"}}, {"properties", node{
		{"key", node{{"type", "string"}, {"pattern", qualifiedNamePattern}}},
		{"operator", node{{"type", "string"}, {"enum", []any{"In", "NotIn", "Exists", "DoesNotExist"}}}},
		{"values", node{{"type", "array"}, {"items", node{{"type", "string"}}}}},
	}}}
	return node{{"type", "object"}, {"additionalProperties", false}, {"properties", node{
		{"matchLabels", node{{"type", "object"}, {"propertyNames", node{{"pattern", qualifiedNamePattern}}}, {"additionalProperties", node{{"type", "string"}}}}},
		{"matchExpressions", node{{"type", "array"}, {"items", expr}}},
	}}}
}

// items sets the schema of a list's items.
func items(item node) func(node) node {
	return func(n node) node { return n.set("items", item).set("uniqueItems", true) }
}

// pattern sets a string's pattern (a string field that may be "" keeps "" valid). The pattern
// is made once: the rule runs at every generation (make generate, and each test that generates).
func pattern(p string, emptyOK bool) func(node) node {
	if emptyOK {
		p = "^$|" + p
	}
	return func(n node) node { return n.set("pattern", p) }
}

// fieldRules are the constraints of the policy's validation (api/v1alpha1/validation.go) beyond
// what a field's type says, by field path. TestPolicySchemaMatchesValidation checks each range
// against v1alpha1.Decode.
var fieldRules = map[string]func(node) node{
	"selection.namespaces.include": items(node{{"type", "string"}, {"pattern", dnsLabelPattern}, {"maxLength", int64(63)}}),
	"selection.namespaces.exclude": items(node{{"type", "string"}, {"pattern", dnsLabelPattern}, {"maxLength", int64(63)}}),
	"selection.layout":             func(n node) node { return n.set("enum", layouts()) },
	"selection.clusterLabel":       pattern(qualifiedNamePattern, true),
	"selection.roleLabel":          pattern(qualifiedNamePattern, true),
	"selection.shardSource":        pattern(`^(auto|redis|owner|label:`+strings.TrimPrefix(strings.TrimSuffix(qualifiedNamePattern, "$"), "^")+`)$`, true),
	"selection.recreatingOwners":   items(node{{"type", "string"}, {"pattern", kindPattern}}),
	"rules.enabled":                items(node{{"type", "string"}, {"enum", anyOf(v1alpha1.RuleNames...)}}),
	"rules.disabled":               items(node{{"type", "string"}, {"enum", anyOf(append([]string{v1alpha1.AllRules}, v1alpha1.RuleNames...)...)}}),
	"rules.soft":                   items(node{{"type", "string"}, {"enum", anyOf(v1alpha1.RuleNames...)}}),
	"redis.port":                   func(n node) node { return n.set("maximum", int64(65535)) },
	"redis.usernameSecretRef":      secretRef,
	"redis.passwordSecretRef":      secretRef,
	"windows.historyConfigMap":     pattern(dnsSubdomainPattern, true),
	"windows.windows[].schedule":   func(n node) node { return n.set("minLength", int64(1)) },
	"guard.timeoutSeconds": func(n node) node {
		return n.set("maximum", int64(v1alpha1.MaxGuardTimeoutSeconds))
	},
	"guard.webhookConfigurationName": pattern(dnsSubdomainPattern, true),
	"guard.drainTaints":              items(node{{"type", "string"}, {"pattern", qualifiedNamePattern}}),
}

// objectRules are the constraints across an object's fields, by the object's path.
var objectRules = map[string]func(node) node{
	// include or exclude, not both.
	"selection.namespaces": func(n node) node {
		return n.set("not", node{{"required", []any{"include", "exclude"}}, {"properties", node{
			{"include", node{{"minItems", int64(1)}}}, {"exclude", node{{"minItems", int64(1)}}},
		}}})
	},
	// A window needs its schedule.
	"windows.windows": func(n node) node { return n.set("required", []any{"schedule"}) },
}

// secretRef constrains a Secret reference: its namespace a namespace name, its name an object
// name, and a name needs a namespace (the chart fills redis.passwordSecretRef in itself).
func secretRef(n node) node {
	props, _ := n.get("properties")
	p := props.(node)
	for _, f := range []struct{ name, pattern string }{{"namespace", dnsLabelPattern}, {"name", dnsSubdomainPattern}} {
		s, _ := p.get(f.name)
		p = p.set(f.name, s.(node).set("pattern", "^$|"+f.pattern))
	}
	nonEmpty := func(field string) node {
		return node{{"required", []any{field}}, {"properties", node{{field, node{{"minLength", int64(1)}}}}}}
	}
	// A name needs a namespace, and a namespace a name (draft-07: if/then, in both directions).
	return n.set("properties", p).set("allOf", []any{
		node{{"if", nonEmpty("name")}, {"then", nonEmpty("namespace")}},
		node{{"if", nonEmpty("namespace")}, {"then", nonEmpty("name")}},
	})
}

// layouts are selection.layout's values: "" (none) and v1alpha1.Layouts (declared in layouts.go,
// which parseDocs does not read).
func layouts() []any {
	out := []any{""}
	for _, l := range v1alpha1.Layouts {
		out = append(out, string(l))
	}
	return out
}

func anyOf(vs ...string) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// errNoSchema is returned by schemaAt when the path has no schema.
var errNoSchema = errors.New("no schema")

// schemaAt returns the schema node at a dotted policy path ("limits.maxMovesPerCluster";
// "windows.windows[].duration" for a list's items) within a policy schema.
func schemaAt(policy node, path string) (node, error) {
	n := policy
	for _, seg := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(seg, "[]")
		props, ok := n.get("properties")
		if !ok {
			return nil, errNoSchema
		}
		v, ok := props.(node).get(name)
		if !ok {
			return nil, errNoSchema
		}
		n = v.(node)
		if list {
			it, _ := n.get("items")
			n = it.(node)
		}
	}
	return n, nil
}
