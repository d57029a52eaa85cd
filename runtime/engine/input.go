package engine

import (
	"context"
	"slices"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Input judges the request's messages before the upstream call: first the ToolResults
// phase, then the Input phase, which judges what the first left (a redacted tool result
// is judged redacted).
//
// The Input phase makes one classifier call per guardrail for each text part and each media
// part; a guardrail with messages: Last judges the parts of the last message that still has
// parts, one with All judges every message. Strip drops a part (a message whose parts are
// all dropped is dropped too), and escalates to Block when the part is the last user part
// left; Redact rewrites a text part.
//
// The ToolResults phase judges the parts marked ToolResult: with messages: Last those after
// the last assistant message (the results of the newest step of an agent loop, which a long
// loop does not re-judge on every turn), with All every one. Redact rewrites a result;
// Strip escalates to Block, since a provider refuses a tool call left without its result.
//
// The result says whether the request is refused and, otherwise, what to send upstream.
// The error is the caller's context's when it ended during an evaluation.
func (s *Session) Input(ctx context.Context, msgs []Message) (InputResult, error) {
	if s.stop != nil {
		return InputResult{Stop: s.stop}, nil
	}
	input, results := s.e.hasPhase(policy.PhaseInput), s.e.hasPhase(policy.PhaseToolResults)
	if !input && !results {
		return InputResult{Messages: msgs}, nil
	}
	items := inputItems(msgs)
	s.reservePlaceholders(items)
	var v *Verdict
	var err error
	if results {
		newest := lastAssistant(msgs)
		v, err = s.judgeItems(ctx, policy.PhaseToolResults, toolResults(items),
			func(gd *guard, it *item) bool { return gd.g.AllMessages || it.message > newest }, isToolResult)
	}
	if input && v == nil && err == nil {
		selects := func(gd *guard, it *item) bool { return gd.g.AllMessages || it.message == lastMessage(items) }
		required := func(it *item) bool {
			return it.role == RoleUser && !slices.ContainsFunc(items, func(o *item) bool {
				return o != it && !o.dropped && o.role == RoleUser
			})
		}
		v, err = s.judgeItems(ctx, policy.PhaseInput, items, selects, required)
	}
	if v == nil && err == nil {
		s.maskEverywhere(items)
	}
	res, err := s.inputResult(msgs, items, v, err)
	s.maskCalls(res.Messages)
	return res, err
}

// ToolResults judges what tools returned, outside a model request (an MCP server's tool
// result or tool list): the ToolResults phase judges every part of msgs,
// whatever messages says, since the caller passes only what is new. Redact rewrites a
// part; Strip escalates to Block. The result is as Input's.
//
// Pseudonymize guardrails do not judge here: what an MCP server returns goes to the app,
// not to a provider, and no answer of this exchange could restore it. When the app hands
// the result to a model, that request's ToolResults phase masks it and its answer is
// restored.
func (s *Session) ToolResults(ctx context.Context, msgs []Message) (InputResult, error) {
	if s.stop != nil {
		return InputResult{Stop: s.stop}, nil
	}
	if !s.e.hasPhase(policy.PhaseToolResults) {
		return InputResult{Messages: msgs}, nil
	}
	items := inputItems(msgs)
	masks := func(gd *guard, _ *item) bool { return gd.g.Action != policy.ActionPseudonymize }
	v, err := s.judgeItems(ctx, policy.PhaseToolResults, items, masks, isToolResult)
	return s.inputResult(msgs, items, v, err)
}

// inputItems returns one item per part of msgs, in order.
func inputItems(msgs []Message) []*item {
	var items []*item
	for mi, m := range msgs {
		for pi, p := range m.Parts {
			it := &item{where: inputLocation(mi, pi), modality: p.Modality, role: m.Role, message: mi,
				dropped: p.Dropped, result: p.ToolResult}
			if p.Modality == classify.Text {
				it.doc = newTextBuf(p.Text)
			} else {
				it.media = p.Media
			}
			items = append(items, it)
		}
	}
	return items
}

func toolResults(items []*item) []*item {
	var out []*item
	for _, it := range items {
		if it.result {
			out = append(out, it)
		}
	}
	return out
}

// isToolResult makes a Strip of any tool result a Block: a provider refuses a request
// whose tool call has lost its result, and an MCP result cannot be half dropped.
func isToolResult(*item) bool { return true }

// lastAssistant returns the index of the last assistant message, or -1.
func lastAssistant(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			return i
		}
	}
	return -1
}

// inputResult turns the items judged for msgs into the answer of Input or ToolResults.
func (s *Session) inputResult(msgs []Message, items []*item, v *Verdict, err error) (InputResult, error) {
	if err != nil {
		return InputResult{}, err
	}
	if v != nil {
		s.stop = v
		return InputResult{Stop: v}, nil
	}
	out := make([]Message, len(msgs))
	k := 0
	for mi, m := range msgs {
		out[mi] = Message{Role: m.Role, Parts: make([]Part, len(m.Parts)), Calls: m.Calls}
		dropped := len(m.Parts) > 0
		for pi, p := range m.Parts {
			it := items[k]
			k++
			p.Dropped = it.dropped
			if it.doc != nil && len(it.doc.edits) > 0 {
				p.Text = it.doc.String()
			}
			out[mi].Parts[pi] = p
			dropped = dropped && p.Dropped
		}
		out[mi].Dropped = dropped || m.Dropped
	}
	return InputResult{Messages: out}, nil
}

// lastMessage returns the index of the last message with a part not dropped, or -1.
func lastMessage(items []*item) int {
	for i := len(items) - 1; i >= 0; i-- {
		if !items[i].dropped {
			return items[i].message
		}
	}
	return -1
}
