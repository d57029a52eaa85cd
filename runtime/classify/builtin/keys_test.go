package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// The key before a typed declaration's type name, at the edges of what the detector reads
// back: up to four blanks on each side of a ':', a key of up to 63 bytes.
func TestTypedKeyEdges(t *testing.T) {
	long := strings.Repeat("x", 56) + "api_key" // 63 bytes
	for _, tc := range []struct {
		before string
		want   keyKind
	}{
		{"var apiKey ", keyToken},
		{"var apiKey    ", keyToken},
		{"var apiKey     ", keyNone},
		{"const apiKey: ", keyToken},
		{"const apiKey    :    ", keyToken},
		{"const apiKey     : ", keyNone},
		{"const apiKey :     ", keyNone},
		{"var " + long + " ", keyToken},
		{"var x" + long + " ", keyNone},
		{"var apiKey\t", keyToken},
		{"const apiKey:\t", keyToken},
		{"const apiKey\t: ", keyToken},
		{"var  ", keyNone},
		{" ", keyNone},
		{"var greeting ", keyNone},
	} {
		s := tc.before + "string = \"v\""
		if got := typedKey(s, len(tc.before)); got != tc.want {
			t.Errorf("typedKey(%q) = %v, want %v", s, got, tc.want)
		}
	}
}

// The name a value key belongs to, in XML attributes, JSON members and YAML items, at the
// edges of what the detector reads back.
func TestNamedValueKeyEdges(t *testing.T) {
	for _, tc := range []struct {
		before string
		want   keyKind
	}{
		{`<add key="ApiKey" `, keyToken},
		{`<add key="ApiKey"` + strings.Repeat(" ", 16), keyToken},
		{`<add key="ApiKey"` + strings.Repeat(" ", 17), keyNone},
		{`{"name": "api_key", "`, keyToken},
		{`{"name":    "api_key", "`, keyToken},
		{`{"name":     "api_key", "`, keyNone},
		{`{"name"    :"api_key", "`, keyToken},
		{`{"name"     :"api_key", "`, keyNone},
		{`{"name": "greeting", "`, keyNone},
		{`{"title": "api_key", "`, keyNone},
		{`{"myname": "api_key", "`, keyNone},
		{`- name: DB_PASSWORD` + "\n  ", keySecret},
		{`- name: app-db.password` + "\n  ", keySecret},
		{`"api_key", "`, keyNone},
		{`{"name": "api_key` + "\n" + `", "`, keyNone},
		{`name="` + strings.Repeat("a", 64) + `password" `, keyNone},
		{`value`, keyNone},
		{`{'name': 'api_key', '`, keyToken},
		{"{\"name\":\t\"api_key\", \"", keyToken},
		{"{\"name\"\t:\"api_key\", \"", keyToken},
		{`{"name": "` + strings.Repeat("x", 55) + `_password", "`, keySecret},
		{`{"name": "` + strings.Repeat("x", 56) + `_password", "`, keyNone},
		{`- name: ` + strings.Repeat("x", 55) + "_password\n  ", keySecret},
		{`- name: ` + strings.Repeat("x", 56) + "_password\n  ", keyNone},
		{`api_key", "`, keyNone},
		{"DB_PASSWORD\n  ", keyNone},
		{`key=api_key, "`, keyToken},
	} {
		s := tc.before + "value=\"v\""
		if got := namedValueKey(s, len(tc.before)); got != tc.want {
			t.Errorf("namedValueKey(%q) = %v, want %v", s, got, tc.want)
		}
	}
}

// Secrets as XML elements and as the second argument of a call, at the edges of what the
// detector accepts: namespaces and dotted names, the element's own end tag (or the end of
// the text inside it), up to four blanks around the comma and after the parenthesis, keys of
// 64 and 65 bytes, both quote kinds but not mixed.
func TestElementAndCallSecrets(t *testing.T) {
	c := only(t, "generic-secret")
	const v = "Xy7kP2qLm9zW"
	long := func(n int) string { return strings.Repeat("x", n) + "_password" }
	for _, tc := range []struct {
		text  string
		found bool
	}{
		{"cfg <password>" + v + "</password> end", true},
		{"cfg <ns:password>" + v + "</ns:password> end", true},
		{"cfg <db.password>" + v + "</db.password> end", true},
		{"cfg <db-password>" + v + "</db-password> end", true},
		{"cfg <" + long(55) + ">" + v + "</" + long(55) + "> end", true},
		{"cfg <" + long(56) + ">" + v + "</" + long(56) + "> end", false},
		{"cfg <password>" + v + "</passwd> end", false},
		{"cfg <password>" + v + " end", false},
		{"cfg password>" + v + "</password> end", false},
		{"cfg <password>" + v + " </password> end", false},
		{"cfg <password>" + v + "</pass", true},
		{"cfg <password>" + v, true},
		{`cfg setProperty("db.password", "` + v + `") end`, true},
		{`cfg setProperty("db.password",    "` + v + `") end`, true},
		{`cfg setProperty("db.password",     "` + v + `") end`, false},
		{`cfg setProperty("db.password",` + "\t\"" + v + `") end`, true},
		{`cfg setProperty("db.password"    , "` + v + `") end`, true},
		{`cfg setProperty("db.password"     , "` + v + `") end`, false},
		{`cfg setProperty(    "db.password", "` + v + `") end`, true},
		{`cfg setProperty(     "db.password", "` + v + `") end`, false},
		{`cfg setProperty("` + long(55) + `", "` + v + `") end`, true},
		{`cfg setProperty("` + long(56) + `", "` + v + `") end`, false},
		{`cfg define('AUTH_KEY', '` + v + `') end`, true},
		{`cfg define('AUTH_KEY", '` + v + `') end`, false},
		{`cfg f(x, "db.password", "` + v + `") end`, false},
		{`cfg ("password", "` + v + `") end`, true},
		{`cfg "password", "` + v + `" end`, false},
		{`cfg setProperty("db.password", ` + v + `) end`, false},
		{`cfg setProperty("greeting", "` + v + `") end`, false},
	} {
		res, err := c.Classify(context.Background(), classify.Input{Text: tc.text})
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(tc.text, v)
		got := len(res.Spans) == 1 && res.Spans[0].Start == i && res.Spans[0].End == i+len(v)
		if got != tc.found || !tc.found && len(res.Spans) > 0 {
			t.Errorf("%q: spans %v, want the value found: %v", tc.text, res.Spans, tc.found)
		}
	}
}
