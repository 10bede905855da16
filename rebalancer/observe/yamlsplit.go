package observe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// yamlSplitter cuts a YAML stream into what DecodeSnapshot decodes one at a time, reading it line
// by line: documents (separated by "---" lines, as apimachinery's YAMLReader splits them), and the
// items of a List document one by one, so that a `kubectl get -o yaml` dump of any size never
// becomes one YAML tree.
//
// No YAML library in the module graph parses a stream piece by piece: go.yaml.in/yaml and
// sigs.k8s.io/yaml parse a whole document into a tree before decoding it, and apimachinery's
// YAMLReader only splits documents (a kubectl dump is one document). So the splitter reads
// just enough of the layout that Go's YAML encoders (kubectl's sigs.k8s.io/yaml, yq's yaml.v3)
// print a List in: a top-level mapping whose "items:" key holds a block sequence, each entry
// starting with "- " at the sequence's indentation and continued on more indented lines. Each
// item is handed to sigs.k8s.io/yaml as a document of its own, with the "-" replaced by a space
// (a block mapping may start at any indentation). A document in any other layout (a single
// object, a List in flow style, a top-level sequence) is returned whole, as before.
// FuzzDecodeSnapshot checks the pieces against decoding each document whole.
type yamlSplitter struct {
	r *bufio.Reader
	// line is the number of lines read; doc the number of the current document (1-based).
	line, doc int
	// pending is a line read but not used yet (nil when none); eof is set once r is exhausted.
	pending []byte
	eof     bool
	// state is what the splitter is in the middle of.
	state splitState
	// indent is the column of the "-" of the current List's items; content the column of the
	// current item's content (-1 until known).
	indent, contentIndent int
	// head collects the current document's lines outside the items (all of them when it is not
	// a List in block style).
	head bytes.Buffer
	// items counts the items returned from the current document; content is set when the
	// document had a line that is neither blank nor a comment.
	items   int
	content bool
	// inList is set once the current document's "items:" key was read.
	inList bool
}

type splitState int

const (
	// inHead: reading top-level lines of a document.
	inHead splitState = iota
	// inItems: reading the block sequence of "items:".
	inItems
)

// pieceKind says what a piece of the stream is.
type pieceKind int

const (
	// pieceDocument is a whole document (not a List in block style, or a List's lines other than
	// its items: its apiVersion, kind and metadata, when items > 0).
	pieceDocument pieceKind = iota
	// pieceItem is one item of a List document.
	pieceItem
)

// piece is one unit of the stream.
type piece struct {
	kind pieceKind
	// text is the YAML of the piece (owned by the caller).
	text []byte
	// doc is the document's number, item the item's number (pieceItem) or the number of items
	// returned before (pieceDocument), line the number of the piece's first line; all 1-based.
	doc, item, line int
	// content is false for a document of only blank lines, comments and separators.
	content bool
}

func newYAMLSplitter(r *bufio.Reader) *yamlSplitter {
	return &yamlSplitter{r: r, doc: 1}
}

// readLine returns the next line with its newline, or io.EOF.
func (s *yamlSplitter) readLine() ([]byte, error) {
	if s.pending != nil {
		l := s.pending
		s.pending = nil
		return l, nil
	}
	if s.eof {
		return nil, io.EOF
	}
	l, err := s.readBounded()
	if errors.Is(err, io.EOF) {
		s.eof = true
		if len(l) == 0 {
			return nil, io.EOF
		}
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("document %d, line %d: %w", s.doc, s.line+1, err)
	}
	s.line++
	if err := checkBreaks(l); err != nil {
		return nil, fmt.Errorf("document %d, line %d: %w", s.doc, s.line, err)
	}
	return l, nil
}

// readBounded reads up to and including the next "\n", as bufio.Reader.ReadBytes does, but
// refuses a line longer than MaxObjectBytes (ErrTooLarge) instead of holding it whole.
func (s *yamlSplitter) readBounded() ([]byte, error) {
	var line []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		if len(line)+len(frag) > MaxObjectBytes {
			return nil, fmt.Errorf("a line longer than %d MiB (%w): no object the API server stores has one (is this a snapshot?)", MaxObjectBytes>>20, ErrTooLarge)
		}
		line = append(line, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// tooLarge is the error for a piece (what: a List's item, or a document's lines outside its
// items) over MaxObjectBytes, found at the current line.
func (s *yamlSplitter) tooLarge(what string) error {
	return fmt.Errorf("document %d, %s, at line %d: larger than %d MiB (%w): no object the API server stores is (is this a snapshot? a List is read item by item in kubectl's block layout only)", s.doc, what, s.line, MaxObjectBytes>>20, ErrTooLarge)
}

// Line breaks YAML knows besides "\n" and "\r\n": a lone "\r", and (YAML 1.1, which
// go.yaml.in/yaml/v2 reads) NEL, LS and PS. Encoders print them escaped inside double quotes.
var (
	nel = []byte("\u0085")
	ls  = []byte("\u2028")
	ps  = []byte("\u2029")
)

// checkBreaks refuses a line holding a line break the splitter would not see as one.
func checkBreaks(l []byte) error {
	if i := bytes.IndexByte(l, '\r'); i >= 0 && i != len(l)-2 {
		return errors.New("carriage return without a line feed")
	}
	if bytes.Contains(l, nel) || bytes.Contains(l, ls) || bytes.Contains(l, ps) {
		return errors.New("unescaped Unicode line break (NEL, LS or PS)")
	}
	return nil
}

// unread makes l the next line readLine returns.
func (s *yamlSplitter) unread(l []byte) { s.pending = l }

// next returns the next piece, or io.EOF after the last one.
func (s *yamlSplitter) next() (piece, error) {
	var item bytes.Buffer
	itemLine := 0
	for {
		l, err := s.readLine()
		if errors.Is(err, io.EOF) {
			if item.Len() > 0 {
				return s.item(&item, itemLine), nil
			}
			if s.head.Len() > 0 || s.items > 0 || s.content {
				return s.endDocument(), nil
			}
			return piece{}, io.EOF
		}
		if err != nil {
			return piece{}, err // readLine names the document and line
		}
		if sep, err := isSeparator(l); err != nil {
			return piece{}, fmt.Errorf("document %d, line %d: %w", s.doc, s.line, err)
		} else if sep {
			if item.Len() > 0 {
				s.unread(l)
				return s.item(&item, itemLine), nil
			}
			if s.head.Len() > 0 || s.items > 0 || s.content {
				s.unread(l)
				return s.endDocument(), nil
			}
			s.head.Reset()
			continue
		}
		blank := isBlankOrComment(l)
		if !blank {
			s.content = true
		}
		switch s.state {
		case inHead:
			if !s.inList && isItemsKey(l) && s.topLevelMapping() {
				s.state, s.indent, s.inList = inItems, -1, true
				continue
			}
			s.head.Write(l)
			if s.head.Len() > MaxObjectBytes {
				return piece{}, s.tooLarge("its lines outside a List's items")
			}
		case inItems:
			if blank {
				if item.Len() > 0 {
					item.Write(l)
					if item.Len() > MaxObjectBytes {
						return piece{}, s.tooLarge(fmt.Sprintf("item %d (from line %d)", s.items+1, itemLine))
					}
				}
				continue
			}
			ind := indentOf(l)
			if s.indent < 0 {
				if !isEntry(l, ind) {
					// "items:" with nothing under it (null), or a layout this splitter does not
					// read: the line belongs to the head again.
					s.head.WriteString("items:\n")
					s.state = inHead
					s.unread(l)
					continue
				}
				s.indent = ind
			}
			switch {
			case ind == s.indent && isEntry(l, ind):
				if item.Len() > 0 {
					s.unread(l)
					return s.item(&item, itemLine), nil
				}
				itemLine = s.line
				item.Write(l[:ind])
				item.WriteByte(' ')
				item.Write(l[ind+1:])
				s.contentIndent = -1
				if after := l[ind+1:]; !isBlankOrComment(after) {
					s.contentIndent = ind + 1 + indentOf(after)
				}
			case ind > s.indent:
				if s.contentIndent < 0 {
					s.contentIndent = ind
				}
				if ind < s.contentIndent {
					// In the List this line would end the item's mapping inside its sequence
					// entry: invalid, whatever it means on its own.
					return piece{}, fmt.Errorf("document %d, line %d: bad indentation of a sequence entry", s.doc, s.line)
				}
				item.Write(l)
				if item.Len() > MaxObjectBytes {
					return piece{}, s.tooLarge(fmt.Sprintf("item %d (from line %d)", s.items+1, itemLine))
				}
			default:
				// A less indented line ends the sequence: it is the head's again, and must be
				// the next top-level key.
				if ind > 0 {
					return piece{}, fmt.Errorf("document %d, line %d: bad indentation after the items", s.doc, s.line)
				}
				s.state = inHead
				s.unread(l)
				if item.Len() > 0 {
					return s.item(&item, itemLine), nil
				}
			}
		}
	}
}

// item returns the item collected in buf.
func (s *yamlSplitter) item(buf *bytes.Buffer, line int) piece {
	s.items++
	return piece{kind: pieceItem, text: bytes.Clone(buf.Bytes()), doc: s.doc, item: s.items, line: line, content: true}
}

// endDocument returns the current document's head and starts the next document.
func (s *yamlSplitter) endDocument() piece {
	if s.state == inItems && s.items == 0 {
		s.head.WriteString("items:\n") // with nothing under it: null
	}
	p := piece{kind: pieceDocument, text: bytes.Clone(s.head.Bytes()), doc: s.doc, item: s.items, content: s.content}
	s.head.Reset()
	s.doc++
	s.items, s.content, s.state, s.inList = 0, false, inHead, false
	return p
}

// topLevelMapping reports whether the head so far is a block mapping at column 0 (its first
// line that is not blank or a comment starts with a key), as a List printed by kubectl is.
func (s *yamlSplitter) topLevelMapping() bool {
	rest := s.head.Bytes()
	for len(rest) > 0 {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if isBlankOrComment(l) || bytes.HasPrefix(l, []byte("%")) {
			continue
		}
		return isKeyLine(l)
	}
	return true
}

// isSeparator reports whether l is a document separator as apimachinery's YAMLReader reads one:
// a line starting with "---", followed by nothing but white space and a comment (anything else
// after it is an error).
func isSeparator(l []byte) (bool, error) {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false, nil
	}
	if rest := bytes.TrimSpace(l[3:]); len(rest) > 0 && rest[0] != '#' {
		return false, fmt.Errorf("invalid YAML document separator: %s", rest)
	}
	return true, nil
}

// isItemsKey reports whether l is the line "items:" at column 0 with nothing after the colon but
// white space or a comment: the key of a List's items in block style.
func isItemsKey(l []byte) bool {
	rest, ok := bytes.CutPrefix(l, []byte("items:"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || (rest[0] == '#' && len(l) > len("items:") && (l[6] == ' ' || l[6] == '\t'))
}

// isKeyLine reports whether l starts a block mapping entry at column 0: a plain key followed by
// ":" and white space or the line's end.
func isKeyLine(l []byte) bool {
	if len(l) == 0 {
		return false
	}
	switch l[0] {
	case ' ', '\t', '-', '#', '[', '{', '"', '\'', '?', '!', '&', '*', '|', '>', '%', '@', '`':
		return false
	}
	i := bytes.Index(l, []byte(":"))
	for i >= 0 {
		if i+1 == len(l) || l[i+1] == ' ' || l[i+1] == '\t' || l[i+1] == '\n' || l[i+1] == '\r' {
			return true
		}
		j := bytes.Index(l[i+1:], []byte(":"))
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// isEntry reports whether l has a block sequence entry indicator at column ind: "-" followed by
// white space or the line's end.
func isEntry(l []byte, ind int) bool {
	if ind >= len(l) || l[ind] != '-' {
		return false
	}
	return ind+1 == len(l) || l[ind+1] == ' ' || l[ind+1] == '\t' || l[ind+1] == '\n' || l[ind+1] == '\r'
}

// indentOf returns the number of leading spaces of l.
func indentOf(l []byte) int {
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n
}

// isBlankOrComment reports whether l holds only white space, or white space and a comment.
func isBlankOrComment(l []byte) bool {
	t := bytes.TrimLeft(l, " \t\r\n")
	return len(t) == 0 || t[0] == '#'
}
