package builtin

import (
	"context"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// IPv6 addresses in their written forms — compressed, IPv4-mapped, in brackets with a port,
// the longest one — and what only looks like one (times, too many groups, a second "::",
// a word around it). The span must be the address alone.
func TestIPv6Forms(t *testing.T) {
	c := only(t, "ip-address")
	for n, want := range map[string]string{
		"2001:db8::1":          "2001:db8::1",
		"::1":                  "::1",
		"fe80::1":              "fe80::1",
		"::ffff:192.0.2.128":   "::ffff:192.0.2.128",
		"2001:db8::192.0.2.1":  "2001:db8::192.0.2.1",
		"2001:db8:0:0:0:0:0:1": "2001:db8:0:0:0:0:0:1",
		"[2001:db8::1]:443":    "2001:db8::1",
		"2001:0db8:85a3:0000:0000:8a2e:0370:7334":       "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
		"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255": "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
		"::":                     "",
		"2001:db8:0:0:0:0:0:1:2": "",
		"12:34":                  "",
		"12:34:56":               "",
		"2001:db8:::1":           "",
		"2001:db8::1::2":         "",
		"x2001:db8::1":           "",
		"2001:db8::1x":           "",
		"::ffff:192.0.2":         "",
		"2001:db8::12345":        "",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255": "255.255.255.255", // too long for IPv6; its IPv4 tail stands alone
	} {
		text := "host " + n + " up"
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, sp := range res.Spans {
			got += text[sp.Start:sp.End]
		}
		if got != want {
			t.Errorf("%q: found %q, want %q", n, got, want)
		}
	}
}
