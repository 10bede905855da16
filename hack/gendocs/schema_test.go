package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// generatedChartProperties returns properties of the values schema gendocs writes.
func generatedChartProperties(t *testing.T) node {
	t.Helper()
	_, files := generated(t)
	top, err := readNode(json.NewDecoder(bytes.NewReader(files[chartSchema])))
	if err != nil {
		t.Fatal(err)
	}
	props, _ := top.get("properties")
	return props.(node)
}

// generatedPolicySchema returns properties.policy of the values schema gendocs writes.
func generatedPolicySchema(t *testing.T) node {
	t.Helper()
	policy, _ := generatedChartProperties(t).get("policy")
	return policy.(node)
}

// value is a schema member's value read back: a JSON RawMessage decoded (integers as int64, lists as
// []any), anything else as it is.
func value(n node, key string) (any, bool) {
	v, ok := n.get(key)
	raw, isRaw := v.(json.RawMessage)
	if !ok || !isRaw {
		return v, ok
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	if num, isNum := out.(json.Number); isNum {
		if i, err := num.Int64(); err == nil {
			return i, true
		}
	}
	return out, true
}

// leaves returns the paths of the schema's non-object values ("windows.windows[].duration").
func leaves(n node, prefix string) map[string]node {
	out := map[string]node{}
	props, ok := n.get("properties")
	if !ok {
		out[prefix] = n
		return out
	}
	for _, m := range props.(node) {
		p := m.key
		if prefix != "" {
			p = prefix + "." + m.key
		}
		child := m.value.(node)
		if it, ok := child.get("items"); ok {
			if in, ok := it.(node); ok {
				if _, hasProps := in.get("properties"); hasProps && p != "selection.labelSelector.matchExpressions" {
					for k, v := range leaves(in, p+"[]") {
						out[k] = v
					}
					continue
				}
			}
		}
		if typ, _ := value(child, "type"); typ == "object" && p != "selection.labelSelector" && p != "selection.workloadSelector" {
			for k, v := range leaves(child, p) {
				out[k] = v
			}
			continue
		}
		out[p] = child
	}
	return out
}

// policyWith is a policy file setting the field at path (a.b, or a.list[].c: one item, with the
// schedule a window needs) to value.
func policyWith(path string, value any) []byte {
	doc := map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.Kind}
	cur := doc
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		name, list := strings.CutSuffix(seg, "[]")
		if i == len(segs)-1 {
			cur[name] = value
			break
		}
		next := map[string]any{}
		if list {
			if name == "windows" {
				next["schedule"] = "0 2 * * *"
			}
			cur[name] = []any{next}
		} else {
			cur[name] = next
		}
		cur = next
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

// TestPolicySchemaMatchesValidation checks the chart's generated policy schema against the
// policy's own loader (v1alpha1.Decode: strict decoding and validation): every integer accepted
// at its schema's minimum and maximum and refused one past either, every duration the schema
// refuses as 0 refused as 0 by the policy, every enumeration's values accepted and another
// refused, and every field of the policy present in the schema (so that helm refuses at render
// time what a pass would refuse at its start, and nothing it would accept).
func TestPolicySchemaMatchesValidation(t *testing.T) {
	schema := generatedPolicySchema(t)
	decodes := func(path string, v any) error {
		_, err := v1alpha1.Decode(policyWith(path, v))
		return err
	}
	checked := 0
	for path, s := range leaves(schema, "") {
		typ, _ := value(s, "type")
		switch typ {
		case "integer":
			minV, _ := value(s, "minimum")
			maxV, hasMax := value(s, "maximum")
			lo := minV.(int64)
			t.Run(fmt.Sprintf("%s: %d accepted, %d refused", path, lo, lo-1), func(t *testing.T) {
				if err := decodes(path, lo); err != nil {
					t.Errorf("the schema's minimum %d: the policy refuses it: %v", lo, err)
				}
				if err := decodes(path, lo-1); err == nil {
					t.Errorf("%d, under the schema's minimum: the policy accepts it", lo-1)
				}
			})
			if hasMax {
				hi := maxV.(int64)
				t.Run(fmt.Sprintf("%s: %d accepted, %d refused", path, hi, hi+1), func(t *testing.T) {
					if err := decodes(path, hi); err != nil {
						t.Errorf("the schema's maximum %d: the policy refuses it: %v", hi, err)
					}
					if err := decodes(path, hi+1); err == nil {
						t.Errorf("%d, over the schema's maximum: the policy accepts it", hi+1)
					}
				})
			}
			checked++
		case "string":
			if enum, ok := value(s, "enum"); ok {
				t.Run(path+": each enumerated value accepted, another refused", func(t *testing.T) {
					for _, v := range enum.([]any) {
						if err := decodes(path, v); err != nil {
							t.Errorf("%q: the policy refuses it: %v", v, err)
						}
					}
					if err := decodes(path, "bogus"); err == nil {
						t.Error(`"bogus": the policy accepts it`)
					}
				})
				checked++
			}
			if p, ok := value(s, "pattern"); ok && p == durationPattern {
				_, refusesZero := s.get("not")
				t.Run(fmt.Sprintf("%s: 0s refused %v, 90s accepted, -1s refused", path, refusesZero), func(t *testing.T) {
					if err := decodes(path, "90s"); err != nil {
						t.Errorf("90s: %v", err)
					}
					if err := decodes(path, "0s"); (err != nil) != refusesZero {
						t.Errorf("0s: the policy says %v; the schema refuses it: %v", err, refusesZero)
					}
					if err := decodes(path, "-1s"); err == nil {
						t.Error("-1s: the policy accepts it")
					}
				})
				checked++
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked %d fields, want the policy's 30 and more", checked)
	}
	// A field unknown to the schema is refused by both.
	if _, err := schemaAt(schema, "limits.bogus"); err == nil {
		t.Error("the schema has limits.bogus")
	}
	if err := decodes("limits.bogus", 1); err == nil {
		t.Error("the policy accepts limits.bogus")
	}
	if s, err := schemaAt(schema, "guard.timeoutSeconds"); err != nil {
		t.Error(err)
	} else if hi, _ := value(s, "maximum"); hi != int64(v1alpha1.MaxGuardTimeoutSeconds) {
		t.Errorf("guard.timeoutSeconds: maximum %v, want %d", hi, v1alpha1.MaxGuardTimeoutSeconds)
	}
}

// TestChartLayoutMatchesPolicy: the chart's layout value takes exactly what the policy's
// selection.layout takes.
func TestChartLayoutMatchesPolicy(t *testing.T) {
	layout, ok := generatedChartProperties(t).get("layout")
	if !ok {
		t.Fatal("the chart's schema has no layout value")
	}
	sel, _ := generatedPolicySchema(t).get("properties")
	selection, _ := sel.(node).get("selection")
	selProps, _ := selection.(node).get("properties")
	policyLayout, _ := selProps.(node).get("layout")
	got, _ := value(layout.(node), "enum")
	want, _ := value(policyLayout.(node), "enum")
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(want) != fmt.Sprint(layouts()) {
		t.Errorf("layout's enum %v, policy.selection.layout's %v, want both %v", got, want, layouts())
	}
}
