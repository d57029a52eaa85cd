package wire

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// parseEvents reads a stream into events whose slices are copies.
func parseEvents(t testing.TB, s string) []sse.Event {
	t.Helper()
	r := sse.NewReader(strings.NewReader(s), 0)
	var evs []sse.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("reading stream: %v", err)
		}
		ev.Raw, ev.Data, ev.Type = bytes.Clone(ev.Raw), bytes.Clone(ev.Data), bytes.Clone(ev.Type)
		evs = append(evs, ev)
	}
}

// lines joins SSE events given as "event-type|data" or "data" strings.
func lines(evs ...string) string {
	var b strings.Builder
	for _, e := range evs {
		if typ, data, ok := strings.Cut(e, "|"); ok {
			b.WriteString("event: " + typ + "\n")
			e = data
		}
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

// simEngine stands in for the engine: it holds back the last holdBack bytes of each
// text channel (all of it when holdBack < 0), releases the rest at the channel's end
// after applying transform to the whole channel, withholds tool calls until the final
// finish, and can stop on the n-th item.
type simEngine struct {
	holdBack  int
	transform func(string) string
	text      map[content.Channel]string
	order     []content.Channel
	released  map[content.Channel]int
	calls     []content.Channel
	callText  map[content.Channel]string
	finished  bool
}

func newSim(holdBack int) *simEngine {
	return &simEngine{holdBack: holdBack, text: map[content.Channel]string{}, released: map[content.Channel]int{}, callText: map[content.Channel]string{}}
}

func (e *simEngine) feed(it Item) []Release {
	var rel []Release
	switch it.Kind {
	case ItemDelta:
		if it.Channel.Kind == content.ToolCall {
			e.callText[it.Channel] += it.Text
			return nil
		}
		if _, ok := e.text[it.Channel]; !ok {
			e.order = append(e.order, it.Channel)
		}
		e.text[it.Channel] += it.Text
		if e.holdBack >= 0 && e.transform == nil {
			if n := len(e.text[it.Channel]) - e.holdBack; n > e.released[it.Channel] {
				rel = append(rel, e.release(it.Channel, n))
			}
		}
	case ItemToolCallStart:
		e.calls = append(e.calls, it.Channel)
	case ItemChannelEnd:
		if it.Channel.Kind != content.ToolCall {
			rel = append(rel, e.end(it.Channel)...)
		}
	case ItemFinish, ItemTerminator:
		if (it.Kind == ItemFinish && !it.Final) || e.finished {
			return nil
		}
		e.finished = true
		for _, ch := range e.order {
			rel = append(rel, e.end(ch)...)
		}
		for _, ch := range e.calls {
			rel = append(rel, Release{Channel: ch, Text: []byte(e.callText[ch])})
		}
	}
	return rel
}

func (e *simEngine) release(ch content.Channel, n int) Release {
	r := Release{Channel: ch, Text: []byte(e.text[ch][e.released[ch]:n])}
	e.released[ch] = n
	return r
}

func (e *simEngine) end(ch content.Channel) []Release {
	if e.transform != nil && e.released[ch] == 0 && e.text[ch] != "" {
		e.released[ch] = len(e.text[ch])
		return []Release{{Channel: ch, Text: []byte(e.transform(e.text[ch]))}}
	}
	if n := len(e.text[ch]); n > e.released[ch] {
		return []Release{e.release(ch, n)}
	}
	return nil
}

// pump runs evs through a Stream and the simulated engine and returns what the client
// receives. stopAt (1-based event number, 0 for never) makes the stream stop there with
// stop.
func pump(t testing.TB, req *Request, evs []sse.Event, eng *simEngine, stopAt int, stop func(*Stream, []byte) []byte) []byte {
	t.Helper()
	st := NewStream(req)
	var out []byte
	var items []Item
	for i := range evs {
		ev := &evs[i]
		var err error
		items, err = st.Decode(items[:0], ev)
		if err != nil {
			t.Fatalf("decoding event %d %q: %v", i+1, ev.Raw, err)
		}
		if i+1 == stopAt {
			return stop(st, out)
		}
		var rel []Release
		for _, it := range items {
			rel = append(rel, eng.feed(it)...)
		}
		if out, err = st.Emit(out, ev, rel); err != nil {
			t.Fatalf("emitting event %d: %v", i+1, err)
		}
	}
	return out
}

// view is what a client reconstructs from a stream.
type view struct {
	text    map[content.Channel]string
	calls   map[content.Channel]string
	names   map[content.Channel]string
	finish  []string
	done    int
	errors  []string
	order   []content.Channel
	objects map[content.Channel]string
}

func (v view) textOf(kind content.Kind) string {
	var b strings.Builder
	for _, ch := range v.order {
		if ch.Kind == kind {
			b.WriteString(v.text[ch])
		}
	}
	return b.String()
}

// clientView decodes a stream as a client would and checks every event is well formed.
func clientView(t testing.TB, req *Request, out []byte) view {
	t.Helper()
	v := view{text: map[content.Channel]string{}, calls: map[content.Channel]string{}, names: map[content.Channel]string{}, objects: map[content.Channel]string{}}
	st := NewStream(req)
	for _, ev := range parseEvents(t, string(out)) {
		items, err := st.Decode(nil, &ev)
		if err != nil {
			t.Fatalf("client cannot decode %q: %v", ev.Raw, err)
		}
		for _, it := range items {
			switch it.Kind {
			case ItemDelta:
				if it.Channel.Kind == content.ToolCall {
					v.calls[it.Channel] += it.Text
					continue
				}
				if !slices.Contains(v.order, it.Channel) {
					v.order = append(v.order, it.Channel)
				}
				v.text[it.Channel] += it.Text
			case ItemToolCallStart:
				v.names[it.Channel] = it.Name
				v.calls[it.Channel] += ""
			case ItemFinish:
				v.finish = append(v.finish, it.Text)
			case ItemTerminator:
				v.done++
			case ItemError:
				v.errors = append(v.errors, string(ev.Data))
			}
		}
	}
	return v
}
