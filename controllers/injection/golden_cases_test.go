package injection

import (
	"os"
	"path/filepath"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// goldenDecision is what a user gets from the injector for one pod: refused, left alone,
// or changed, with the warnings that become admission warnings and Events.
type goldenDecision struct {
	Skip     string            `json:"skip,omitempty"`
	Deny     string            `json:"deny,omitempty"`
	Warnings []goldenWarning   `json:"warnings,omitempty"`
	Pod      *corev1.Pod       `json:"pod,omitempty"`
	Labels   map[string]string `json:"namespaceLabels,omitempty"`
	// Annotations are the namespace's (a default ModelProvider); the cluster's providers
	// are testProviders.
	Annotations map[string]string `json:"namespaceAnnotations,omitempty"`
}

type goldenWarning struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// TestGoldenDecisions renders the injector's decision for every documented annotation and
// label, both pod shapes, required and enabled namespaces, existing env and containers,
// and bad values, into testdata/decisions/, so that every change to what users get shows
// in review. Regenerate with go test ./controllers/injection -run TestGoldenDecisions -update.
func TestGoldenDecisions(t *testing.T) {
	type tc struct {
		pod           *corev1.Pod
		ns            string
		nsLabels      map[string]string
		nsAnnotations map[string]string
		legacy        bool
	}
	enabled := func(opts ...podOption) tc { return tc{pod: newPod(opts...), ns: "apps", nsLabels: enabledNS} }
	required := func(opts ...podOption) tc { return tc{pod: newPod(opts...), ns: "apps", nsLabels: requiredNS} }
	withContainer := func(name string) podOption {
		return func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Name = name
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
	}
	legacy := func(c tc) tc { c.legacy = true; return c }
	defaultProvider := func(name string, c tc) tc { c.nsAnnotations = providerDefault(name); return c }
	cases := map[string]tc{
		"enabled":                             enabled(),
		"enabled-legacy":                      legacy(enabled()),
		"required":                            required(),
		"required-legacy":                     legacy(required()),
		"enabled-inject-false":                enabled(withLabel(guardv1.LabelInject, "false")),
		"required-inject-false":               required(withLabel(guardv1.LabelInject, "false")),
		"unlabelled-namespace-inject-true":    {pod: newPod(withLabel(guardv1.LabelInject, "true")), ns: "apps"},
		"unlabelled-namespace":                {pod: newPod(), ns: "apps"},
		"system-namespace":                    {pod: newPod(), ns: "kube-system", nsLabels: requiredNS},
		"operator-namespace":                  {pod: newPod(), ns: "guardrail-system", nsLabels: requiredNS},
		"enabled-already-injected-label":      enabled(withLabel(guardv1.LabelInjected, "true")),
		"required-already-injected-label":     required(withLabel(guardv1.LabelInjected, "true")),
		"enabled-hand-written-guard":          enabled(withContainer(guardv1.ContainerName)),
		"required-hand-written-guard":         required(withContainer(guardv1.ContainerName)),
		"resources":                           enabled(withAnnotation(guardv1.AnnotationCPU, "250m"), withAnnotation(guardv1.AnnotationMemory, "96Mi"), withAnnotation(guardv1.AnnotationCPULimit, "1"), withAnnotation(guardv1.AnnotationMemoryLimit, "256Mi")),
		"resources-bad":                       enabled(withAnnotation(guardv1.AnnotationCPU, "lots"), withAnnotation(guardv1.AnnotationMemoryLimit, "-1Gi")),
		"resources-bad-required":              required(withAnnotation(guardv1.AnnotationCPU, "lots")),
		"upstreams":                           enabled(withAnnotation(guardv1.AnnotationOpenAIUpstream, "https://llm.example.com/openai"), withAnnotation(guardv1.AnnotationAnthropicUpstream, "https://llm.example.com/anthropic"), withAnnotation(guardv1.AnnotationGeminiUpstream, "https://llm.example.com/gemini")),
		"upstreams-bad":                       enabled(withAnnotation(guardv1.AnnotationOpenAIUpstream, "ftp://x"), withAnnotation(guardv1.AnnotationAnthropicUpstream, "not a url"), withAnnotation(guardv1.AnnotationGeminiUpstream, "https://key:secret@llm.example.com")),
		"mcp-upstreams":                       enabled(withAnnotation(guardv1.AnnotationMCPUpstreams, "docs=http://docs.tools.svc:8080/mcp,search-1=https://search.example.com/mcp")),
		"mcp-upstreams-bad":                   enabled(withAnnotation(guardv1.AnnotationMCPUpstreams, "Docs=http://x,docs=http://y,docs=http://z")),
		"mcp-upstreams-bad-required":          required(withAnnotation(guardv1.AnnotationMCPUpstreams, "docs=file:///etc/passwd")),
		"existing-base-urls":                  enabled(withEnv("OPENAI_BASE_URL", "https://proxy.internal/v1"), withEnv("ANTHROPIC_BASE_URL", "https://proxy.internal"), withEnv("GOOGLE_GEMINI_BASE_URL", "https://proxy.internal")),
		"existing-env":                        enabled(withEnv("LOG_LEVEL", "info")),
		"init-container":                      enabled(withInitContainer("migrate")),
		"init-container-legacy":               legacy(enabled(withInitContainer("migrate"))),
		"two-app-containers":                  enabled(withContainer("worker")),
		"host-network":                        enabled(withHostNetwork()),
		"host-network-required":               required(withHostNetwork()),
		"port-of-the-guard":                   enabled(withPort(15080)),
		"injector-version-annotation-ignored": enabled(withAnnotation(guardv1.AnnotationInjectorVersion, "v0.0.0-forged")),
		"keyless-pod":                         enabled(withProvider("openai-prod")),
		"keyless-namespace-default-required":  defaultProvider("openai-prod", required(withInitContainer("migrate"))),
		"keyless-two-families":                enabled(withProvider("openai-prod,anthropic-prod")),
		"keyless-pod-opts-out-of-default":     defaultProvider("openai-prod", enabled(withProvider(""))),
		"keyless-app-sets-its-own-key":        enabled(withProvider("openai-prod"), withEnv("OPENAI_API_KEY", "sk-test-not-a-real-key")),
		"keyless-provider-missing":            enabled(withProvider("openai-staging")),
		"keyless-default-missing-required":    defaultProvider("gone", required()),
		"keyless-provider-not-for-namespace":  required(withProvider("ml-only")),
		"keyless-same-family-twice":           enabled(withProvider("openai-prod,openai-eu")),
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.NativeSidecars = !c.legacy
			c.pod.Namespace = c.ns
			d := decide(c.pod, c.ns, c.nsLabels, cfg, []byte(testCA), chooseProviders(t, c.pod, c.nsAnnotations))
			g := goldenDecision{Skip: d.skip, Deny: d.deny, Pod: d.pod, Labels: c.nsLabels, Annotations: c.nsAnnotations}
			for _, f := range d.findings {
				g.Warnings = append(g.Warnings, goldenWarning{Reason: f.reason, Message: f.message})
			}
			got, err := yaml.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "decisions", name+".golden.yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path) //nolint:gosec // a file of this package
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Fatalf("the injector's decision changed (-want +got); run with -update if intended:\n%s", diff)
			}
		})
	}
}
