package policysource

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// documents splits a YAML stream into documents exactly as apimachinery's
// yaml.NewYAMLReader over a bufio.Reader did when the guard used it, so that every file
// splits into the same documents, numbered the same in errors (documents_test.go compares
// the two on a corpus):
//
//   - a document ends at a line starting with "---" that holds nothing else but spaces
//     and a comment ("--- x" is an error: invalid Yaml document separator);
//   - a separator line at the start of a document (the first line of the file, or one
//     right after another separator) stays in that document;
//   - lines end in "\n" ("\r\n" becomes "\n");
//   - a last line without "\n" ends the stream too, except one whose length bufio read
//     in whole 4096-byte pieces (the size of its default buffer): apimachinery drops that
//     line, and so does this.
type documents struct {
	rest []byte
}

// bufSize is the size of bufio's default buffer, the piece size of a long line.
const bufSize = 4096

// line returns the next line with its "\n", and whether the stream ended with it (the
// line then is "\n", or the last line when apimachinery's reader saw the end with it).
func (d *documents) line() ([]byte, bool) {
	if len(d.rest) == 0 {
		return []byte("\n"), true
	}
	i := bytes.IndexByte(d.rest, '\n')
	if i < 0 {
		l := d.rest
		d.rest = nil
		return append(l[:len(l):len(l)], '\n'), readToEnd(l)
	}
	l := d.rest[:i]
	d.rest = d.rest[i+1:]
	l = bytes.TrimSuffix(l, []byte("\r"))
	return append(l[:len(l):len(l)], '\n'), false
}

// readToEnd reports whether bufio.Reader.ReadLine reads the last line l (one without
// "\n") in full buffers only, each but the last moving a trailing '\r' to the next piece,
// and so meets the end of the stream with an empty read after it.
func readToEnd(l []byte) bool {
	for len(l) >= bufSize {
		n := bufSize
		if l[bufSize-1] == '\r' {
			n-- // ReadLine keeps a '\r' that may start "\r\n" for the next piece
		}
		l = l[n:]
		if len(l) == 0 {
			return true
		}
	}
	return false
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
