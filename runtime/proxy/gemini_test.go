package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

const (
	geminiStreamPath = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	geminiPath       = "/v1beta/models/gemini-2.5-flash:generateContent"
	geminiPrompt     = `{"contents":[{"role":"user","parts":[{"text":"Who do I write to?"}]}]}`
)

// geminiRaw builds a Gemini stream as the API sends it (CRLF-separated data-only events,
// usageMetadata on every chunk, finishReason and the whole usage on the last).
func geminiRaw(parts []string, finish string) []byte {
	var b bytes.Buffer
	for i, p := range parts {
		text, _ := json.Marshal(p)
		fin := ""
		if i == len(parts)-1 {
			fin = `,"finishReason":"` + finish + `"`
		}
		fmt.Fprintf(&b, `data: {"candidates": [{"content": {"parts": [{"text": %s}],"role": "model"}%s,"index": 0}],`+
			`"usageMetadata": {"promptTokenCount": 7,"candidatesTokenCount": %d,"totalTokenCount": %d},`+
			`"modelVersion": "gemini-2.5-flash","responseId": "mWs3aPKzJ9mNz7IPxLal2Ag"}`+"\r\n\r\n", text, fin, i+1, i+8)
	}
	return b.Bytes()
}

// geminiChunks reads a Gemini stream as @google/genai does: each data line's
// GenerateContentResponse.
type geminiChunkView struct {
	Candidates []struct {
		Content *struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason  string `json:"finishReason"`
		FinishMessage string `json:"finishMessage"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
	} `json:"usageMetadata"`
	Error *struct {
		Code   int    `json:"code"`
		Status string `json:"status"`
	} `json:"error"`
}

func geminiChunks(t *testing.T, body []byte) []geminiChunkView {
	t.Helper()
	var out []geminiChunkView
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var c geminiChunkView
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, c)
	}
	return out
}

// geminiText is the text a client accumulates, and the last finishReason and message.
func geminiText(chunks []geminiChunkView) (text, finish, message string) {
	var b strings.Builder
	for _, c := range chunks {
		for _, cand := range c.Candidates {
			if cand.Content != nil {
				for _, p := range cand.Content.Parts {
					b.WriteString(p.Text)
				}
			}
			if cand.FinishReason != "" {
				finish, message = cand.FinishReason, cand.FinishMessage
			}
		}
	}
	return b.String(), finish, message
}

// An email split between two streamed chunks at every point reaches the client redacted,
// the text around it intact, and the stream ends with the provider's finishReason and
// usage.
func TestGeminiStreamRedactsAnEmailSplitAnywhere(t *testing.T) {
	const email = "ana.lima@example.org"
	h := newHarness(t, redactPolicy)
	for split := 1; split < len(email); split++ {
		parts := []string{"Sure", ", write", " to", " " + email[:split], email[split:] + " and", " ask", " for", " Ana", "."}
		h.p.Enqueue(fakeprovider.Script{Raw: geminiRaw(parts, "STOP")})
		resp, body := h.post(t, geminiStreamPath, geminiPrompt)
		name := fmt.Sprintf("split at %d", split)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", name, resp.StatusCode, body)
		}
		if strings.Contains(string(body), "example.org") || strings.Contains(string(body), "ana.lima") {
			t.Fatalf("%s: part of the email reached the client: %q", name, body)
		}
		chunks := geminiChunks(t, body)
		got, finish, _ := geminiText(chunks)
		if !strings.HasPrefix(got, "Sure, write to [REDACTED") || !strings.HasSuffix(got, " and ask for Ana.") || finish != "STOP" {
			t.Fatalf("%s: the client accumulated %q, finish %q", name, got, finish)
		}
		last := chunks[len(chunks)-1]
		if last.UsageMetadata == nil || last.UsageMetadata.CandidatesTokenCount != len(parts) {
			t.Fatalf("%s: the last chunk's usage is %+v", name, last.UsageMetadata)
		}
	}
}

// A blocked word split at every point never reaches the client: the stream ends with the
// reason as text and finishReason SAFETY, the reason as finishMessage.
func TestGeminiStreamBlockSplitAnywhere(t *testing.T) {
	const word = "bluebird"
	h := newHarness(t, streamPolicy)
	for split := 1; split < len(word); split++ {
		parts := []string{"The project", " is called ", word[:split], word[split:], " and it ships", " soon."}
		h.p.Enqueue(fakeprovider.Script{Raw: geminiRaw(parts, "STOP")})
		resp, body := h.post(t, geminiStreamPath, geminiPrompt)
		name := fmt.Sprintf("split at %d", split)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", name, resp.StatusCode, body)
		}
		if strings.Contains(string(body), word[:max(split, 3)]) && split >= 3 || strings.Contains(string(body), word) {
			t.Fatalf("%s: part of the word reached the client: %q", name, body)
		}
		got, finish, msg := geminiText(geminiChunks(t, body))
		const reason = "Project Bluebird is not discussed here."
		if finish != "SAFETY" || msg != reason || !strings.HasSuffix(got, reason) || strings.Contains(got, "ships") {
			t.Fatalf("%s: the client accumulated %q, finish %q (%q)", name, got, finish, msg)
		}
	}
}

// Not streamed: an answer is redacted in place, a blocked one replaced by the reason with
// finishReason SAFETY, and a blocked prompt answered in Google's error shape, never sent.
func TestGeminiGenerateContent(t *testing.T) {
	t.Run("redacted", func(t *testing.T) {
		h := newHarness(t, redactPolicy)
		h.p.Enqueue(fakeprovider.Reply("Write to ", "ana.lima@example.org", " today."))
		resp, body := h.post(t, geminiPath, geminiPrompt)
		var r geminiChunkView
		if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		got, finish, _ := geminiText([]geminiChunkView{r})
		if strings.Contains(string(body), "example.org") || !strings.HasPrefix(got, "Write to [REDACTED") ||
			!strings.HasSuffix(got, " today.") || finish != "STOP" || r.UsageMetadata == nil {
			t.Fatalf("got %s", body)
		}
	})
	t.Run("blocked answer", func(t *testing.T) {
		h := newHarness(t, streamPolicy)
		h.p.Enqueue(fakeprovider.Reply("It is ", "bluebird", "."))
		resp, body := h.post(t, geminiPath, geminiPrompt)
		var r geminiChunkView
		if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		got, finish, msg := geminiText([]geminiChunkView{r})
		if strings.Contains(string(body), "It is") || got != "Project Bluebird is not discussed here." || finish != "SAFETY" || msg != got {
			t.Fatalf("got %s", body)
		}
	})
	for _, path := range []string{geminiPath, geminiStreamPath} {
		t.Run("blocked prompt "+path, func(t *testing.T) {
			h := newHarness(t, inputPolicy)
			resp, body := h.post(t, path, `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"parts":[{"text":"Hi"}]},{"role":"model","parts":[{"text":"Hello"}]},{"role":"user","parts":[{"text":"Talk about "},{"text":"bluebird."}]}]}`)
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Status  string `json:"status"`
					Details []struct {
						Type     string            `json:"@type"`
						Reason   string            `json:"reason"`
						Metadata map[string]string `json:"metadata"`
					} `json:"details"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusBadRequest ||
				e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" || e.Error.Message != "Project Bluebird is not discussed here." ||
				len(e.Error.Details) != 1 || e.Error.Details[0].Reason != "CONTENT_POLICY_VIOLATION" ||
				e.Error.Details[0].Metadata["guardrail"] == "" || resp.Header.Get("X-Should-Retry") != "false" {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if n := len(h.p.Requests()); n != 0 {
				t.Fatalf("the provider received %d requests", n)
			}
		})
	}
}

// inputRedactPolicy redacts personal data in every message of prompts.
var inputRedactPolicy = strings.Replace(redactPolicy, "phases: [Stream, Output]", "phases: [Input]\n  messages: All", 1)

// A redacted prompt reaches the provider rewritten in place, in either spelling of the
// members; credentials (x-goog-api-key, ?key=) reach it untouched.
func TestGeminiPromptRedactedAndCredentialsPassed(t *testing.T) {
	h := newHarness(t, inputRedactPolicy)
	for _, body := range []string{
		`{"systemInstruction":{"parts":[{"text":"Mail ana.lima@example.org."}]},"contents":[{"role":"user","parts":[{"text":"Hi"},{"text":"ana.lima@example.org"}]}]}`,
		`{"system_instruction":{"parts":[{"text":"Mail ana.lima@example.org."}]},"contents":[{"role":"user","parts":[{"text":"Hi"},{"text":"ana.lima@example.org"}]}]}`,
	} {
		resp, out := h.post(t, geminiPath+"?key=AIzaSyFakeKeyForTheGuardTests0000000", body, "X-Goog-Api-Key", "AIzaSyFakeHeaderKey000000000000000000")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, out)
		}
		got, ok := h.p.LastRequest()
		if !ok || strings.Contains(string(got.Body), "example.org") || !strings.Contains(string(got.Body), "[REDACTED") {
			t.Fatalf("the provider received %s", got.Body)
		}
		if got.Header.Get("X-Goog-Api-Key") != "AIzaSyFakeHeaderKey000000000000000000" {
			t.Fatalf("the provider received headers %v", got.Header)
		}
	}
	if seen := h.p.KeysSeen(); seen["AIzaSyFakeKeyForTheGuardTests0000000"] != 2 {
		t.Fatalf("the provider saw keys %v", seen)
	}
}

// What the guard refuses of Gemini calls: a stream without alt=sse (one JSON array, which
// it does not judge piece by piece), a member named in both spellings.
func TestGeminiRefusals(t *testing.T) {
	h := newHarness(t, inputPolicy)
	for _, c := range []struct{ path, body string }{
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", geminiPrompt},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=json", geminiPrompt},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&alt=json", geminiPrompt},
		{geminiPath, `{"systemInstruction":{"parts":[{"text":"a"}]},"system_instruction":{"parts":[{"text":"bluebird"}]},"contents":[]}`},
		{geminiPath, `{"contents":[{"parts":[{"text":"a","Text":"bluebird"}]}]}`},
	} {
		resp, body := h.post(t, c.path, c.body)
		var e struct {
			Error struct {
				Code   int    `json:"code"`
				Status string `json:"status"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusBadRequest || e.Error.Status != "INVALID_ARGUMENT" {
			t.Errorf("%s %s: status %d: %s", c.path, c.body, resp.StatusCode, body)
		}
	}
	if n := len(h.p.Requests()); n != 0 {
		t.Fatalf("the provider received %d requests", n)
	}
}

// An upstream stream the guard cannot read ends with an error chunk in Google's shape,
// which @google/genai raises as an ApiError.
func TestGeminiMalformedStreamFails(t *testing.T) {
	h := newHarness(t, streamPolicy)
	h.p.Enqueue(fakeprovider.Script{Raw: []byte("data: {\"candidates\": [{\"content\": \"x\"}]}\n\n")})
	_, body := h.post(t, geminiStreamPath, geminiPrompt)
	chunks := geminiChunks(t, body)
	if len(chunks) != 1 || chunks[0].Error == nil || chunks[0].Error.Code != 500 || chunks[0].Error.Status != "INTERNAL" {
		t.Fatalf("got %s", body)
	}
}

// Streamed through the fake provider's own rendering: allowed text arrives byte for byte.
func TestGeminiAllowedStreamIsForwardedUnchanged(t *testing.T) {
	h := newHarness(t, streamPolicy)
	h.p.Enqueue(fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts("Hello", " from", " Gemini.")}}})
	resp, body := h.post(t, geminiStreamPath, geminiPrompt)
	sent := h.p.Responses()
	if resp.StatusCode != http.StatusOK || len(sent) != 1 || !bytes.Equal(body, sent[0].Body) {
		t.Fatalf("status %d: the client received %q, the provider sent %q", resp.StatusCode, body, sent[0].Body)
	}
	if got, finish, _ := geminiText(geminiChunks(t, body)); got != "Hello from Gemini." || finish != "STOP" {
		t.Fatalf("got %q %q", got, finish)
	}
}
