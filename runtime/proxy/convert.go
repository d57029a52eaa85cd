package proxy

import (
	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// toEngineMessages gives the engine the request's messages. Parts the guard cannot read
// (opaque) are passed as text without text, which makes no classifier call.
func toEngineMessages(msgs []wire.Message) []engine.Message {
	out := make([]engine.Message, len(msgs))
	for i, m := range msgs {
		parts := make([]engine.Part, len(m.Parts))
		for j := range m.Parts {
			p := &m.Parts[j]
			if p.Modality == classify.Text {
				parts[j] = engine.Part{Modality: classify.Text, Text: p.Text}
			} else {
				parts[j] = engine.Part{Modality: p.Modality, Media: p.Media()}
			}
			parts[j].ToolResult = p.ToolCallID != ""
		}
		out[i] = engine.Message{Role: m.Role, Parts: parts}
		for _, c := range m.ToolCalls {
			out[i].Calls = append(out[i].Calls, c.Arguments)
		}
	}
	return out
}

// applyInput copies the engine's edits (redacted text, pseudonymized tool-call arguments of
// the history, dropped parts and messages) onto the request; it reports whether anything
// changed.
func applyInput(req *wire.Request, msgs []engine.Message) bool {
	changed := false
	for i := range req.Messages {
		if i >= len(msgs) {
			break
		}
		m := &req.Messages[i]
		if msgs[i].Dropped {
			m.Dropped, changed = true, true
			continue
		}
		for j := range m.Parts {
			if j >= len(msgs[i].Parts) {
				break
			}
			p, ep := &m.Parts[j], &msgs[i].Parts[j]
			switch {
			case ep.Dropped:
				p.Dropped, changed = true, true
			case p.Modality == classify.Text && ep.Text != p.Text:
				p.Text, changed = ep.Text, true
			}
		}
		for j := range m.ToolCalls {
			if j < len(msgs[i].Calls) && msgs[i].Calls[j] != m.ToolCalls[j].Arguments {
				m.ToolCalls[j].Arguments, changed = msgs[i].Calls[j], true
			}
		}
	}
	return changed
}

// toEngineContents and applyOutput do the same for a non-streamed response.
func toEngineContents(cs []wire.Content) []engine.Content {
	out := make([]engine.Content, len(cs))
	for i, c := range cs {
		out[i] = engine.Content{Channel: c.Channel, Text: c.Text, Name: c.Name}
	}
	return out
}

func applyOutput(cs []wire.Content, res []engine.Content) bool {
	changed := false
	for i := range cs {
		if i >= len(res) {
			break
		}
		switch {
		case res[i].Dropped:
			cs[i].Dropped, changed = true, true
		case res[i].Text != cs[i].Text:
			cs[i].Text, changed = res[i].Text, true
		}
	}
	return changed
}
