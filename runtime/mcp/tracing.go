package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
)

// tracedJudge is a Judge whose evaluations can be children of a span (EngineJudges').
type tracedJudge interface {
	setTrace(engine.Tracer)
}

// startSpan starts the POST's span (Config.Tracer) from what the guard read of its
// messages: the method, the called tool, the request id and the caller's trace context
// in params._meta, for a POST of one message; the count for a batch. Nothing when
// tracing is off or the POST is not sampled.
func (x *exchange) startSpan(msgs []*object) {
	if x.h.cfg.Tracer == nil {
		return
	}
	info := tracing.MCPInfo{Messages: len(msgs), Name: x.server, ProtocolVersion: x.r.Header.Get("Mcp-Protocol-Version")}
	info.Server, info.Port = tracing.HostPort(x.upstream)
	if len(msgs) == 1 {
		m := msgs[0]
		info.Method, _ = m.str("method")
		info.RequestID = requestID(m.get("id"))
		if params, ok := m.obj("params"); ok {
			if info.Method == "tools/call" {
				info.Tool, _ = params.str("name")
			}
			if meta, ok := params.obj("_meta"); ok {
				info.Traceparent, _ = meta.str("traceparent")
				info.Tracestate, _ = meta.str("tracestate")
			}
		}
	}
	x.span = x.h.cfg.Tracer.StartMCP(x.r.Context(), x.r.Header, info)
}

// requestID is a JSON-RPC id as jsonrpc.request.id records it: a string's value, a
// number's text, empty for none or null.
func requestID(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	switch {
	case len(id) == 0 || string(id) == "null":
		return ""
	case id[0] == '"':
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
		return ""
	}
	if _, err := strconv.ParseFloat(string(id), 64); err != nil {
		return ""
	}
	return string(id)
}
