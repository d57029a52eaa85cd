package injection

import (
	"slices"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
)

func TestDecideFrontsTheAnnotatedMCPServers(t *testing.T) {
	d := decide(newPod(withAnnotation(guardv1.AnnotationMCPUpstreams, "code-search=http://search.tools.svc:8080/mcp, files=https://files.example/mcp")),
		"apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
	g := guardOf(d.pod)
	for _, want := range []string{"--mcp-upstream=code-search=http://search.tools.svc:8080/mcp", "--mcp-upstream=files=https://files.example/mcp"} {
		if !slices.Contains(g.Args, want) {
			t.Errorf("the guard's args %q lack %s", g.Args, want)
		}
	}
	app := &d.pod.Spec.Containers[0]
	for name, want := range map[string]string{
		"GUARDRAIL_MCP_CODE_SEARCH_URL": "http://127.0.0.1:15080/mcp/code-search",
		"GUARDRAIL_MCP_FILES_URL":       "http://127.0.0.1:15080/mcp/files",
	} {
		if v, _ := envValue(app, name); v != want {
			t.Errorf("%s = %q, want %s", name, v, want)
		}
	}
	if len(d.findings) != 0 {
		t.Fatalf("findings = %v", d.findings)
	}
	// The control plane serves the pod: its guard takes only flags the injector passes.
	if err := VerifyGuard(d.pod, testConfig().Guard()); err != nil {
		t.Fatal(err)
	}
}

func TestDecideRefusesABadMCPUpstreamsAnnotation(t *testing.T) {
	for _, tc := range []struct{ name, value, message string }{
		{"a name that is not a DNS label", "Code_Search=http://s/mcp", "DNS label"},
		{"a URL that is not http(s)", "files=ftp://f/mcp", "http or https"},
		{"a name given twice", "files=http://a/mcp,files=http://b/mcp", "named twice"},
		{"a URL with credentials", "files=https://u:secret@f/mcp", "credentials"},
	} {
		t.Run(tc.name+" is warned about and no MCP server fronted", func(t *testing.T) {
			d := decide(newPod(withAnnotation(guardv1.AnnotationMCPUpstreams, tc.value)), "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
			if d.pod == nil || guardOf(d.pod) == nil {
				t.Fatal("the pod should still be injected")
			}
			if len(d.findings) != 1 || d.findings[0].reason != ReasonInvalidAnnotation ||
				!strings.Contains(d.findings[0].message, guardv1.AnnotationMCPUpstreams) || !strings.Contains(d.findings[0].message, tc.message) {
				t.Fatalf("findings = %v", d.findings)
			}
			if strings.Contains(d.findings[0].message, "secret") {
				t.Fatal("the warning echoes a credential")
			}
			for _, a := range guardOf(d.pod).Args {
				if strings.HasPrefix(a, "--"+flagMCPUpstream) {
					t.Fatalf("the guard fronts an MCP server: %s", a)
				}
			}
			for _, e := range d.pod.Spec.Containers[0].Env {
				if strings.HasPrefix(e.Name, "GUARDRAIL_MCP_") {
					t.Fatalf("the app got %s", e.Name)
				}
			}
		})
		t.Run(tc.name+" is denied where the guard is required", func(t *testing.T) {
			d := decide(newPod(withAnnotation(guardv1.AnnotationMCPUpstreams, tc.value)), "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{})
			if !strings.Contains(d.deny, guardv1.AnnotationMCPUpstreams) || !strings.Contains(d.deny, tc.message) {
				t.Fatalf("denial = %q", d.deny)
			}
		})
	}
}

func TestDecideKeepsAnMCPURLTheAppSetsItself(t *testing.T) {
	d := decide(newPod(withAnnotation(guardv1.AnnotationMCPUpstreams, "files=http://f/mcp"), withEnv("GUARDRAIL_MCP_FILES_URL", "http://elsewhere/mcp")),
		"apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
	if v, _ := envValue(&d.pod.Spec.Containers[0], "GUARDRAIL_MCP_FILES_URL"); v != "http://elsewhere/mcp" {
		t.Fatalf("the app's own value was replaced: %q", v)
	}
	if len(d.findings) != 1 || d.findings[0].reason != ReasonBaseURLKept {
		t.Fatalf("findings = %v", d.findings)
	}
}
