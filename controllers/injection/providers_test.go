package injection

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// testProviders are the ModelProviders of the unit tests' cluster: two OpenAI ones and an
// Anthropic one for every namespace, and one for namespaces labelled team=ml only.
var testProviders = map[string]*v1alpha1.ModelProvider{
	"openai-prod":    testProvider("openai-prod", v1alpha1.ProviderAPIOpenAI, nil),
	"openai-eu":      testProvider("openai-eu", v1alpha1.ProviderAPIOpenAI, nil),
	"anthropic-prod": testProvider("anthropic-prod", v1alpha1.ProviderAPIAnthropic, nil),
	"ml-only":        testProvider("ml-only", v1alpha1.ProviderAPIOpenAI, map[string]string{"team": "ml"}),
}

// testProvider is a ModelProvider of api whose namespaceSelector matches the labels
// (nil: every namespace).
func testProvider(name string, api v1alpha1.ProviderAPI, matchLabels map[string]string) *v1alpha1.ModelProvider {
	var sel map[string]v1alpha1.LabelValue
	for k, v := range matchLabels {
		if sel == nil {
			sel = map[string]v1alpha1.LabelValue{}
		}
		sel[k] = v1alpha1.LabelValue(v)
	}
	return &v1alpha1.ModelProvider{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ModelProviderSpec{
			API:                  api,
			URL:                  "https://" + name + ".example.com",
			CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: name + "-key", Key: "apiKey"},
			NamespaceSelector:    &v1alpha1.LabelSelector{MatchLabels: sel},
		},
	}
}

// chooseProviders is the handler's reading of the providers a pod asks for, against
// testProviders.
func chooseProviders(t testing.TB, pod *corev1.Pod, nsAnnotations map[string]string) providerChoice {
	t.Helper()
	c, err := lookUpProviders(context.Background(), requestedProviders(pod.Annotations, nsAnnotations, pod.Namespace),
		func(_ context.Context, name string) (*v1alpha1.ModelProvider, error) { return testProviders[name], nil })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decideKeyless is decide for the fixture pod with opts in namespace apps (labels
// nsLabels, annotations nsAnnotations), the providers read from testProviders.
func decideKeyless(t testing.TB, nsLabels, nsAnnotations map[string]string, opts ...podOption) decision {
	t.Helper()
	pod := newPod(opts...)
	return decide(pod, "apps", nsLabels, testConfig(), []byte(testCA), chooseProviders(t, pod, nsAnnotations))
}

func withProvider(value string) podOption {
	return withAnnotation(guardv1.AnnotationProvider, value)
}

func providerDefault(value string) map[string]string {
	return map[string]string{guardv1.AnnotationProvider: value}
}

// secretReferences lists every way a pod's spec refers to a Secret or carries a
// ModelProvider's Secret name: env from a Secret, envFrom, Secret and projected Secret
// volumes, image pull Secrets aside (the app's own).
func secretReferences(pod *corev1.Pod) []string {
	var refs []string
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					refs = append(refs, c.Name+" env "+e.Name+" from Secret "+e.ValueFrom.SecretKeyRef.Name)
				}
			}
			for _, e := range c.EnvFrom {
				refs = append(refs, c.Name+" envFrom "+e.String())
			}
			for _, a := range c.Args {
				if strings.Contains(a, "-key") {
					refs = append(refs, c.Name+" arg "+a)
				}
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			refs = append(refs, "volume "+v.Name+" of Secret "+v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					refs = append(refs, "volume "+v.Name+" projects Secret "+s.Secret.Name)
				}
			}
		}
	}
	return refs
}

func providerFlags(g *corev1.Container) []string {
	var out []string
	for _, a := range g.Args {
		if strings.HasPrefix(a, "--"+flagProvider+"=") {
			out = append(out, a)
		}
	}
	return out
}

func TestAKeylessPodGetsItsProvidersFlagsAndPlaceholderKeys(t *testing.T) {
	cases := []struct {
		name          string
		opts          []podOption
		nsAnnotations map[string]string
		flags         []string
		keys          []string // the app's placeholder key variables
	}{
		{name: "a pod that names a provider gets it", opts: []podOption{withProvider("openai-prod")},
			flags: []string{"--provider=openai-prod"}, keys: []string{"OPENAI_API_KEY"}},
		{name: "a pod inherits its namespace's default", nsAnnotations: providerDefault("anthropic-prod"),
			flags: []string{"--provider=anthropic-prod"}, keys: []string{"ANTHROPIC_API_KEY"}},
		{name: "a pod's own annotation replaces its namespace's default", opts: []podOption{withProvider("openai-eu")},
			nsAnnotations: providerDefault("openai-prod"), flags: []string{"--provider=openai-eu"}, keys: []string{"OPENAI_API_KEY"}},
		{name: "an empty annotation on the pod opts out of its namespace's default", opts: []podOption{withProvider("")},
			nsAnnotations: providerDefault("openai-prod")},
		{name: "one provider per API family, in name order, with spaces and a repeated name",
			opts:  []podOption{withProvider(" openai-prod , anthropic-prod,openai-prod")},
			flags: []string{"--provider=anthropic-prod", "--provider=openai-prod"}, keys: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}},
		{name: "a pod that names none gets neither flag nor key"},
	}
	for _, tc := range cases {
		for nsName, nsLabels := range map[string]map[string]string{"enabled": enabledNS, "required": requiredNS} {
			t.Run(tc.name+" in a namespace labelled "+nsName, func(t *testing.T) {
				d := decideKeyless(t, nsLabels, tc.nsAnnotations, append(tc.opts, withInitContainer("migrate"))...)
				if d.deny != "" || d.pod == nil {
					t.Fatalf("not injected: deny %q, skip %q", d.deny, d.skip)
				}
				if got := providerFlags(guardOf(d.pod)); !slices.Equal(got, tc.flags) {
					t.Fatalf("the guard's provider flags are %v, want %v", got, tc.flags)
				}
				app, migrate := &d.pod.Spec.Containers[0], &d.pod.Spec.InitContainers[1]
				for _, c := range []*corev1.Container{app, migrate} {
					for _, env := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
						v, ok := envValue(c, env)
						if want := slices.Contains(tc.keys, env); ok != want || (ok && v != guardv1.PlaceholderAPIKey) {
							t.Errorf("container %s: %s = %q (set %v), want the placeholder: %v", c.Name, env, v, ok, want)
						}
					}
				}
				if _, ok := envValue(guardOf(d.pod), "OPENAI_API_KEY"); ok {
					t.Error("the guard got a placeholder key; it takes the credential from its subscription")
				}
				if refs := secretReferences(d.pod); len(refs) > 0 {
					t.Errorf("the pod refers to a credential: %v", refs)
				}
				if len(d.findings) != 0 {
					t.Errorf("findings: %v", d.findings)
				}
				if err := VerifyGuard(d.pod, testConfig().Guard()); err != nil {
					t.Fatalf("the control plane would not serve the keyless guard: %v", err)
				}
				if got, want := GuardProviders(d.pod), providerNames(tc.flags); !slices.Equal(got, want) {
					t.Fatalf("GuardProviders = %v, want %v", got, want)
				}
			})
		}
	}
}

func providerNames(flags []string) []string {
	var out []string
	for _, f := range flags {
		out = append(out, strings.TrimPrefix(f, "--"+flagProvider+"="))
	}
	return out
}

func TestAKeylessPodBeforeNativeSidecarsLeavesItsInitContainersAlone(t *testing.T) {
	cfg := testConfig()
	cfg.NativeSidecars = false
	pod := newPod(withProvider("openai-prod"), withInitContainer("migrate"))
	d := decide(pod, "apps", enabledNS, cfg, []byte(testCA), chooseProviders(t, pod, nil))
	if _, ok := envValue(&d.pod.Spec.InitContainers[0], "OPENAI_API_KEY"); ok {
		t.Fatal("an init container runs before a legacy guard exists; it got a placeholder key")
	}
	if v, _ := envValue(&d.pod.Spec.Containers[1], "OPENAI_API_KEY"); v != guardv1.PlaceholderAPIKey {
		t.Fatalf("the app's OPENAI_API_KEY = %q", v)
	}
}

func TestAPodIsDeniedAProviderItCannotUse(t *testing.T) {
	cases := []struct {
		name          string
		opts          []podOption
		nsAnnotations map[string]string
		want          []string // substrings of the denial
	}{
		{name: "a provider that does not exist", opts: []podOption{withProvider("openai-staging")},
			want: []string{"the pod's annotation guardrail.dev/provider", "ModelProvider openai-staging does not exist"}},
		{name: "a provider whose namespaceSelector does not select the namespace", opts: []podOption{withProvider("ml-only")},
			want: []string{"ModelProvider ml-only does not serve namespace apps"}},
		{name: "two providers of one API family", opts: []podOption{withProvider("openai-prod,openai-eu")},
			want: []string{"ModelProviders openai-eu and openai-prod all serve the OpenAI API", "at most one per API family"}},
		{name: "a namespace default that does not exist, named as the namespace's", nsAnnotations: providerDefault("gone"),
			want: []string{"the annotation guardrail.dev/provider of namespace apps", "ModelProvider gone does not exist"}},
		{name: "a name that cannot be a ModelProvider's", opts: []podOption{withProvider("OpenAI_Prod")},
			want: []string{`"OpenAI_Prod"`, "cannot be a ModelProvider's name"}},
		{name: "more names than API families", opts: []podOption{withProvider("a,b,c")},
			want: []string{"names 3 ModelProviders"}},
		{name: "every problem at once", opts: []podOption{withProvider("gone,ml-only")},
			want: []string{"ModelProvider gone does not exist", "ModelProvider ml-only does not serve"}},
	}
	for _, tc := range cases {
		for nsName, nsLabels := range map[string]map[string]string{"enabled": enabledNS, "required": requiredNS} {
			t.Run(tc.name+" in a namespace labelled "+nsName, func(t *testing.T) {
				d := decideKeyless(t, nsLabels, tc.nsAnnotations, tc.opts...)
				if d.deny == "" {
					t.Fatalf("admitted (skip %q, pod %v)", d.skip, d.pod != nil)
				}
				for _, w := range tc.want {
					if !strings.Contains(d.deny, w) {
						t.Errorf("the denial %q does not say %q", d.deny, w)
					}
				}
			})
		}
	}
	t.Run("a provider that selects the namespace by its labels is allowed", func(t *testing.T) {
		d := decideKeyless(t, map[string]string{guardv1.LabelInjection: injectionEnabled, "team": "ml"}, nil, withProvider("ml-only"))
		if d.deny != "" || !slices.Equal(providerFlags(guardOf(d.pod)), []string{"--provider=ml-only"}) {
			t.Fatalf("deny %q", d.deny)
		}
	})
	t.Run("a provider being deleted is refused", func(t *testing.T) {
		gone := testProvider("openai-prod", v1alpha1.ProviderAPIOpenAI, nil)
		gone.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		c := providerChoice{from: "x", names: []string{"openai-prod"}, found: map[string]*v1alpha1.ModelProvider{"openai-prod": gone}}
		if _, why := resolveProviders(c, "apps", nil); !strings.Contains(why, "being deleted") {
			t.Fatalf("why = %q", why)
		}
	})
	t.Run("a pod that opts out of an enabled namespace is not judged on its namespace's default", func(t *testing.T) {
		d := decideKeyless(t, enabledNS, providerDefault("gone"), withLabel(guardv1.LabelInject, labelFalse))
		if d.deny != "" || d.pod != nil {
			t.Fatalf("deny %q, pod %v", d.deny, d.pod != nil)
		}
	})
}

func TestAnAppsOwnAPIKeyIsKeptAndReportedWithoutItsValue(t *testing.T) {
	const realKey = "sk-proj-Abc123realLookingKey456"
	fromSecret := func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "OPENAI_API_KEY", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "team-openai"}, Key: "key"}}})
	}
	for name, opt := range map[string]podOption{"a literal value": withEnv("OPENAI_API_KEY", realKey), "a value from a Secret": fromSecret} {
		t.Run(name, func(t *testing.T) {
			d := decideKeyless(t, enabledNS, nil, withProvider("openai-prod"), opt)
			app := &d.pod.Spec.Containers[0]
			n := 0
			for _, e := range app.Env {
				if e.Name == "OPENAI_API_KEY" {
					n++
					if e.Value == guardv1.PlaceholderAPIKey {
						t.Error("the app's own key was replaced by the placeholder")
					}
				}
			}
			if n != 1 {
				t.Fatalf("OPENAI_API_KEY is set %d times", n)
			}
			if len(d.findings) != 1 || d.findings[0].reason != ReasonAPIKeyKept ||
				!strings.Contains(d.findings[0].message, "OPENAI_API_KEY") || !strings.Contains(d.findings[0].message, "openai-prod") {
				t.Fatalf("findings = %v", d.findings)
			}
			if strings.Contains(d.findings[0].message, realKey) || strings.Contains(d.pod.Annotations[guardv1.AnnotationInjectionWarnings], realKey) {
				t.Fatal("the warning quotes the app's key")
			}
			if got := parseWarnings(d.pod.Annotations[guardv1.AnnotationInjectionWarnings]); len(got) != 1 || got[0] != d.findings[0] {
				t.Fatalf("the warning does not reach the events controller: %v", got)
			}
		})
	}
	t.Run("the placeholder set by the app itself is not reported", func(t *testing.T) {
		d := decideKeyless(t, enabledNS, nil, withProvider("openai-prod"), withEnv("OPENAI_API_KEY", guardv1.PlaceholderAPIKey))
		if len(d.findings) != 0 {
			t.Fatalf("findings = %v", d.findings)
		}
	})
	t.Run("a key of the other family is none of the injector's business", func(t *testing.T) {
		d := decideKeyless(t, enabledNS, nil, withProvider("openai-prod"), withEnv("ANTHROPIC_API_KEY", realKey))
		if len(d.findings) != 0 {
			t.Fatalf("findings = %v", d.findings)
		}
	})
}

func TestAKeylessPodInARequiredNamespaceIsReinvokedAsANoOp(t *testing.T) {
	first := decideKeyless(t, requiredNS, providerDefault("openai-prod"))
	if first.pod == nil {
		t.Fatalf("deny %q", first.deny)
	}
	// Another webhook changes the pod; the apiserver calls the injector again.
	again := first.pod.DeepCopy()
	again.Labels["mesh"] = "on"
	d := decide(again, "apps", requiredNS, testConfig(), []byte(testCA), chooseProviders(t, again, providerDefault("openai-prod")))
	if d.deny != "" || d.pod != nil {
		t.Fatalf("re-invocation: deny %q, changed %v", d.deny, d.pod != nil)
	}

	t.Run("a guard whose provider flag the pod's author wrote is refused", func(t *testing.T) {
		forged := first.pod.DeepCopy()
		g := guardOf(forged)
		for i, a := range g.Args {
			if strings.HasPrefix(a, "--provider=") {
				g.Args[i] = "--provider=ml-only"
			}
		}
		d := decide(forged, "apps", requiredNS, testConfig(), []byte(testCA), chooseProviders(t, forged, providerDefault("openai-prod")))
		if !strings.Contains(d.deny, "arguments are not the ones the injector renders") {
			t.Fatalf("deny %q", d.deny)
		}
	})
}

func TestRequestedProvidersReadsThePodThenTheNamespace(t *testing.T) {
	cases := []struct {
		name        string
		pod, ns     map[string]string
		wantNames   []string
		wantFrom    string
		wantInvalid string
	}{
		{name: "nothing anywhere"},
		{name: "the namespace's default", ns: providerDefault("a"), wantNames: []string{"a"}, wantFrom: "of namespace apps"},
		{name: "the pod's own", pod: providerDefault("b"), ns: providerDefault("a"), wantNames: []string{"b"}, wantFrom: "the pod's"},
		{name: "an empty value on the pod", pod: providerDefault(""), ns: providerDefault("a"), wantFrom: "the pod's"},
		{name: "commas only", pod: providerDefault(" , ,"), wantFrom: "the pod's"},
		{name: "a name too long to be an object's", pod: providerDefault(strings.Repeat("a", 254)), wantInvalid: "cannot be a ModelProvider's name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := requestedProviders(tc.pod, tc.ns, "apps")
			if !slices.Equal(c.names, tc.wantNames) || !strings.Contains(c.from, tc.wantFrom) || !strings.Contains(c.invalid, tc.wantInvalid) ||
				(tc.wantInvalid == "") != (c.invalid == "") {
				t.Fatalf("got %+v", c)
			}
		})
	}
}

func TestLookUpProvidersPassesOnTheReadersFailure(t *testing.T) {
	failing := func(context.Context, string) (*v1alpha1.ModelProvider, error) {
		return nil, errors.New("connection refused")
	}
	if _, err := lookUpProviders(context.Background(), requestedProviders(providerDefault("a"), nil, "apps"), failing); err == nil ||
		!strings.Contains(err.Error(), "ModelProvider a") {
		t.Fatalf("err = %v", err)
	}
	if _, err := lookUpProviders(context.Background(), requestedProviders(nil, nil, "apps"), failing); err != nil {
		t.Fatalf("a pod that asks for no provider read one: %v", err)
	}
}
