package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

func TestDecodeSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          string
		want        []string
		wantSkipped map[string]int
		wantErr     string
	}{
		{
			name: "YAML stream of a typed list and single objects → items get the list's kind, others counted",
			in: `apiVersion: v1
kind: PodList
items:
- metadata: {name: p1, namespace: ns}
- metadata: {name: p2, namespace: ns}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns}
`,
			want:        []string{"Node n1", "Pod ns/p1", "Pod ns/p2"},
			wantSkipped: map[string]int{"ConfigMap": 1},
		},
		{
			name: "kubectl's YAML List (kind after the items) → each item by its kind",
			in: `apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
- apiVersion: v1
  kind: Pod
  metadata:
    name: p1
    namespace: ns
kind: List
metadata:
  resourceVersion: ""
`,
			want: []string{"Node n1", "Pod ns/p1"},
		},
		{
			name: "typed list with its kind after kind-less items → the items wait for the kind",
			in:   "items:\n- metadata: {name: p1, namespace: ns}\nkind: PodList\n",
			want: []string{"Pod ns/p1"},
		},
		{
			name: "yq's layout (indented sequence, CRLF, comments between items) → each item",
			in:   "apiVersion: v1\r\nkind: List\r\nitems:\r\n    # the node\r\n    - apiVersion: v1\r\n      kind: Node\r\n      metadata:\r\n        name: n1\r\n\r\n    -   kind: Node\r\n        metadata: {name: n2}\r\n",
			want: []string{"Node n1", "Node n2"},
		},
		{
			name: "block scalars holding lines that look like items and keys → one item",
			in: `apiVersion: v1
items:
- apiVersion: v1
  kind: Pod
  metadata:
    annotations:
      note: |
        items:
        - kind: Node
        kind: List
      other: >-
        - x
    name: p1
    namespace: ns
kind: List
`,
			want: []string{"Pod ns/p1"},
		},
		{
			name: "JSON List of mixed kinds → each kept by its kind",
			in: `{"apiVersion":"v1","kind":"List","items":[
  {"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s","namespace":"ns"}},
  {"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"}},
  {"apiVersion":"storage.k8s.io/v1","kind":"CSINode","metadata":{"name":"n1"},"spec":{"drivers":[{"name":"ebs.csi.aws.com","nodeID":"i-1","allocatable":{"count":25}}]}},
  {"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","namespace":"ns"},"spec":{"type":"LoadBalancer","selector":{"a":"b"}},"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.7"}]}}},
  {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns"}}]}`,
			want:        []string{"CSINode n1 (ebs.csi.aws.com 25)", "PersistentVolume pv1", "Service ns/svc", "StatefulSet ns/s"},
			wantSkipped: map[string]int{"ConfigMap": 1},
		},
		{
			name: "JSON typed list with its kind after kind-less items, then a single object → all kept",
			in:   `{"items":[{"metadata":{"name":"p1","namespace":"ns"}}],"kind":"PodList"} {"kind":"Node","metadata":{"name":"n1"}}`,
			want: []string{"Node n1", "Pod ns/p1"},
		},
		{name: "empty List → no object, no error", in: "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n"},
		{name: "empty input → empty input", in: "", wantErr: "empty input"},
		{name: "only white space, comments and separators → empty input", in: "\n# nothing\n---\n  \n---\n", wantErr: "empty input"},
		{name: "JSON null → empty input", in: "null", wantErr: "empty input"},
		{name: "object without kind → error naming the document", in: "metadata: {name: x}\n", wantErr: "document 1: no kind"},
		{name: "List without kind → error naming the document", in: "items:\n- kind: Node\n  metadata: {name: n1}\n", wantErr: "document 1: no kind"},
		{name: "item without kind in a List → error naming the item", in: "kind: List\nitems:\n- kind: Node\n- metadata: {name: x}\n", wantErr: "document 1 item 2: no kind"},
		{name: "items that are not a list → error", in: `{"kind":"List","items":{"a":1}}`, wantErr: "items is not a list"},
		{name: "item that does not decode → error naming the item", in: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","spec":"nope"}]}`, wantErr: "document 1 item 1 (Pod)"},
		{name: "YAML item that does not decode → error naming the item", in: "kind: List\nitems:\n- kind: Node\n- kind: Pod\n  spec: nope\n", wantErr: "document 1 item 2 (Pod)"},
		{name: "bad document separator → error", in: "kind: Node\n--- x\nkind: Node\n", wantErr: "invalid YAML document separator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, skipped, err := DecodeSnapshot(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := names(snap)
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if tc.wantSkipped == nil {
				tc.wantSkipped = map[string]int{}
			}
			if diff := cmp.Diff(tc.wantSkipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeSnapshotEmptyInputIs checks that an empty input's error is ErrEmptyInput.
func TestDecodeSnapshotEmptyInputIs(t *testing.T) {
	if _, _, err := DecodeSnapshot(strings.NewReader("")); !errors.Is(err, ErrEmptyInput) {
		t.Errorf("error %v, want ErrEmptyInput", err)
	}
}

// repeated is an endless reader of its text, over and over: an input larger than any limit,
// produced as it is read.
type repeated struct {
	text []byte
	at   int
}

// repeat returns an endless reader of unit (copied in blocks of about 64 KiB).
func repeat(unit string) *repeated {
	return &repeated{text: []byte(strings.Repeat(unit, max(1, (64<<10)/len(unit))))}
}

func (r *repeated) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.text[r.at:])
		n += c
		r.at = (r.at + c) % len(r.text)
	}
	return n, nil
}

// TestDecodeSnapshotLimits: an input larger than MaxSnapshotBytes, or holding a line, an item or
// a document larger than MaxObjectBytes (/dev/zero, an endless pipe), is refused with
// ErrTooLarge once that much is read, never held whole; a snapshot at the limits' scale of
// ordinary objects is read.
func TestDecodeSnapshotLimits(t *testing.T) {
	example, err := os.ReadFile("../../examples/post-scale-down.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pod := "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n    namespace: ns\n    annotations:\n"
	for _, tc := range []struct {
		name string
		in   io.Reader
		want string
	}{
		{name: "/dev/zero → refused: a line longer than 64 MiB", in: func() io.Reader {
			f, err := os.Open("/dev/zero")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}(), want: "snapshot: document 1, line 1: a line longer than 64 MiB (input too large)"},
		{name: "a List item that never ends → refused naming the item", in: io.MultiReader(strings.NewReader("apiVersion: v1\nkind: List\nitems:\n"+pod), repeat("      a: b\n")),
			want: "snapshot: document 1, item 1 (from line 4), at line"},
		{name: "a document that is no List and never ends → refused", in: io.MultiReader(strings.NewReader("apiVersion: v1\nkind: ConfigMap\ndata:\n"), repeat("  a: b\n")),
			want: "snapshot: document 1, its lines outside a List's items, at line"},
		{name: "a JSON List item that never ends → refused", in: io.MultiReader(strings.NewReader(`{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"p","annotations":{"a":"`), repeat("x")),
			want: "snapshot: document 1 item 1: an object larger than 64 MiB (input too large)"},
		{name: "a JSON object that never ends → refused", in: io.MultiReader(strings.NewReader(`{"kind":"ConfigMap","data":{"a":"`), repeat("x")),
			want: "snapshot: document 1: an object larger than 64 MiB (input too large)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodeSnapshot(tc.in)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrTooLarge and %q", err, tc.want)
			}
		})
	}
	t.Run("documents past the input limit (lowered to 256 MiB here) → refused naming the limit", func(t *testing.T) {
		old := snapshotLimit
		snapshotLimit = 256 << 20
		t.Cleanup(func() { snapshotLimit = old })
		// Documents of comments only: each is dropped at its separator, so nothing grows but the
		// count of bytes read.
		doc := "---\n# " + strings.Repeat("x", 1<<20) + "\n"
		_, _, err := DecodeSnapshot(io.MultiReader(bytes.NewReader(example), &repeated{text: []byte(doc)}))
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "snapshot: larger than 256 MiB, the most a snapshot may hold") {
			t.Errorf("error %v, want ErrTooLarge and the limit", err)
		}
	})
	t.Run("a snapshot under the limits, items of 1 MiB lines included → read", func(t *testing.T) {
		in := string(example) + "\n---\napiVersion: v1\nkind: List\nitems:\n" + pod + "      big: \"" + strings.Repeat("x", 1<<20) + "\"\n"
		snap, _, err := DecodeSnapshot(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(snap.Pods); n == 0 || snap.Pods[n-1].Name != "p" {
			t.Errorf("the pod with the 1 MiB annotation was not read: %d pods", n)
		}
	})
}

// decodeWhole is the reference DecodeSnapshot decodes as a stream against: each document is
// decoded whole (apimachinery's YAMLOrJSONDecoder, as DecodeSnapshot did before it streamed), and
// lists are walked with DecodeSnapshot's rules. Objects are kept whole (not trimmed).
func decodeWhole(in []byte) (*policies.Snapshot, error) {
	snap, _, err := decodeWholeSkipped(in)
	return snap, err
}

func decodeWholeSkipped(in []byte) (*policies.Snapshot, map[string]int, error) {
	snap := &policies.Snapshot{}
	skipped := map[string]int{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(in), 4096)
	objects := 0
	var walk func(raw []byte, defaultKind, where string) error
	walk = func(raw []byte, defaultKind, where string) error {
		var h listHead
		if err := json.Unmarshal(raw, &h); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		kind := h.Kind
		if kind == "" {
			kind = defaultKind
		}
		if kind == "" {
			return fmt.Errorf("%s: no kind", where)
		}
		if h.Items != nil {
			var items []json.RawMessage
			if err := json.Unmarshal(h.Items, &items); err != nil {
				return fmt.Errorf("%s: items is not a list", where)
			}
			for i, item := range items {
				if err := walk(item, itemKind(kind), fmt.Sprintf("%s item %d", where, i+1)); err != nil {
					return err
				}
			}
			return nil
		}
		var err error
		switch kind {
		case "Node":
			o := &corev1.Node{}
			err = json.Unmarshal(raw, o)
			snap.Nodes = append(snap.Nodes, o)
		case "Pod":
			o := &corev1.Pod{}
			err = json.Unmarshal(raw, o)
			snap.Pods = append(snap.Pods, o)
		case "StatefulSet":
			o := &appsv1.StatefulSet{}
			err = json.Unmarshal(raw, o)
			snap.StatefulSets = append(snap.StatefulSets, o)
		case "PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			err = json.Unmarshal(raw, o)
			snap.PodDisruptionBudgets = append(snap.PodDisruptionBudgets, o)
		case "PersistentVolumeClaim":
			o := &corev1.PersistentVolumeClaim{}
			err = json.Unmarshal(raw, o)
			snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, o)
		case "PersistentVolume":
			o := &corev1.PersistentVolume{}
			err = json.Unmarshal(raw, o)
			snap.PersistentVolumes = append(snap.PersistentVolumes, o)
		case "CSINode":
			o := &storagev1.CSINode{}
			err = json.Unmarshal(raw, o)
			snap.CSINodes = append(snap.CSINodes, o)
		case "Service":
			o := &corev1.Service{}
			err = json.Unmarshal(raw, o)
			snap.Services = append(snap.Services, o)
		default:
			skipped[kind]++
		}
		if err != nil {
			return fmt.Errorf("%s (%s): %w", where, kind, err)
		}
		return nil
	}
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
			continue
		}
		objects++
		if err := walk(raw, "", fmt.Sprintf("document %d", doc)); err != nil {
			return nil, nil, err
		}
	}
	if objects == 0 {
		return nil, nil, ErrEmptyInput
	}
	return snap, skipped, nil
}

// sortedSnapshot sorts every kind's objects by namespace and name, so that snapshots read in a
// different order compare equal.
func sortedSnapshot(s *policies.Snapshot) *policies.Snapshot {
	key := func(ns, name string) string { return ns + "/" + name }
	sort.SliceStable(s.Nodes, func(i, j int) bool { return s.Nodes[i].Name < s.Nodes[j].Name })
	sort.SliceStable(s.Pods, func(i, j int) bool {
		return key(s.Pods[i].Namespace, s.Pods[i].Name) < key(s.Pods[j].Namespace, s.Pods[j].Name)
	})
	sort.SliceStable(s.StatefulSets, func(i, j int) bool {
		return key(s.StatefulSets[i].Namespace, s.StatefulSets[i].Name) < key(s.StatefulSets[j].Namespace, s.StatefulSets[j].Name)
	})
	sort.SliceStable(s.PodDisruptionBudgets, func(i, j int) bool {
		return key(s.PodDisruptionBudgets[i].Namespace, s.PodDisruptionBudgets[i].Name) < key(s.PodDisruptionBudgets[j].Namespace, s.PodDisruptionBudgets[j].Name)
	})
	sort.SliceStable(s.PersistentVolumeClaims, func(i, j int) bool {
		return key(s.PersistentVolumeClaims[i].Namespace, s.PersistentVolumeClaims[i].Name) < key(s.PersistentVolumeClaims[j].Namespace, s.PersistentVolumeClaims[j].Name)
	})
	sort.SliceStable(s.PersistentVolumes, func(i, j int) bool { return s.PersistentVolumes[i].Name < s.PersistentVolumes[j].Name })
	sort.SliceStable(s.CSINodes, func(i, j int) bool { return s.CSINodes[i].Name < s.CSINodes[j].Name })
	sort.SliceStable(s.Services, func(i, j int) bool {
		return key(s.Services[i].Namespace, s.Services[i].Name) < key(s.Services[j].Namespace, s.Services[j].Name)
	})
	return s
}

// checkAgainstWhole decodes in as a stream and whole and reports where they differ: when both
// succeed, the objects (trimmed, sorted) and the skipped kinds must be equal; an input the whole
// decoder rejects must be rejected.
func checkAgainstWhole(t *testing.T, in []byte) {
	t.Helper()
	got, gotSkipped, err := DecodeSnapshot(bytes.NewReader(in))
	want, wantSkipped, wantErr := decodeWholeSkipped(in)
	if err != nil {
		return // the stream may refuse more than the whole decoder; it never accepts less
	}
	if wantErr != nil {
		t.Fatalf("stream decoded what the whole decoder rejects (%v): %v", wantErr, names(got))
	}
	if diff := cmp.Diff(sortedSnapshot(Trim(want)), sortedSnapshot(got)); diff != "" {
		t.Errorf("stream and whole decoding differ (-whole +stream):\n%s", diff)
	}
	if diff := cmp.Diff(wantSkipped, gotSkipped); diff != "" {
		t.Errorf("skipped kinds differ (-whole +stream):\n%s", diff)
	}
}

// TestDecodeSnapshotMatchesWhole checks the stream decoder against the whole one on every
// example, as YAML and as JSON.
func TestDecodeSnapshotMatchesWhole(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			checkAgainstWhole(t, b)
			if _, _, err := DecodeSnapshot(bytes.NewReader(b)); err != nil {
				t.Fatalf("stream: %v", err)
			}
			whole, err := decodeWhole(b)
			if err != nil {
				t.Fatal(err)
			}
			j, err := json.Marshal(map[string]any{"kind": "List", "items": listItemsOf(whole)})
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstWhole(t, j)
		})
	}
}

// listItemsOf returns snap's objects with their kinds set, as a List holds them.
func listItemsOf(snap *policies.Snapshot) []any {
	var items []any
	for gvk, o := range snap.Objects() {
		o.GetObjectKind().SetGroupVersionKind(gvk)
		items = append(items, o)
	}
	for _, o := range snap.CSINodes {
		o.Kind = "CSINode"
		items = append(items, o)
	}
	return items
}

// FuzzDecodeSnapshot feeds the snapshot decoder: it must never panic, and whatever it accepts
// must equal what decoding each document whole gives (checkAgainstWhole). The seeds are small
// (TestDecodeSnapshotMatchesWhole covers the examples), so that mutations stay fast.
func FuzzDecodeSnapshot(f *testing.F) {
	for _, s := range []string{
		"",
		"kind: List\nitems:\n- kind: Node\n  metadata: {name: n1}\n- kind: Pod\n  metadata: {name: p, namespace: ns}\n  spec: {nodeName: n1}\n",
		"items:\n    -   kind: Node\n        metadata:\n          name: n1\n\n# c\nkind: NodeList\n---\nkind: Pod\n",
		"apiVersion: v1\nitems:\n- metadata:\n    annotations:\n      a: |\n        - b\n        kind: x\n    name: p\nkind: PodList\n",
		`{"items":[{"metadata":{"name":"p1"}}],"kind":"PodList"} {"kind":"Node","metadata":{"name":"n1"}}`,
		"items: []\nkind: List\n",
		"items:\nkind: List\n",
		// keptObject's one pass gives way to the general path:
		`{"kind":"Pod","metadata":{"name":"p"},"kind":"Node"}`,             // kind given twice
		`{"kind":"Pod","KIND":"Node","metadata":{"name":"p"}}`,             // kind in another case
		`{"kind":"Pod","items":[{"kind":"Node","metadata":{"name":"n"}}]}`, // a kept kind with items
		`{"kind":"List","items":[{"kind":"Pod","spec":"nope"}]}`,           // an item that does not decode
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgainstWhole(t, in)
	})
}
