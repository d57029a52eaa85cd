package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// gate serves a fake provider whose stream writes wait for a token each: the test decides
// when the provider may send the next event, so a stream is "in flight" for as long as the
// test needs without any timing assumption.
type gate struct {
	p    *fakeprovider.Provider
	step chan struct{}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.p.ServeHTTP(&gatedWriter{ResponseWriter: w, step: g.step, r: r}, r)
}

// allow lets n more stream writes through.
func (g *gate) allow(n int) {
	for range n {
		g.step <- struct{}{}
	}
}

type gatedWriter struct {
	http.ResponseWriter
	step chan struct{}
	r    *http.Request
}

// Write holds stream writes (and only those) until the test hands out a token.
func (w *gatedWriter) Write(b []byte) (int, error) {
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		select {
		case <-w.step:
		case <-w.r.Context().Done():
			return 0, w.r.Context().Err()
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w *gatedWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// readEvents reads n events of a stream.
func readEvents(t *testing.T, r *bufio.Reader, n int) []byte {
	t.Helper()
	var out []byte
	for range n {
		for {
			line, err := r.ReadBytes('\n')
			out = append(out, line...)
			if err != nil {
				t.Fatalf("stream ended early: %v\n%s", err, out)
			}
			if bytes.Equal(line, []byte("\n")) {
				break
			}
		}
	}
	return out
}

func TestPolicyFileReplacedMidStream(t *testing.T) {
	hook, hookURL := allowingWebhook(t)
	p := newProvider(t)
	gated := &gate{p: p, step: make(chan struct{})}
	upstreamURL := startServer(t, gated)
	judge := webhookClassifier("judge", hookURL, "", "harm")
	watch := guardrail("watch", "judge", phases(v1alpha1.PhaseStream, v1alpha1.PhaseOutput), streaming(0, 0))
	g := startGuard(t, policyFile(t, judge, watch), upstream(upstreamURL))
	before := g.waitReady()

	// A stream starts under the first policy and delivers its first events.
	deltas := []string{"Once ", "upon ", "a time ", "there ", "was ", "a guard ", "that ", "never ", "dropped ", "a stream."}
	p.Enqueue(fakeprovider.Reply(deltas...))
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, g.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-e2e","stream":true,"messages":[{"role":"user","content":"tell a story"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body := bufio.NewReader(resp.Body)
	gated.allow(3) // the role chunk and two deltas
	got := readEvents(t, body, 3)

	// The file is replaced: a guardrail now blocks "bluebird" prompts.
	g.writePolicy(policyFile(t, judge, watch,
		keywordClassifier("words", "secret-project", "bluebird"),
		guardrail("no-bluebird", "words", phases(v1alpha1.PhaseInput), reason("Project Bluebird is not discussed here.")),
	))
	after := g.waitVersion(before)

	// A new request sees the new policy while the first stream is still open.
	c := openaiClient(g)
	_, err = c.Chat.Completions.New(testContext(t), chatParams("tell me about bluebird"))
	if apiErr, ok := errAs[*openai.Error](err); !ok || apiErr.Code != "content_policy_violation" || !strings.Contains(apiErr.RawJSON(), "default/no-bluebird") {
		t.Errorf("a request under policy %s got %v, want the new guardrail's block", after, err)
	}

	// The first stream completes intact, still judged (by the classifier of its policy).
	callsBefore := hook.Count()
	close(gated.step)
	rest, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, rest...)
	assertSameEvents(t, got, lastResponse(t, p))
	if hook.Count() <= callsBefore {
		t.Error("the rest of the stream was not judged after the policy changed")
	}
	if v := g.metric("guard_policy_errors_total"); v != 0 {
		t.Errorf("guard_policy_errors_total = %v", v)
	}
}

func TestInvalidPolicyFileKeepsTheLastGoodPolicy(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		keywordClassifier("words", "secret-project", "bluebird"),
		guardrail("no-bluebird", "words", phases(v1alpha1.PhaseInput)),
	), upstream(p.URL))
	before := g.waitReady()

	g.writePolicy("apiVersion: guardrail.dev/v1alpha1\nkind: Guardrail\nmetadata: {name: broken}\nspec: {nonsense: true}\n")
	eventually(t, "the invalid file to be refused", func() bool { return g.metric("guard_policy_errors_total") >= 1 })

	if status, version := g.readyz(); status != http.StatusOK || version != before {
		t.Errorf("readyz %d %q, want 200 with the last good version %q", status, version, before)
	}
	c := openaiClient(g)
	_, err := c.Chat.Completions.New(testContext(t), chatParams("tell me about bluebird"))
	if apiErr, ok := errAs[*openai.Error](err); !ok || apiErr.Code != "content_policy_violation" {
		t.Errorf("got %v, want the last good policy's block", err)
	}
}

func TestShutdownDrainsInFlightStreams(t *testing.T) {
	p := newProvider(t)
	gated := &gate{p: p, step: make(chan struct{})}
	g := startGuard(t, inputOnly(t), upstream(startServer(t, gated)))

	p.Enqueue(fakeprovider.Reply("draining ", "is ", "graceful."))
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, g.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-e2e","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body := bufio.NewReader(resp.Body)
	gated.allow(2)
	got := readEvents(t, body, 2)

	// SIGTERM while the stream is open: new connections are refused, the stream goes on.
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the guard to stop accepting connections", func() bool {
		c, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	close(gated.step)
	rest, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	assertSameEvents(t, append(got, rest...), lastResponse(t, p))
	select {
	case <-g.exited:
	case <-time.After(waitTimeout):
		t.Fatal("the guard did not exit after draining")
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
