package e2e

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// A provider, or a gateway in front of it, may keep its response body open for a while
// after the stream's terminator. The guard reads what follows the terminator so that the
// connection to the provider is reused, but the client's answer must not wait for it:
// openai-go ends its stream at [DONE], and an Anthropic client has message_stop, as soon
// as the provider sent them. The provider here replays the fake provider's answer and then
// holds its body open for ten seconds; the guard gives up draining it after 500 ms, so a
// guard that held the terminator back would deliver it only then. anthropic-sdk-go reads
// the stream to the end of the body: a loop without a break ends only when the guard ends
// the client's body, which it does at most 50 ms after the terminator, draining the
// provider's body in the background.
func TestStreamEndsAtItsTerminatorWhileTheProviderHoldsItsBody(t *testing.T) {
	sample := samplePolicy(t, "pii-secrets-redaction.yaml")
	const answer = "Raised beds about a metre wide let children reach the middle from either side."
	recorded := map[string][]byte{}
	for path, body := range map[string]string{
		"/v1/chat/completions": `{"model":"gpt-e2e","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"/v1/messages":         `{"model":"claude-e2e","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		b, err := fakeprovider.Record(testContext(t), fakeprovider.Reply(strings.SplitAfter(answer, " ")...), path, body)
		if err != nil {
			t.Fatal(err)
		}
		recorded[path] = b
	}
	sent := make(chan time.Time, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(recorded[r.URL.Path])
		_ = http.NewResponseController(w).Flush()
		sent <- time.Now()
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(provider.Close)
	g := startGuard(t, sample, upstream(provider.URL))
	// Well under the guard's 500 ms drain, far above what a loopback stream takes.
	const limit = 250 * time.Millisecond

	t.Run("openai-go ends the stream at [DONE]", func(t *testing.T) {
		acc, _, err := chatStream(testContext(t), openaiClient(g), chatParams("hi"))
		done := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if d := done.Sub(<-sent); d >= limit {
			t.Errorf("the SDK's stream ended %v after the provider sent [DONE] (limit %v)", d, limit)
		}
		if got := acc.Choices[0].Message.Content; got != answer {
			t.Errorf("content %q, want %q", got, answer)
		}
	})
	t.Run("anthropic-sdk-go has message_stop", func(t *testing.T) {
		ac := anthropicClient(g)
		stream := ac.Messages.NewStreaming(testContext(t), messageParams("hi"))
		defer func() { _ = stream.Close() }()
		var stopped time.Time
		var text strings.Builder
		for stream.Next() {
			ev := stream.Current()
			if ev.Type == "content_block_delta" {
				text.WriteString(ev.Delta.Text)
			}
			if ev.Type == "message_stop" {
				stopped = time.Now()
				break
			}
		}
		if err := stream.Err(); err != nil || stopped.IsZero() {
			t.Fatalf("no message_stop: %v", err)
		}
		if d := stopped.Sub(<-sent); d >= limit {
			t.Errorf("message_stop came %v after the provider sent it (limit %v)", d, limit)
		}
		if text.String() != answer {
			t.Errorf("text %q, want %q", text.String(), answer)
		}
	})
	t.Run("anthropic-sdk-go's loop ends with the answer", func(t *testing.T) {
		ac := anthropicClient(g)
		stream := ac.Messages.NewStreaming(testContext(t), messageParams("hi"))
		defer func() { _ = stream.Close() }()
		var last string
		for stream.Next() {
			last = string(stream.Current().Type)
		}
		ended := time.Now()
		if err := stream.Err(); err != nil || last != "message_stop" {
			t.Fatalf("the stream ended with %q: %v", last, err)
		}
		if d := ended.Sub(<-sent); d >= limit {
			t.Errorf("the SDK's loop ended %v after the provider sent message_stop (limit %v)", d, limit)
		}
	})
}

// TestOpenAIGoStreamsKeepTheProvidersConnection: openai-go stops at [DONE] and closes the
// stream, which closes its connection to the guard while the provider here still holds
// its body for 200 ms. The guard must still read the provider's body to its end so that
// the connection to the provider serves the next stream: three streams in a row, one
// connection to the provider (a new one costs a TCP and TLS handshake to a real provider).
func TestOpenAIGoStreamsKeepTheProvidersConnection(t *testing.T) {
	sample := samplePolicy(t, "pii-secrets-redaction.yaml")
	const answer = "Water the beds early in the morning so the leaves dry before noon."
	recorded, err := fakeprovider.Record(testContext(t), fakeprovider.Reply(strings.SplitAfter(answer, " ")...), "/v1/chat/completions",
		`{"model":"gpt-e2e","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{}, 3)
	provider := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { ended <- struct{}{} }()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(recorded)
		_ = http.NewResponseController(w).Flush()
		select {
		case <-time.After(200 * time.Millisecond):
		case <-r.Context().Done():
		}
	}))
	var mu sync.Mutex
	conns := 0
	provider.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	provider.Start()
	t.Cleanup(provider.Close)
	g := startGuard(t, sample, upstream(provider.URL))
	for i := range 3 {
		acc, _, err := chatStream(testContext(t), openaiClient(g), chatParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != answer {
			t.Fatalf("stream %d: content %q, want %q", i, got, answer)
		}
		// The provider's body ends; the guard's drain then puts the connection back.
		<-ended
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Errorf("three openai-go streams opened %d connections to the provider, want 1", conns)
	}
}
