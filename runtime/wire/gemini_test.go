package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
)

var geminiReq = &Request{Family: FamilyGemini, Model: "gemini-2.5-flash", Stream: true, N: 1, IncludeUsage: true}

func gemChunk(parts, finish string) string {
	c := `{"candidates":[{"content":{"parts":[` + parts + `],"role":"model"}`
	if finish != "" {
		c += `,"finishReason":"` + finish + `"`
	}
	return c + `,"index":0}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3,"thoughtsTokenCount":2},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
}

func TestGeminiCall(t *testing.T) {
	for path, want := range map[string]string{
		"/v1beta/models/gemini-2.5-flash:generateContent":        "gemini-2.5-flash false true",
		"/v1/models/gemini-2.0-flash:streamGenerateContent":      "gemini-2.0-flash true true",
		"/v1alpha/models/g:streamGenerateContent":                "g true true",
		"/v1beta/models/:generateContent":                        " false false",
		"/v1beta/models/a/b:generateContent":                     " false false",
		"/v1beta/models/gemini-2.5-flash:countTokens":            " false false",
		"/v1beta/tunedModels/gemini-2.5-flash:generateContent":   " false false",
		"/v1beta/models/gemini-2.5-flash:generateContent:x":      " false false",
		"/v2/models/gemini-2.5-flash:generateContent":            " false false",
		"/v1beta/models/gemini-2.5-flash:generateContentExtra":   " false false",
		"/v1beta/models/gemini-2.5-flash:streamGenerateContentX": " false false",
	} {
		m, s, ok := GeminiCall(path)
		got := strings.Join([]string{m, boolStr(s), boolStr(ok)}, " ")
		if got != want {
			t.Errorf("GeminiCall(%q) = %q, want %q", path, got, want)
		}
		if _, _, input := GeminiMethod(path); !input || ok {
			if f, routed := Route("POST", path); routed != ok || (ok && f != FamilyGemini) {
				t.Errorf("Route(%q) = %v, %v", path, f, routed)
			}
		}
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestGeminiParseAndRewrite(t *testing.T) {
	body := `{"system_instruction":{"parts":[{"text":"Mail ana@example.org"}]},` +
		`"contents":[{"role":"user","parts":[{"text":"Hi"},{"inline_data":{"mime_type":"image/png","data":"iVBO"}},{"fileData":{"mimeType":"application/pdf","fileUri":"https://x/y.pdf"}}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{"q":"ana@example.org"}},"thoughtSignature":"c2ln"}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"r":"ok"}}},{"text":"secret ana@example.org"}]}],` +
		`"tools":[{"functionDeclarations":[{"name":"lookup","description":"Looks up"}]}],` +
		`"generationConfig":{"candidateCount":2,"responseMimeType":"application/json"}}`
	req, err := ParseRequest(FamilyGemini, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.N != 2 || !req.Object || len(req.Tools) != 1 || req.Tools[0].Name != "lookup" || len(req.Messages) != 4 {
		t.Fatalf("parsed %+v", req)
	}
	sys, user, model, last := &req.Messages[0], &req.Messages[1], &req.Messages[2], &req.Messages[3]
	if !sys.System || sys.Parts[0].Text != "Mail ana@example.org" {
		t.Fatalf("system %+v", sys)
	}
	if len(user.Parts) != 3 || user.Parts[1].URL != "data:image/png;base64,iVBO" || user.Parts[2].URL != "https://x/y.pdf" {
		t.Fatalf("user %+v", user.Parts)
	}
	if model.Role != "assistant" || len(model.ToolCalls) != 1 || model.ToolCalls[0].Arguments != `{"q":"ana@example.org"}` {
		t.Fatalf("model %+v", model)
	}
	if last.Parts[0].ToolCallID != "lookup" || last.Parts[0].Text != `{"r":"ok"}` || last.Parts[1].Text != "secret ana@example.org" {
		t.Fatalf("last %+v", last.Parts)
	}
	sys.Parts[0].Text = "Mail [REDACTED]"
	last.Parts[1].Text = "secret [REDACTED]"
	model.ToolCalls[0].Arguments = `{"q":"[REDACTED]"}`
	out, err := RewriteRequest([]byte(body), &req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "ana@") || !strings.Contains(string(out), `"thoughtSignature":"c2ln"`) ||
		!strings.Contains(string(out), `"system_instruction":{"parts":[{"text":"Mail [REDACTED]"}]}`) {
		t.Fatalf("rewritten %s", out)
	}
	// A tool result's object is judged as text but cannot be rewritten in place.
	last.Parts[0].Text = `{"r":"[REDACTED]"}`
	if _, err := RewriteRequest([]byte(body), &req); !errors.Is(err, ErrNotRewritable) {
		t.Fatalf("rewriting a functionResponse: %v", err)
	}
}

func TestGeminiParseRefusesTwoSpellings(t *testing.T) {
	for _, body := range []string{
		`{"systemInstruction":{"parts":[]},"system_instruction":{"parts":[]}}`,
		`{"contents":[{"parts":[{"inlineData":{"data":"x"},"inline_data":{"data":"y"}}]}]}`,
		`{"contents":[{"parts":[{"functionCall":{"name":"a"},"function_call":{"name":"b"}}]}]}`,
		`{"generationConfig":{},"generation_config":{}}`,
		`{"contents":[{"parts":[{"text":"a","Text":"b"}]}]}`,
		`{"contents":[{"parts":[{"text":"a","text":"b"}]}]}`,
		`{"generationConfig":{"candidateCount":0}}`,
	} {
		if _, err := ParseRequest(FamilyGemini, []byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestGeminiResponse(t *testing.T) {
	body := `{"candidates":[{"content":{"parts":[{"text":"think","thought":true},{"text":"Hello "},{"text":"ana@example.org"},` +
		`{"functionCall":{"name":"f","args":{"a":1}}}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":4,"thoughtsTokenCount":1}}`
	resp, err := DecodeResponse(FamilyGemini, &Request{Family: FamilyGemini, N: 1}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[content.Kind]*Content{}
	for i := range resp.Contents {
		byKind[resp.Contents[i].Channel.Kind] = &resp.Contents[i]
	}
	if byKind[content.Text].Text != "Hello ana@example.org" || byKind[content.Reasoning].Text != "think" ||
		byKind[content.ToolCall].Text != `{"a":1}` || resp.Usage != (Usage{InputTokens: 5, OutputTokens: 5}) || resp.Finish[0] != "STOP" {
		t.Fatalf("decoded %+v", resp)
	}
	byKind[content.Text].Text = "Hello [REDACTED]"
	out, err := RewriteResponse(FamilyGemini, []byte(body), resp.Contents, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "ana@") || !strings.Contains(string(out), `{"text":"Hello [REDACTED]"}`) ||
		!strings.Contains(string(out), `"thought":true`) || !strings.Contains(string(out), `"functionCall"`) {
		t.Fatalf("rewritten %s", out)
	}
	blocked, err := BlockResponse(FamilyGemini, []byte(body), "No.", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Candidates []struct {
			Content struct {
				Parts []map[string]any `json:"parts"`
			} `json:"content"`
			FinishReason, FinishMessage string
		} `json:"candidates"`
		UsageMetadata map[string]int `json:"usageMetadata"`
	}
	if err := json.Unmarshal(blocked, &b); err != nil || len(b.Candidates) != 1 || len(b.Candidates[0].Content.Parts) != 1 ||
		b.Candidates[0].Content.Parts[0]["text"] != "No." || b.Candidates[0].FinishReason != FinishSafety ||
		b.Candidates[0].FinishMessage != "No." || b.UsageMetadata["promptTokenCount"] != 5 {
		t.Fatalf("blocked %s", blocked)
	}
}

func TestGeminiStreamDecode(t *testing.T) {
	st := NewStream(geminiReq)
	var got []string
	evs := parseEvents(t, lines(
		gemChunk(`{"text":"Let me think","thought":true}`, ""),
		gemChunk(`{"text":"Hi"},{"text":" there"}`, ""),
		gemChunk(`{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"c2ln"}`, "STOP"),
	))
	for i := range evs {
		items, err := st.Decode(nil, &evs[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			got = append(got, it.Kind.String()+"@"+it.Channel.String())
		}
	}
	want := "delta@choice[0].reasoning usage@choice[0].text delta@choice[0].text delta@choice[0].text usage@choice[0].text " +
		"toolCallStart@choice[0].toolCall[0] delta@choice[0].toolCall[0] channelEnd@choice[0].toolCall[0] " +
		"channelEnd@choice[0].reasoning channelEnd@choice[0].text finish@choice[0].text usage@choice[0].text"
	if strings.Join(got, " ") != want {
		t.Fatalf("items\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if _, err := NewStream(geminiReq).Decode(nil, &parseEvents(t, lines(`{"candidates":[{"index":3}]}`))[0]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a candidate beyond candidateCount: %v", err)
	}
}

// An allowed stream is forwarded byte for byte; a held-back one is rebuilt with its
// template, the tool call sent whole with its thought signature, and the finish chunk
// without the text it carried.
func TestGeminiStreamEmit(t *testing.T) {
	raw := lines(gemChunk(`{"text":"Hello"}`, ""), gemChunk(`{"text":" world"}`, ""), gemChunk(`{"text":"."}`, "STOP"))
	if out := pump(t, geminiReq, parseEvents(t, raw), newSim(0), 0, nil); string(out) != raw {
		t.Fatalf("allowed stream changed:\n%s", out)
	}
	raw = lines(gemChunk(`{"text":"Hello"}`, ""), gemChunk(`{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"c2ln"}`, ""),
		gemChunk(`{"text":" world."}`, "STOP"))
	out := pump(t, geminiReq, parseEvents(t, raw), newSim(3), 0, nil)
	v := clientView(t, geminiReq, out)
	if v.textOf(content.Text) != "Hello world." || v.calls[content.Channel{Kind: content.ToolCall}] != `{"a":1}` ||
		strings.Join(v.finish, ",") != "STOP" || !strings.Contains(string(out), `"thoughtSignature":"c2ln"`) ||
		!strings.Contains(string(out), `"modelVersion":"gemini-2.5-flash","responseId":"r1"`) {
		t.Fatalf("client received\n%s", out)
	}
}

func TestGeminiStreamBlockAndFailure(t *testing.T) {
	raw := lines(gemChunk(`{"text":"Hello"}`, ""), gemChunk(`{"text":" secret"}`, ""), gemChunk(`{"text":"."}`, "STOP"))
	out := pump(t, geminiReq, parseEvents(t, raw), newSim(100), 2, func(st *Stream, out []byte) []byte {
		return st.AppendBlock(out, "Stopped.")
	})
	v := clientView(t, geminiReq, out)
	if v.textOf(content.Text) != "Stopped." || strings.Join(v.finish, ",") != FinishSafety ||
		!strings.Contains(string(out), `"finishMessage":"Stopped."`) || !strings.Contains(string(out), `"usageMetadata":{"promptTokenCount":7`) {
		t.Fatalf("client received\n%s", out)
	}
	out = pump(t, geminiReq, parseEvents(t, raw), newSim(100), 2, func(st *Stream, out []byte) []byte {
		return st.AppendFailure(out, "ns/g")
	})
	if string(out) != `data: {"error":{"code":500,"message":"policy evaluation failed","status":"INTERNAL","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"POLICY_EVALUATION_FAILED","domain":"guardrail.dev","metadata":{"code":"policy_evaluation_failed","guardrail":"ns/g"}}]}}`+"\n\n" {
		t.Fatalf("failure %s", out)
	}
}
