package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// redactPolicy redacts personal data in streamed and whole answers.
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
  phases: [Stream, Output]
  threshold: 0.5
  action: Redact
  reason: Personal data is not shared.
`

// A stream in the bytes OpenAI sends (ids, fingerprint, service tier, and obfuscation
// padding of a different length in every chunk), not the fake provider's rendering: an
// email split between two content chunks at every point reaches the client redacted,
// whatever the chunks' padding, and the text around it intact.
func TestCapturedOpenAIStreamRedactsAnEmailSplitAnywhere(t *testing.T) {
	const head = `data: {"id":"chatcmpl-D0q8CZXN1uEzngZGkU7FuV92lnXWq","object":"chat.completion.chunk","created":1769092764,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_29330a9688","choices":[`
	pads := []string{"ZGF", "lRK2aBv", "kJ", "0wmdEAC", "", "q9", "Xw3kLmN0pQ"}
	chunk := func(i int, choice string) string {
		return head + choice + `],"obfuscation":"` + pads[i%len(pads)] + `"}` + "\n\n"
	}
	text := func(i int, s string) string {
		b, _ := json.Marshal(s)
		return chunk(i, `{"index":0,"delta":{"content":`+string(b)+`},"logprobs":null,"finish_reason":null}`)
	}
	const email = "ana.lima@example.org"
	h := newHarness(t, redactPolicy)
	for split := 1; split < len(email); split++ {
		var raw strings.Builder
		raw.WriteString(chunk(0, `{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`))
		parts := []string{"Sure", ", write", " to", " " + email[:split], email[split:] + " and", " ask", " for", " Ana", "."}
		for i, p := range parts {
			raw.WriteString(text(i+1, p))
		}
		raw.WriteString(chunk(len(parts)+1, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}`))
		raw.WriteString("data: [DONE]\n\n")
		h.p.Enqueue(fakeprovider.Script{Raw: []byte(raw.String())})

		_, body := h.post(t, "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Who do I write to?"}]}`)
		got := accumulate(t, body)
		name := fmt.Sprintf("split at %d", split)
		if strings.Contains(string(body), "example.org") || strings.Contains(string(body), "ana.lima") {
			t.Fatalf("%s: part of the email reached the client: %q", name, got)
		}
		if !strings.HasPrefix(got, "Sure, write to [REDACTED") || !strings.HasSuffix(got, " and ask for Ana.") {
			t.Fatalf("%s: the client accumulated %q", name, got)
		}
	}
}

// accumulate reads a chat stream as the SDKs do: each data line's choices[0].delta.content,
// appended, up to [DONE].
func accumulate(t *testing.T, body []byte) string {
	t.Helper()
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			out.WriteString(ch.Delta.Content)
		}
	}
	return out.String()
}
