package policysource

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// documents splits a YAML stream into documents as apimachinery's yaml.NewYAMLReader over
// a bufio.Reader did when the guard used it, so that every file splits into the same
// documents, numbered the same in errors (documents_test.go compares the two on a corpus):
//
//   - a document ends at a line starting with "---" that holds nothing else but spaces
//     and a comment ("--- x" is an error: invalid Yaml document separator);
//   - a separator line at the start of a document (the first line of the file, or one
//     right after another separator) stays in that document;
//   - lines end in "\n" ("\r\n" becomes "\n"); a last line without "\n" is read as if
//     it had one. (apimachinery's reader silently dropped such a line when bufio read it
//     in whole 4096-byte pieces; a policy file loses nothing here.)
type documents struct {
	rest []byte
}

// line returns the next line with its "\n", and whether the stream has ended (the line
// then is "\n").
func (d *documents) line() ([]byte, bool) {
	if len(d.rest) == 0 {
		return []byte("\n"), true
	}
	i := bytes.IndexByte(d.rest, '\n')
	if i < 0 {
		l := d.rest
		d.rest = nil
		return append(l[:len(l):len(l)], '\n'), false
	}
	l := d.rest[:i]
	d.rest = d.rest[i+1:]
	l = bytes.TrimSuffix(l, []byte("\r"))
	return append(l[:len(l):len(l)], '\n'), false
}

// next returns the next document, or io.EOF.
func (d *documents) next() ([]byte, error) {
	var doc []byte
	for {
		line, end := d.line()
		if rest, ok := bytes.CutPrefix(line, []byte("---")); ok {
			trimmed := strings.TrimSpace(string(rest))
			if trimmed != "" && trimmed[0] != '#' {
				return nil, fmt.Errorf("invalid Yaml document separator: %s", trimmed)
			}
			if len(doc) != 0 {
				return doc, nil
			}
			if end {
				return nil, io.EOF
			}
		}
		if end {
			if len(doc) != 0 {
				return doc, nil
			}
			return nil, io.EOF
		}
		doc = append(doc, line...)
	}
}
