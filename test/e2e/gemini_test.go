package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The Gemini API through the guard binary (issue 44), with the official Gemini
// JavaScript SDK (@google/genai, test/e2e/sdkjs/gemini.mjs) as the app, streamed
// (generateContentStream: :streamGenerateContent?alt=sse) and not: allowed text arrives
// intact, a redacted email split at every point across streamed chunks never reaches the
// SDK, a blocked prompt is an ApiError with status 400, and a blocked answer ends with
// the reason as text and finishReason SAFETY.

const (
	geminiKey    = "AIzaSyE2EFakeGeminiKeyForTheGuard0000"
	geminiEmail  = "ana.lima@example.org"
	geminiReason = "Project Bluebird is not discussed here."
)

const geminiPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: pii}
spec:
  builtin:
    packs: [pii]
---
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words}
spec:
  builtin:
    keywords: [{category: secret-project, words: [bluebird]}]
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
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: no-bluebird}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input, Stream, Output]
  threshold: 0.5
  action: Block
  reason: ` + geminiReason + `
`

// geminiScript answers by the prompt: "email N" is an answer with an email split at byte
// N between two chunks, "project" one that names Bluebird split across chunks, anything
// else a greeting.
func geminiScript(r *fakeprovider.Request) fakeprovider.Script {
	body := string(r.Body)
	if _, rest, ok := strings.Cut(body, "email "); ok {
		n, _ := strconv.Atoi(strings.TrimRightFunc(rest[:min(3, len(rest))], func(c rune) bool { return c < '0' || c > '9' }))
		n = min(max(n, 1), len(geminiEmail)-1)
		return fakeprovider.Reply("Sure, write to ", geminiEmail[:n], geminiEmail[n:]+" and", " ask for Ana.")
	}
	if strings.Contains(body, "project") {
		return fakeprovider.Reply("The project is called ", "blue", "bird and it", " ships soon.")
	}
	return fakeprovider.Reply("Hello from ", "Gemini.")
}

// geminiCall is a line of gemini.mjs.
type geminiCall struct {
	Prompt        string   `json:"prompt"`
	Stream        bool     `json:"stream"`
	Text          string   `json:"text"`
	Chunks        []string `json:"chunks"`
	FinishReason  string   `json:"finishReason"`
	FinishMessage string   `json:"finishMessage"`
	PromptTokens  int      `json:"promptTokens"`
	OutputTokens  int      `json:"outputTokens"`
	Error         *struct {
		Name    string `json:"name"`
		Status  int    `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *geminiCall) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

func TestGeminiWithTheJavaScriptSDK(t *testing.T) {
	installNodeDeps(t, sdkJSDir, "@google/genai/package.json")
	prov := fakeprovider.New(fakeprovider.WithKeys(geminiKey), fakeprovider.WithHandler(geminiScript))
	t.Cleanup(prov.Close)
	g := startGuard(t, geminiPolicy, upstream(prov.URL), flags("--gemini-upstream", prov.URL))

	prompts := []string{"Say hello.", "Which project is it?", "Tell me about bluebird."}
	for n := 1; n < len(geminiEmail); n++ {
		prompts = append(prompts, fmt.Sprintf("email %d", n))
	}
	out := runNodeApp(t, sdkJSDir, nil, append([]string{"gemini.mjs", g.URL, geminiKey, "gemini-2.5-flash"}, prompts...)...)
	var calls []geminiCall
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c geminiCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("the app printed %q", sc.Text())
		}
		calls = append(calls, c)
	}
	if len(calls) != 2*len(prompts) {
		t.Fatalf("the app made %d calls, want %d:\n%s", len(calls), 2*len(prompts), out)
	}
	for i := range calls {
		c := &calls[i]
		switch {
		case c.Prompt == "Say hello.":
			if c.Error != nil || c.Text != "Hello from Gemini." || c.FinishReason != "STOP" || c.OutputTokens == 0 || c.PromptTokens == 0 {
				t.Errorf("allowed: %s", c)
			}
			if c.Stream && len(c.Chunks) < 2 {
				t.Errorf("allowed: the stream came in %d chunks: %s", len(c.Chunks), c)
			}
		case c.Prompt == "Which project is it?":
			// The guard also sends the reason as finishMessage, which @google/genai keeps for
			// Vertex AI only: the SDK surfaces the reason as the text and SAFETY.
			if c.Error != nil || c.FinishReason != "SAFETY" ||
				!strings.HasSuffix(c.Text, geminiReason) || strings.Contains(c.Text, "blue") || strings.Contains(c.Text, "ships") {
				t.Errorf("blocked answer: %s", c)
			}
		case strings.Contains(c.Prompt, "bluebird"):
			if c.Error == nil || c.Error.Status != 400 || !strings.Contains(c.Error.Message, geminiReason) ||
				!strings.Contains(c.Error.Message, "INVALID_ARGUMENT") {
				t.Errorf("blocked prompt: %s", c)
			}
		default: // email N
			if c.Error != nil || !strings.HasPrefix(c.Text, "Sure, write to [REDACTED") || !strings.HasSuffix(c.Text, " and ask for Ana.") ||
				c.FinishReason != "STOP" {
				t.Errorf("redacted: %s", c)
			}
			for _, piece := range []string{"ana.", "lima", "@ex", "example", ".org"} {
				for _, chunk := range append(c.Chunks, c.Text) {
					if strings.Contains(chunk, piece) {
						t.Errorf("redacted: %q reached the SDK: %s", piece, c)
					}
				}
			}
		}
	}
	// The blocked prompt never reached the provider; every call that did carried the key.
	if seen := prov.KeysSeen(); seen[geminiKey] != 2*(len(prompts)-1) || len(seen) != 1 {
		t.Errorf("the provider saw keys %v, want %d calls with the app's key", seen, 2*(len(prompts)-1))
	}
	if logs := g.logs(); strings.Contains(logs, geminiKey) || strings.Contains(logs, geminiEmail) {
		t.Errorf("the guard's log holds the key or the email:\n%s", logs)
	}
}

// geminiInputPolicy redacts personal data in every message of a prompt and blocks
// Bluebird in prompts.
const geminiInputPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: pii}
spec:
  builtin:
    packs: [pii]
---
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words}
spec:
  builtin:
    keywords: [{category: secret-project, words: [bluebird]}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: redact-pii}
spec:
  mode: Enforce
  classifierRef: {name: pii}
  phases: [Input]
  messages: All
  threshold: 0.5
  action: Redact
  reason: Personal data is not shared.
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: no-bluebird}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input]
  threshold: 0.5
  action: Block
  reason: ` + geminiReason + `
`

// geminiInputCall is a line of gemini.mjs --input.
type geminiInputCall struct {
	Prompt      string `json:"prompt"`
	Method      string `json:"method"`
	TotalTokens int    `json:"totalTokens"`
	Embeddings  int    `json:"embeddings"`
	Values      int    `json:"values"`
	Error       *struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

// countTokens and embedContent of @google/genai through the guard binary, the SDK pointed
// at the guard by GOOGLE_GEMINI_BASE_URL alone (the variable the injector sets): a prompt
// naming Bluebird is an ApiError with status 400 and never reaches the provider, an email
// reaches it redacted, and the count and the embeddings come back as the provider sent
// them (the SDK sends embedContent as batchEmbedContents, the prompt the first of two).
func TestGeminiCountTokensAndEmbedContentWithTheJavaScriptSDK(t *testing.T) {
	installNodeDeps(t, sdkJSDir, "@google/genai/package.json")
	prov := fakeprovider.New(fakeprovider.WithKeys(geminiKey))
	t.Cleanup(prov.Close)
	g := startGuard(t, geminiInputPolicy, upstream(prov.URL), flags("--gemini-upstream", prov.URL))

	prompts := []string{"Say hello.", "Tell me about bluebird.", "Write to " + geminiEmail + " today."}
	out := runNodeApp(t, sdkJSDir, []string{"GOOGLE_GEMINI_BASE_URL=" + g.URL},
		append([]string{"gemini.mjs", "--input", geminiKey, "gemini-2.5-flash", "gemini-embedding-001"}, prompts...)...)
	var calls []geminiInputCall
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var c geminiInputCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("the app printed %q", line)
		}
		calls = append(calls, c)
	}
	if len(calls) != 2*len(prompts) {
		t.Fatalf("the app made %d calls, want %d:\n%s", len(calls), 2*len(prompts), out)
	}
	for _, c := range calls {
		blocked := strings.Contains(c.Prompt, "bluebird")
		switch {
		case blocked && (c.Error == nil || c.Error.Status != 400 || !strings.Contains(c.Error.Message, geminiReason) ||
			!strings.Contains(c.Error.Message, "INVALID_ARGUMENT")):
			t.Errorf("blocked: %+v", c)
		case !blocked && c.Error != nil:
			t.Errorf("allowed: %+v", c)
		case !blocked && c.Method == "countTokens" && c.TotalTokens == 0:
			t.Errorf("countTokens counted nothing: %+v", c)
		case !blocked && c.Method == "embedContent" && (c.Embeddings != 2 || c.Values == 0):
			t.Errorf("embedContent: %+v", c)
		}
	}
	paths, redacted := map[string]int{}, 0
	for _, r := range prov.Requests() {
		paths[r.Path]++
		if strings.Contains(string(r.Body), "[REDACTED:email]") {
			redacted++
		}
		if strings.Contains(string(r.Body), "bluebird") || strings.Contains(string(r.Body), geminiEmail) {
			t.Errorf("the provider received %s %s", r.Path, r.Body)
		}
	}
	if paths["/v1beta/models/gemini-2.5-flash:countTokens"] != 2 || paths["/v1beta/models/gemini-embedding-001:batchEmbedContents"] != 2 {
		t.Errorf("the provider was called on %v", paths)
	}
	if redacted != 2 {
		t.Errorf("%d calls reached the provider with the email redacted, want 2 (countTokens and embedContent)", redacted)
	}
	if logs := g.logs(); strings.Contains(logs, geminiKey) || strings.Contains(logs, geminiEmail) {
		t.Errorf("the guard's log holds the key or the email:\n%s", logs)
	}
}
