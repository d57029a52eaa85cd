package mcp

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// stream relays an event stream of the MCP server: the answer to a POST (j is the POST's
// judge) or the GET stream (j is nil: each message gets its own judge, so that its
// decisions are counted as it passes, not when the stream ends). Headers go out at once;
// each event is judged whole before it is written, so nothing unjudged reaches the client
// (an MCP message is never split across events). local are the guard's own answers to
// calls it stopped, sent first.
//
// When the server's stream ends, cleanly or not, before it answered every request the
// POST forwarded, the client gets a JSON-RPC error for each at once, rather than wait for
// an answer that will not come.
func (x *exchange) stream(resp *http.Response, j Judge, local []json.RawMessage) {
	copyHeaders(x.w.Header(), resp.Header)
	x.w.WriteHeader(http.StatusOK)
	sw := sse.NewWriter(x.w)
	var buf []byte
	for _, m := range local {
		buf, _ = sse.AppendEvent(buf[:0], &sse.Event{Type: []byte("message"), Data: m, HasData: true, Retry: -1})
		x.arm()
		if _, err := sw.Write(buf); err != nil {
			x.outcome = "client_gone"
			return
		}
	}
	x.arm()
	if err := sw.Flush(); err != nil {
		x.outcome = "client_gone"
		return
	}
	rd := sse.NewReader(resp.Body, x.h.cfg.MaxMessageBytes)
	for {
		ev, err := rd.Next()
		if err != nil {
			x.streamEnded(sw, err)
			return
		}
		if ev.Kind == sse.KindIncomplete {
			continue // a tail the server never finished is not dispatched by a client either
		}
		if ev.Kind != sse.KindEvent || !ev.HasData {
			x.arm()
			if err := sw.WriteRaw(ev.Raw); err != nil {
				x.outcome = "client_gone"
				return
			}
			continue
		}
		out, changed, err := x.judgeEvent(j, ev.Data)
		if err != nil {
			if x.r.Context().Err() == nil {
				x.unreadable(err)
				x.abortPending(sw, "the guardrail sidecar could not read a message of the MCP server "+x.server)
			}
			return
		}
		raw := ev.Raw
		if changed {
			ev.Data = out
			if buf, err = sse.AppendEvent(buf[:0], &ev); err != nil {
				x.unreadable(err)
				x.abortPending(sw, "the guardrail sidecar could not forward a message of the MCP server "+x.server)
				return
			}
			raw = buf
		}
		x.arm()
		if err := sw.WriteRaw(raw); err != nil {
			x.outcome = "client_gone"
			return
		}
	}
}

// judgeEvent judges one event's data with the POST's judge, or with a judge of its own
// on the GET stream.
func (x *exchange) judgeEvent(j Judge, data []byte) (json.RawMessage, bool, error) {
	start := time.Now()
	if j == nil {
		var ok bool
		if j, ok = x.h.cfg.Judges.Begin(x.r, x.server); !ok {
			return nil, false, errors.New("no policy in force")
		}
		defer j.Done()
	}
	out, changed, err := x.judgeData(j, data)
	x.judged(start)
	return out, changed, err
}

// streamEnded ends the relay when the server's stream ends.
func (x *exchange) streamEnded(sw *sse.Writer, err error) {
	switch {
	case x.r.Context().Err() != nil:
		x.outcome = "client_gone"
	case errors.Is(err, io.EOF) && len(x.pending) == 0:
	case errors.Is(err, sse.ErrEventTooLarge):
		x.outcome = "failed"
		x.h.cfg.Log.Error("MCP message not judged: larger than the guard judges", "server", x.server)
		x.abortPending(sw, "a message of the MCP server "+x.server+" is larger than the guardrail sidecar judges")
	default:
		x.outcome = "upstream_error"
		x.h.cfg.Log.Warn("MCP server's stream ended before its answer", "server", x.server, "error", err.Error())
		x.abortPending(sw, "the MCP server "+x.server+" ended its stream before answering")
	}
}

// abortPending answers every request still waiting with an upstream error, as events.
func (x *exchange) abortPending(sw *sse.Writer, msg string) {
	var buf []byte
	for _, id := range x.pending {
		buf, _ = sse.AppendEvent(buf, &sse.Event{Type: []byte("message"), Data: errorResponse(id, codeUpstream, msg, dataUpstreamUnreachable, ""), HasData: true, Retry: -1})
	}
	clear(x.pending)
	if len(buf) > 0 {
		x.arm()
		_ = sw.WriteRaw(buf)
	}
}
