package injection

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Keyless apps: a pod names the ModelProviders it calls through its guard
// with the annotation guardv1.AnnotationProvider, or inherits its namespace's. The
// injector passes each to the guard as --provider=NAME and gives the app containers a
// placeholder API key of the provider's family; the guard receives the credential over
// its subscription and swaps it in. Nothing of the credential, not even the name of its
// Secret, enters the pod.
//
// A pod that asks for a provider it cannot use is denied, in namespaces labelled enabled
// as in those labelled required: a provider that does not exist, one whose
// namespaceSelector does not select the pod's namespace, two of one API family, or a name
// that cannot be a ModelProvider's. Admitted with a guard but without the provider, the
// app would have no key and fail at its first call; admitted without a guard, it would
// run unguarded. Telling the author at admission, with the reason, is what a user expects
// of a pod that asks for something it may not have (the ReplicaSet controller turns the
// denial into a FailedCreate Event). An unreadable provider is the injector failing, as an
// unreadable namespace is: the pod is admitted without a guard behind an entry that fails
// open, denied behind the required entry.

// ReasonAPIKeyKept (Warning): an app container of a pod that uses a ModelProvider sets its
// provider's API key variable itself; it is kept, and the guard refuses a call that
// carries a real provider key instead of the placeholder.
const ReasonAPIKeyKept = "APIKeyKept"

// maxProviders bounds the names a pod may ask for: one per API family.
const maxProviders = 2

// apiKeyEnv is the variable each API family's official SDKs read their key from.
var apiKeyEnv = map[v1alpha1.ProviderAPI]string{
	v1alpha1.ProviderAPIOpenAI:    "OPENAI_API_KEY",
	v1alpha1.ProviderAPIAnthropic: "ANTHROPIC_API_KEY",
}

// providerChoice is what the handler learned of the ModelProviders a pod asks for: the
// names, where they come from, and the providers it read. The zero value asks for none.
type providerChoice struct {
	// from says where the names come from, for messages: the pod's annotation or its
	// namespace's.
	from string
	// names are the providers asked for, sorted and without duplicates.
	names []string
	// invalid says why the annotation's value is refused ("" when it parses).
	invalid string
	// found are the providers read, by name; a name without an entry does not exist.
	found map[string]*v1alpha1.ModelProvider
}

// chosenProvider is a provider a pod may use.
type chosenProvider struct {
	name string
	api  v1alpha1.ProviderAPI
}

// requestedProviders reads the providers a pod asks for from its annotations, else from
// its namespace's: an annotation on the pod, even empty, replaces the namespace's default
// (empty opts out of it). The value is NAME or NAME,NAME.
func requestedProviders(podAnnotations, nsAnnotations map[string]string, namespace string) providerChoice {
	raw, ok := podAnnotations[guardv1.AnnotationProvider]
	c := providerChoice{from: "the pod's annotation " + guardv1.AnnotationProvider}
	if !ok {
		raw = nsAnnotations[guardv1.AnnotationProvider]
		c.from = fmt.Sprintf("the annotation %s of namespace %s", guardv1.AnnotationProvider, namespace)
	}
	for _, n := range strings.Split(raw, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			c.invalid = fmt.Sprintf("%s names %s, which cannot be a ModelProvider's name", c.from, strconv.Quote(truncate(n)))
			return c
		}
		c.names = append(c.names, n)
	}
	slices.Sort(c.names)
	c.names = slices.Compact(c.names)
	if len(c.names) > maxProviders {
		c.invalid = fmt.Sprintf("%s names %d ModelProviders; a pod uses at most one per API family (%d)", c.from, len(c.names), maxProviders)
		c.names = nil
	}
	return c
}

// lookUpProviders reads each provider c names with get, which returns nil for one that
// does not exist; an error is the injector's failure to read it.
func lookUpProviders(ctx context.Context, c providerChoice, get func(context.Context, string) (*v1alpha1.ModelProvider, error)) (providerChoice, error) {
	if c.invalid != "" || len(c.names) == 0 {
		return c, nil
	}
	c.found = map[string]*v1alpha1.ModelProvider{}
	for _, n := range c.names {
		mp, err := get(ctx, n)
		if err != nil {
			return c, fmt.Errorf("reading ModelProvider %s: %w", n, err)
		}
		if mp != nil {
			c.found[n] = mp
		}
	}
	return c, nil
}

// resolveProviders says which providers of c the pod in namespace (with nsLabels) may
// use, or why it may not use them all. Every problem is named, not only the first.
func resolveProviders(c providerChoice, namespace string, nsLabels map[string]string) ([]chosenProvider, string) {
	if c.invalid != "" {
		return nil, c.invalid
	}
	var problems []string
	var out []chosenProvider
	byAPI := map[v1alpha1.ProviderAPI][]string{}
	for _, n := range c.names {
		mp := c.found[n]
		switch {
		case mp == nil:
			problems = append(problems, fmt.Sprintf("ModelProvider %s does not exist", n))
			continue
		case !mp.DeletionTimestamp.IsZero():
			problems = append(problems, fmt.Sprintf("ModelProvider %s is being deleted", n))
			continue
		case !selectsNamespace(mp.Spec.NamespaceSelector, nsLabels):
			problems = append(problems, fmt.Sprintf("ModelProvider %s does not serve namespace %s (its namespaceSelector does not select it)", n, namespace))
			continue
		case apiKeyEnv[mp.Spec.API] == "":
			problems = append(problems, fmt.Sprintf("ModelProvider %s serves API %s, which this injector does not know", n, strconv.Quote(truncate(string(mp.Spec.API)))))
			continue
		}
		byAPI[mp.Spec.API] = append(byAPI[mp.Spec.API], n)
		out = append(out, chosenProvider{name: n, api: mp.Spec.API})
	}
	for _, api := range []v1alpha1.ProviderAPI{v1alpha1.ProviderAPIOpenAI, v1alpha1.ProviderAPIAnthropic} {
		if names := byAPI[api]; len(names) > 1 {
			problems = append(problems, fmt.Sprintf("ModelProviders %s all serve the %s API; a pod uses at most one per API family",
				strings.Join(names, " and "), api))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Sprintf("%s: %s", c.from, strings.Join(problems, "; "))
	}
	return out, ""
}

// selectsNamespace reports whether a provider's namespaceSelector selects a namespace
// with nsLabels. The selector is required; a missing or invalid one selects nothing.
func selectsNamespace(sel *v1alpha1.LabelSelector, nsLabels map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(v1alpha1.LabelSelectorToMetaV1(sel))
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(nsLabels))
}

// providerDenial is the message of a pod denied for the providers it asks for.
func providerDenial(why string) string {
	return "the pod asks for model providers it cannot use: " + why
}

// setPlaceholderKeys gives the app containers (and, with a native sidecar, the init
// containers after it) the placeholder API key of each chosen provider's family, so that
// SDKs that insist on a key start; the guard swaps in the provider's credential. A
// container that sets the variable itself keeps its value, which may be a real key that
// the guard will refuse: it is reported, without the value.
func setPlaceholderKeys(pod *corev1.Pod, cfg *Config, providers []chosenProvider) []finding {
	var findings []finding
	for _, c := range appContainers(pod, cfg) {
		for _, p := range providers {
			name, known := apiKeyEnv[p.api]
			if !known {
				continue // RenderGuard's, which knows providers by name only
			}
			if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }); i >= 0 {
				if e := c.Env[i]; e.ValueFrom == nil && e.Value == guardv1.PlaceholderAPIKey {
					continue
				}
				findings = append(findings, finding{ReasonAPIKeyKept, fmt.Sprintf(
					"container %s sets %s itself; it is kept, and the guard, which attaches ModelProvider %s's credential, "+
						"refuses a call that carries a real provider key: leave it unset to use the provider", c.Name, name, p.name)})
				continue
			}
			c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: guardv1.PlaceholderAPIKey})
		}
	}
	return findings
}

// providerArgs are the guard's --provider flags, in the order of providers (sorted).
func providerArgs(providers []chosenProvider) []string {
	args := make([]string, 0, len(providers))
	for _, p := range providers {
		args = append(args, "--"+flagProvider+"="+p.name)
	}
	return args
}
