package wire

import (
	"strings"
	"testing"
)

// The usageMetadata of an answer is found whatever the pieces it arrives in, and only at
// the top level of the object.
func TestTopLevelMember(t *testing.T) {
	for body, want := range map[string]string{
		`{"embeddings":[{"values":[0.1,-0.2]}],"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7}}`: `{"promptTokenCount":7,"totalTokenCount":7}`,
		`{ "usageMetadata" : {"promptTokenCount": 3, "x": "}\"{"} , "embedding":{"values":[1]}}`:            `{"promptTokenCount": 3, "x": "}\"{"}`,
		`{"embedding":{"usageMetadata":{"promptTokenCount":9}},"totalTokens":4}`:                            ``,
		`{"note":"usageMetadata","a":{"promptTokenCount":9}}`:                                               ``,
		`{"usageMetadataX":{"promptTokenCount":9}}`:                                                         ``,
		`{"usageMetadata":7}`:                                          ``,
		`["usageMetadata",{"promptTokenCount":9}]`:                     ``,
		`{"usageMetadata":{"pad":"` + strings.Repeat("x", 300) + `"}}`: ``,
	} {
		for _, size := range []int{1, 3, 7, len(body)} {
			m := &TopLevelMember{Name: "usageMetadata", Max: 256}
			for b := body; b != ""; {
				n := min(size, len(b))
				_, _ = m.Write([]byte(b[:n]))
				b = b[n:]
			}
			if got := string(m.Value()); got != want {
				t.Errorf("%.60s in pieces of %d: %q, want %q", body, size, got, want)
			}
		}
	}
	if u, ok := GeminiUsage([]byte(`{"promptTokenCount":7,"totalTokenCount":7}`)); !ok || u.InputTokens != 7 || u.OutputTokens != 0 {
		t.Fatalf("GeminiUsage = %+v %v", u, ok)
	}
	if _, ok := GeminiUsage([]byte(`{"totalTokenCount":0}`)); ok {
		t.Fatal("a usage of nothing")
	}
}
