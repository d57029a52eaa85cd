package builtin

import (
	"strings"
	"testing"
)

// The key before a typed declaration's type name, at the edges of what the detector reads
// back: up to four blanks on each side of a ':', a key of up to 63 bytes.
func TestTypedKeyEdges(t *testing.T) {
	long := strings.Repeat("x", 56) + "api_key" // 63 bytes
	for _, tc := range []struct {
		before string
		want   keyKind
	}{
		{"var apiKey ", keySecret},
		{"var apiKey    ", keySecret},
		{"var apiKey     ", keyNone},
		{"const apiKey: ", keySecret},
		{"const apiKey    :    ", keySecret},
		{"const apiKey     : ", keyNone},
		{"const apiKey :     ", keyNone},
		{"var " + long + " ", keySecret},
		{"var x" + long + " ", keyNone},
		{"var apiKey\t", keySecret},
		{"const apiKey:\t", keySecret},
		{"const apiKey\t: ", keySecret},
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
		{`<add key="ApiKey" `, keySecret},
		{`<add key="ApiKey"` + strings.Repeat(" ", 16), keySecret},
		{`<add key="ApiKey"` + strings.Repeat(" ", 17), keyNone},
		{`{"name": "api_key", "`, keySecret},
		{`{"name":    "api_key", "`, keySecret},
		{`{"name":     "api_key", "`, keyNone},
		{`{"name"    :"api_key", "`, keySecret},
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
		{`{'name': 'api_key', '`, keySecret},
		{"{\"name\":\t\"api_key\", \"", keySecret},
		{"{\"name\"\t:\"api_key\", \"", keySecret},
		{`{"name": "` + strings.Repeat("x", 55) + `_password", "`, keySecret},
		{`{"name": "` + strings.Repeat("x", 56) + `_password", "`, keyNone},
		{`- name: ` + strings.Repeat("x", 55) + "_password\n  ", keySecret},
		{`- name: ` + strings.Repeat("x", 56) + "_password\n  ", keyNone},
		{`api_key", "`, keyNone},
		{"DB_PASSWORD\n  ", keyNone},
		{`key=api_key, "`, keySecret},
	} {
		s := tc.before + "value=\"v\""
		if got := namedValueKey(s, len(tc.before)); got != tc.want {
			t.Errorf("namedValueKey(%q) = %v, want %v", s, got, tc.want)
		}
	}
}
