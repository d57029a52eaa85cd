package policy

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

func TestLocalBackendURLs(t *testing.T) {
	webhook := func(u string) *spec.ClassifierSpec {
		return &spec.ClassifierSpec{Webhook: &spec.WebhookBackend{URL: u}}
	}
	for _, tc := range []struct {
		name string
		spec *spec.ClassifierSpec
		want string // a part of the refusal; empty: allowed
	}{
		{"a loopback IPv4 address is refused", webhook("http://127.0.0.1:8080/classify"), "127.0.0.1 is a loopback address"},
		{"any address of 127.0.0.0/8 is refused", webhook("http://127.9.8.7/"), "127.9.8.7 is a loopback address"},
		{"the guard's own proxy port is refused", webhook("http://127.0.0.1:15080/v1"), "loopback"},
		{"IPv6 loopback in brackets is refused", webhook("https://[::1]:9443/"), "::1 is a loopback address"},
		{"IPv6 loopback written in full is refused", webhook("https://[0:0:0:0:0:0:0:1]/"), "::1 is a loopback address"},
		{"an IPv4-mapped loopback address is refused", webhook("http://[::ffff:127.0.0.1]/"), "127.0.0.1 is a loopback address"},
		{"localhost is refused", webhook("http://localhost:8080"), "localhost is a loopback address"},
		{"localhost in capitals with a trailing dot is refused", webhook("http://LocalHost.:8080"), "localhost is a loopback address"},
		{"a name under .localhost is refused", webhook("http://judge.localhost/"), "localhost is a loopback address"},
		{"the cloud metadata address is refused", webhook("http://169.254.169.254/latest/meta-data/"), "169.254.169.254 is a link-local address"},
		{"an IPv6 link-local address with a zone is refused", webhook("http://[fe80::1%25eth0]:80/"), "fe80::1 is a link-local address"},
		{"the unspecified IPv4 address is refused", webhook("http://0.0.0.0:8080/"), "0.0.0.0 is an unspecified address"},
		{"the unspecified IPv6 address is refused", webhook("http://[::]:8080/"), ":: is an unspecified address"},
		{"GCP's metadata name is refused", webhook("http://metadata.google.internal/computeMetadata/v1/"), "instance-metadata"},
		{"AWS's IPv6 metadata address is refused", webhook("http://[fd00:ec2::254]/"), "instance-metadata"},
		{"a shortened IPv4 loopback is refused", webhook("http://127.1/"), "127.0.0.1 is a loopback address"},
		{"a loopback address as one decimal number is refused", webhook("http://2130706433/"), "127.0.0.1 is a loopback address"},
		{"a loopback address in hexadecimal is refused", webhook("http://0x7f.0.0.1/"), "127.0.0.1 is a loopback address"},
		{"a metadata address in octal is refused", webhook("http://0251.0376.0251.0376/"), "169.254.169.254 is a link-local address"},
		{"the moderation url is checked", &spec.ClassifierSpec{Moderation: &spec.ModerationBackend{URL: "http://127.0.0.1/v1/moderations"}}, "spec.moderation.url"},
		{"the llm url is checked", &spec.ClassifierSpec{LLM: &spec.LLMBackend{URL: "http://[::1]/v1/chat/completions"}}, "spec.llm.url"},
		{"the refusal names the field and the flag", webhook("http://127.0.0.1/"), "spec.webhook.url: Invalid value: \"http://127.0.0.1/\""},
		{"the refusal names the flag that allows it", webhook("http://127.0.0.1/"), "--classifier-allow-local-urls"},

		{"a bare service name is allowed", webhook("http://judge:8080/classify"), ""},
		{"a service's cluster DNS name is allowed", webhook("http://judge.ml.svc.cluster.local:8080/classify"), ""},
		{"a pod or ClusterIP address is allowed", webhook("http://10.96.0.12:8080/"), ""},
		{"a public endpoint is allowed", webhook("https://api.openai.com/v1/moderations"), ""},
		{"a name that merely starts with localhost is allowed", webhook("https://localhost-judge.example.com/"), ""},
		{"a name with a numeric label that is not the last is allowed", webhook("https://127.0.0.1.example.com/"), ""},
		{"a builtin classifier has no URL", &spec.ClassifierSpec{Builtin: &spec.BuiltinBackend{}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := LocalBackendURLs(tc.spec)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("refused: %v", errs.ToAggregate())
			case tc.want != "" && len(errs) == 0:
				t.Fatalf("allowed; want a refusal containing %q", tc.want)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Fatalf("refusal %q does not contain %q", errs.ToAggregate(), tc.want)
			}
		})
	}
}

// inet_aton's forms, and what is not an address at all.
func TestParseHostAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":       "127.0.0.1",
		"127.1":           "127.0.0.1",
		"127.0.1":         "127.0.0.1",
		"2130706433":      "127.0.0.1",
		"0x7f000001":      "127.0.0.1",
		"0X7F.1":          "127.0.0.1",
		"017700000001":    "127.0.0.1",
		"10.0.258":        "10.0.1.2",
		"169.254.43518":   "169.254.169.254",
		"::1":             "::1",
		"fe80::1%eth0":    "fe80::1%eth0",
		"256.0.0.1":       "",
		"1.2.3.4.5":       "",
		"127.0.65536":     "",
		"4294967296":      "",
		"08.0.0.1":        "", // 8 is not an octal digit
		"127..1":          "",
		"":                "",
		"judge":           "",
		"example.com":     "",
		"1.2.3.example":   "",
		"+1.2.3.4":        "",
		"0x":              "",
		"judge.svc:8080":  "",
		"1.2.3.4.nip.io":  "",
		"0xfffffffff":     "",
		"255.255.255.255": "255.255.255.255",
	} {
		got, ok := parseHostAddr(in)
		if !ok {
			if want != "" {
				t.Errorf("parseHostAddr(%q) failed; want %s", in, want)
			}
			continue
		}
		if got.String() != want {
			t.Errorf("parseHostAddr(%q) = %s, want %q", in, got, want)
		}
	}
}
