package engine

import (
	"context"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Output judges a non-streamed response: the Output phase judges each text, reasoning and
// object content and each tool call's arguments, as it does each channel of a stream at its
// end; the ToolCalls phase judges each tool call alone, then each choice's calls together
// when it has more than one. Strip drops reasoning but escalates to Block on an answer text
// or object (the whole final output); on tool calls Strip and Redact act as Block. Redact
// rewrites the content's text.
//
// The result says whether the response is replaced by a verdict and, otherwise, what to
// send. A block of the tool calls comes with the other contents as the Output phase left
// them: a stream would have sent them before the calls, so the reason may follow them
// (a block replaces what the client did not receive). The error is the
// caller's context's when it ended during an evaluation.
func (s *Session) Output(ctx context.Context, contents []Content) (OutputResult, error) {
	if s.stop != nil {
		return OutputResult{Stop: s.stop}, nil
	}
	items := make([]*item, len(contents))
	var outputs, calls []*item
	for i, c := range contents {
		it := &item{where: channelLocation(c.Channel), dropped: c.Dropped}
		if c.Channel.Kind == content.ToolCall {
			// ToolCalls guardrails judge the call as the tool will receive it: restored.
			it.doc, it.tool = newTextBuf(toolCallText(c.Name, s.vault.restore(c.Text, true))), true
			calls = append(calls, it)
			// The Output phase judges the arguments as the Stream phase saw them streamed.
			outputs = append(outputs, &item{where: it.where, doc: newTextBuf(c.Text), tool: true})
		} else {
			it.doc = newTextBuf(c.Text)
			outputs = append(outputs, it)
		}
		items[i] = it
	}
	v, err := s.judgeItems(ctx, policy.PhaseOutput, outputs, always, wholeOutput)
	for _, it := range outputs {
		if v != nil || err != nil {
			break
		}
		if !it.dropped {
			// What the client receives, the tenant's values restored (restored.go).
			d := it.doc
			v, err = s.judgeRestoredWhole(ctx, policy.PhaseOutput, d, d.base, d.total, restoresJSON(it.where.Channel.Kind), nil, it, wholeOutput)
		}
	}
	if v == nil && err == nil {
		if v, err = s.judgeItems(ctx, policy.PhaseToolCalls, calls, always, never); v == nil && err == nil {
			v, err = s.judgeTogether(ctx, calls)
		}
	}
	if err != nil {
		return OutputResult{}, err
	}
	if v != nil {
		s.stop = v
		if v.Kind != Blocked || v.Phase != policy.PhaseToolCalls {
			return OutputResult{Stop: v}, nil
		}
	}
	out := make([]Content, len(contents))
	for i, c := range contents {
		c.Dropped = items[i].dropped
		if c.Channel.Kind != content.ToolCall && len(items[i].doc.edits) > 0 {
			c.Text = items[i].doc.String()
		}
		if !c.Dropped {
			c.Text = s.vault.restore(c.Text, restoresJSON(c.Channel.Kind))
		}
		out[i] = c
	}
	return OutputResult{Stop: v, Contents: out}, nil
}

// wholeOutput: an answer text or an object is the whole final output of its choice, so a
// Strip of it escalates to Block; reasoning can be dropped.
func wholeOutput(it *item) bool {
	k := it.where.Channel.Kind
	return k == content.Text || k == content.Object
}

// judgeTogether judges, for each choice with more than one tool call, the calls together, after each was judged alone. calls are tool-call items in order.
func (s *Session) judgeTogether(ctx context.Context, calls []*item) (*Verdict, error) {
	var groups []*item
	var texts [][]string
	index := map[int]int{}
	for _, it := range calls {
		ch := it.where.Channel.Choice
		i, ok := index[ch]
		if !ok {
			i = len(groups)
			index[ch] = i
			groups = append(groups, &item{where: callsLocation(ch), tool: true})
			texts = append(texts, nil)
		}
		texts[i] = append(texts[i], it.doc.String())
	}
	together := groups[:0]
	for i, g := range groups {
		if len(texts[i]) > 1 {
			g.doc = newTextBuf(callsText(texts[i]))
			together = append(together, g)
		}
	}
	if len(together) == 0 {
		return nil, nil
	}
	return s.judgeItems(ctx, policy.PhaseToolCalls, together, always, never)
}
