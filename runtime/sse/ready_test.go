package sse

import (
	"strings"
	"testing"
)

func TestReady(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  bool // after the first Next
	}{
		{"a second complete event is ready", "data: a\n\ndata: b\n\n", true},
		{"a second event with CRLF line ends is ready", "data: a\r\n\r\ndata: b\r\n\r\n", true},
		{"a second event with CR line ends is ready", "data: a\r\rdata: b\r\r", true},
		{"half of a second event is not ready", "data: a\n\ndata: b\n", false},
		{"nothing after the first event is not ready", "data: a\n\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := NewReader(strings.NewReader(tt.input), 0)
			if _, err := rd.Next(); err != nil {
				t.Fatal(err)
			}
			if got := rd.Ready(); got != tt.want {
				t.Errorf("Ready() = %v, want %v", got, tt.want)
			}
		})
	}
}

// countingReader counts the reads made of it.
type countingReader struct {
	r     *strings.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// A burst of events that arrived together is read in one read and stays Ready to its last
// event with a buffer that holds it; the default buffer cuts it, and is not Ready at each
// cut. The guard flushes to its client whenever the reader is not Ready.
func TestReaderSizeTakesABurstWhole(t *testing.T) {
	event := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("word ", 50) + "\"}}]}\n\n"
	burst := strings.Repeat(event, 40) // about 11 KiB
	for _, tc := range []struct {
		name         string
		rd           func(src *countingReader) *Reader
		oneRead      bool // else at least three: 11 KiB in 4 KiB reads
		notReadyOnce bool
	}{
		{"32 KiB buffer", func(src *countingReader) *Reader { return NewReaderSize(src, 32<<10, 0) }, true, false},
		{"default buffer", func(src *countingReader) *Reader { return NewReader(src, 0) }, false, true},
		{"a size under the default is the default", func(src *countingReader) *Reader { return NewReaderSize(src, 10, 0) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingReader{r: strings.NewReader(burst)}
			rd := tc.rd(src)
			notReady := false
			for i := range 40 {
				ev, err := rd.Next()
				if err != nil || string(ev.Raw) != event {
					t.Fatalf("event %d: %q, %v", i, ev.Raw, err)
				}
				if i < 39 && !rd.Ready() {
					notReady = true
				}
			}
			if tc.oneRead != (src.reads == 1) || !tc.oneRead && src.reads < 3 || notReady != tc.notReadyOnce {
				t.Errorf("%d reads, not Ready inside the burst: %v; want one read: %v, not Ready: %v", src.reads, notReady, tc.oneRead, tc.notReadyOnce)
			}
			if _, err := rd.Next(); err == nil {
				t.Error("no end after the burst")
			}
		})
	}
}
