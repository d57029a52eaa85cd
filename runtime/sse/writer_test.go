package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAppendEvent(t *testing.T) {
	cases := []struct {
		name string
		ev   Event
		want string
	}{
		{
			name: "a typed event with JSON data is two lines and a blank line",
			ev:   Event{Type: []byte("ping"), Data: []byte(`{"type":"ping"}`), Retry: -1},
			want: "event: ping\ndata: {\"type\":\"ping\"}\n\n",
		},
		{
			name: "multi-line data is split at every kind of line break",
			ev:   Event{Data: []byte("a\nb\r\nc\rd"), Retry: -1},
			want: "data: a\ndata: b\ndata: c\ndata: d\n\n",
		},
		{
			name: "id and retry are written before the data",
			ev:   Event{ID: []byte("7"), HasID: true, Retry: 3000, Data: []byte("x")},
			want: "id: 7\nretry: 3000\ndata: x\n\n",
		},
		{
			name: "an empty data field is kept when HasData is set",
			ev:   Event{HasData: true, Retry: -1},
			want: "data: \n\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendEvent(nil, &tc.ev)
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
	t.Run("a type with a line break is refused", func(t *testing.T) {
		if _, err := AppendEvent(nil, &Event{Type: []byte("a\nb"), Retry: -1}); !errors.Is(err, ErrInvalidField) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestWriterFlushesEachEvent(t *testing.T) {
	t.Run("each event is flushed to an http.ResponseWriter", func(t *testing.T) {
		rec := httptest.NewRecorder()
		w := NewWriter(rec)
		if err := w.WriteEvent(&Event{Type: []byte("a"), Data: []byte("1"), Retry: -1}); err != nil {
			t.Fatal(err)
		}
		if !rec.Flushed {
			t.Fatal("not flushed after WriteEvent")
		}
		rec.Flushed = false
		if err := w.WriteRaw([]byte("data: [DONE]\n\n")); err != nil || !rec.Flushed {
			t.Fatalf("not flushed after WriteRaw: %v", err)
		}
		rec.Flushed = false
		if err := w.WriteComment("keep\nalive"); err != nil || !rec.Flushed {
			t.Fatalf("not flushed after WriteComment: %v", err)
		}
		want := "event: a\ndata: 1\n\ndata: [DONE]\n\n: keep alive\n\n"
		if rec.Body.String() != want {
			t.Fatalf("body %q, want %q", rec.Body.String(), want)
		}
	})
	t.Run("a writer error is returned", func(t *testing.T) {
		w := NewWriter(failWriter{})
		if err := w.WriteRaw([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("got %v", err)
		}
	})
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestRoundTrip(t *testing.T) {
	t.Run("what the writer writes the reader reads back", func(t *testing.T) {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		in := []Event{
			{Type: []byte("content_block_delta"), Data: []byte(`{"x":1}`), Retry: -1},
			{Data: []byte("line one\nline two"), ID: []byte("9"), HasID: true, Retry: -1},
			{Data: []byte(" leading space"), Retry: 10},
		}
		for i := range in {
			if err := w.WriteEvent(&in[i]); err != nil {
				t.Fatal(err)
			}
		}
		got, err := readAll(t, NewReader(&buf, 0))
		if !errors.Is(err, io.EOF) || len(got) != len(in) {
			t.Fatalf("got %+v %v", got, err)
		}
		for i := range in {
			if got[i].Type != string(in[i].Type) || got[i].Data != string(in[i].Data) ||
				got[i].ID != string(in[i].ID) || got[i].Retry != in[i].Retry {
				t.Fatalf("event %d: got %+v, want %+v", i, got[i], in[i])
			}
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: a\n\n"), uint8(1), "t", "d")
	f.Add([]byte("event: x\r\ndata: 1\r\ndata: 2\r\n\r\n: c\n\n"), uint8(2), "", "a\nb")
	f.Add([]byte("\xEF\xBB\xBF: keep\r\rid: 1\nretry: 5\ndata\n\n"), uint8(3), "ping", "")
	f.Add([]byte("data: x\r"), uint8(7), "a", "\r\n")
	f.Fuzz(func(t *testing.T, input []byte, split uint8, typ, data string) {
		sizes := []int{int(split%13) + 1, int(split/13) + 1}
		r := NewReader(&chunked{data: input, sizes: sizes}, 256)
		var raw []byte
		for {
			ev, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				if errors.Is(err, io.EOF) && !bytes.Equal(raw, input) {
					t.Fatalf("raw bytes %q, want %q", raw, input)
				}
				if !bytes.HasPrefix(input, raw) {
					t.Fatalf("raw bytes %q are not a prefix of the input", raw)
				}
				break
			}
			if len(ev.Raw) == 0 {
				t.Fatal("empty item")
			}
			if len(ev.Raw) > 256+3 {
				t.Fatalf("item of %d bytes over the limit", len(ev.Raw))
			}
			raw = append(raw, ev.Raw...)
		}

		// Round trip: an event written by the writer is read back with its fields, data
		// line breaks normalised to LF.
		e := Event{Type: []byte(typ), Data: []byte(data), HasData: true, Retry: -1}
		b, err := AppendEvent(nil, &e)
		if err != nil {
			if !strings.ContainsAny(typ, "\r\n") {
				t.Fatalf("AppendEvent: %v", err)
			}
			return
		}
		got, err := readAll(t, NewReader(&chunked{data: b, sizes: sizes}, 0))
		if !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		var events []item
		for _, it := range got {
			if it.Kind != KindComment {
				events = append(events, it)
			}
		}
		wantData := strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\r", "\n")
		if len(events) != 1 || events[0].Kind != KindEvent || events[0].Type != typ || events[0].Data != wantData || !events[0].HasData {
			t.Fatalf("round trip of %q %q: got %+v", typ, data, got)
		}
	})
}
