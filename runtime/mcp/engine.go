package mcp

import (
	"context"
	"net/http"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// EngineJudges judges MCP traffic with the engine of the policy in force, as model
// traffic is judged: decision records, Report mode, failure policies, metrics and the
// decisions sent to the control plane (status counters, Events) are the engine's and
// telemetry's own. One exchange is one request in the counts the control plane receives
// (a POST and its answer; one message of a GET stream).
type EngineJudges struct {
	// Engine returns the engine of the policy in force, nil while there is none.
	Engine func() *engine.Engine
	// Pod is the pod name copied into decision records.
	Pod string
	// Telemetry receives the decision records.
	Telemetry *telemetry.Telemetry
}

// Begin starts judging one exchange with server.
func (e *EngineJudges) Begin(r *http.Request, server string) (Judge, bool) {
	eng := e.Engine()
	if eng == nil {
		return nil, false
	}
	rec := e.Telemetry.Begin()
	trace, span := telemetry.TraceIDs(r.Header)
	return &engineJudge{e: eng, rec: rec, opts: engine.Options{
		IDs: engine.IDs{Pod: e.Pod, RequestID: r.Header.Get("X-Request-Id"), TraceID: trace, SpanID: span, MCPServer: server},
		Record: func(record engine.Record) {
			rec.Record(record)
			e.Telemetry.MCPDecision(server, record)
		},
	}}, true
}

// engineJudge gives every judged message a session of its own: a session stops at its
// first verdict, and one blocked tool of a list must not stop the next.
type engineJudge struct {
	e    *engine.Engine
	rec  *telemetry.Request
	opts engine.Options
}

// Call judges a tool call as the engine judges one in a non-streamed answer.
func (j *engineJudge) Call(ctx context.Context, tool, arguments string) (Judgement, error) {
	res, err := j.e.NewSession(j.opts).Output(ctx, []engine.Content{{
		Channel: content.Channel{Kind: content.ToolCall}, Name: tool, Text: arguments}})
	if err != nil {
		return Judgement{}, err
	}
	return Judgement{Stop: stopOf(res.Stop)}, nil
}

// Results judges texts as one tool result (the ToolResults phase).
func (j *engineJudge) Results(ctx context.Context, texts []string) (Judgement, error) {
	parts := make([]engine.Part, len(texts))
	for i, t := range texts {
		parts[i] = engine.Part{Modality: classify.Text, Text: t, ToolResult: true}
	}
	res, err := j.e.NewSession(j.opts).ToolResults(ctx, []engine.Message{{Role: "tool", Parts: parts}})
	if err != nil {
		return Judgement{}, err
	}
	if res.Stop != nil {
		return Judgement{Stop: stopOf(res.Stop)}, nil
	}
	out := Judgement{Texts: make([]string, len(texts)), Dropped: make([]bool, len(texts))}
	for i, p := range res.Messages[0].Parts {
		out.Texts[i], out.Dropped[i] = p.Text, p.Dropped
	}
	return out, nil
}

func (j *engineJudge) Done() { j.rec.Done() }

// setTrace makes the spans of the exchange's evaluations children of t; called before any
// message is judged.
func (j *engineJudge) setTrace(t engine.Tracer) { j.opts.Trace = t }

func stopOf(v *engine.Verdict) *Stop {
	if v == nil {
		return nil
	}
	return &Stop{Failed: v.Kind == engine.Failed, Reason: v.Reason, Guardrail: v.Guardrail}
}
