package extproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// blockPolicy blocks "bluebird" in prompts and in streamed and whole answers. The reason
// does not spell the word, so that an answer that carries it carries the leak.
const blockPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words}
spec:
  builtin:
    keywords: [{category: secret-project, words: [bluebird]}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: project-words}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input, Stream, Output, ToolCalls]
  threshold: 0.5
  action: Block
  reason: That project is not discussed here.
`

// redactPolicy redacts e-mail addresses from prompts and from streamed and whole answers.
const redactPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: pii}
spec:
  builtin:
    packs: [pii]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: redact-pii}
spec:
  mode: Enforce
  classifierRef: {name: pii}
  phases: [Input, Stream, Output]
  threshold: 1
  action: Redact
  reason: Personal data is removed.
`

const email = "jane.doe@example.com"

func chatBody(prompt string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{"model": "gpt-test", "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
	return b
}

func messagesBody(prompt string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{"model": "claude-test", "max_tokens": 256, "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
	return b
}

func responsesBody(prompt string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{"model": "gpt-test", "stream": stream, "input": prompt})
	return b
}

func geminiBody(prompt string) []byte {
	b, _ := json.Marshal(map[string]any{"contents": []map[string]any{{"role": "user", "parts": []map[string]string{{"text": prompt}}}}})
	return b
}

const (
	geminiStreamPath = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
	geminiPath       = "/v1beta/models/gemini-test:generateContent"
)

var anthropicHeaders = [][2]string{{"anthropic-version", "2023-06-01"}, {"x-api-key", "sk-ant-test"}}

// A prompt with an e-mail address goes to the provider redacted, exactly as the guard
// sends it, with its content-length set to the new length.
func TestRequestRedacted(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		header     [][2]string
		body       []byte
	}{
		{"chat", "/v1/chat/completions", nil, chatBody("Please write to "+email+" about it.", false)},
		{"messages", "/v1/messages", anthropicHeaders, messagesBody("Please write to "+email+" about it.", false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, redactPolicy, email)
			answer, ct := upstreamAnswer(t, tc.path, tc.body, fakeprovider.Reply("Done."))
			res := h.exchange(call{method: http.MethodPost, path: tc.path, header: tc.header, body: tc.body,
				contentType: ct, chunks: [][]byte{answer}})
			if res.immediate != nil {
				t.Fatalf("refused at %s: %d %s", res.where, res.immediate.GetStatus().GetCode(), res.immediate.GetBody())
			}
			if bytes.Contains(res.upstream, []byte(email)) || !bytes.Contains(res.upstream, []byte("[REDACTED:email]")) {
				t.Fatalf("the provider receives %s", res.upstream)
			}
			g := h.guard(tc.path, tc.header, tc.body, answer, ct)
			if !bytes.Equal(res.upstream, g.upstream) {
				t.Errorf("the provider receives\n%s\nfrom the server, and\n%s\nfrom the guard", res.upstream, g.upstream)
			}
			if cl, ok := headerSet(res.upstreamHeaders, "content-length"); !ok || cl != strconv.Itoa(len(res.upstream)) {
				t.Errorf("content-length set to %q (set: %v), the body has %d bytes", cl, ok, len(res.upstream))
			}
			if !bytes.Equal(res.client, answer) {
				t.Errorf("an allowed answer was changed:\n%s\nwas\n%s", res.client, answer)
			}
		})
	}
}

// A blocked prompt is answered by the server itself (ImmediateResponse) with the status,
// headers and body the guard answers, in the family's error shape; the provider is not
// called.
func TestRequestBlocked(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		header     [][2]string
		body       []byte
	}{
		{"chat", "/v1/chat/completions", nil, chatBody("Tell me about bluebird.", false)},
		{"chat stream", "/v1/chat/completions", nil, chatBody("Tell me about bluebird.", true)},
		{"messages", "/v1/messages", anthropicHeaders, messagesBody("Tell me about bluebird.", false)},
		{"responses", "/v1/responses", nil, responsesBody("Tell me about bluebird.", false)},
		{"gemini", geminiPath, nil, geminiBody("Tell me about bluebird.")},
		{"gemini countTokens", "/v1beta/models/gemini-test:countTokens", nil, geminiBody("Tell me about bluebird.")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, blockPolicy, "bluebird")
			res := h.exchange(call{method: http.MethodPost, path: tc.path, header: append(tc.header, [2]string{"x-request-id", "req-1"}),
				body: tc.body, chunks: [][]byte{[]byte("never sent")}})
			if res.immediate == nil || res.where != "request body" {
				t.Fatalf("not refused at the request body (immediate %v at %q)", res.immediate, res.where)
			}
			g := h.guard(tc.path, tc.header, tc.body, nil, "application/json")
			if g.upstream != nil {
				t.Fatal("the guard called the provider")
			}
			ir := res.immediate
			if int(ir.GetStatus().GetCode()) != g.status || g.status != http.StatusBadRequest {
				t.Errorf("status %d, the guard's %d", ir.GetStatus().GetCode(), g.status)
			}
			if !bytes.Equal(ir.GetBody(), g.body) {
				t.Errorf("body\n%s\nthe guard's\n%s", ir.GetBody(), g.body)
			}
			for _, name := range []string{"content-type", "x-should-retry", "x-request-id"} {
				v, _ := headerSet([]*extprocv3.HeaderMutation{ir.GetHeaders()}, name)
				if want := g.header.Get(name); v != want {
					t.Errorf("%s: %q, the guard's %q", name, v, want)
				}
			}
			if ir.GetDetails() != "guardrail_content_policy_violation" {
				t.Errorf("details %q", ir.GetDetails())
			}
			if !hasLine(h.metrics(), `guard_requests_total{family="`, `",outcome="blocked"} 1`) {
				t.Errorf("the block is not counted:\n%s", h.metrics())
			}
		})
	}
}

// hasLine reports whether text has a line with this prefix and suffix.
func hasLine(text, prefix, suffix string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) && strings.HasSuffix(line, suffix) {
			return true
		}
	}
	return false
}

// splits returns the ways of cutting b into chunks the tests try: in two at every byte,
// and one byte per chunk.
func splits(b []byte) [][][]byte {
	var out [][][]byte
	for k := 1; k < len(b); k++ {
		out = append(out, [][]byte{b[:k], b[k:]})
	}
	var bytewise [][]byte
	for i := range b {
		bytewise = append(bytewise, b[i:i+1])
	}
	return append(out, bytewise)
}

// streamedText decodes the answer text a client reads from a chat or Messages stream.
func streamedText(t *testing.T, b []byte) string {
	t.Helper()
	rd := sse.NewReader(bytes.NewReader(b), 0)
	var text strings.Builder
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return text.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		if !ev.HasData || string(ev.Data) == "[DONE]" {
			continue
		}
		var v struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
		}
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			t.Fatalf("the client receives an event that is not JSON: %s", ev.Data)
		}
		for _, c := range v.Choices {
			text.WriteString(c.Delta.Content)
		}
		text.WriteString(v.Delta.Text)
	}
}

// A streamed answer carrying an e-mail address (redacted) or a blocked word, cut into
// chunks at every byte, never shows the entity in any chunk the client receives, and the
// client's stream is, byte for byte, the one the guard's proxy sends for the same
// upstream bytes, wherever the cuts are.
func TestStreamSplitAtEveryByte(t *testing.T) {
	for _, tc := range []struct {
		name, policy, path, leak string
		header                   [][2]string
		body                     []byte
		answer                   string
		// want is in what the client reads.
		want string
		// deltas, when set, are the answer's deltas instead of answer's in 3 bytes.
		deltas []fakeprovider.Delta
	}{
		{"chat tool call block", blockPolicy, "/v1/chat/completions", "bluebird", nil, chatBody("Look it up.", true), "", "",
			[]fakeprovider.Delta{fakeprovider.Text("Looking."), fakeprovider.ToolCall("call_1", "search"),
				fakeprovider.ToolArgs(`{"q":"blue`), fakeprovider.ToolArgs(`bird plans"}`)}},
		{"chat redact", redactPolicy, "/v1/chat/completions", email, nil, chatBody("Where do I write?", true),
			"Write to " + email + " today.", "[REDACTED:email]", nil},
		{"chat block", blockPolicy, "/v1/chat/completions", "bluebird", nil, chatBody("Any news?", true),
			"The code name is bluebird, keep it.", "That project is not discussed here.", nil},
		{"messages redact", redactPolicy, "/v1/messages", email, anthropicHeaders, messagesBody("Where do I write?", true),
			"Write to " + email + " today.", "[REDACTED:email]", nil},
		{"messages block", blockPolicy, "/v1/messages", "bluebird", anthropicHeaders, messagesBody("Any news?", true),
			"The code name is bluebird, keep it.", "That project is not discussed here.", nil},
		{"responses redact", redactPolicy, "/v1/responses", email, nil, responsesBody("Where do I write?", true),
			"Write to " + email + " today.", "", nil},
		{"responses block", blockPolicy, "/v1/responses", "bluebird", nil, responsesBody("Any news?", true),
			"The code name is bluebird, keep it.", "", nil},
		{"gemini redact", redactPolicy, geminiStreamPath, email, nil, geminiBody("Where do I write?"),
			"Write to " + email + " today.", "", nil},
		{"gemini block", blockPolicy, geminiStreamPath, "bluebird", nil, geminiBody("Any news?"),
			"The code name is bluebird, keep it.", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy, tc.leak)
			// Deltas of 3 bytes: the entity spans several events.
			deltas := tc.deltas
			if deltas == nil {
				deltas = fakeprovider.Chunks(tc.answer, 3)
			}
			answer, ct := upstreamAnswer(t, tc.path, tc.body, fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: deltas}}})
			if !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("the provider's answer is not the stream the test needs (%s):\n%s", ct, answer)
			}
			g := h.guard(tc.path, tc.header, tc.body, answer, ct)
			if g.status != http.StatusOK || bytes.Contains(g.body, []byte(tc.leak)) {
				t.Fatalf("the guard answers %d:\n%s", g.status, g.body)
			}
			cuts := splits(answer)
			for i, chunks := range cuts {
				res := h.exchange(call{method: http.MethodPost, path: tc.path, header: tc.header, body: tc.body,
					contentType: ct, chunks: chunks})
				if res.immediate != nil {
					t.Fatalf("cut %d: refused at %s", i, res.where)
				}
				if !headerRemoved(res.clientHeaders, "content-length") {
					t.Fatalf("cut %d: content-length is not removed from a stream whose body changes", i)
				}
				for j, c := range res.clientChunks {
					if bytes.Contains(c, []byte(tc.leak)) {
						t.Fatalf("cut %d: chunk %d carries %q:\n%s", i, j, tc.leak, c)
					}
				}
				if !bytes.Equal(res.client, g.body) {
					t.Fatalf("cut %d (%d chunks): the client receives\n%s\nthe guard's client\n%s", i, len(chunks), res.client, g.body)
				}
				if tc.want != "" && (i == 0 || i == len(cuts)-1) {
					text := streamedText(t, res.client)
					if strings.Contains(text, tc.leak) || !strings.Contains(text, tc.want) {
						t.Fatalf("cut %d: the client reads %q", i, text)
					}
				}
			}
			if !strings.Contains(h.metrics(), `guard_requests_total{family="`) {
				t.Errorf("requests are not counted:\n%s", h.metrics())
			}
		})
	}
}

// A whole (non-streamed) answer is judged whole: redacted or replaced by the block, as
// the guard answers, with its content-length set; the server asks Envoy to buffer it.
func TestWholeAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, policy, path, leak, answer string
		header                           [][2]string
		body                             []byte
	}{
		{"chat redact", redactPolicy, "/v1/chat/completions", email, "Write to " + email + " today.", nil, chatBody("Where?", false)},
		{"chat block", blockPolicy, "/v1/chat/completions", "bluebird", "The code name is bluebird.", nil, chatBody("News?", false)},
		{"messages redact", redactPolicy, "/v1/messages", email, "Write to " + email + " today.", anthropicHeaders, messagesBody("Where?", false)},
		{"messages block", blockPolicy, "/v1/messages", "bluebird", "The code name is bluebird.", anthropicHeaders, messagesBody("News?", false)},
		{"responses redact", redactPolicy, "/v1/responses", email, "Write to " + email + " today.", nil, responsesBody("Where?", false)},
		{"responses block", blockPolicy, "/v1/responses", "bluebird", "The code name is bluebird.", nil, responsesBody("News?", false)},
		{"gemini redact", redactPolicy, geminiPath, email, "Write to " + email + " today.", nil, geminiBody("Where?")},
		{"gemini block", blockPolicy, geminiPath, "bluebird", "The code name is bluebird.", nil, geminiBody("News?")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy, tc.leak)
			answer, ct := upstreamAnswer(t, tc.path, tc.body, fakeprovider.Reply(tc.answer))
			if !bytes.Contains(answer, []byte(tc.leak)) {
				t.Fatalf("the provider's answer lacks the entity:\n%s", answer)
			}
			res := h.exchange(call{method: http.MethodPost, path: tc.path, header: tc.header, body: tc.body,
				contentType: ct, chunks: [][]byte{answer[:10], answer[10:]}})
			if res.immediate != nil {
				t.Fatalf("refused at %s", res.where)
			}
			if !res.buffered {
				t.Error("the server did not ask for a whole answer BUFFERED")
			}
			g := h.guard(tc.path, tc.header, tc.body, answer, ct)
			if bytes.Contains(res.client, []byte(tc.leak)) || !bytes.Equal(res.client, g.body) {
				t.Fatalf("the client receives\n%s\nthe guard's\n%s", res.client, g.body)
			}
			if cl, ok := headerSet(res.clientHeaders, "content-length"); !ok || cl != strconv.Itoa(len(res.client)) {
				t.Errorf("content-length %q (set %v) for %d bytes", cl, ok, len(res.client))
			}
		})
	}
}

// The same whole answer when Envoy does not honour the mode override (allow_mode_override
// false) and streams it in chunks: every chunk is withheld and the last carries the whole
// judged answer.
func TestWholeAnswerStreamedByEnvoy(t *testing.T) {
	h := newHarness(t, redactPolicy, email)
	body := chatBody("Where?", false)
	answer, ct := upstreamAnswer(t, "/v1/chat/completions", body, fakeprovider.Reply("Write to "+email+" today."))
	stream, err := h.client.Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	send := func(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: hdr(":method", "POST", ":path", "/v1/chat/completions", "content-length", strconv.Itoa(len(body)))}}})
	send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}})
	send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: hdr(":status", "200", "content-type", ct)}}})
	var client []byte
	for i := 0; i < len(answer); i += 7 {
		end := min(i+7, len(answer))
		resp := send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
			Body: answer[i:end], EndOfStream: end == len(answer)}}})
		out := mutate(answer[i:end], resp.GetResponseBody().GetResponse().GetBodyMutation())
		if end < len(answer) && len(out) > 0 {
			t.Fatalf("chunk at %d passed before the answer was judged: %q", i, out)
		}
		client = append(client, out...)
	}
	_ = stream.CloseSend()
	g := h.guard("/v1/chat/completions", nil, body, answer, ct)
	if !bytes.Equal(client, g.body) {
		t.Fatalf("the client receives\n%s\nthe guard's\n%s", client, g.body)
	}
}

// Report mode changes nothing and records what Enforce would have done.
func TestReportModePassesAndRecords(t *testing.T) {
	h := newHarness(t, strings.Replace(blockPolicy, "mode: Enforce", "mode: Report", 1), "bluebird")
	body := chatBody("Tell me about bluebird.", true)
	answer, ct := upstreamAnswer(t, "/v1/chat/completions", body, fakeprovider.Script{Choices: []fakeprovider.Choice{
		{Deltas: fakeprovider.Chunks("The code name is bluebird.", 4)}}})
	res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body, contentType: ct,
		chunks: [][]byte{answer[:len(answer)/2], answer[len(answer)/2:]}})
	if res.immediate != nil {
		t.Fatalf("refused at %s", res.where)
	}
	if !bytes.Equal(res.upstream, body) {
		t.Errorf("the request was changed:\n%s", res.upstream)
	}
	if !bytes.Equal(res.client, answer) {
		t.Errorf("the answer was changed:\n%s\nwas\n%s", res.client, answer)
	}
	log := h.decisions.String()
	for _, phase := range []string{`"phase":"Input"`, `"phase":"Stream"`} {
		found := false
		for _, line := range strings.Split(log, "\n") {
			found = found || strings.Contains(line, phase) && strings.Contains(line, `"outcome":"wouldBlock"`)
		}
		if !found {
			t.Errorf("no wouldBlock decision recorded for %s:\n%s", phase, log)
		}
	}
	if strings.Contains(log, "bluebird") {
		t.Errorf("the decision log holds content:\n%s", log)
	}
}

// What the server cannot read is a recorded failure, answered as the guard answers it:
// never a crash, never the unjudged content.
func TestMalformed(t *testing.T) {
	t.Run("request body", func(t *testing.T) {
		h := newHarness(t, blockPolicy)
		body := []byte(`{"model":"gpt-test","messages":[{"role":"user","content":`)
		res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body})
		g := h.guard("/v1/chat/completions", nil, body, nil, "application/json")
		if res.immediate == nil || int(res.immediate.GetStatus().GetCode()) != g.status || !bytes.Equal(res.immediate.GetBody(), g.body) {
			t.Fatalf("answered %v, the guard %d %s", res.immediate, g.status, g.body)
		}
		if !strings.Contains(h.metrics(), `guard_requests_total{family="chat/completions",outcome="refused"} 1`) {
			t.Errorf("not counted:\n%s", h.metrics())
		}
	})
	t.Run("whole answer", func(t *testing.T) {
		h := newHarness(t, blockPolicy, "bluebird")
		body := chatBody("Hello", false)
		answer := []byte(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"bluebird`)
		res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body, chunks: [][]byte{answer}})
		g := h.guard("/v1/chat/completions", nil, body, answer, "application/json")
		if res.immediate == nil || res.where != "response body" {
			t.Fatalf("not refused at the response body: %v at %q; client got %s", res.immediate, res.where, res.client)
		}
		if int(res.immediate.GetStatus().GetCode()) != g.status || g.status != http.StatusInternalServerError ||
			!bytes.Equal(res.immediate.GetBody(), g.body) {
			t.Errorf("answered %d %s, the guard %d %s", res.immediate.GetStatus().GetCode(), res.immediate.GetBody(), g.status, g.body)
		}
		if !strings.Contains(h.metrics(), `guard_requests_total{family="chat/completions",outcome="failed"} 1`) {
			t.Errorf("the failure is not counted:\n%s", h.metrics())
		}
	})
	t.Run("stream", func(t *testing.T) {
		h := newHarness(t, blockPolicy, "bluebird")
		body := chatBody("Hello", true)
		answer := []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi \"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bluebird\"\n\n" +
			"data: [DONE]\n\n")
		for k := 1; k < len(answer); k++ {
			res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body,
				contentType: "text/event-stream", chunks: [][]byte{answer[:k], answer[k:]}})
			if bytes.Contains(res.client, []byte("bluebird")) || !bytes.Contains(res.client, []byte("policy_evaluation_failed")) {
				t.Fatalf("cut %d: the client receives\n%s", k, res.client)
			}
		}
		g := h.guard("/v1/chat/completions", nil, body, answer, "text/event-stream")
		res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body,
			contentType: "text/event-stream", chunks: [][]byte{answer}})
		if !bytes.Equal(res.client, g.body) {
			t.Errorf("the client receives\n%s\nthe guard's\n%s", res.client, g.body)
		}
		if !strings.Contains(h.metrics(), `guard_streams_aborted_total{reason="upstream_malformed"}`) {
			t.Errorf("the failure is not counted:\n%s", h.metrics())
		}
	})
	t.Run("stream cut inside an event", func(t *testing.T) {
		h := newHarness(t, blockPolicy)
		answer := []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
			"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"there\"}}]}\n")
		res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: chatBody("Hello", true),
			contentType: "text/event-stream", chunks: [][]byte{answer}})
		if bytes.Contains(res.client, []byte("there")) || !bytes.Contains(res.client, []byte("policy_evaluation_failed")) {
			t.Fatalf("the client receives\n%s", res.client)
		}
	})
}

// failingPolicy judges prompts with a webhook classifier nobody answers.
const failingPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: hook}
spec:
  webhook: {url: "http://127.0.0.1:1/classify"}
  categories: [{id: risky}]
  timeout: 1s
  retries: 0
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: hooked}
spec:
  mode: Enforce
  classifierRef: {name: hook}
  phases: [Input]
  threshold: 0.5
  action: Block
  reason: Refused.
  failurePolicy: FAILURE
`

// An evaluation that fails follows the guardrail's failure policy: Closed refuses with
// the guard's failure (500 policy_evaluation_failed), Open lets the request go and
// records that it was not inspected.
func TestEvaluationFailure(t *testing.T) {
	body := chatBody("Please summarise this secret memo.", false)
	t.Run("Closed", func(t *testing.T) {
		h := newHarness(t, strings.Replace(failingPolicy, "FAILURE", "Closed", 1), "secret memo")
		res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body})
		g := h.guard("/v1/chat/completions", nil, body, nil, "application/json")
		if res.immediate == nil || int(res.immediate.GetStatus().GetCode()) != http.StatusInternalServerError ||
			!bytes.Equal(res.immediate.GetBody(), g.body) {
			t.Fatalf("answered %v, the guard %d %s", res.immediate, g.status, g.body)
		}
		if !strings.Contains(h.decisions.String(), `"outcome":"failed"`) {
			t.Errorf("no failed decision recorded:\n%s", h.decisions.String())
		}
	})
	t.Run("Open", func(t *testing.T) {
		h := newHarness(t, strings.Replace(failingPolicy, "FAILURE", "Open", 1), "secret memo")
		answer, ct := upstreamAnswer(t, "/v1/chat/completions", body, fakeprovider.Reply("Done."))
		res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body, contentType: ct, chunks: [][]byte{answer}})
		if res.immediate != nil || !bytes.Equal(res.upstream, body) || !bytes.Equal(res.client, answer) {
			t.Fatalf("Open did not let the request go unchanged: %v", res.immediate)
		}
		if !strings.Contains(h.decisions.String(), `"outcome":"notInspected"`) {
			t.Errorf("no notInspected decision recorded:\n%s", h.decisions.String())
		}
	})
}

// Routes are the guard's: GET passes (and its answer is not sent to the server), an
// unknown POST is refused with 404, a stored answer (judged by the guard, not here) is
// refused, a dot segment is refused, a Gemini stream not asked for as SSE is refused;
// without a policy guarded routes get 503.
func TestRoutes(t *testing.T) {
	h := newHarness(t, blockPolicy)
	res := h.exchange(call{method: http.MethodGet, path: "/v1/models", chunks: [][]byte{[]byte(`{"data":[]}`)}})
	if res.immediate != nil || string(res.client) != `{"data":[]}` {
		t.Errorf("GET /v1/models: %v %s", res.immediate, res.client)
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, "/v1/files", http.StatusNotFound},
		{http.MethodGet, "/v1/responses/resp_123", http.StatusBadRequest},
		{http.MethodGet, "/v1/../admin", http.StatusBadRequest},
		{http.MethodPost, "/v1beta/models/gemini-test:streamGenerateContent", http.StatusBadRequest}, // no alt=sse
	} {
		res := h.exchange(call{method: tc.method, path: tc.path, body: map[bool][]byte{true: []byte("{}")}[tc.method == http.MethodPost]})
		if res.immediate == nil || int(res.immediate.GetStatus().GetCode()) != tc.status {
			t.Errorf("%s %s: %v, want %d", tc.method, tc.path, res.immediate, tc.status)
		}
	}
	empty := New(Config{Policy: proxy.New(proxy.Config{Log: slog.New(slog.DiscardHandler)})})
	client := serve(t, empty)
	h2 := &harness{t: t, client: client, srv: empty, tel: empty.cfg.Telemetry}
	res = h2.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: chatBody("hi", false)})
	if res.immediate == nil || res.immediate.GetStatus().GetCode() != http.StatusServiceUnavailable {
		t.Errorf("without a policy: %v", res.immediate)
	}
}

// A filter whose modes keep the request body or the answer from the server is refused,
// fail closed, when Envoy says so in the protocol configuration.
func TestMisconfiguredFilterFailsClosed(t *testing.T) {
	h := newHarness(t, blockPolicy)
	for _, pc := range []*extprocv3.ProtocolConfiguration{
		{RequestBodyMode: filterv3.ProcessingMode_NONE, ResponseBodyMode: filterv3.ProcessingMode_STREAMED},
		{RequestBodyMode: filterv3.ProcessingMode_BUFFERED_PARTIAL, ResponseBodyMode: filterv3.ProcessingMode_STREAMED},
		{RequestBodyMode: filterv3.ProcessingMode_BUFFERED, ResponseBodyMode: filterv3.ProcessingMode_NONE},
		{RequestBodyMode: filterv3.ProcessingMode_BUFFERED, ResponseBodyMode: filterv3.ProcessingMode_FULL_DUPLEX_STREAMED},
	} {
		res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: chatBody("hi", false), protocol: pc})
		if res.immediate == nil || res.where != "request headers" || res.immediate.GetStatus().GetCode() != http.StatusInternalServerError {
			t.Errorf("%v: %v at %q", pc, res.immediate, res.where)
		}
	}
	res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: chatBody("hi", false),
		protocol: &extprocv3.ProtocolConfiguration{RequestBodyMode: filterv3.ProcessingMode_BUFFERED, ResponseBodyMode: filterv3.ProcessingMode_STREAMED},
		chunks:   [][]byte{[]byte(`{}`)}})
	if res.where == "request headers" {
		t.Errorf("the documented configuration was refused")
	}
}

// The answer must come uncompressed to be judged: accept-encoding is removed from a
// guarded request, and a compressed answer is a failure, never passed unjudged.
func TestCompression(t *testing.T) {
	h := newHarness(t, blockPolicy, "bluebird")
	body := chatBody("Hello", false)
	stream, err := h.client.Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	send := func(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: hdr(":method", "POST", ":path", "/v1/chat/completions", "accept-encoding", "gzip, br")}}})
	if !headerRemoved([]*extprocv3.HeaderMutation{resp.GetRequestHeaders().GetResponse().GetHeaderMutation()}, "accept-encoding") {
		t.Error("accept-encoding is not removed from a guarded request")
	}
	send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}})
	resp = send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: hdr(":status", "200", "content-type", "application/json", "content-encoding", "gzip")}}})
	if ir := resp.GetImmediateResponse(); ir == nil || ir.GetStatus().GetCode() != http.StatusInternalServerError {
		t.Errorf("a compressed answer was not refused: %v", resp)
	}
	_ = stream.CloseSend()
}

// A filter in observability mode ignores answers: the server sends none, judges nothing
// (no record claims a block that never happened), and says so in its log once.
func TestObservabilityModeIsNotJudged(t *testing.T) {
	h := newHarness(t, blockPolicy, "bluebird")
	for range 2 {
		stream, err := h.client.Process(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		body := chatBody("Tell me about bluebird.", false)
		for _, req := range []*extprocv3.ProcessingRequest{
			{ObservabilityMode: true, Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
				Headers: hdr(":method", "POST", ":path", "/v1/chat/completions")}}},
			{ObservabilityMode: true, Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
		} {
			if err := stream.Send(req); err != nil {
				t.Fatal(err)
			}
		}
		_ = stream.CloseSend()
		if resp, err := stream.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("answered in observability mode: %v %v", resp, err)
		}
	}
	if n := strings.Count(h.logs.String(), "in observability_mode calls"); n != 1 {
		t.Errorf("logged %d times:\n%s", n, h.logs.String())
	}
	if strings.Contains(h.decisions.String(), `"outcome"`) {
		t.Errorf("decisions recorded:\n%s", h.decisions.String())
	}
}

// answerText is the answer text of a chat answer, streamed or not.
func answerText(t *testing.T, b []byte, stream bool) string {
	t.Helper()
	if stream {
		return streamedText(t, b)
	}
	var v struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Choices) == 0 {
		t.Fatalf("not a chat completion (%v): %s", err, b)
	}
	return v.Choices[0].Message.Content
}

// pseudonymizePolicy masks personal data for the provider and restores it in answers.
const pseudonymizePolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: personal-data}
spec:
  builtin:
    packs: [pii]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: pseudonymize-personal-data}
spec:
  mode: Enforce
  classifierRef: {name: personal-data}
  phases: [Input, ToolResults]
  threshold: 1
  action: Pseudonymize
  reason: Personal data could not be masked.
`

// A Gemini input-only call (countTokens) is judged on input, its answer passed as it is,
// and counted under its method, as the guard does.
func TestGeminiInputOnly(t *testing.T) {
	h := newHarness(t, redactPolicy, email)
	path := "/v1beta/models/gemini-test:countTokens"
	body := geminiBody("Count this: " + email)
	answer, ct := upstreamAnswer(t, path, body, fakeprovider.Script{})
	res := h.exchange(call{method: http.MethodPost, path: path, body: body, contentType: ct, chunks: [][]byte{answer}})
	if res.immediate != nil {
		t.Fatalf("refused at %s: %s", res.where, res.immediate.GetBody())
	}
	g := h.guard(path, nil, body, answer, ct)
	if !bytes.Equal(res.upstream, g.upstream) || bytes.Contains(res.upstream, []byte(email)) {
		t.Errorf("the provider receives\n%s\nthe guard's\n%s", res.upstream, g.upstream)
	}
	if !bytes.Equal(res.client, answer) || !bytes.Equal(res.client, g.body) {
		t.Errorf("the answer was changed: %s (the guard's %s)", res.client, g.body)
	}
	if !strings.Contains(h.metrics(), `guard_requests_total{family="countTokens",outcome="allowed"} 1`) {
		t.Errorf("not counted under its method:\n%s", h.metrics())
	}
}

// Pseudonymize: the provider receives a placeholder, and the client's answer, streamed
// (cut at every byte) or whole, has the value back, as the guard restores it.
func TestPseudonymizeRestoresInAnswers(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[stream], func(t *testing.T) {
			h := newHarness(t, pseudonymizePolicy, email)
			body := chatBody("Write a note to "+email+" about lunch.", stream)
			script := fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Chunks("Dear <EMAIL_1>, lunch is at noon.", 4)}}}
			answer, ct := upstreamAnswer(t, "/v1/chat/completions", body, script)
			g := h.guard("/v1/chat/completions", nil, body, answer, ct)
			if !bytes.Contains(g.upstream, []byte("<EMAIL_1>")) || bytes.Contains(g.upstream, []byte(email)) {
				t.Fatalf("the guard sent the provider %s", g.upstream)
			}
			cuts := [][][]byte{{answer}}
			if stream {
				cuts = splits(answer)
			}
			for i, chunks := range cuts {
				res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body, contentType: ct, chunks: chunks})
				if res.immediate != nil {
					t.Fatalf("refused at %s", res.where)
				}
				if !bytes.Equal(res.upstream, g.upstream) {
					t.Fatalf("the provider receives\n%s\nthe guard's\n%s", res.upstream, g.upstream)
				}
				if !bytes.Equal(res.client, g.body) {
					t.Fatalf("cut %d: the client receives\n%s\nthe guard's\n%s", i, res.client, g.body)
				}
				if i == 0 && !strings.Contains(answerText(t, res.client, stream), "Dear "+email+",") {
					t.Fatalf("the value is not restored: %s", res.client)
				}
			}
		})
	}
}

// Answers whose headers the filter does not send (response_header_mode SKIP) are not
// passed: the server cannot tell how to judge them.
func TestAnswerWithoutHeadersFailsClosed(t *testing.T) {
	h := newHarness(t, blockPolicy, "bluebird")
	stream, err := h.client.Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	body := chatBody("Hello", false)
	var last *extprocv3.ProcessingResponse
	for _, req := range []*extprocv3.ProcessingRequest{
		{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: hdr(":method", "POST", ":path", "/v1/chat/completions")}}},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
		{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
			Body: []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"bluebird"}}]}`), EndOfStream: true}}},
	} {
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		if last, err = stream.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	_ = stream.CloseSend()
	if ir := last.GetImmediateResponse(); ir == nil || ir.GetStatus().GetCode() != http.StatusInternalServerError {
		t.Fatalf("an answer without headers was answered %v", last)
	}
}

// Many requests at once through one server: each gets its own session and the guard's
// answer.
func TestConcurrentStreams(t *testing.T) {
	h := newHarness(t, redactPolicy, email)
	body := chatBody("Where do I write?", true)
	answer, ct := upstreamAnswer(t, "/v1/chat/completions", body, fakeprovider.Script{Choices: []fakeprovider.Choice{
		{Deltas: fakeprovider.Chunks("Write to "+email+" today, or call.", 3)}}})
	g := h.guard("/v1/chat/completions", nil, body, answer, ct)
	cuts := splits(answer)
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			for i := w; i < len(cuts); i += 8 {
				res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: body, contentType: ct, chunks: cuts[i]})
				if !bytes.Equal(res.client, g.body) {
					errs <- errors.New("cut " + strconv.Itoa(i) + ": the client receives " + string(res.client))
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A panic while a message is handled fails that stream only (Envoy then refuses the
// request), is logged without content, and the server goes on serving.
func TestAPanicFailsTheStreamNotTheServer(t *testing.T) {
	h := newHarness(t, blockPolicy, "bluebird")
	h.srv.beforeMessage = func(req *extprocv3.ProcessingRequest) {
		if b := req.GetRequestBody().GetBody(); bytes.Contains(b, []byte("panic please")) {
			panic("a bug, with content: " + string(b))
		}
	}
	stream, err := h.client.Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range []*extprocv3.ProcessingRequest{
		{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: hdr(":method", "POST", ":path", "/v1/chat/completions")}}},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
			Body: chatBody("bluebird panic please", false), EndOfStream: true}}},
	} {
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		_, err := stream.Recv()
		if i == 0 && err != nil {
			t.Fatal(err)
		}
		if i == 1 && (err == nil || !strings.Contains(err.Error(), "Internal")) {
			t.Fatalf("the stream did not fail: %v", err)
		}
	}
	if !strings.Contains(h.logs.String(), "internal error") {
		t.Errorf("not logged:\n%s", h.logs.String())
	}
	res := h.exchange(call{method: http.MethodPost, path: "/v1/chat/completions", body: chatBody("bluebird again", false)})
	if res.immediate == nil || res.immediate.GetStatus().GetCode() != http.StatusBadRequest {
		t.Errorf("the server does not serve after a panic: %v", res.immediate)
	}
}

// With request_body_mode STREAMED the request's chunks are withheld until the last, which
// carries the whole judged body; content-length is removed, since the headers go upstream
// before the body is judged.
func TestRequestBodyStreamedByEnvoy(t *testing.T) {
	h := newHarness(t, redactPolicy, email)
	body := chatBody("Please write to "+email+" about it.", false)
	g := h.guard("/v1/chat/completions", nil, body, []byte(`{}`), "application/json")
	stream, err := h.client.Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	send := func(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := send(&extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: filterv3.ProcessingMode_STREAMED, ResponseBodyMode: filterv3.ProcessingMode_STREAMED},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: hdr(":method", "POST", ":path", "/v1/chat/completions", "content-length", strconv.Itoa(len(body)))}}})
	if !headerRemoved([]*extprocv3.HeaderMutation{resp.GetRequestHeaders().GetResponse().GetHeaderMutation()}, "content-length") {
		t.Error("content-length is not removed from a request whose body is judged after its headers left")
	}
	var upstream []byte
	for i := 0; i < len(body); i += 10 {
		end := min(i+10, len(body))
		resp := send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
			Body: body[i:end], EndOfStream: end == len(body)}}})
		out := mutate(body[i:end], resp.GetRequestBody().GetResponse().GetBodyMutation())
		if end < len(body) && len(out) > 0 {
			t.Fatalf("chunk at %d went upstream before the body was judged: %q", i, out)
		}
		if _, ok := headerSet([]*extprocv3.HeaderMutation{resp.GetRequestBody().GetResponse().GetHeaderMutation()}, "content-length"); ok {
			t.Error("content-length set on a streamed body")
		}
		upstream = append(upstream, out...)
	}
	_ = stream.CloseSend()
	if !bytes.Equal(upstream, g.upstream) {
		t.Fatalf("the provider receives\n%s\nthe guard's\n%s", upstream, g.upstream)
	}
}
