package mcp

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// splitPolicy is the built-in secrets pack on tool results with action ACTION.
const splitPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: secrets, namespace: team}
spec:
  builtin:
    packs: [secrets]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: tool-secrets, namespace: team}
spec:
  mode: Enforce
  classifierRef: {name: secrets}
  phases: [ToolResults]
  threshold: 1
  action: ACTION
  reason: Credentials stay out of tool results.
`

// splitTokens are credentials the built-in secrets pack finds, built at run time (not
// committed as tokens).
var splitTokens = map[string]string{
	"github": githubToken("8vKpZq2mW4xR7tY1nB3cD5fG9hJ0kL"),
	"aws":    "AKIA" + "Z7Q3M9XK2L4P8RTB",
}

// githubToken returns a GitHub token of the documented format: ghp_, 30 base62
// characters, and their CRC-32 in six base62 digits (the secrets pack checks it).
func githubToken(body string) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	c := crc32.ChecksumIEEE([]byte(body))
	var sum [6]byte
	for i := 5; i >= 0; i-- {
		sum[i] = digits[c%62]
		c /= 62
	}
	return "ghp_" + body + string(sum[:])
}

const (
	splitBefore = "the build uses "
	splitAfter  = " to publish"
)

// switchable is a fake MCP server answering every tools/call with the result set last,
// as JSON or as an event stream.
type switchable struct {
	mu     sync.Mutex
	answer string
	sse    bool
}

func (s *switchable) set(answer string, sse bool) {
	s.mu.Lock()
	s.answer, s.sse = answer, sse
	s.mu.Unlock()
}

func (s *switchable) serve(w http.ResponseWriter, _ *http.Request, _ []byte) {
	s.mu.Lock()
	answer, sse := s.answer, s.sse
	s.mu.Unlock()
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, answer)
		return
	}
	writeJSON(w, http.StatusOK, []byte(answer))
}

// contentResult is a tools/call result with these content items.
func contentResult(items []map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": map[string]any{"content": items}})
	return string(b)
}

func textItem(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// Non-text items the guard must forward as they are, between the text parts.
var (
	imageItem = map[string]any{"type": "image", "data": "iVBORw0KGgoAAAANSUhEUg==", "mimeType": "image/png"}
	blobItem  = map[string]any{"type": "resource", "resource": map[string]any{
		"uri": "file:///build/artifact.bin", "mimeType": "application/octet-stream", "blob": "AAECAwQF"}}
)

// splitLayout places a text cut into parts in content items: each part becomes an item by
// text, and the items between parts are added as they are.
type splitLayout struct {
	name string
	// item makes the content item of text part k.
	item func(k int, text string) map[string]any
	// between are items added after each text part but the last.
	between []map[string]any
	// parts are the numbers of parts the token is cut into.
	parts []int
}

var splitLayouts = []splitLayout{
	{name: "text items", item: func(_ int, s string) map[string]any { return textItem(s) }, parts: []int{2, 3}},
	{name: "an image and a binary resource between", item: func(_ int, s string) map[string]any { return textItem(s) },
		between: []map[string]any{imageItem, blobItem}, parts: []int{2, 3}},
	{name: "embedded text resources after the first", item: func(k int, s string) map[string]any {
		if k == 0 {
			return textItem(s)
		}
		return map[string]any{"type": "resource", "resource": map[string]any{
			"uri": fmt.Sprintf("file:///notes/%d.txt", k), "mimeType": "text/plain", "text": s}}
	}, parts: []int{2}},
}

func (l splitLayout) items(parts []string) []map[string]any {
	var out []map[string]any
	for k, p := range parts {
		out = append(out, l.item(k, p))
		if k < len(parts)-1 {
			out = append(out, l.between...)
		}
	}
	return out
}

// cutsOf returns every way to cut a token into n parts (n is 2 or 3): the cut points,
// from "all in the first part" to "all in the last".
func cutsOf(token string, n int) [][]int {
	var out [][]int
	for i := 0; i <= len(token); i++ {
		if n == 2 {
			out = append(out, []int{i})
			continue
		}
		for j := i; j <= len(token); j++ {
			out = append(out, []int{i, j})
		}
	}
	return out
}

// splitParts cuts "before token after" at the cut points inside the token.
func splitParts(token string, cuts []int) []string {
	bounds := append(append([]int{0}, cuts...), len(token))
	parts := make([]string, len(bounds)-1)
	for k := range parts {
		parts[k] = token[bounds[k]:bounds[k+1]]
	}
	parts[0] = splitBefore + parts[0]
	parts[len(parts)-1] += splitAfter
	return parts
}

// redactedParts is what the parts become when the token is redacted: the text around
// the token kept where it was, the marker in the part holding the token's first
// character, and nothing of the token anywhere.
func redactedParts(parts []string, marker string) []string {
	start, end := len(splitBefore), len(strings.Join(parts, ""))-len(splitAfter)
	out := make([]string, len(parts))
	off := 0
	for k, p := range parts {
		var b strings.Builder
		for i := range len(p) {
			at := off + i
			if at == start {
				b.WriteString(marker)
			}
			if at < start || at >= end {
				b.WriteByte(p[i])
			}
		}
		out[k] = b.String()
		off += len(p)
	}
	return out
}

// TestAnEntitySplitAcrossContentItemsIsNeverReleasedInPart: a credential cut at every
// index across two and three text parts of a tool result (text items, with an image and a
// binary resource between, or embedded text resources), answered as JSON and as an
// event stream, is redacted whole by a Redact guardrail — its marker where it begins,
// nothing of it in the parts after — and blocks the result under a Block guardrail. The
// items that are not text pass as they came.
func TestAnEntitySplitAcrossContentItemsIsNeverReleasedInPart(t *testing.T) {
	srv := &switchable{}
	up := newUpstream(t, srv.serve)
	for _, action := range []string{"Redact", "Block"} {
		t.Run(action, func(t *testing.T) {
			url, _ := policyGuard(t, up, strings.Replace(splitPolicy, "ACTION", action, 1))
			for name, token := range splitTokens {
				marker := ""
				if action == "Redact" {
					marker = wholeTokenMarker(t, srv, url, token)
				}
				for _, layout := range splitLayouts {
					for _, sse := range []bool{false, true} {
						for _, n := range layout.parts {
							leaks := 0
							for _, cuts := range cutsOf(token, n) {
								parts := splitParts(token, cuts)
								srv.set(contentResult(layout.items(parts)), sse)
								got := answerOf(t, post(t, url, callSearch), sse)
								want := contentResult(layout.items(redactedParts(parts, marker)))
								if action == "Block" {
									want = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Credentials stay out of tool results."}],"isError":true}}`
								}
								if !sameJSON(got, want) {
									if leaks++; leaks <= 3 {
										t.Errorf("%s, %s, sse %v, cut at %v:\n got  %s\n want %s", name, layout.name, sse, cuts, got, want)
									}
								}
							}
							if leaks > 0 {
								t.Errorf("%s, %s, sse %v, %d parts: %d of %d cuts answered wrongly", name, layout.name, sse, n, leaks, len(cutsOf(token, n)))
							}
						}
					}
				}
			}
		})
	}
}

// wholeTokenMarker returns the marker a Redact guardrail leaves for token in one text
// item.
func wholeTokenMarker(t *testing.T, srv *switchable, url, token string) string {
	t.Helper()
	srv.set(toolResult(7, splitBefore+token+splitAfter), false)
	var res struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	body := readBody(t, post(t, url, callSearch))
	if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Result.Content) != 1 {
		t.Fatalf("answer %s", body)
	}
	text := res.Result.Content[0].Text
	marker, _ := strings.CutPrefix(text, splitBefore)
	marker, ok := strings.CutSuffix(marker, splitAfter)
	if !ok || !strings.HasPrefix(marker, markerPrefix) {
		t.Fatalf("the whole token was not redacted: %q", text)
	}
	return marker
}

// answerOf returns the JSON answer, or the one event of an event stream.
func answerOf(t *testing.T, resp *http.Response, sse bool) string {
	t.Helper()
	body := readBody(t, resp)
	if !sse {
		return body
	}
	evs := events(t, strings.NewReader(body))
	if len(evs) != 1 {
		t.Fatalf("events %q", evs)
	}
	return evs[0]
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b string) bool {
	var av, bv any
	if json.Unmarshal([]byte(a), &av) != nil || json.Unmarshal([]byte(b), &bv) != nil {
		return false
	}
	ab, _ := json.Marshal(av)
	bb, _ := json.Marshal(bv)
	return string(ab) == string(bb)
}
