package sse

import (
	"bytes"
	"io"
	"strconv"
)

// AppendEvent appends the wire form of ev's fields to dst: an "event" line when Type is
// set, an "id" line when HasID, a "retry" line when Retry >= 0, one "data" line per line of
// Data (split at LF, CR and CRLF, which the format cannot carry inside a value: a reader
// sees them as LF) when HasData or Data is not empty, and the terminating blank line. Lines
// end with LF. Raw and Kind are ignored. It returns ErrInvalidField, and dst unchanged,
// when Type or ID cannot be written.
func AppendEvent(dst []byte, ev *Event) ([]byte, error) {
	if bytes.ContainsAny(ev.Type, "\r\n") || (ev.HasID && bytes.ContainsAny(ev.ID, "\r\n\x00")) {
		return dst, ErrInvalidField
	}
	if len(ev.Type) > 0 {
		dst = append(dst, "event: "...)
		dst = append(dst, ev.Type...)
		dst = append(dst, '\n')
	}
	if ev.HasID {
		dst = append(dst, "id: "...)
		dst = append(dst, ev.ID...)
		dst = append(dst, '\n')
	}
	if ev.Retry >= 0 {
		dst = append(dst, "retry: "...)
		dst = strconv.AppendInt(dst, ev.Retry, 10)
		dst = append(dst, '\n')
	}
	if ev.HasData || len(ev.Data) > 0 {
		dst = AppendData(dst, ev.Data)
	}
	return append(dst, '\n'), nil
}

// AppendData appends data as "data:" lines, one per line of data (split at LF, CR and
// CRLF), without the terminating blank line. A value is written after "data: " so that a
// leading space of the value survives the reader's stripping of one space.
func AppendData(dst, data []byte) []byte {
	for {
		end, next, ok := lineEnd(data, 0)
		if !ok {
			end, next = len(data), len(data)
		}
		dst = append(dst, "data: "...)
		dst = append(dst, data[:end]...)
		dst = append(dst, '\n')
		if !ok {
			return dst
		}
		data = data[next:]
	}
}

// AppendJSONEvent appends an event with an optional type and a single-line JSON data
// payload (JSON produced by encoding/json never contains a raw line break) and the blank
// line. It is the shape every provider event has.
func AppendJSONEvent(dst []byte, typ string, data []byte) []byte {
	if typ != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, typ...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// flusher is implemented by http.ResponseWriter implementations that can flush.
type flusher interface{ Flush() }

// errorFlusher is implemented by writers whose flush can fail (http.ResponseController
// targets, for example).
type errorFlusher interface{ FlushError() error }

// Writer writes events to an underlying writer and flushes after each event when the
// writer can flush (an http.ResponseWriter that implements http.Flusher). It is not safe
// for concurrent use.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p without flushing, so that several events can be sent with one flush.
func (w *Writer) Write(p []byte) (int, error) { return w.w.Write(p) }

// WriteRaw writes p, typically the exact bytes of events read by a Reader or built by
// AppendEvent, and flushes.
func (w *Writer) WriteRaw(p []byte) error {
	if len(p) > 0 {
		if _, err := w.w.Write(p); err != nil {
			return err
		}
	}
	return w.Flush()
}

// WriteEvent writes ev's fields (see AppendEvent) and flushes.
func (w *Writer) WriteEvent(ev *Event) error {
	b, err := AppendEvent(w.buf[:0], ev)
	if err != nil {
		return err
	}
	w.buf = b
	return w.WriteRaw(b)
}

// WriteComment writes a comment line (for keep-alives) and a blank line, and flushes. Line
// breaks in text are replaced by spaces.
func (w *Writer) WriteComment(text string) error {
	b := append(w.buf[:0], ':')
	if text != "" {
		b = append(b, ' ')
		for i := 0; i < len(text); i++ {
			c := text[i]
			if c == '\r' || c == '\n' {
				c = ' '
			}
			b = append(b, c)
		}
	}
	b = append(b, '\n', '\n')
	w.buf = b
	return w.WriteRaw(b)
}

// Flush flushes the underlying writer when it can flush.
func (w *Writer) Flush() error {
	switch f := w.w.(type) {
	case errorFlusher:
		return f.FlushError()
	case flusher:
		f.Flush()
	}
	return nil
}
