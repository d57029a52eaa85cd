package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// item is a comparable summary of an Event, copied out of the Reader's buffers.
type item struct {
	Kind    Kind
	Type    string
	Data    string
	HasData bool
	ID      string
	HasID   bool
	Retry   int64
	Raw     string
}

func summarize(ev Event) item {
	return item{Kind: ev.Kind, Type: string(ev.Type), Data: string(ev.Data), HasData: ev.HasData,
		ID: string(ev.ID), HasID: ev.HasID, Retry: ev.Retry, Raw: string(ev.Raw)}
}

// readAll reads every item of r and the final error.
func readAll(t testing.TB, r *Reader) ([]item, error) {
	t.Helper()
	var items []item
	for {
		ev, err := r.Next()
		if err != nil {
			return items, err
		}
		items = append(items, summarize(ev))
		if len(items) > 1<<16 {
			t.Fatal("reader does not terminate")
		}
	}
}

// chunked returns a reader that returns the input in reads of the given sizes (cycling).
type chunked struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.sizes) > 0 {
		n = max(c.sizes[c.i%len(c.sizes)], 1)
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func ev(typ, data string) item {
	return item{Kind: KindEvent, Type: typ, Data: data, HasData: true, Retry: -1}
}

func withRaw(it item, raw string) item { it.Raw = raw; return it }

func comment(raw string) item { return item{Kind: KindComment, Retry: -1, Raw: raw} }

func TestReader(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []item
	}{
		{
			name:  "a single data event is returned with its exact bytes",
			input: "data: hello\n\n",
			want:  []item{withRaw(ev("", "hello"), "data: hello\n\n")},
		},
		{
			name:  "an event type and data are both read",
			input: "event: message_start\ndata: {\"a\":1}\n\n",
			want:  []item{withRaw(ev("message_start", `{"a":1}`), "event: message_start\ndata: {\"a\":1}\n\n")},
		},
		{
			name:  "multi-line data is joined with line feeds",
			input: "data: one\ndata: two\ndata:three\n\n",
			want:  []item{withRaw(ev("", "one\ntwo\nthree"), "data: one\ndata: two\ndata:three\n\n")},
		},
		{
			name:  "CRLF line ends are accepted",
			input: "event: ping\r\ndata: x\r\n\r\n",
			want:  []item{withRaw(ev("ping", "x"), "event: ping\r\ndata: x\r\n\r\n")},
		},
		{
			name:  "CR line ends are accepted",
			input: "data: a\rdata: b\r\r",
			want:  []item{withRaw(ev("", "a\nb"), "data: a\rdata: b\r\r")},
		},
		{
			name:  "only one space after the colon is stripped",
			input: "data:  two spaces\n\n",
			want:  []item{withRaw(ev("", " two spaces"), "data:  two spaces\n\n")},
		},
		{
			name:  "a field without colon has an empty value",
			input: "data\n\n",
			want:  []item{withRaw(ev("", ""), "data\n\n")},
		},
		{
			name:  "a keep-alive comment is its own item including its blank line",
			input: ": keep-alive\n\ndata: x\n\n",
			want:  []item{comment(": keep-alive\n\n"), withRaw(ev("", "x"), "data: x\n\n")},
		},
		{
			name:  "a comment directly before a field is returned before the event",
			input: ": hi\ndata: x\n\n",
			want:  []item{comment(": hi\n"), withRaw(ev("", "x"), "data: x\n\n")},
		},
		{
			name:  "a comment inside an event is part of the event",
			input: "data: a\n: note\ndata: b\n\n",
			want:  []item{withRaw(ev("", "a\nb"), "data: a\n: note\ndata: b\n\n")},
		},
		{
			name:  "a leading byte-order mark is skipped and kept in the raw bytes",
			input: "\xEF\xBB\xBFdata: x\n\n",
			want:  []item{withRaw(ev("", "x"), "\xEF\xBB\xBFdata: x\n\n")},
		},
		{
			name:  "a byte-order mark after the start is part of the field name",
			input: "data: a\n\n\xEF\xBB\xBFdata: b\n\n",
			want: []item{withRaw(ev("", "a"), "data: a\n\n"),
				{Kind: KindEvent, Retry: -1, Raw: "\xEF\xBB\xBFdata: b\n\n"}},
		},
		{
			name:  "id and retry fields are read",
			input: "id: 42\nretry: 1500\ndata: x\n\n",
			want: []item{{Kind: KindEvent, Data: "x", HasData: true, ID: "42", HasID: true, Retry: 1500,
				Raw: "id: 42\nretry: 1500\ndata: x\n\n"}},
		},
		{
			name:  "an id with NUL and a retry that is not digits are ignored",
			input: "id: a\x00b\nretry: 10s\ndata: x\n\n",
			want:  []item{withRaw(ev("", "x"), "id: a\x00b\nretry: 10s\ndata: x\n\n")},
		},
		{
			name:  "a block without data is returned as an event that does not dispatch",
			input: "event: ping\n\n",
			want:  []item{{Kind: KindEvent, Type: "ping", Retry: -1, Raw: "event: ping\n\n"}},
		},
		{
			name:  "stray blank lines are comment bytes",
			input: "\n\ndata: x\n\n\n",
			want:  []item{comment("\n\n"), withRaw(ev("", "x"), "data: x\n\n"), comment("\n")},
		},
		{
			name:  "a stream cut inside an event ends with an incomplete item",
			input: "data: x\n\ndata: y",
			want: []item{withRaw(ev("", "x"), "data: x\n\n"),
				{Kind: KindIncomplete, Retry: -1, Raw: "data: y"}},
		},
		{
			name:  "a stream cut after a field line keeps its fields in the incomplete item",
			input: "event: a\ndata: y\n",
			want:  []item{{Kind: KindIncomplete, Type: "a", Data: "y", HasData: true, Retry: -1, Raw: "event: a\ndata: y\n"}},
		},
		{
			name:  "an OpenAI chat stream ends with the DONE sentinel",
			input: "data: {\"id\":\"c1\"}\n\ndata: [DONE]\n\n",
			want:  []item{withRaw(ev("", `{"id":"c1"}`), "data: {\"id\":\"c1\"}\n\n"), withRaw(ev("", "[DONE]"), "data: [DONE]\n\n")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, bufSize := range []int{DefaultBufferSize, 32 << 10} {
				for _, sizes := range [][]int{nil, {1}, {2, 3}, {7}, {1 << 20}} {
					got, err := readAll(t, NewReaderSize(&chunked{data: []byte(tc.input), sizes: sizes}, bufSize, 0))
					if !errors.Is(err, io.EOF) {
						t.Fatalf("buffer %d, reads %v: error %v, want EOF", bufSize, sizes, err)
					}
					if !equalItems(got, tc.want, sizes) {
						t.Fatalf("buffer %d, reads %v:\n got %+v\nwant %+v", bufSize, sizes, got, tc.want)
					}
				}
			}
		})
	}
}

// equalItems compares items. With split reads, comments may be split at read boundaries
// and the LF of a CRLF may start the next item, so only the events' fields and the
// concatenated raw bytes are compared.
func equalItems(got, want []item, sizes []int) bool {
	if sizes == nil || sizes[0] >= 1<<20 {
		return slices.Equal(got, want)
	}
	return summaryOf(got) == summaryOf(want)
}

func summaryOf(items []item) string {
	var fields, raw strings.Builder
	for _, it := range items {
		raw.WriteString(it.Raw)
		if it.Kind != KindComment {
			it.Raw = ""
			fmt.Fprintf(&fields, "%+v\n", it)
		}
	}
	return fields.String() + "\x00" + raw.String()
}

func TestReaderSplitCRLF(t *testing.T) {
	t.Run("a CRLF split across reads after a dispatching blank line is not a second blank line", func(t *testing.T) {
		input := "data: a\r\n\r\ndata: b\r\n\r\n"
		// Split right between the CR and LF of the first event's blank line.
		r := NewReader(iotest.OneByteReader(strings.NewReader(input)), 0)
		got, err := readAll(t, r)
		if !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		var raw strings.Builder
		var events []string
		for _, it := range got {
			raw.WriteString(it.Raw)
			if it.Kind == KindEvent {
				events = append(events, it.Data)
			}
		}
		if raw.String() != input {
			t.Fatalf("raw bytes %q, want %q", raw.String(), input)
		}
		if strings.Join(events, ",") != "a,b" {
			t.Fatalf("events %q, want a,b", events)
		}
	})
}

func TestReaderDeliversWithoutWaiting(t *testing.T) {
	t.Run("an event is returned before the next read when it is complete", func(t *testing.T) {
		pr, pw := io.Pipe()
		r := NewReader(pr, 0)
		go func() { _, _ = pw.Write([]byte(": ping\n\ndata: x\n\n")) }()
		for _, want := range []Kind{KindComment, KindEvent} {
			ev, err := r.Next()
			if err != nil || ev.Kind != want {
				t.Fatalf("got %v %v, want %v", ev.Kind, err, want)
			}
		}
		_ = pw.Close()
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("got %v, want EOF", err)
		}
	})
}

func TestReaderLimit(t *testing.T) {
	t.Run("an event larger than the limit is a typed error", func(t *testing.T) {
		input := "data: " + strings.Repeat("x", 100) + "\n\n"
		_, err := readAll(t, NewReader(strings.NewReader(input), 64))
		var tooLarge *EventTooLargeError
		if !errors.As(err, &tooLarge) || !errors.Is(err, ErrEventTooLarge) || tooLarge.Limit != 64 {
			t.Fatalf("got %v, want EventTooLargeError{64}", err)
		}
	})
	t.Run("an endless line is refused without buffering it", func(t *testing.T) {
		r := NewReader(io.MultiReader(strings.NewReader("data: "), endless{}), 1024)
		_, err := r.Next()
		if !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("got %v", err)
		}
		if cap(r.buf) > 1025 {
			t.Fatalf("buffer grew to %d bytes", cap(r.buf))
		}
	})
	t.Run("a first buffer larger than the limit is cut to it", func(t *testing.T) {
		r := NewReaderSize(io.MultiReader(strings.NewReader("data: "), endless{}), 32<<10, 1024)
		if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("got %v", err)
		}
		if cap(r.buf) > 1025 {
			t.Fatalf("buffer grew to %d bytes", cap(r.buf))
		}
	})
	t.Run("events up to the limit are read", func(t *testing.T) {
		input := "data: " + strings.Repeat("x", 56) + "\n\n"
		got, err := readAll(t, NewReader(strings.NewReader(input), len(input)))
		if !errors.Is(err, io.EOF) || len(got) != 1 {
			t.Fatalf("got %v %v", got, err)
		}
	})
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestReaderErrors(t *testing.T) {
	t.Run("a read error is returned after the pending bytes", func(t *testing.T) {
		boom := errors.New("boom")
		r := NewReader(io.MultiReader(strings.NewReader("data: x\n\ndata: y"), iotest.ErrReader(boom)), 0)
		got, err := readAll(t, r)
		if !errors.Is(err, boom) || len(got) != 2 || got[1].Kind != KindIncomplete {
			t.Fatalf("got %+v %v", got, err)
		}
	})
	t.Run("a reader that makes no progress is an error", func(t *testing.T) {
		_, err := readAll(t, NewReader(zeroReader{}, 0))
		if !errors.Is(err, io.ErrNoProgress) {
			t.Fatalf("got %v", err)
		}
	})
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderReset(t *testing.T) {
	t.Run("a reset reader reads a new stream with the same limit", func(t *testing.T) {
		r := NewReader(strings.NewReader("data: a\n\n"), 32)
		if _, err := readAll(t, r); !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		r.Reset(strings.NewReader("\xEF\xBB\xBFdata: b\n\n"))
		got, err := readAll(t, r)
		if !errors.Is(err, io.EOF) || len(got) != 1 || got[0].Data != "b" || r.max != 32 {
			t.Fatalf("got %+v %v", got, err)
		}
	})
}

func BenchmarkReader(b *testing.B) {
	var in bytes.Buffer
	chunk := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}` + "\n\n"
	for range 200 {
		in.WriteString(chunk)
	}
	in.WriteString(": keep-alive\n\ndata: [DONE]\n\n")
	data := in.Bytes()
	// The sizes: the default, and the guard's (a burst of ~100 events per read).
	for _, size := range []int{DefaultBufferSize, 32 << 10} {
		b.Run(fmt.Sprintf("buffer=%d", size), func(b *testing.B) {
			src := bytes.NewReader(data)
			r := NewReaderSize(src, size, 0)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				src.Reset(data)
				r.Reset(src)
				for {
					if _, err := r.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}

func TestSourceEnded(t *testing.T) {
	t.Run("a source that returns its end with its last bytes has ended at the last event", func(t *testing.T) {
		r := NewReader(iotest.DataErrReader(strings.NewReader("data: a\n\ndata: [DONE]\n\n")), 0)
		for _, want := range []string{"a", "[DONE]"} {
			ev, err := r.Next()
			if err != nil || string(ev.Data) != want {
				t.Fatalf("got %+v %v, want %q", ev, err, want)
			}
		}
		if !r.SourceEnded() {
			t.Error("SourceEnded is false after the source returned io.EOF")
		}
	})
	t.Run("a source that has not returned its end has not ended", func(t *testing.T) {
		r := NewReader(strings.NewReader("data: a\n\n"), 0)
		if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
			t.Fatalf("got %+v %v", ev, err)
		}
		if r.SourceEnded() {
			t.Error("SourceEnded is true before the source returned io.EOF")
		}
		if _, err := r.Next(); !errors.Is(err, io.EOF) || !r.SourceEnded() {
			t.Errorf("after the end: %v, SourceEnded %v", err, r.SourceEnded())
		}
	})
}
