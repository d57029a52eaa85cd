package proxy

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// response judges a non-streamed response (Output and ToolCalls phases) and writes it,
// unchanged, rewritten, replaced by the verdict, or refused as a failure.
func (x *exchange) response(resp *http.Response) {
	body, err := readAll(io.LimitReader(resp.Body, x.p.cfg.MaxResponseBytes+1), resp.ContentLength, x.p.cfg.MaxResponseBytes)
	if err != nil {
		if clientGone(x.r.Context(), err) {
			x.outcome("client_gone")
			return
		}
		// The connection to the provider broke mid-body: a transport failure, not a
		// judgement, answered as an unreachable provider (retried by the SDKs).
		x.p.cfg.Log.Warn("Upstream response cut short", "requestId", x.r.Header.Get("X-Request-Id"), "error", err.Error())
		x.outcome("upstream_error")
		writeError(x.w, x.f, upstreamUnreachable("the connection to the model provider broke before its response was complete"))
		return
	}
	start := time.Now()
	if int64(len(body)) > x.p.cfg.MaxResponseBytes {
		x.fail("the upstream response is larger than the guard judges", nil)
		return
	}
	if x.retrieved {
		// A stored answer repeats what of its request shapes it (the text format).
		if x.req, err = wire.StoredRequest(x.f, body); err != nil {
			x.fail("the stored response is malformed", err)
			return
		}
	}
	decoded, err := wire.DecodeResponse(x.f, &x.req, body)
	if err != nil {
		x.fail("the upstream response is malformed", err)
		return
	}
	x.usage(decoded.Usage)
	x.call.ResponseModel(decoded.Model)
	res, err := x.session.Output(x.r.Context(), toEngineContents(decoded.Contents))
	if err != nil {
		x.outcome("client_gone")
		return
	}
	switch v := res.Stop; {
	case v != nil && v.Kind == engine.Failed:
		x.outcome("failed")
		writeError(x.w, x.f, wire.Failed(v.Guardrail))
		return
	case v != nil:
		if body, err = wire.BlockResponse(x.f, body, v.Reason, keptText(res.Contents)); err != nil {
			x.fail("the upstream response cannot be replaced", err)
			return
		}
		x.outcome("blocked")
	case applyOutput(decoded.Contents, res.Contents):
		if body, err = wire.RewriteResponse(x.f, body, decoded.Contents, ""); err != nil {
			x.fail("the upstream response cannot be rewritten", err)
			return
		}
		x.outcome("allowed")
	default:
		x.outcome("allowed")
	}
	x.setWarnings()
	copyHeaders(x.w.Header(), resp.Header)
	x.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	x.p.cfg.Telemetry.Added(x.family, x.spent+time.Since(start))
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body)
	// The answer is complete: it goes to the client now rather than when the handler
	// returns, after the request's bookkeeping (its decision records, the audit log's
	// lines, the spans), which the client has no reason to wait for.
	_ = http.NewResponseController(x.w).Flush()
}

// fail answers a response the guard cannot judge: a recorded evaluation failure, fail
// closed (the client receives policy_evaluation_failed, never unjudged content).
func (x *exchange) fail(what string, err error) {
	attrs := []any{"requestId", x.r.Header.Get("X-Request-Id"), "family", x.family}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	x.p.cfg.Log.Error("Upstream response not judged: "+what, attrs...)
	x.outcome("failed")
	writeError(x.w, x.f, wire.Failed(""))
}

// keptText returns, per choice, the answer text a blocked response keeps before the
// reason: what the Output phase allowed ahead of tool calls the policy blocked (contents
// are set with a block only then). A stream would have sent it before the block, so the
// two forms end alike.
func keptText(contents []engine.Content) map[int]string {
	var kept map[int]string
	for _, c := range contents {
		if c.Channel.Kind != content.Text || c.Dropped || c.Text == "" {
			continue
		}
		if kept == nil {
			kept = map[int]string{}
		}
		kept[c.Channel.Choice] += c.Text
	}
	return kept
}
