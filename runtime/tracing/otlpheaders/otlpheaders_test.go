package otlpheaders_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlpheaders"
)

const canary = "CANARY-HEADER-VALUE-5e21"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"", nil},
		{"  ", nil},
		{"authorization=Bearer%20" + canary, map[string]string{"Authorization": "Bearer " + canary}},
		{" x-honeycomb-team = abc , x-honeycomb-dataset=guards,", map[string]string{"X-Honeycomb-Team": "abc", "X-Honeycomb-Dataset": "guards"}},
		{"dd-api-key=a%3Db%2Cc", map[string]string{"Dd-Api-Key": "a=b,c"}},
		{"x-empty=", map[string]string{"X-Empty": ""}},
		{"x-token=a=b", map[string]string{"X-Token": "a=b"}}, // only the first = separates
	} {
		got, err := otlpheaders.Parse(tc.in)
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if err := otlpheaders.Check(got); err != nil {
			t.Errorf("Check of Parse(%q): %v", tc.in, err)
		}
	}
}

// Malformed lists are refused, and the error quotes neither a name nor a value.
func TestParseRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"no equals":           canary,
		"empty name":          "=" + canary,
		"bad escape":          "authorization=" + canary + "%zz",
		"newline":             "authorization=" + canary + "%0D%0Ax-injected=1",
		"tab":                 "authorization=" + canary + "%09",
		"delete":              "authorization=" + canary + "%7F",
		"space in name":       "x " + canary + "=v",
		"colon in name":       ":authority=" + canary,
		"hop-by-hop":          "connection=" + canary,
		"transfer-encoding":   "Transfer-Encoding=" + canary,
		"te":                  "te=" + canary,
		"proxy-authorization": "proxy-authorization=" + canary,
		"host":                "host=" + canary,
		"content-type":        "content-type=" + canary,
		"grpc":                "grpc-timeout=" + canary,
		"twice":               "x-a=" + canary + ",X-A=" + canary,
		"too long":            "x-a=" + canary + strings.Repeat("a", otlpheaders.MaxBytes),
		"too many":            manyHeaders(otlpheaders.MaxHeaders + 1),
	} {
		h, err := otlpheaders.Parse(in)
		if err == nil {
			t.Errorf("%s: Parse(%q) = %v, want an error", name, in, h)
			continue
		}
		if strings.Contains(err.Error(), canary) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("%s: the error quotes the list: %v", name, err)
		}
	}
}

func manyHeaders(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("x-h")
		b.WriteString(strings.Repeat("a", i+1))
		b.WriteString("=1,")
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	for name, h := range map[string]map[string]string{
		"control character": {"Authorization": "Bearer x\r\nX-Evil: 1"},
		"bad name":          {"x y": "1"},
		"reserved":          {"Keep-Alive": "1"},
		"grpc":              {"Grpc-Encoding": "gzip"},
	} {
		if err := otlpheaders.Check(h); err == nil {
			t.Errorf("%s: Check(%v) = nil, want an error", name, h)
		}
	}
	if err := otlpheaders.Check(map[string]string{"Authorization": "Bearer x"}); err != nil {
		t.Errorf("Check of a bearer token: %v", err)
	}
}
