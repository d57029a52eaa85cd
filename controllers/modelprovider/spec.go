package modelprovider

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// CheckSpec returns what in a ModelProvider's spec a guard could not use, one message per
// problem, each starting with the field's path; nil when the guard can use it. The schema
// refuses most of this at apply time; CheckSpec judges with the Go parsers the guard uses,
// and adds what the schema cannot say:
//
//   - spec.url must parse as an absolute http or https URL with a host and no user
//     information, query or fragment; and, unless allowLocal, must not name the guard's
//     own pod (a loopback address: any container of the pod could listen there and
//     receive the credential), its link or a cloud's metadata service
//     (policy.LocalBackendURLs, the rule Classifier backends follow);
//   - spec.headers must not name one header twice in different case (a guard sends it
//     once, so one value would silently be lost);
//   - spec.namespaceSelector must be set and parse as a label selector.
//
// No message quotes the URL or a header's value: they are the user's, and status and
// Events are read by people the platform team does not mean to tell.
func CheckSpec(s *v1alpha1.ModelProviderSpec, allowLocal bool) []string {
	var problems []string
	switch s.API {
	case v1alpha1.ProviderAPIOpenAI, v1alpha1.ProviderAPIAnthropic:
	default:
		problems = append(problems, "spec.api: must be OpenAI or Anthropic")
	}
	problems = append(problems, checkURL(s.URL, allowLocal)...)
	seen := map[string]int{}
	for i, h := range s.Headers {
		canonical := http.CanonicalHeaderKey(h.Name)
		if j, ok := seen[canonical]; ok {
			problems = append(problems, fmt.Sprintf("spec.headers[%d].name: names the header of spec.headers[%d] again "+
				"(header names ignore case): a guard would send only one of them", i, j))
			continue
		}
		seen[canonical] = i
	}
	if s.NamespaceSelector == nil {
		problems = append(problems, "spec.namespaceSelector: is required; {} selects every namespace")
	} else if _, err := metav1.LabelSelectorAsSelector(v1alpha1.LabelSelectorToMetaV1(s.NamespaceSelector)); err != nil {
		problems = append(problems, "spec.namespaceSelector: "+err.Error())
	}
	return problems
}

// checkURL judges spec.url (see CheckSpec).
func checkURL(raw string, allowLocal bool) []string {
	const f = "spec.url: "
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return []string{f + "is not a URL the guard can parse"}
	case u.Scheme != "http" && u.Scheme != "https":
		return []string{f + "must be an http or https URL"}
	case u.Opaque != "" || u.Hostname() == "":
		return []string{f + "must be an absolute URL with a host"}
	case u.User != nil:
		return []string{f + "must not carry credentials (user information before @): put the credential in credentialsSecretRef"}
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return []string{f + "must not carry a query or a fragment"}
	}
	if allowLocal {
		return nil
	}
	// The rule of Classifier backend URLs, which a guard also calls with a credential.
	errs := policy.LocalBackendURLs(&spec.ClassifierSpec{Webhook: &spec.WebhookBackend{URL: raw}})
	if len(errs) == 0 {
		return nil
	}
	why, _, _ := strings.Cut(errs[0].Detail, ";")
	return []string{f + why + "; a guard would send the pod's calls and this provider's credential there, so the manager " +
		"refuses it unless started with --classifier-allow-local-urls (for development)"}
}
