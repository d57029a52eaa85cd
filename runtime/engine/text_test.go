package engine

import (
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

var labels = []policy.Category{{ID: "email"}, {ID: "phone"}, {ID: "secret"}}

func span(start, end, cat int) classify.Span {
	return classify.Span{Start: start, End: end, Category: cat}
}

// redactWhole redacts spans of the whole text of t, as rendered now.
func redactWhole(t *textBuf, floor pos, spans ...classify.Span) {
	w := window{from: t.base, to: t.total}
	t.redact(&w, spans, labels, floor)
}

func TestRedaction(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		rounds [][]classify.Span
		want   string
	}{
		{name: "a span is replaced by a marker of its category",
			text: "mail a@b.c now", rounds: [][]classify.Span{{span(5, 10, 0)}}, want: "mail [REDACTED:email] now"},
		{name: "two disjoint spans get a marker each",
			text: "a@b.c and 555-1234", rounds: [][]classify.Span{{span(10, 18, 1), span(0, 5, 0)}}, want: "[REDACTED:email] and [REDACTED:phone]"},
		{name: "overlapping spans of one answer merge under the category of the span that starts first",
			text: "xx0123456789yy", rounds: [][]classify.Span{{span(4, 12, 1), span(2, 8, 2)}}, want: "xx[REDACTED:secret]yy"},
		{name: "overlapping spans starting together merge under the longer span's category",
			text: "xx0123456789yy", rounds: [][]classify.Span{{span(2, 8, 0), span(2, 12, 1)}}, want: "xx[REDACTED:phone]yy"},
		{name: "equal spans merge under the lower category index",
			text: "xx0123yy", rounds: [][]classify.Span{{span(2, 6, 2), span(2, 6, 1)}}, want: "xx[REDACTED:phone]yy"},
		{name: "a second guardrail's span over an earlier marker keeps the earlier label when the marker starts first",
			// The second answer sees "xx[REDACTED:email]456yy" and matches "ACTED:email]45".
			text: "xx0123456yy", rounds: [][]classify.Span{{span(2, 6, 0)}, {span(7, 20, 1)}}, want: "xx[REDACTED:email]6yy"},
		{name: "a second guardrail's span starting before an earlier marker takes the label",
			text: "xx0123456yy", rounds: [][]classify.Span{{span(4, 8, 0)}, {span(1, 5, 2)}}, want: "x[REDACTED:secret]6yy"},
		{name: "a second guardrail's longer span starting where an earlier marker starts takes the label",
			// The second answer sees "xx[REDACTED:email]456yy" and matches "[REDACTED:email]456".
			text: "xx0123456yy", rounds: [][]classify.Span{{span(2, 6, 0)}, {span(2, 21, 1)}}, want: "xx[REDACTED:phone]yy"},
		{name: "a second guardrail's span inside an earlier marker leaves it as it is",
			text: "xx0123yy", rounds: [][]classify.Span{{span(2, 6, 0)}, {span(3, 9, 1)}}, want: "xx[REDACTED:email]yy"},
		{name: "spans inside a multi-byte character widen to whole characters",
			text: "pré-€uro", rounds: [][]classify.Span{{span(3, 7, 0)}}, want: "pr[REDACTED:email]uro"},
		{name: "an empty span changes nothing",
			text: "abc", rounds: [][]classify.Span{{span(1, 1, 0)}}, want: "abc"},
		{name: "an empty span inside a multi-byte character changes nothing",
			text: "pré", rounds: [][]classify.Span{{span(3, 3, 0)}}, want: "pré"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf := newTextBuf(tc.text)
			for _, spans := range tc.rounds {
				redactWhole(buf, pos{}, spans...)
			}
			if got := buf.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRedactionNeverChangesReleasedText(t *testing.T) {
	buf := newTextBuf("0123456789")
	floor := buf.forward(pos{}, 5)
	redactWhole(buf, floor, span(3, 8, 0))
	if got, want := buf.String(), "01234[REDACTED:email]89"; got != want {
		t.Errorf("got %q, want %q: the released 3 and 4 cannot be redacted any more", got, want)
	}
	redactWhole(buf, floor, span(0, 2, 0))
	if got, want := buf.String(), "01234[REDACTED:email]89"; got != want {
		t.Errorf("a span wholly in released text changed it: %q", got)
	}
}

func TestStripAbsorbsOverlappingRedactions(t *testing.T) {
	buf := newTextBuf("0123456789")
	redactWhole(buf, pos{}, span(6, 8, 0))
	buf.strip(buf.forward(pos{}, 4), buf.total)
	if got, want := buf.String(), "0123"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	buf.append("abcd")
	// "0123abcd": a span over "23ab" crosses the stripped text.
	redactWhole(buf, pos{}, span(2, 6, 1))
	if got, want := buf.String(), "01cd"; got != want {
		t.Errorf("a redaction across stripped text: got %q, want %q (dropped with it)", got, want)
	}
}

func TestWindowMapsSpansThroughTruncationAndMarkers(t *testing.T) {
	buf := newTextBuf("aaaa0123bbbbSECRETcc")
	redactWhole(buf, pos{}, span(4, 8, 1)) // "aaaa[REDACTED:phone]bbbbSECRETcc"
	// A window starting at 2 and cut by 3 bytes: the sent text starts inside the marker.
	w := window{from: buf.forward(pos{}, 2), to: buf.total, cut: 3}
	sent := string(buf.render(nil, w.from.b, w.to.b))[w.cut:]
	start := len(sent) - len("SECRETcc")
	buf.redact(&w, []classify.Span{span(start, start+6, 2)}, labels, pos{})
	if got, want := buf.String(), "aaaa[REDACTED:phone]bbbb[REDACTED:secret]cc"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
