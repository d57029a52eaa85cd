package modelprovider

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

func validSpec() v1alpha1.ModelProviderSpec {
	return v1alpha1.ModelProviderSpec{API: v1alpha1.ProviderAPIOpenAI, URL: "https://api.openai.com/v1",
		CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: "openai-key", Key: "apiKey"},
		NamespaceSelector:    &v1alpha1.LabelSelector{}}
}

func TestCheckSpecNamesTheFieldAGuardCouldNotUse(t *testing.T) {
	cases := []struct {
		name       string
		mutate     func(*v1alpha1.ModelProviderSpec)
		allowLocal bool
		want       string // "" for a usable spec
	}{
		{"the OpenAI API is usable", func(*v1alpha1.ModelProviderSpec) {}, false, ""},
		{"an in-cluster OpenAI-compatible server over http is usable", func(s *v1alpha1.ModelProviderSpec) {
			s.URL = "http://vllm.models.svc:8000/v1"
		}, false, ""},
		{"an unknown API family", func(s *v1alpha1.ModelProviderSpec) { s.API = "Gemini" }, false, "spec.api"},
		{"a URL with user information", func(s *v1alpha1.ModelProviderSpec) {
			s.URL = "https://user:sk-secret@api.openai.com/v1"
		}, false, "spec.url: must not carry credentials"},
		{"a URL with a query", func(s *v1alpha1.ModelProviderSpec) { s.URL = "https://api.openai.com/v1?key=x" }, false, "spec.url: must not carry a query"},
		{"a URL with a fragment", func(s *v1alpha1.ModelProviderSpec) { s.URL = "https://api.openai.com/v1#x" }, false, "spec.url: must not carry a query"},
		{"an ftp URL", func(s *v1alpha1.ModelProviderSpec) { s.URL = "ftp://api.openai.com/v1" }, false, "spec.url: must be an http or https URL"},
		{"a URL without a host", func(s *v1alpha1.ModelProviderSpec) { s.URL = "https:///v1" }, false, "spec.url: must be an absolute URL with a host"},
		{"a loopback URL, where the app container could listen", func(s *v1alpha1.ModelProviderSpec) {
			s.URL = "http://127.0.0.1:8080/v1"
		}, false, "spec.url: 127.0.0.1 is a loopback address"},
		{"the metadata service", func(s *v1alpha1.ModelProviderSpec) { s.URL = "http://169.254.169.254/v1" }, false, "spec.url: 169.254.169.254 is a link-local address"},
		{"a loopback URL in development", func(s *v1alpha1.ModelProviderSpec) { s.URL = "http://127.0.0.1:8080/v1" }, true, ""},
		{"one header twice in different case", func(s *v1alpha1.ModelProviderSpec) {
			s.Headers = []v1alpha1.ProviderHeader{{Name: "OpenAI-Project", Value: "a"}, {Name: "openai-project", Value: "b"}}
		}, false, "spec.headers[1].name"},
		{"no namespaceSelector", func(s *v1alpha1.ModelProviderSpec) { s.NamespaceSelector = nil }, false, "spec.namespaceSelector: is required"},
		{"a namespaceSelector that does not parse", func(s *v1alpha1.ModelProviderSpec) {
			s.NamespaceSelector = &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "tier", Operator: v1alpha1.LabelSelectorOpIn}}}
		}, false, "spec.namespaceSelector: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(&s)
			got := strings.Join(CheckSpec(&s, tc.allowLocal), "; ")
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("refused a usable spec: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("got %q, want a problem containing %q", got, tc.want)
			}
			if strings.Contains(got, "sk-secret") || strings.Contains(got, s.URL) && s.URL != "" && tc.want != "" {
				t.Fatalf("the message quotes the URL: %s", got)
			}
		})
	}
}
