package wire

import (
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// sent marks the roles and finishes of the current event as received by the client.
func (c *chatCodec) sent() {
	for _, i := range c.roles {
		c.choice(i).roleSent = true
	}
	for _, i := range c.finishes {
		c.choice(i).finishedSent = true
	}
}

// chatJudgedKeys are the delta members whose content the releases replace.
var chatJudgedKeys = []string{"content", "reasoning_content", "reasoning", "tool_calls"}

func (c *chatCodec) rest(dst []byte, ev *sse.Event, stripped bool) ([]byte, error) {
	defer c.sent()
	if stripped && c.bare {
		// Only judged content, which the releases carry: the common event costs no parse.
		return dst, nil
	}
	c.rewrite = c.rewrite[:0]
	if !stripped {
		c.usageSent = c.usageSent || c.curUsage
		return append(dst, ev.Raw...), nil
	}
	// decode validated the event, and nothing here writes into it: walk it in place.
	o, err := jsonx.WalkObject(ev.Data)
	if err != nil {
		return dst, malformed(FamilyChat, "chunk: %v", err)
	}
	choices, err := o.Arr("choices")
	if err != nil {
		return dst, malformed(FamilyChat, "choices: %v", err)
	}
	kept := choices[:0]
	for _, raw := range choices {
		co, err := jsonx.WalkObject(raw) // a value of o: valid, and o's own copy
		if err != nil {
			return dst, malformed(FamilyChat, "choice: %v", err)
		}
		d, err := co.Obj("delta")
		if err != nil {
			d = &jsonx.Object{}
		}
		for _, k := range chatJudgedKeys {
			d.Del(k)
		}
		if idx, ok := jsonx.Int(co.Get("index")); ok && c.choice(idx).roleSent {
			// The releases written before carried the role already.
			d.Del("role")
		}
		// Logprobs describe the replaced content's tokens.
		if co.Get("logprobs") != nil {
			co.Set("logprobs", []byte("null"))
		}
		if d.AllNull() && !co.Has("finish_reason") {
			continue
		}
		// The rewritten parts go into one scratch buffer: appending never moves what an
		// earlier slice of it holds, and nothing of it outlives this call.
		start := len(c.rewrite)
		c.rewrite = d.AppendTo(c.rewrite)
		co.Set("delta", c.rewrite[start:])
		start = len(c.rewrite)
		c.rewrite = co.AppendTo(c.rewrite)
		kept = append(kept, c.rewrite[start:])
	}
	if len(kept) == 0 && !o.Has("usage") {
		return dst, nil
	}
	c.usageSent = c.usageSent || c.curUsage
	start := len(c.rewrite)
	c.rewrite = jsonx.AppendArray(c.rewrite, kept)
	o.Set("choices", c.rewrite[start:])
	start = len(c.rewrite)
	c.rewrite = o.AppendTo(c.rewrite)
	return sse.AppendJSONEvent(dst, "", c.rewrite[start:]), nil
}

// appendHead appends the start of a chunk built on the template, up to "choices":.
func (c *chatCodec) appendHead(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendRawOr(dst, c.id, `"chatcmpl-guardrail"`)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = appendRawOr(dst, c.created, "0")
	dst = append(dst, `,"model":`...)
	if len(c.model) > 0 {
		dst = append(dst, c.model...)
	} else {
		dst = jsonx.AppendString(dst, c.s.req.Model)
	}
	if len(c.tier) > 0 {
		dst = append(dst, `,"service_tier":`...)
		dst = append(dst, c.tier...)
	}
	if len(c.fingerprint) > 0 {
		dst = append(dst, `,"system_fingerprint":`...)
		dst = append(dst, c.fingerprint...)
	}
	return append(dst, `,"choices":`...)
}

// appendTail appends the end of a chunk after the choice's delta.
func (c *chatCodec) appendTail(dst []byte, finish string) []byte {
	dst = append(dst, `},"logprobs":null,"finish_reason":`...)
	dst = appendOptString(dst, finish)
	dst = append(dst, "}]"...)
	if c.s.req.IncludeUsage {
		dst = append(dst, `,"usage":null`...)
	}
	return append(dst, "}\n\n"...)
}

func appendRawOr(dst, raw []byte, def string) []byte {
	if len(raw) == 0 {
		return append(dst, def...)
	}
	return append(dst, raw...)
}

// appendChoiceStart appends "data: " and the chunk up to the delta's first member,
// with the role when the client has not received one for the choice.
func (c *chatCodec) appendChoiceStart(dst []byte, choice int) []byte {
	dst = append(dst, "data: "...)
	dst = c.appendHead(dst)
	dst = append(dst, `[{"index":`...)
	dst = jsonx.AppendInt(dst, choice)
	dst = append(dst, `,"delta":{`...)
	if st := c.choice(choice); !st.roleSent {
		st.roleSent = true
		dst = append(dst, `"role":"assistant",`...)
	}
	return dst
}

func (c *chatCodec) appendDelta(dst []byte, ch content.Channel, text []byte) []byte {
	dst = c.appendChoiceStart(dst, ch.Choice)
	key := "content"
	if ch.Kind == content.Reasoning {
		key = c.reasoningKey
	}
	dst = jsonx.AppendString(dst, key)
	dst = append(dst, ':')
	dst = jsonx.AppendString(dst, text)
	return c.appendTail(dst, "")
}

func (c *chatCodec) appendToolCall(dst []byte, call *toolCall, args []byte) []byte {
	dst = c.appendChoiceStart(dst, call.ch.Choice)
	dst = append(dst, `"tool_calls":[{"index":`...)
	dst = jsonx.AppendInt(dst, call.ch.Index)
	dst = append(dst, `,"id":`...)
	dst = jsonx.AppendString(dst, call.id)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = jsonx.AppendString(dst, call.name)
	dst = append(dst, `,"arguments":`...)
	dst = jsonx.AppendString(dst, args)
	dst = append(dst, "}}]"...)
	return c.appendTail(dst, "")
}

// appendBlock ends every choice the client has not seen finish: a chunk with the reason
// as content, then a chunk with an empty delta and finish_reason content_filter, as the
// API sends its own finish. A finish in a chunk of its own lets the Node SDK's stream
// helpers (ChatCompletionStream, runTools) take in the reason before they throw
// ContentFilterFinishReasonError at the finish.
func (c *chatCodec) appendBlock(dst []byte, reason string, _ *qentry) []byte {
	for i := range max(c.s.req.N, c.maxChoice+1) {
		if c.choice(i).finishedSent {
			continue
		}
		dst = c.appendChoiceStart(dst, i)
		dst = append(dst, `"content":`...)
		dst = jsonx.AppendString(dst, c.s.reasonText(i, reason, nil))
		dst = c.appendTail(dst, "")
		dst = c.appendChoiceStart(dst, i)
		dst = c.appendTail(dst, FinishContentFilter)
		c.choice(i).finishedSent = true
	}
	return dst
}

// awaitsUsage: the client asked for a usage chunk, which has neither arrived nor gone out.
func (c *chatCodec) awaitsUsage() bool {
	return c.s.req.IncludeUsage && c.s.usage == nil && !c.usageSent
}

// appendBlockEnd appends the usage chunk the client asked for, with the upstream's
// usage, when it is known and was not sent yet; then [DONE].
func (c *chatCodec) appendBlockEnd(dst []byte) []byte {
	if c.s.req.IncludeUsage && c.s.usage != nil && !c.usageSent {
		dst = append(dst, "data: "...)
		dst = c.appendHead(dst)
		dst = append(dst, `[],"usage":`...)
		dst = append(dst, c.s.usage...)
		dst = append(dst, "}\n\n"...)
		c.usageSent = true
	}
	return append(dst, "data: [DONE]\n\n"...)
}

// appendFailure appends data: {"error":{...}}, which openai-go's stream surfaces as an
// *ssestream.StreamError (and the Python and Node SDKs as an APIError).
func (c *chatCodec) appendFailure(dst []byte, e *APIError) []byte {
	dst = append(dst, `data: {"error":`...)
	dst = appendOpenAIError(dst, e)
	return append(dst, "}\n\n"...)
}
