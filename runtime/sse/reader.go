package sse

import (
	"bytes"
	"io"
)

// Reader reads the items of an event stream from an io.Reader, per the WHATWG
// event-stream interpretation: LF, CR and CRLF line ends (a CRLF split across reads
// included), "data" fields joined with "\n", "event", "id" and "retry" fields, comment
// lines, a leading byte-order mark, a field without colon (the whole line is the name),
// and one space after the colon stripped.
//
// Next never calls the underlying Read while an item can be returned from what is
// already buffered, so keep-alives and events are delivered as soon as they arrive. Its
// memory is bounded: an item larger than the maximum event size is an
// *EventTooLargeError. It does not allocate per event once its buffers have grown, except
// that an event with several "data" lines is joined into a reused scratch buffer.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	src io.Reader
	max int
	// initial is the size of the first buffer.
	initial int

	// buf[r:w] is unconsumed input; every offset below is relative to r, the start of the
	// item being parsed, so that compaction does not move them.
	buf  []byte
	r, w int
	// err is the first error of src (io.EOF included); failed is the Reader's own
	// terminal error.
	err    error
	failed error

	// pos is where the next line to parse starts.
	pos int
	// runLines counts the comment and blank lines seen before any field of the block.
	runLines int
	// fields is set once the block has a field line.
	fields bool
	// bomChecked is set once the start of the stream was checked for a byte-order mark.
	bomChecked bool
	// skipLF: the previous line ended with a CR that was the last buffered byte; an LF
	// that follows belongs to it.
	skipLF bool

	typ, id     [2]int
	hasType     bool
	hasID       bool
	retry       int64
	dataLines   int
	data0       [2]int
	data        []byte
	unreadCount int
}

// DefaultBufferSize is the size of a Reader's first buffer when none is configured.
const DefaultBufferSize = 4096

// NewReader returns a Reader of src whose items are at most maxEventSize bytes
// (DefaultMaxEventSize when maxEventSize <= 0), with a first buffer of DefaultBufferSize.
func NewReader(src io.Reader, maxEventSize int) *Reader {
	return NewReaderSize(src, DefaultBufferSize, maxEventSize)
}

// NewReaderSize is NewReader with a first buffer of size bytes (DefaultBufferSize when
// smaller; at most the maximum event size and one byte). The buffer is what one read asks
// of src: a larger one takes a burst of events that arrived together in one read and sees
// it whole (Ready), where a small one cuts it into several reads and a partial event at the
// end of each.
func NewReaderSize(src io.Reader, size, maxEventSize int) *Reader {
	rd := &Reader{initial: max(size, DefaultBufferSize)}
	rd.max = maxEventSize
	if rd.max <= 0 {
		rd.max = DefaultMaxEventSize
	}
	rd.Reset(src)
	return rd
}

// Reset makes the Reader read a new stream from src, keeping its buffers and limit.
func (rd *Reader) Reset(src io.Reader) {
	*rd = Reader{src: src, max: rd.max, initial: rd.initial, buf: rd.buf[:cap(rd.buf)], data: rd.data[:0]}
	rd.resetBlock()
}

// BufferSize returns the size of the Reader's buffer: 0 before its first read, more than
// the first size when an event needed more. A pool of Readers can leave out grown ones.
func (rd *Reader) BufferSize() int { return cap(rd.buf) }

func (rd *Reader) resetBlock() {
	rd.pos, rd.runLines, rd.fields = 0, 0, false
	rd.hasType, rd.hasID, rd.retry, rd.dataLines = false, false, -1, 0
}

// Next returns the next item of the stream: an event, comment bytes, or the incomplete
// tail of a stream that ended inside a block. At the end of the stream it returns io.EOF
// (or the underlying reader's error), once every consumed byte has been returned in an
// item. The returned slices are valid until the next call to Next or Reset.
func (rd *Reader) Next() (Event, error) {
	if rd.failed != nil {
		return Event{}, rd.failed
	}
	for {
		if ev, ok := rd.parse(); ok {
			return ev, nil
		}
		if rd.err != nil {
			return rd.tail()
		}
		if rd.w-rd.r > rd.max {
			rd.failed = &EventTooLargeError{Limit: rd.max}
			return Event{}, rd.failed
		}
		rd.fill()
	}
}

// fill reads more input, growing the buffer up to the limit. It first moves the pending
// bytes to the front (the previous item's slices become invalid here, as documented):
// once per read, never per item, so that a burst of many events in one buffer is not
// copied again for every event taken from it.
func (rd *Reader) fill() {
	if rd.r > 0 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	if rd.w == len(rd.buf) {
		n := max(2*len(rd.buf), rd.initial)
		n = min(n, rd.max+1)
		if n <= len(rd.buf) {
			n = len(rd.buf) + 1
		}
		nb := make([]byte, n)
		rd.w = copy(nb, rd.buf[rd.r:rd.w])
		rd.buf, rd.r = nb, 0
	}
	n, err := rd.src.Read(rd.buf[rd.w:])
	if n < 0 || n > len(rd.buf)-rd.w {
		n, err = 0, io.ErrShortBuffer
	}
	rd.w += n
	switch {
	case err != nil:
		rd.err = err
	case n == 0:
		rd.unreadCount++
		if rd.unreadCount >= 100 {
			rd.err = io.ErrNoProgress
		}
	default:
		rd.unreadCount = 0
	}
}

// tail returns what is left when the input has ended: the incomplete block or comment
// bytes, then the input's error.
func (rd *Reader) tail() (Event, error) {
	n := rd.w - rd.r
	if n == 0 {
		rd.failed = rd.err
		return Event{}, rd.err
	}
	kind := KindComment
	if rd.fields || rd.pos < n {
		kind = KindIncomplete
	}
	ev := rd.event(kind, n)
	rd.r = rd.w
	rd.resetBlock()
	return ev, nil
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// parse consumes complete lines of the pending item and returns the item when one is
// complete.
func (rd *Reader) parse() (Event, bool) {
	p := rd.buf[rd.r:rd.w]
	if !rd.bomChecked {
		if len(p) < len(bom) && bytes.HasPrefix(bom, p) && rd.err == nil {
			return Event{}, false
		}
		rd.bomChecked = true
		if bytes.HasPrefix(p, bom) {
			rd.pos = len(bom)
		}
	}
	for {
		if rd.skipLF && rd.pos < len(p) {
			rd.skipLF = false
			if p[rd.pos] == '\n' {
				rd.pos++
			}
		}
		start := rd.pos
		end, next, ok := lineEnd(p, start)
		if !ok {
			if !rd.fields && rd.runLines > 0 {
				return rd.emit(KindComment, start), true
			}
			return Event{}, false
		}
		if next == len(p) && next-end == 1 && p[end] == '\r' {
			// A CR that is the last buffered byte may be the first half of a CRLF.
			rd.skipLF = true
		}
		line := p[start:end]
		switch {
		case len(line) == 0:
			rd.pos = next
			if rd.fields {
				return rd.emit(KindEvent, next), true
			}
			rd.runLines++
		case line[0] == ':':
			rd.pos = next
			if !rd.fields {
				rd.runLines++
			}
		default:
			if !rd.fields && rd.runLines > 0 {
				// A field after comments: the comments are their own item.
				return rd.emit(KindComment, start), true
			}
			rd.fields = true
			rd.pos = next
			rd.field(p, start, end)
		}
	}
}

// lineEnd finds the end of the line starting at start: end is where its terminator
// starts, next where the following line starts. ok is false when the line is not complete.
func lineEnd(p []byte, start int) (end, next int, ok bool) {
	rest := p[start:]
	lf := bytes.IndexByte(rest, '\n')
	scan := rest
	if lf >= 0 {
		scan = rest[:lf]
	}
	if cr := bytes.IndexByte(scan, '\r'); cr >= 0 {
		if cr+1 < len(rest) && rest[cr+1] == '\n' {
			return start + cr, start + cr + 2, true
		}
		return start + cr, start + cr + 1, true
	}
	if lf >= 0 {
		return start + lf, start + lf + 1, true
	}
	return 0, 0, false
}

// field interprets the field line p[start:end].
func (rd *Reader) field(p []byte, start, end int) {
	line := p[start:end]
	name, vstart := line, end
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, vstart = line[:i], start+i+1
		if vstart < end && p[vstart] == ' ' {
			vstart++
		}
	}
	value := p[vstart:end]
	switch string(name) {
	case "event":
		rd.typ, rd.hasType = [2]int{vstart, end}, true
	case "data":
		rd.dataLines++
		switch rd.dataLines {
		case 1:
			rd.data0 = [2]int{vstart, end}
		case 2:
			rd.data = append(rd.data[:0], p[rd.data0[0]:rd.data0[1]]...)
			fallthrough
		default:
			rd.data = append(rd.data, '\n')
			rd.data = append(rd.data, value...)
		}
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			rd.id, rd.hasID = [2]int{vstart, end}, true
		}
	case "retry":
		if n, ok := parseRetry(value); ok {
			rd.retry = n
		}
	}
}

// parseRetry parses a retry value: ASCII digits only.
func parseRetry(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// emit returns the item made of the first n pending bytes and starts the next block.
func (rd *Reader) emit(kind Kind, n int) Event {
	ev := rd.event(kind, n)
	rd.r += n
	rd.resetBlock()
	return ev
}

func (rd *Reader) event(kind Kind, n int) Event {
	p := rd.buf[rd.r : rd.r+n]
	ev := Event{Kind: kind, Raw: p, Retry: -1}
	if kind == KindComment {
		return ev
	}
	ev.Retry = rd.retry
	if rd.hasType {
		ev.Type = p[rd.typ[0]:rd.typ[1]]
	}
	if rd.hasID {
		ev.ID, ev.HasID = p[rd.id[0]:rd.id[1]], true
	}
	switch rd.dataLines {
	case 0:
	case 1:
		ev.Data, ev.HasData = p[rd.data0[0]:rd.data0[1]], true
	default:
		ev.Data, ev.HasData = rd.data, true
	}
	return ev
}

var lfLF = []byte("\n\n")

// SourceEnded reports whether the source has returned its end (io.EOF or an error): what
// is buffered is all there is, and nothing is left to wait for.
func (rd *Reader) SourceEnded() bool { return rd.err != nil }

// Ready reports whether the input already buffered holds a blank line after the current
// position, that is the end of another event, so that Next will return it without reading
// from the source. A writer forwarding events can leave its flush to the last event of a
// burst: what it holds back is never waiting on the network.
func (rd *Reader) Ready() bool {
	eol := false
	b := rd.buf[rd.r:rd.w]
	if rd.skipLF && len(b) > 0 && b[0] == '\n' {
		b = b[1:] // the end of a CR line end already counted
	}
	if bytes.Contains(b, lfLF) {
		return true // two line ends in a row, as most streams end their events
	}
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			fallthrough
		case '\n':
			if eol {
				return true
			}
			eol = true
		default:
			eol = false
		}
	}
	return false
}
