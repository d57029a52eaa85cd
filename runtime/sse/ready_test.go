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
