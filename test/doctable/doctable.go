// Package doctable reads a Markdown table that a documentation page marks for tests, so that a
// test can check the page against the code (hack/gendocs) or drive itself from it (e2e): the
// table between the lines `<!-- NAME:begin -->` and `<!-- NAME:end -->`.
//
// It imports the standard library only.
package doctable

import (
	"fmt"
	"os"
	"strings"
)

// Row is one row of a table: each cell by its column's header, trimmed, with the backquotes
// around a whole cell removed ("`error`" is "error").
type Row map[string]string

// Read returns the rows of the table marked NAME in the Markdown file at path. It fails when the
// markers are missing, when no table lies between them, or when a row has another number of
// cells than the header.
func Read(path, name string) ([]Row, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	s := string(data)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return nil, fmt.Errorf("%s: no %s … %s", path, begin, end)
	}
	var lines []string
	for _, l := range strings.Split(s[i+len(begin):j], "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "|") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("%s: no table between %s and %s", path, begin, end)
	}
	header := cells(lines[0])
	var rows []Row
	for n, l := range lines[2:] {
		cs := cells(l)
		if len(cs) != len(header) {
			return nil, fmt.Errorf("%s: table %s, row %d: %d cells, the header has %d", path, name, n+1, len(cs), len(header))
		}
		r := Row{}
		for k, h := range header {
			r[h] = cs[k]
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// cells splits a table line into its trimmed cells, a cell wholly in backquotes without them.
func cells(line string) []string {
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if len(p) > 1 && strings.Count(p, "`") == 2 && strings.HasPrefix(p, "`") && strings.HasSuffix(p, "`") {
			p = p[1 : len(p)-1]
		}
		parts[i] = p
	}
	return parts
}
