package wire

import (
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// responsesOutputItem is an output item of a Responses API response.
type responsesOutputItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Input     string `json:"input"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// responsesPartKinds walks the output parts of a Responses output item in channel order:
// message output_text parts, reasoning summary then content parts, tool calls. visit gets
// the array key, the index in it, and the channel kind; a part that is not a channel
// (refusal) is not visited.
func responsesPartKinds(it *responsesOutputItem, text content.Kind, visit func(key string, i int, kind content.Kind)) {
	switch it.Type {
	case "message":
		for i, p := range it.Content {
			if p.Type == "output_text" {
				visit("content", i, text)
			}
		}
	case "reasoning":
		for i := range it.Summary {
			visit("summary", i, content.Reasoning)
		}
		for i := range it.Content {
			visit("content", i, content.Reasoning)
		}
	case "function_call", "custom_tool_call":
		visit("", 0, content.ToolCall)
	}
}

func decodeResponsesResponse(body []byte, object bool) (Response, error) {
	var r struct {
		Status     string                `json:"status"`
		Output     []responsesOutputItem `json:"output"`
		Incomplete *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Usage *struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
		Model json.RawMessage `json:"model"`
	}
	if err := decodeBody(body, &r); err != nil {
		return Response{}, malformed(FamilyResponses, "response: %v", err)
	}
	resp := Response{Model: ModelName(r.Model)}
	text := content.Text
	if object {
		text = content.Object
	}
	next := 0
	for k := range r.Output {
		it := &r.Output[k]
		responsesPartKinds(it, text, func(key string, i int, kind content.Kind) {
			ct := Content{Channel: content.Channel{Kind: kind, Index: next}}
			next++
			switch {
			case kind == content.ToolCall:
				ct.Text, ct.ID, ct.Name = cmpOr(it.Arguments, it.Input), it.CallID, it.Name
			case key == "summary":
				ct.Text = it.Summary[i].Text
			default:
				ct.Text = it.Content[i].Text
			}
			resp.Contents = append(resp.Contents, ct)
		})
	}
	reason := r.Status
	if r.Incomplete != nil && r.Incomplete.Reason != "" {
		reason = r.Incomplete.Reason
	}
	resp.Finish = []string{reason}
	if r.Usage != nil {
		resp.Usage = Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}
	}
	return resp, nil
}

func rewriteResponsesResponse(o *jsonx.Object, byChannel map[content.Channel]*Content, finish string) error {
	items, err := o.Arr("output")
	if err != nil {
		return err
	}
	next := 0
	kept := items[:0]
	for _, raw := range items {
		var it responsesOutputItem
		if err := decode(raw, &it); err != nil {
			return err
		}
		io, err := jsonx.ParseObject(raw)
		if err != nil {
			return err
		}
		arrays := map[string][]json.RawMessage{}
		drop := map[string]map[int]bool{}
		dropItem := false
		var werr error
		responsesPartKinds(&it, content.Text, func(key string, i int, kind content.Kind) {
			ct := byChannel[content.Channel{Kind: kind, Index: next}]
			if ct == nil && kind == content.Text {
				ct = byChannel[content.Channel{Kind: content.Object, Index: next}]
			}
			next++
			if ct == nil || werr != nil {
				return
			}
			if kind == content.ToolCall {
				argKey := "arguments"
				if it.Type == "custom_tool_call" {
					argKey = "input"
				}
				io.Set(argKey, jsonx.Quote(ct.Text))
				dropItem = ct.Dropped
				return
			}
			if arrays[key] == nil {
				if arrays[key], werr = io.Arr(key); werr != nil {
					return
				}
			}
			if ct.Dropped {
				if drop[key] == nil {
					drop[key] = map[int]bool{}
				}
				drop[key][i] = true
				return
			}
			var po *jsonx.Object
			if po, werr = jsonx.ParseObject(arrays[key][i]); werr == nil {
				po.Set("text", jsonx.Quote(ct.Text))
				// Logprobs repeat the replaced text token by token (include
				// message.output_text.logprobs), as a chat answer's do.
				if po.Get("logprobs") != nil {
					po.Set("logprobs", []byte("[]"))
				}
				arrays[key][i] = po.Bytes()
			}
		})
		if werr != nil {
			return werr
		}
		if dropItem {
			continue
		}
		for key, arr := range arrays {
			out := arr[:0]
			for i, p := range arr {
				if !drop[key][i] {
					out = append(out, p)
				}
			}
			io.Set(key, jsonx.MarshalArray(out))
		}
		kept = append(kept, io.Bytes())
	}
	o.Set("output", jsonx.MarshalArray(kept))
	switch finish {
	case "":
	case FinishContentFilter:
		o.Set("status", []byte(`"incomplete"`))
		o.Set("incomplete_details", []byte(`{"reason":"`+FinishContentFilter+`"}`))
	default:
		o.Set("status", jsonx.Quote(finish))
	}
	return nil
}
