package observe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Limits of DecodeSnapshot's input, so that a wrong input (a file that is no dump, /dev/zero, an
// endless pipe) is refused before it exhausts memory.
const (
	// MaxSnapshotBytes is the largest input DecodeSnapshot reads (8 GiB): the largest cluster
	// Kubernetes supports (5,000 nodes, 150,000 pods) dumps to 1.7 GB with -o json (the scale
	// benchmark's), 0.7 GB with -o yaml.
	MaxSnapshotBytes = 8 << 30
	// MaxObjectBytes is the largest object DecodeSnapshot reads at once (64 MiB): a YAML line, a
	// List's item, a document that is not a List in kubectl's block layout, a JSON object or
	// List item. The API server stores no object over 1.5 MiB (etcd's request limit, 3 MiB for
	// its own requests), whatever kubectl prints it as.
	MaxObjectBytes = 64 << 20
)

// snapshotLimit is MaxSnapshotBytes; a test lowers it to reach it quickly.
var snapshotLimit int64 = MaxSnapshotBytes

// ErrTooLarge is DecodeSnapshot's error for an input over MaxSnapshotBytes, or holding an object
// (a line, an item, a document) over MaxObjectBytes.
var ErrTooLarge = errors.New("input too large")

// ErrEmptyInput is DecodeSnapshot's error for input that holds no object: nothing, white space,
// comments, or null documents (what `kubectl ... | redis-rebalancer check --snapshot -` reads
// when kubectl fails).
var ErrEmptyInput = errors.New("empty input")

// DecodeSnapshot reads a snapshot from what `kubectl get nodes,pods,statefulsets,
// poddisruptionbudgets,pvc,pv,csinodes,services -A -o yaml` (or -o json) prints: a List, a
// stream of YAML documents or JSON objects, or single objects, in any mix. Nodes, Pods,
// StatefulSets, PodDisruptionBudgets, PersistentVolumeClaims, PersistentVolumes, CSINodes and
// Services are kept, trimmed (see Trim);
// other kinds are counted in skipped (by kind). An object with an "items" key is a list (its items
// must be an array or null): each item is read by its own kind, or, when it has none, by the
// list's kind without "List" (a PodList's items are Pods).
//
// The input is read as a stream: a List's items are cut out one at a time (yamlSplitter; for JSON,
// encoding/json's token stream) and decoded and trimmed on every core (itemPool), so memory grows
// with what the snapshot keeps, not with the size of the dump. An item of a kept kind that names
// its kind among its first keys, as kubectl prints it, is decoded in one pass (keptObject).
//
// Errors name the document and item: an object without kind, one that does not decode, and
// ErrEmptyInput when the input holds no object at all. An input over MaxSnapshotBytes, or
// holding a line, an item or a document over MaxObjectBytes, is refused (ErrTooLarge) once that
// much is read.
func DecodeSnapshot(r io.Reader) (snap *policies.Snapshot, skipped map[string]int, err error) {
	d := &decoder{t: newTrimmer(), snap: &policies.Snapshot{}, skipped: map[string]int{}}
	d.pool = newItemPool(d, runtime.GOMAXPROCS(0))
	defer d.pool.close()
	counted := &countingReader{r: io.LimitReader(r, snapshotLimit+1)}
	br := bufio.NewReaderSize(counted, 64<<10)
	// Like apimachinery's GuessJSONStream, without its StreamReader (which keeps every byte read
	// for a rewind this decoder never needs).
	head, _ := br.Peek(4096)
	if utilyaml.IsJSONBuffer(head) {
		err = d.jsonStream(&objectLimiter{r: br})
	} else {
		err = d.yamlStream(br)
	}
	if counted.n > snapshotLimit {
		// Whatever the decoder made of the input cut at the limit.
		return nil, nil, fmt.Errorf("snapshot: larger than %s, the most a snapshot may hold (%w; the largest cluster Kubernetes supports dumps to under 2 GB): is it the right file?", byteSize(snapshotLimit), ErrTooLarge)
	}
	if err != nil {
		return nil, nil, err
	}
	if d.objects == 0 {
		return nil, nil, fmt.Errorf("snapshot: %w: no object in it (did the command that wrote it fail?)", ErrEmptyInput)
	}
	return d.snap, d.skipped, nil
}

// decoder holds what DecodeSnapshot has read so far.
type decoder struct {
	t       *trimmer
	snap    *policies.Snapshot
	skipped map[string]int
	// objects counts the documents that are not null.
	objects int
	// pool decodes the items of lists (nil in its own workers' decoders).
	pool *itemPool
}

// listHead is what decoder.value reads of an object before deciding what it is.
type listHead struct {
	Kind  string          `json:"kind"`
	Items json.RawMessage `json:"items"`
}

// listItems returns the items of an object's "items" value: nil and false when there is none (not
// a list), the array's elements (none for null) when it is a list, an error when it is something
// else.
func listItems(items json.RawMessage) ([]json.RawMessage, bool, error) {
	if items == nil {
		return nil, false, nil
	}
	var out []json.RawMessage
	if err := json.Unmarshal(items, &out); err != nil {
		return nil, true, errors.New("items is not a list")
	}
	return out, true, nil
}

// itemKind is the kind of a list's items that have none: the list's kind without "List"
// ("" for a List, whose items must name their kind).
func itemKind(listKind string) string {
	if k, ok := strings.CutSuffix(listKind, "List"); ok {
		return k
	}
	return ""
}

// errNeedsKind is decoder.value's answer for an item without kind when the list's kind is not
// known yet (a JSON List may name its kind after its items).
var errNeedsKind = errors.New("needs the list's kind")

// value decodes one JSON object at where: a list (its items, recursively) or a single object.
// defaultKind is the kind of an object that names none ("" when it must; with deferrable set,
// such an object gives errNeedsKind instead of an error).
func (d *decoder) value(raw []byte, defaultKind, where string, deferrable bool) error {
	if d.keptObject(raw) {
		return nil
	}
	var h listHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("snapshot: %s: %w", where, err)
	}
	kind := h.Kind
	if kind == "" {
		kind = defaultKind
	}
	if kind == "" {
		if deferrable {
			return errNeedsKind
		}
		return fmt.Errorf("snapshot: %s: no kind (is this kubectl -o yaml/json output?)", where)
	}
	items, list, err := listItems(h.Items)
	if err != nil {
		return fmt.Errorf("snapshot: %s: %w", where, err)
	}
	if !list {
		return d.object(raw, kind, where)
	}
	for i, item := range items {
		if err := d.value(item, itemKind(kind), fmt.Sprintf("%s item %d", where, i+1), false); err != nil {
			return err
		}
	}
	return nil
}

// sniffKind returns the value of raw's "kind" key when it is among the object's first keys (as
// kubectl prints objects: apiVersion, kind, metadata...); ok is false when it is not found there
// or raw does not start as an object. It reads only those keys (encoding/json's token stream),
// not the whole object.
func sniffKind(raw []byte) (kind string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	for range 3 {
		if !dec.More() {
			return "", false
		}
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if tok == "kind" {
			err := dec.Decode(&kind)
			return kind, err == nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// listField catches an "items" key in keptObject's one-pass decode.
type listField struct {
	Items json.RawMessage `json:"items"`
}

// keptObject decodes raw in one pass when it is an object of a kind the snapshot keeps, names its
// kind among its first keys (sniffKind) and is not a list, and keeps its trimmed copy. It returns
// false, having kept nothing, for anything else (another kind, no kind, a list, an object that
// does not decode, a kind given twice): value's general path (a header, then the object: two
// more passes) decides those and reports their errors. The typed object is decoded with an
// "items" key beside it and its TypeMeta.Kind compared with the sniffed kind, so both paths read
// the same object the same way.
func (d *decoder) keptObject(raw []byte) bool {
	kind, ok := sniffKind(raw)
	if !ok {
		return false
	}
	var lf listField
	_, withItems, meta, keep := d.newKept(kind, &lf)
	if keep == nil {
		return false
	}
	if err := json.Unmarshal(raw, withItems); err != nil || lf.Items != nil || meta.Kind != kind {
		return false
	}
	keep()
	return true
}

// newKept returns, for a kind the snapshot keeps, a new object of it (obj), the same object with
// lf beside it (withItems: keptObject decodes an "items" key into lf), the object's TypeMeta, and
// keep, which appends the object's trimmed copy to d's snapshot. keep is nil for other kinds.
func (d *decoder) newKept(kind string, lf *listField) (obj, withItems any, meta *metav1.TypeMeta, keep func()) {
	switch kind {
	case "Node":
		o := &corev1.Node{}
		keep = func() { d.snap.Nodes = append(d.snap.Nodes, d.t.node(o)) }
		return o, &struct {
			*corev1.Node
			*listField
		}{o, lf}, &o.TypeMeta, keep
	case "Pod":
		o := &corev1.Pod{}
		keep = func() { d.snap.Pods = append(d.snap.Pods, d.t.pod(o)) }
		return o, &struct {
			*corev1.Pod
			*listField
		}{o, lf}, &o.TypeMeta, keep
	case "StatefulSet":
		o := &appsv1.StatefulSet{}
		keep = func() { d.snap.StatefulSets = append(d.snap.StatefulSets, d.t.statefulSet(o)) }
		return o, &struct {
			*appsv1.StatefulSet
			*listField
		}{o, lf}, &o.TypeMeta, keep
	case "PodDisruptionBudget":
		o := &policyv1.PodDisruptionBudget{}
		keep = func() { d.snap.PodDisruptionBudgets = append(d.snap.PodDisruptionBudgets, d.t.podDisruptionBudget(o)) }
		return o, &struct {
			*policyv1.PodDisruptionBudget
			*listField
		}{o, lf}, &o.TypeMeta, keep
	case "PersistentVolumeClaim":
		o := &corev1.PersistentVolumeClaim{}
		keep = func() {
			d.snap.PersistentVolumeClaims = append(d.snap.PersistentVolumeClaims, d.t.persistentVolumeClaim(o))
		}
		return o, &struct {
			*corev1.PersistentVolumeClaim
			*listField
		}{o, lf}, &o.TypeMeta, keep
	case "PersistentVolume":
		o := &corev1.PersistentVolume{}
		keep = func() { d.snap.PersistentVolumes = append(d.snap.PersistentVolumes, d.t.persistentVolume(o)) }
		return o, &struct {
			*corev1.PersistentVolume
			*listField
		}{o, lf}, &o.TypeMeta, keep
	case "CSINode":
		o := &storagev1.CSINode{}
		keep = func() { d.snap.CSINodes = append(d.snap.CSINodes, d.t.csiNode(o)) }
		return o, &struct {
			*storagev1.CSINode
			*listField
		}{o, lf}, &o.TypeMeta, keep
	case "Service":
		o := &corev1.Service{}
		keep = func() { d.snap.Services = append(d.snap.Services, d.t.service(o)) }
		return o, &struct {
			*corev1.Service
			*listField
		}{o, lf}, &o.TypeMeta, keep
	}
	return nil, nil, nil, nil
}

// object decodes a single object of kind and keeps its trimmed copy (or counts it skipped).
func (d *decoder) object(raw []byte, kind, where string) error {
	obj, _, _, keep := d.newKept(kind, nil)
	if keep == nil {
		d.skipped[kind]++
		return nil
	}
	if err := json.Unmarshal(raw, obj); err != nil {
		return fmt.Errorf("snapshot: %s (%s): %w", where, kind, err)
	}
	keep()
	return nil
}

// document decodes one whole document (JSON), skipping null ones.
func (d *decoder) document(raw []byte, where string) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	d.objects++
	return d.value(raw, "", where, false)
}

// pendingItems are a list's items that name no kind, read before the list's kind (JSON).
type pendingItems struct {
	raw   [][]byte
	where []string
}

// finish decodes the kept items with the list's kind, now known.
func (p *pendingItems) finish(d *decoder, listKind string) error {
	for i, item := range p.raw {
		if err := d.value(item, itemKind(listKind), p.where[i], false); err != nil {
			return err
		}
	}
	*p = pendingItems{}
	return nil
}

// itemPool decodes and trims list items on several goroutines, each with its own trimmer, and
// hands the results to its decoder in the order the items were read. At most a few items per
// worker are in flight, so memory does not grow with the list.
type itemPool struct {
	d        *decoder
	jobs     chan *itemJob
	inFlight []*itemJob // in reading order
	limit    int
	wg       sync.WaitGroup
	// pending are the items that wait for their list's kind.
	pending pendingItems
}

// itemJob is one list item to decode.
type itemJob struct {
	// text is the item, YAML when isYAML, else JSON; listKind the list's kind when known.
	text            []byte
	isYAML          bool
	listKind, where string
	line            int
	done            chan struct{}
	// What the worker found: the trimmed objects and skipped kinds, or the item's JSON when it
	// needs the list's kind, or an error.
	part     *decoder
	needKind bool
	err      error
}

func newItemPool(d *decoder, workers int) *itemPool {
	p := &itemPool{d: d, jobs: make(chan *itemJob, 2*workers), limit: 8 * workers}
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := newTrimmer()
			for j := range p.jobs {
				j.run(t)
				close(j.done)
			}
		}()
	}
	return p
}

// run decodes the item with trimmer t.
func (j *itemJob) run(t *trimmer) {
	j.part = &decoder{t: t, snap: &policies.Snapshot{}, skipped: map[string]int{}}
	raw := j.text
	if j.isYAML {
		var err error
		if raw, err = yaml.YAMLToJSON(j.text); err != nil {
			j.err = fmt.Errorf("snapshot: %s (line %d): %w", j.where, j.line, err)
			return
		}
	}
	err := j.part.value(raw, itemKind(j.listKind), j.where, j.listKind == "")
	if errors.Is(err, errNeedsKind) {
		j.needKind, j.text = true, raw
		return
	}
	j.err = err
}

// add queues an item; it returns the first error of the items read before it that is known.
func (p *itemPool) add(j *itemJob) error {
	j.done = make(chan struct{})
	p.inFlight = append(p.inFlight, j)
	p.jobs <- j
	if len(p.inFlight) > p.limit {
		return p.mergeOldest()
	}
	return nil
}

// mergeOldest waits for the oldest item in flight and keeps what it found.
func (p *itemPool) mergeOldest() error {
	j := p.inFlight[0]
	p.inFlight[0] = nil
	p.inFlight = p.inFlight[1:]
	<-j.done
	if j.err != nil {
		return j.err
	}
	if j.needKind {
		p.pending.raw, p.pending.where = append(p.pending.raw, j.text), append(p.pending.where, j.where)
		return nil
	}
	p.d.merge(j.part)
	return nil
}

// drain merges every item in flight.
func (p *itemPool) drain() error {
	for len(p.inFlight) > 0 {
		if err := p.mergeOldest(); err != nil {
			return err
		}
	}
	return nil
}

// close stops the workers (after the items in flight).
func (p *itemPool) close() {
	close(p.jobs)
	p.wg.Wait()
}

// merge appends what part decoded.
func (d *decoder) merge(part *decoder) {
	s := part.snap
	d.snap.Nodes = append(d.snap.Nodes, s.Nodes...)
	d.snap.Pods = append(d.snap.Pods, s.Pods...)
	d.snap.StatefulSets = append(d.snap.StatefulSets, s.StatefulSets...)
	d.snap.PodDisruptionBudgets = append(d.snap.PodDisruptionBudgets, s.PodDisruptionBudgets...)
	d.snap.PersistentVolumeClaims = append(d.snap.PersistentVolumeClaims, s.PersistentVolumeClaims...)
	d.snap.PersistentVolumes = append(d.snap.PersistentVolumes, s.PersistentVolumes...)
	d.snap.CSINodes = append(d.snap.CSINodes, s.CSINodes...)
	d.snap.Services = append(d.snap.Services, s.Services...)
	for k, n := range part.skipped {
		d.skipped[k] += n
	}
}

// byteSize writes n bytes in GiB, or MiB when that is not a whole number of GiB.
func byteSize(n int64) string {
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// objectLimiter is what jsonStream's decoder reads from: it fails (ErrTooLarge) once the
// decoder has read more than MaxObjectBytes past the start of the object it decodes (mark, set
// from the decoder's InputOffset before each document and each List item), so that one huge
// object is not held whole.
type objectLimiter struct {
	r          io.Reader
	read, mark int64
}

func (l *objectLimiter) Read(p []byte) (int, error) {
	if l.read-l.mark > MaxObjectBytes {
		return 0, fmt.Errorf("an object larger than %d MiB (%w): no object the API server stores is (is this a snapshot?)", MaxObjectBytes>>20, ErrTooLarge)
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}

// markAt starts counting an object at the decoder's offset.
func (l *objectLimiter) markAt(dec *json.Decoder) { l.mark = dec.InputOffset() }

// jsonStream decodes a stream of JSON values; the items of a top-level list one at a time.
func (d *decoder) jsonStream(r *objectLimiter) error {
	dec := json.NewDecoder(r)
	for doc := 1; ; doc++ {
		where := fmt.Sprintf("document %d", doc)
		r.markAt(dec)
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("snapshot: %s: %w", where, err)
		}
		if tok == nil {
			continue // null
		}
		if delim, ok := tok.(json.Delim); !ok || delim != '{' {
			return fmt.Errorf("snapshot: %s: want a JSON object, found %v", where, tok)
		}
		d.objects++
		if err := d.jsonObject(dec, r, where); err != nil {
			return err
		}
	}
}

// jsonObject decodes the rest of a top-level object whose "{" dec has read; each item of a list
// is counted against MaxObjectBytes from its start (lim).
func (d *decoder) jsonObject(dec *json.Decoder, lim *objectLimiter, where string) error {
	// fields is the object without its items, its keys in reading order (the last of a key given
	// twice wins, as for encoding/json).
	fields := bytes.NewBufferString("{")
	listKind := ""
	list := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("snapshot: %s: %w", where, err)
		}
		key, _ := tok.(string)
		if key == "items" && !list {
			list = true
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("snapshot: %s: items: %w", where, err)
			}
			if tok == nil {
				continue // null: no items
			}
			if delim, ok := tok.(json.Delim); !ok || delim != '[' {
				return fmt.Errorf("snapshot: %s: items is not a list", where)
			}
			for i := 1; dec.More(); i++ {
				var item json.RawMessage
				lim.markAt(dec)
				if err := dec.Decode(&item); err != nil {
					return fmt.Errorf("snapshot: %s item %d: %w", where, i, err)
				}
				if err := d.pool.add(&itemJob{text: item, listKind: listKind, where: fmt.Sprintf("%s item %d", where, i)}); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // "]"
				return fmt.Errorf("snapshot: %s: %w", where, err)
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("snapshot: %s: %w", where, err)
		}
		if fields.Len() > 1 {
			fields.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		fields.Write(k)
		fields.WriteByte(':')
		fields.Write(raw)
		if key == "kind" {
			_ = json.Unmarshal(raw, &listKind)
		}
	}
	if _, err := dec.Token(); err != nil { // "}"
		return fmt.Errorf("snapshot: %s: %w", where, err)
	}
	if err := d.pool.drain(); err != nil {
		return err
	}
	if !list {
		fields.WriteByte('}')
		return d.value(fields.Bytes(), "", where, false)
	}
	if listKind == "" {
		return fmt.Errorf("snapshot: %s: no kind (is this kubectl -o yaml/json output?)", where)
	}
	return d.pool.pending.finish(d, listKind)
}

// yamlStream decodes a YAML stream; the items of a List document one at a time (yamlSplitter).
func (d *decoder) yamlStream(r *bufio.Reader) error {
	s := newYAMLSplitter(r)
	for {
		p, err := s.next()
		if errors.Is(err, io.EOF) {
			return d.pool.drain()
		}
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		where := fmt.Sprintf("document %d", p.doc)
		switch {
		case p.kind == pieceItem:
			where = fmt.Sprintf("%s item %d", where, p.item)
			if p.item == 1 {
				d.objects++
			}
			if err := d.pool.add(&itemJob{text: p.text, isYAML: true, where: where, line: p.line}); err != nil {
				return err
			}
		case p.item > 0:
			// The head of a List whose items were read one by one: its kind is the items'.
			if err := d.pool.drain(); err != nil {
				return err
			}
			raw, err := yaml.YAMLToJSON(p.text)
			if err != nil {
				return fmt.Errorf("snapshot: %s: %w", where, err)
			}
			var h listHead
			if err := json.Unmarshal(raw, &h); err != nil {
				return fmt.Errorf("snapshot: %s: %w", where, err)
			}
			if h.Items != nil {
				return fmt.Errorf("snapshot: %s: items given twice", where)
			}
			if h.Kind == "" {
				return fmt.Errorf("snapshot: %s: no kind (is this kubectl -o yaml/json output?)", where)
			}
			if err := d.pool.pending.finish(d, h.Kind); err != nil {
				return err
			}
		default:
			if err := d.pool.drain(); err != nil {
				return err
			}
			raw, err := yaml.YAMLToJSON(p.text)
			if err != nil {
				return fmt.Errorf("snapshot: %s: %w", where, err)
			}
			if err := d.document(raw, where); err != nil {
				return err
			}
		}
	}
}
