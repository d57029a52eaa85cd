package upstream

import (
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		name, list, want, err string
	}{
		{"two servers", "files=http://files.tools.svc:8080/mcp, search=https://search.example/mcp", "files=http://files.tools.svc:8080/mcp search=https://search.example/mcp", ""},
		{"an empty list has none", " ", "", ""},
		{"a name with capitals is refused", "Files=http://f/mcp", "", "DNS label"},
		{"a name ending in a dash is refused", "files-=http://f/mcp", "", "DNS label"},
		{"a name with an underscore is refused", "my_files=http://f/mcp", "", "DNS label"},
		{"a pair without = is refused", "files", "", "not NAME=URL"},
		{"a relative URL is refused", "files=/mcp", "", "not an absolute URL"},
		{"another scheme is refused", "files=ftp://f/mcp", "", "http or https"},
		{"credentials in the URL are refused", "files=http://u:p@f/mcp", "", "credentials"},
		{"a fragment is refused", "files=http://f/mcp#x", "", "fragment"},
		{"a name given twice is refused", "files=http://a/mcp,files=http://b/mcp", "", "named twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ups, err := ParseList(tc.list)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range ups {
				got = append(got, u.String())
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %q", got)
			}
		})
	}
}

func TestTheEnvironmentVariableIsTheNameUpperCasedWithUnderscores(t *testing.T) {
	if got := EnvVar("code-search"); got != "GUARDRAIL_MCP_CODE_SEARCH_URL" {
		t.Fatal(got)
	}
	if got := GuardURL(15080, "code-search"); got != "http://127.0.0.1:15080/mcp/code-search" {
		t.Fatal(got)
	}
}
