package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// apiKey is the credential every client sends; tests check it reaches the provider.
const apiKey = "sk-e2e-client-key"

// openaiClient is an unmodified OpenAI SDK client pointed at the guard, as an app with
// OPENAI_BASE_URL=http://127.0.0.1:<port>/v1 would be.
func openaiClient(g *guard) openai.Client {
	return openai.NewClient(oaoption.WithBaseURL(g.URL+"/v1/"), oaoption.WithAPIKey(apiKey))
}

// anthropicClient is an unmodified Anthropic SDK client pointed at the guard
// (ANTHROPIC_BASE_URL=http://127.0.0.1:<port>).
func anthropicClient(g *guard) anthropic.Client {
	return anthropic.NewClient(antoption.WithBaseURL(g.URL), antoption.WithAPIKey(apiKey))
}

// rawPost posts a JSON body with a plain HTTP client and returns the response with its
// whole body read.
func rawPost(t *testing.T, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// sseEvents splits an event stream into its events, each with its terminating blank
// line, as the fake provider writes them.
func sseEvents(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.Index(b, []byte("\n\n"))
		if i < 0 {
			return append(out, b)
		}
		out = append(out, b[:i+2])
		b = b[i+2:]
	}
	return out
}

// assertSameEvents fails unless got has exactly the provider's events, byte for byte.
func assertSameEvents(t *testing.T, got []byte, sent fakeprovider.Response) {
	t.Helper()
	events := sseEvents(got)
	if len(events) != len(sent.Events) {
		t.Fatalf("client received %d events, the provider sent %d:\nreceived:\n%s\nsent:\n%s", len(events), len(sent.Events), got, sent.Body)
	}
	for i := range events {
		if !bytes.Equal(events[i], sent.Events[i]) {
			t.Errorf("event %d differs:\nreceived: %q\nsent:     %q", i, events[i], sent.Events[i])
		}
	}
	if !bytes.Equal(got, sent.Body) {
		t.Errorf("the stream differs from the provider's bytes")
	}
}

// lastResponse returns the provider's latest response.
func lastResponse(t *testing.T, p *fakeprovider.Provider) fakeprovider.Response {
	t.Helper()
	rs := p.Responses()
	if len(rs) == 0 {
		t.Fatal("the provider sent no response")
	}
	return rs[len(rs)-1]
}

// allowingWebhook is a webhook classifier that scores every category 0.
func allowingWebhook(t *testing.T) (*fakeclassifiers.Fake, string) {
	f := fakeclassifiers.NewWebhook().Respond(func(fakeclassifiers.Request) fakeclassifiers.Reply {
		return fakeclassifiers.WebhookScores(fakeclassifiers.Scores{"harm": 0.0})
	})
	return f, f.Start(t).URL
}

// failingWebhook allows its first n calls, then answers 500 to every call.
func failingWebhook(t *testing.T, n int) (*fakeclassifiers.Fake, string) {
	return webhookFailingWith(t, n, fakeclassifiers.Status(http.StatusInternalServerError))
}

// webhookFailingWith allows its first n calls, then answers failure to every call.
func webhookFailingWith(t *testing.T, n int, failure fakeclassifiers.Reply) (*fakeclassifiers.Fake, string) {
	f := fakeclassifiers.NewWebhook().Enqueue(
		fakeclassifiers.Repeat(n, fakeclassifiers.WebhookScores(fakeclassifiers.Scores{"harm": 0.0}))...,
	).Respond(func(fakeclassifiers.Request) fakeclassifiers.Reply { return failure })
	return f, f.Start(t).URL
}

// startServer serves h on a loopback port for the test and returns its URL.
func startServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// shellCall scripts an answer that says a few words, then calls the shell tool (call id
// id) with arguments streamed in the given pieces.
func shellCall(id string, args ...string) fakeprovider.Script {
	ds := []fakeprovider.Delta{fakeprovider.Text("Running it."), fakeprovider.ToolCall(id, "shell")}
	for _, a := range args {
		ds = append(ds, fakeprovider.ToolArgs(a))
	}
	return fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: ds}}}
}
