package proxy

import (
	"io"
	"net/http"

	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// maxGeminiUsage bounds the usageMetadata object read from an input-only call's answer.
const maxGeminiUsage = 4 << 10

// passThroughGeminiInput copies the answer to a Gemini API input-only call (countTokens,
// embedContent, batchEmbedContents) as it is, as it arrives, and records the usage it
// reports in a top-level usageMetadata, if it has one (the Gemini API's answers to these
// calls carry none today; countTokens' totalTokens is a count, not usage). Nothing of the
// answer is held but that object.
func (x *exchange) passThroughGeminiInput(resp *http.Response) {
	copyHeaders(x.w.Header(), resp.Header)
	x.w.WriteHeader(resp.StatusCode)
	m := &wire.TopLevelMember{Name: "usageMetadata", Max: maxGeminiUsage}
	_, _ = io.Copy(io.MultiWriter(x.w, m), resp.Body)
	if u, ok := wire.GeminiUsage(m.Value()); ok {
		x.usage(u)
	}
}
