package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// InvalidError is a policy with bad fields: every one of them, each with its path.
//
// +k8s:deepcopy-gen=false
type InvalidError struct {
	// Errs are the problems, ordered by field path.
	Errs field.ErrorList
}

// Error lists the problems one per line, after a line that counts them.
func (e *InvalidError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid policy (%d %s):", len(e.Errs), plural(len(e.Errs), "problem", "problems"))
	for _, err := range e.Errs {
		b.WriteString("\n  " + err.Error())
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// MaxPolicyBytes is the largest policy file Load reads (1 MiB): a complete policy, every field
// commented (`policy default`), is a few kilobytes, so a larger input is not a policy (a wrong
// file, /dev/zero) and is refused before it is held in memory.
const MaxPolicyBytes = 1 << 20

// Load reads the policy file at path ("-": standard input) with Decode; a file larger than
// MaxPolicyBytes is refused. Its errors start with "policy PATH: "; a policy with bad fields
// gives an *InvalidError (errors.As finds it).
func Load(path string) (*RebalancerPolicy, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	if len(data) > MaxPolicyBytes {
		return nil, fmt.Errorf("policy %s: larger than %d MiB, the most a policy file may hold (a complete one is a few kilobytes): is it the right file?", path, MaxPolicyBytes>>20)
	}
	p, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// Decode reads a RebalancerPolicy from YAML or JSON, as the descheduler reads its policy: strictly
// (the scheme's strict codec: an unknown or duplicate field is an error naming its path), then
// validated (ValidateRebalancerPolicy), then, when nothing is wrong, defaulted (SetDefaults).
//
// Every problem is reported at once, as an *InvalidError: unknown fields, values that are not of
// their field's type (a duration such as "2 hours", a word where a number goes), a missing or
// other apiVersion or kind, a field of PositiveFields given as 0, an empty schedule, and every
// validation error. A document that is not a YAML mapping, and a second YAML document after the
// policy (the YAML decoder would read the first and drop the rest unread), are plain errors.
func Decode(data []byte) (*RebalancerPolicy, error) {
	if err := oneDocument(data); err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &doc); err != nil || doc == nil {
		return nil, errors.New("a policy is a YAML mapping with apiVersion " + SchemeGroupVersion.String() + " and kind " + Kind)
	}
	errs := checkTypeMeta(doc)
	// The decoder stops at the first value it cannot read: find them all, and leave them out.
	errs = append(errs, badValues(doc, reflect.TypeFor[RebalancerPolicy](), nil)...)
	errs = append(errs, givenZeros(doc)...)
	errs = append(errs, givenEmpty(doc)...)
	if j, err = json.Marshal(doc); err != nil {
		return nil, err
	}
	p := &RebalancerPolicy{}
	if _, _, err := codecs.UniversalDeserializer().Decode(j, nil, p); err != nil {
		strict, ok := runtime.AsStrictDecodingError(err)
		if !ok {
			return nil, err
		}
		for _, e := range strict.Errors() {
			errs = append(errs, strictFieldError(e))
		}
	}
	errs = append(errs, ValidateRebalancerPolicy(p)...)
	if len(errs) > 0 {
		sort.SliceStable(errs, func(a, b int) bool { return errs[a].Field < errs[b].Field })
		return nil, &InvalidError{Errs: errs}
	}
	SetDefaults(p)
	return p, nil
}

// oneDocument refuses data holding more than one YAML document with content (a line that is
// not blank, a comment, a "---" marker or a "..." marker): a policy file is one RebalancerPolicy,
// and the YAML decoder would read the first document and drop the others unread. A document
// starts at a line "---" (at column 0, followed by white space or nothing: a marker no scalar
// may hold), as apimachinery's YAMLReader splits documents.
func oneDocument(data []byte) error {
	docs, content := 0, false
	for i, l := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if rest, ok := bytes.CutPrefix(l, []byte("---")); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r') {
			content = false
			t = bytes.TrimSpace(rest)
		}
		if len(t) == 0 || t[0] == '#' || bytes.Equal(t, []byte("...")) || content {
			continue
		}
		content = true
		if docs++; docs == 2 {
			return fmt.Errorf("a second YAML document at line %d: a policy file holds one RebalancerPolicy (remove the other document, or the --- before it)", i+1)
		}
	}
	return nil
}

// checkTypeMeta requires this package's apiVersion and kind, and writes them into doc so that
// the decoder reads the rest whatever they were.
func checkTypeMeta(doc map[string]any) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, want string }{{"apiVersion", SchemeGroupVersion.String()}, {"kind", Kind}} {
		switch v, ok := doc[f.name]; {
		case !ok || v == "":
			errs = append(errs, field.Required(field.NewPath(f.name), "must be "+f.want))
		case v != f.want:
			errs = append(errs, field.NotSupported(field.NewPath(f.name), v, []string{f.want}))
		}
		doc[f.name] = f.want
	}
	return errs
}

// strictFieldError turns a strict decoding error (sigs.k8s.io/json's unknown or duplicate field,
// which carries its path) into a field error.
func strictFieldError(err error) *field.Error {
	var fe kjson.FieldError
	if errors.As(err, &fe) {
		detail, _, _ := strings.Cut(fe.Error(), ` "`)
		return field.Forbidden(field.NewPath(fe.FieldPath()), strings.TrimPrefix(detail, "json: "))
	}
	return field.InternalError(nil, err)
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// badValues finds, under doc (the JSON object of a value of type t at path), every value that
// does not decode into its field's type, and deletes it from doc. Objects and lists of objects
// are followed into; other values are decoded alone. Keys that are no field of t are left to the
// strict decoder.
func badValues(doc map[string]any, t reflect.Type, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	fields := jsonFields(t)
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ft, ok := fields[k]
		if !ok {
			continue
		}
		p := fieldPath(path, k)
		v := doc[k]
		if m, ok := v.(map[string]any); ok && followed(ft) {
			errs = append(errs, badValues(m, ft, p)...)
			continue
		}
		if list, ok := v.([]any); ok && ft.Kind() == reflect.Slice && followed(ft.Elem()) {
			for i, e := range list {
				if m, ok := e.(map[string]any); ok {
					errs = append(errs, badValues(m, ft.Elem(), p.Index(i))...)
				}
			}
			continue
		}
		raw, _ := json.Marshal(v)
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(ft).Interface()); err != nil {
			errs = append(errs, field.Invalid(p, v, valueError(err, ft)))
			delete(doc, k)
		}
	}
	return errs
}

func fieldPath(parent *field.Path, name string) *field.Path {
	if parent == nil {
		return field.NewPath(name)
	}
	return parent.Child(name)
}

// followed reports whether badValues looks inside values of type t: structs decoded field by
// field (not those that decode themselves, such as metav1.Duration).
func followed(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(jsonUnmarshaler)
}

// jsonFields maps the JSON names of t's fields to their types; inline embedded structs (TypeMeta)
// give their own fields.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" && strings.Contains(opts, "inline") {
			for k, v := range jsonFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// valueError says what a value of type t must be.
func valueError(err error, t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[metav1.Duration]():
		return "must be a duration such as 30s, 2m or 1h30m"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "must be a whole number"
	case t.Kind() == reflect.Bool:
		return "must be true or false"
	case t.Kind() == reflect.String:
		return "must be a string"
	case t.Kind() == reflect.Slice:
		return "must be a list"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
