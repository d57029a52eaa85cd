package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// A tenant's Pseudonymize masks the app's addresses for the provider and restores them in
// the answer. A ClusterGuardrail that keeps addresses out of answers judges the answer the
// app receives, restored, so that the tenant tier cannot restore what the cluster tier
// blocks or redacts, streamed or not, in every family. Without the ClusterGuardrail the
// addresses are restored as before.

// tenantPseudonymize masks personal data in prompts (the pseudonymize-pii sample).
const tenantPseudonymize = `
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

// clusterNoMail is a platform baseline: no personal data in answers, streamed or not
// (ACTION is Block or Redact). clusterPolicy makes its documents cluster-scoped.
const clusterNoMail = `
---
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: platform-pii}
spec:
  builtin:
    packs: [pii]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: no-personal-data-out}
spec:
  mode: Enforce
  classifierRef: {name: platform-pii}
  phases: [Stream, Output]
  threshold: 0.5
  action: ACTION
  reason: No personal data leaves in answers.
`

const noMailReason = "No personal data leaves in answers."

// clusterPolicy compiles a policy file's text in which the documents named in cluster are
// a ClusterClassifier and a ClusterGuardrail.
func clusterPolicy(t testing.TB, text string, cluster ...string) *policy.Snapshot {
	t.Helper()
	src, err := policysource.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Classifiers {
		if c := &src.Classifiers[i]; slices.Contains(cluster, c.Name) {
			c.Kind, c.Namespace = policy.KindClusterClassifier, ""
		}
	}
	for i := range src.Guardrails {
		if g := &src.Guardrails[i]; slices.Contains(cluster, g.Name) {
			g.Kind, g.Namespace = policy.KindClusterGuardrail, ""
		}
	}
	snap, err := policy.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// pseudoHarness is a proxy enforcing the tenant's Pseudonymize and, when action is set, the
// cluster baseline taking that action.
func pseudoHarness(t *testing.T, action string) *harness {
	t.Helper()
	h := newHarness(t, "")
	text := tenantPseudonymize
	if action != "" {
		text += strings.Replace(clusterNoMail, "ACTION", action, 1)
	}
	snap := clusterPolicy(t, text, "platform-pii", "no-personal-data-out")
	if action != "" && !slices.ContainsFunc(snap.Guardrails, func(g *policy.Guardrail) bool { return g.Cluster && g.Key == "/no-personal-data-out" }) {
		t.Fatalf("the baseline is not a ClusterGuardrail: %+v", snap.Guardrails)
	}
	if err := h.px.Apply(snap); err != nil {
		t.Fatal(err)
	}
	return h
}

const (
	address      = "jane.doe@example.com"
	maskedAnswer = "Sent to <EMAIL_1>. Anything else?"
	restored     = "Sent to " + address + ". Anything else?"
	redacted     = "Sent to [REDACTED:email]. Anything else?"
)

// ask sends a prompt naming the address in family (chat or Anthropic), streamed or not,
// with the provider answering maskedAnswer in small deltas, and checks the provider never
// received the address.
func ask(t *testing.T, h *harness, anthropic, streamed bool) []byte {
	t.Helper()
	h.p.Enqueue(fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Chunks(maskedAnswer, 3)}}})
	path, body, header := "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Mail `+address+` the notes."}]`, []string(nil)
	if anthropic {
		path, body = "/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"Mail `+address+` the notes."}]`
		header = []string{"Anthropic-Version", "2023-06-01"}
	}
	if streamed {
		body += `,"stream":true`
	}
	resp, b := h.post(t, path, body+"}", header...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if got, ok := h.p.LastRequest(); !ok || bytes.Contains(got.Body, []byte(address)) || !bytes.Contains(got.Body, []byte("EMAIL_1")) {
		t.Fatalf("the provider received %s", got.Body)
	}
	return b
}

// answerText returns the answer text the client received: a chat completion's or an
// Anthropic message's, whole or streamed.
func answerText(t *testing.T, b []byte) string {
	t.Helper()
	var out strings.Builder
	add := func(data []byte) {
		var v struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
				Delta   struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Content []struct{ Text string } `json:"content"`
			Delta   struct{ Text string }   `json:"delta"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		for _, c := range v.Choices {
			out.WriteString(c.Message.Content + c.Delta.Content)
		}
		for _, c := range v.Content {
			out.WriteString(c.Text)
		}
		out.WriteString(v.Delta.Text)
	}
	if !bytes.Contains(b, []byte("data: ")) {
		add(b)
		return out.String()
	}
	for _, ev := range sseEvents(b) {
		for _, line := range strings.Split(string(ev), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
				add([]byte(data))
			}
		}
	}
	return out.String()
}

func TestAClusterGuardrailJudgesTheValuesATenantsPseudonymizeRestores(t *testing.T) {
	for _, tc := range []struct {
		family    string
		anthropic bool
	}{{"chat completions", false}, {"Anthropic messages", true}} {
		for _, streamed := range []bool{false, true} {
			name := tc.family
			if streamed {
				name += ", streamed"
			}
			t.Run(name+": a cluster Block blocks the restored answer", func(t *testing.T) {
				h := pseudoHarness(t, "Block")
				b := ask(t, h, tc.anthropic, streamed)
				if got := answerText(t, b); strings.Contains(string(b), address) || !strings.Contains(got, noMailReason) {
					t.Errorf("answer %q (%s), want the ClusterGuardrail's block", got, b)
				}
				if n := h.counter(t, "guard_decisions_total", "guardrail", "/no-personal-data-out", "outcome", "blocked"); n != 1 {
					t.Errorf("blocked decisions of the ClusterGuardrail %v, want 1", n)
				}
			})
			t.Run(name+": a cluster Redact redacts the restored value", func(t *testing.T) {
				h := pseudoHarness(t, "Redact")
				b := ask(t, h, tc.anthropic, streamed)
				if got := answerText(t, b); got != redacted || strings.Contains(string(b), address) {
					t.Errorf("answer %q, want %q", got, redacted)
				}
			})
			t.Run(name+": the tenant tier alone restores the value", func(t *testing.T) {
				h := pseudoHarness(t, "")
				if got := answerText(t, ask(t, h, tc.anthropic, streamed)); got != restored {
					t.Errorf("answer %q, want %q", got, restored)
				}
			})
		}
	}
}
