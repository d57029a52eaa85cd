package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// fakeJudges judges with fixed words: a text holding BLOCKME is blocked (reason
// "no blocking words"), FAILME fails closed, DROPME is stripped, and SECRET-<word> is
// redacted to [REDACTED:secret].
type fakeJudges struct {
	noPolicy bool
	mu       sync.Mutex
	calls    []string // tool names judged by Call
	results  int      // texts judged by Results
	done     int
}

func (f *fakeJudges) Begin(*http.Request, string) (Judge, bool) {
	if f.noPolicy {
		return nil, false
	}
	return fakeJudge{f}, true
}

type fakeJudge struct{ f *fakeJudges }

func (j fakeJudge) Call(_ context.Context, tool, args string) (Judgement, error) {
	j.f.mu.Lock()
	j.f.calls = append(j.f.calls, tool)
	j.f.mu.Unlock()
	if s := fakeStop(args); s != nil {
		return Judgement{Stop: s}, nil
	}
	if strings.Contains(args, "SECRET-") {
		// On tool calls Redact acts as Block.
		return Judgement{Stop: &Stop{Reason: "no secrets in tool calls", Guardrail: "ns/secrets"}}, nil
	}
	return Judgement{}, nil
}

func (j fakeJudge) Results(_ context.Context, texts []string) (Judgement, error) {
	j.f.mu.Lock()
	j.f.results += len(texts)
	j.f.mu.Unlock()
	out := Judgement{Texts: make([]string, len(texts)), Dropped: make([]bool, len(texts))}
	for i, t := range texts {
		if s := fakeStop(t); s != nil {
			return Judgement{Stop: s}, nil
		}
		out.Dropped[i] = strings.Contains(t, "DROPME")
		out.Texts[i] = redactSecrets(redactQuoted(t))
	}
	return out, nil
}

func (j fakeJudge) Done() {
	j.f.mu.Lock()
	j.f.done++
	j.f.mu.Unlock()
}

func fakeStop(t string) *Stop {
	switch {
	case strings.Contains(t, "FAILME"):
		return &Stop{Failed: true, Guardrail: "ns/failing"}
	case strings.Contains(t, "BLOCKME"):
		return &Stop{Reason: "no blocking words", Guardrail: "ns/words"}
	}
	return nil
}

// redactQuoted redacts QUOTE- up to and including the next double quote: a span that
// crosses the end of a JSON string.
func redactQuoted(t string) string {
	i := strings.Index(t, "QUOTE-")
	if i < 0 {
		return t
	}
	j := strings.IndexByte(t[i:], '"')
	if j < 0 {
		return t
	}
	return t[:i] + "[REDACTED:secret]" + t[i+j+1:]
}

// redactSecrets replaces SECRET-<letters and digits> with the marker.
func redactSecrets(t string) string {
	for {
		i := strings.Index(t, "SECRET-")
		if i < 0 {
			return t
		}
		j := i + len("SECRET-")
		for j < len(t) && (t[j] >= 'a' && t[j] <= 'z' || t[j] >= '0' && t[j] <= '9') {
			j++
		}
		t = t[:i] + "[REDACTED:secret]" + t[j:]
	}
}

// upstream is a fake MCP server: handler answers, and hits counts what reached it.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func (u *upstream) hits() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.bodies...)
}

func newUpstream(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, body []byte)) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, r.Method+" "+string(body))
		u.mu.Unlock()
		handler(w, r, body)
	}))
	t.Cleanup(u.Close)
	return u
}

// guardFor starts the guard's MCP handler fronting up as "tools" on loopback.
func guardFor(t *testing.T, up *upstream, judges Judges) (string, *telemetry.Telemetry) {
	t.Helper()
	target, err := url.Parse(up.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	tel := telemetry.New(nil)
	h := New(Config{Upstreams: map[string]*url.URL{"tools": target}, Judges: judges, Telemetry: tel,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp/tools", tel
}

func post(t *testing.T, url, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// events reads the data of every event of an event stream until it ends.
func events(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// jsonEqual fails unless got and want are the same JSON value.
func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("got  %s\nwant %s", gb, wb)
	}
}

func writeSSE(w http.ResponseWriter, data string) {
	_, _ = io.WriteString(w, "event: message\ndata: "+data+"\n\n")
	w.(http.Flusher).Flush()
}

const callSearch = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"q":"weather"}}}`

func toolResult(id int, text string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}}}})
	return string(b)
}

// metric returns the value of one series of tel's metrics once it is there: the guard
// counts a request as its handler returns, after the client may have read the answer.
func metric(t *testing.T, tel *telemetry.Telemetry, series string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v := metricNow(t, tel, series); v != "" || time.Now().After(deadline) {
			return v
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func metricNow(t *testing.T, tel *telemetry.Telemetry, series string) string {
	t.Helper()
	var b strings.Builder
	if err := tel.Registry.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// eventReader reads an event stream one event's data at a time.
type eventReader struct{ sc *bufio.Scanner }

func newEventReader(r io.Reader) *eventReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	return &eventReader{sc}
}

// next returns the data of the next event; it fails the test when the stream ends first.
func (e *eventReader) next(t *testing.T) string {
	t.Helper()
	for e.sc.Scan() {
		if d, ok := strings.CutPrefix(e.sc.Text(), "data: "); ok {
			return d
		}
	}
	t.Fatalf("the stream ended: %v", e.sc.Err())
	return ""
}
