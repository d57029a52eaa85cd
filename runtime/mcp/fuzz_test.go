package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzServerMessage: whatever an MCP server sends, judging it never panics, and what the
// guard forwards is valid JSON with no blocked or unredacted text in it.
func FuzzServerMessage(f *testing.F) {
	for _, seed := range []string{
		toolResult(1, "fine"),
		toolResult(2, "key SECRET-abc BLOCKME"),
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"resource","resource":{"uri":"x","text":"SECRET-a"}}],"structuredContent":{"k":"QUOTE-x"}}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"a","description":"BLOCKME","inputSchema":{"type":"object"}},{"name":"b","description":"SECRET-z"}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"message":"SECRET-q"}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","TEXT":"b"}]}}]`,
		`{"jsonrpc":"2.0","id":5,"result":{"content":"not an array"}}`,
	} {
		f.Add([]byte(seed))
	}
	h := New(Config{Judges: &fakeJudges{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.Fuzz(func(t *testing.T, data []byte) {
		x := &exchange{h: h, server: "x", r: httptest.NewRequest("POST", "/mcp/x", nil), pending: map[string]json.RawMessage{}}
		out, changed, err := x.judgeData(fakeJudge{&fakeJudges{}}, data)
		if err != nil {
			return // not forwarded
		}
		if !changed && string(out) != string(data) {
			t.Fatal("an unchanged message was not forwarded as it came")
		}
		if !json.Valid(out) {
			t.Fatalf("forwards invalid JSON %q", out)
		}
		var v any
		_ = json.Unmarshal(out, &v)
		for _, text := range judgedTexts(v) {
			for _, word := range []string{"SECRET-", "BLOCKME", "FAILME"} {
				if strings.Contains(text, word) {
					t.Fatalf("forwards %q in a judged text: %s", word, out)
				}
			}
		}
	})
}

// judgedTexts collects the texts the guard judges in forwarded messages: content items'
// text and embedded resources' text, tools' descriptions, progress messages. Names are
// matched in any case, as a client decoding with Go's encoding/json would.
func judgedTexts(v any) []string {
	var out []string
	if arr, ok := v.([]any); ok {
		for _, m := range arr {
			out = append(out, judgedTexts(m)...)
		}
		return out
	}
	if member(v, "method") == "notifications/progress" {
		return appendString(out, member(member(v, "params"), "message"))
	}
	if member(v, "method") != nil {
		return out // a request or notification: its params are not the server's results
	}
	result := member(v, "result")
	for _, item := range list(member(result, "content")) {
		out = appendString(out, member(item, "text"))
		out = appendString(out, member(member(item, "resource"), "text"))
	}
	for _, tool := range list(member(result, "tools")) {
		out = appendString(out, member(tool, "description"))
	}
	return out
}

func member(v any, name string) any {
	m, _ := v.(map[string]any)
	for k, e := range m {
		if strings.EqualFold(k, name) {
			return e
		}
	}
	return nil
}

func list(v any) []any { l, _ := v.([]any); return l }

func appendString(out []string, v any) []string {
	if s, ok := v.(string); ok {
		out = append(out, s)
	}
	return out
}

// FuzzClientMessage: whatever a client POSTs, no tools/call whose arguments the policy
// blocks reaches the server, however the message spells it.
func FuzzClientMessage(f *testing.F) {
	for _, seed := range []string{
		callSearch,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":"BLOCKME"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{}}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b","arguments":{"x":"BLOCKME"}}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":"ok"},"Arguments":{"x":"BLOCKME"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":"\u0042LOCKME"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		f.Add([]byte(seed))
	}
	var forwarded [][]byte
	up := newUpstreamF(f, func(body []byte) { forwarded = append(forwarded, body) })
	url := guardForF(f, up)
	f.Fuzz(func(t *testing.T, body []byte) {
		forwarded = forwarded[:0]
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		for _, fw := range forwarded {
			var msgs []map[string]any
			if json.Unmarshal(fw, &msgs) != nil {
				var one map[string]any
				_ = json.Unmarshal(fw, &one)
				msgs = []map[string]any{one}
			}
			for _, m := range msgs {
				if member(m, "method") != "tools/call" {
					continue
				}
				// What the tool receives: its name and its arguments.
				params := member(m, "params")
				if b, _ := json.Marshal([]any{member(params, "name"), member(params, "arguments")}); strings.Contains(string(b), "BLOCKME") {
					t.Fatalf("forwarded a blocked call: %s", fw)
				}
			}
		}
	})
}

// newUpstreamF is a server that records each body it receives and answers an empty result.
func newUpstreamF(f *testing.F, record func([]byte)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		record(b)
		writeJSON(w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	f.Cleanup(srv.Close)
	return srv.URL
}

func guardForF(f *testing.F, upstreamURL string) string {
	target, _ := url.Parse(upstreamURL)
	srv := httptest.NewServer(New(Config{Upstreams: map[string]*url.URL{"tools": target}, Judges: &fakeJudges{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	f.Cleanup(srv.Close)
	return srv.URL + "/mcp/tools"
}
