package proxy

import (
	"net/http"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// BenchmarkKeylessHeaders is what keyless adds to a call on the hot path: checking the
// client's credential headers for a key of its own and replacing them with the provider's
// credential and headers, on the header set an official SDK sends.
func BenchmarkKeylessHeaders(b *testing.B) {
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:15080/v1/chat/completions", http.NoBody)
	if err != nil {
		b.Fatal(err)
	}
	for k, v := range map[string]string{
		"Authorization": "Bearer " + guardv1.PlaceholderAPIKey, "Content-Type": "application/json",
		"Accept": "application/json", "User-Agent": "OpenAI/Go 3.0.0", "X-Stainless-Lang": "go",
		"X-Stainless-Retry-Count": "0", "X-Stainless-Timeout": "600", "OpenAI-Project": "proj_app",
	} {
		r.Header.Set(k, v)
	}
	pr := &providerRoute{p: &policy.Provider{Name: "openai", Family: policy.ProviderOpenAI,
		Headers: map[string]string{"OpenAI-Project": "proj_platform"}, Credential: "sk-proj-0123456789abcdefghijklmnopqrstuvwxyz"}}
	b.ReportAllocs()
	for b.Loop() {
		if ownKey(r) {
			b.Fatal("the placeholder was taken for a key")
		}
		h := r.Header.Clone()
		pr.authorize(h)
	}
}

// BenchmarkHeaderClone is the clone of the same header set alone, which every forwarded
// call pays with or without keyless: the baseline of BenchmarkKeylessHeaders.
func BenchmarkHeaderClone(b *testing.B) {
	h := http.Header{}
	for _, k := range []string{"Authorization", "Content-Type", "Accept", "User-Agent", "X-Stainless-Lang",
		"X-Stainless-Retry-Count", "X-Stainless-Timeout", "OpenAI-Project"} {
		h.Set(k, "v")
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = h.Clone()
	}
}

// BenchmarkCopyHeaders is copyHeaders on the same header set, with a Connection header:
// what every guarded call pays to build its upstream request (and again for the answer's
// headers), against BenchmarkHeaderClone.
func BenchmarkCopyHeaders(b *testing.B) {
	h := http.Header{}
	for _, k := range []string{"Authorization", "Content-Type", "Accept", "User-Agent", "X-Stainless-Lang",
		"X-Stainless-Retry-Count", "X-Stainless-Timeout", "OpenAI-Project"} {
		h.Set(k, "v")
	}
	h.Set("Connection", "keep-alive")
	b.ReportAllocs()
	for b.Loop() {
		copyHeaders(make(http.Header, len(h)), h)
	}
}
