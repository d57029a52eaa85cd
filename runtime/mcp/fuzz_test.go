package mcp

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
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
