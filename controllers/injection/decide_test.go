package injection

import (
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

var enabledNS = map[string]string{guardv1.LabelInjection: injectionEnabled}
var requiredNS = map[string]string{guardv1.LabelInjection: injectionRequired}

func TestDecideWhichPodsAreInjected(t *testing.T) {
	cases := []struct {
		name     string
		pod      *corev1.Pod
		ns       string
		nsLabels map[string]string
		injected bool
		denied   string // substring of the denial
	}{
		{name: "a pod in a namespace labelled enabled is injected", pod: newPod(), ns: "apps", nsLabels: enabledNS, injected: true},
		{name: "a pod in a namespace labelled required is injected", pod: newPod(), ns: "apps", nsLabels: requiredNS, injected: true},
		{name: "a pod labelled inject=true in an unlabelled namespace is injected", pod: newPod(withLabel(guardv1.LabelInject, "true")), ns: "apps", injected: true},
		{name: "a pod in an unlabelled namespace is left alone", pod: newPod(), ns: "apps"},
		{name: "a namespace labelled with another value does not opt in", pod: newPod(), ns: "apps", nsLabels: map[string]string{guardv1.LabelInjection: "disabled"}},
		{name: "inject=false wins over an enabled namespace", pod: newPod(withLabel(guardv1.LabelInject, "false")), ns: "apps", nsLabels: enabledNS},
		{name: "inject=false does not opt out of a required namespace", pod: newPod(withLabel(guardv1.LabelInject, "false")), ns: "apps", nsLabels: requiredNS, injected: true},
		{name: "kube-system is never injected, even labelled", pod: newPod(withLabel(guardv1.LabelInject, "true")), ns: "kube-system", nsLabels: enabledNS},
		{name: "kube-node-lease is never injected", pod: newPod(), ns: "kube-node-lease", nsLabels: enabledNS},
		{name: "the operator's namespace is never injected", pod: newPod(withLabel(guardv1.LabelInject, "true")), ns: "guardrail-system", nsLabels: enabledNS},
		{name: "a hostNetwork pod is skipped", pod: newPod(withHostNetwork()), ns: "apps", nsLabels: enabledNS},
		{name: "a hostNetwork pod is denied where the guard is required", pod: newPod(withHostNetwork()), ns: "apps", nsLabels: requiredNS, denied: "hostNetwork"},
		{name: "an injected pod is not injected twice", pod: newPod(withLabel(guardv1.LabelInjected, "true")), ns: "apps", nsLabels: enabledNS},
		{name: "a pod with a hand-written container named like the guard is refused", pod: newPod(withInitContainer(guardv1.ContainerName)), ns: "apps", nsLabels: enabledNS,
			denied: "the pod has a container named " + guardv1.ContainerName + " that is not the guard the injector renders for it"},
		{name: "a port clash is denied where the guard is required", pod: newPod(withPort(15080)), ns: "apps", nsLabels: requiredNS, denied: "port 15080"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			d := decide(tc.pod, tc.ns, tc.nsLabels, testConfig(), []byte(testCA), providerChoice{})
			if tc.denied != "" {
				if !strings.Contains(d.deny, tc.denied) {
					t.Fatalf("denial %q does not mention %q", d.deny, tc.denied)
				}
				return
			}
			if d.deny != "" {
				t.Fatalf("denied: %s", d.deny)
			}
			if got := d.pod != nil && guardOf(d.pod) != nil; got != tc.injected {
				t.Fatalf("injected = %v, want %v (skip: %q)", got, tc.injected, d.skip)
			}
			if tc.pod.String() != before.String() {
				t.Fatal("decide modified its input")
			}
		})
	}
}

func TestDecideRendersANativeSidecar(t *testing.T) {
	d := decide(newPod(withInitContainer("migrate")), "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
	p := d.pod
	if len(p.Spec.InitContainers) != 2 || p.Spec.InitContainers[0].Name != guardv1.ContainerName {
		t.Fatalf("the guard is not the first init container: %v", p.Spec.InitContainers)
	}
	g := &p.Spec.InitContainers[0]
	if g.RestartPolicy == nil || *g.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatal("the guard is not a native sidecar (restartPolicy Always)")
	}
	if g.StartupProbe == nil || g.StartupProbe.HTTPGet.Path != "/readyz" || g.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Fatal("probes: startup on /readyz, liveness on /healthz")
	}
	wantArgs := []string{
		"--listen=127.0.0.1:15080", "--admin-listen=:15090",
		"--control-plane=https://guardrail-control-plane.guardrail-system.svc:9444",
		"--token-file=/var/run/secrets/guardrail.dev/token/token",
		"--ca-file=/var/run/secrets/guardrail.dev/ca/ca.crt",
		"--snapshot-dir=/var/run/guardrail/snapshot",
		"--openai-upstream=https://api.openai.com", "--anthropic-upstream=https://api.anthropic.com",
		"--gemini-upstream=https://generativelanguage.googleapis.com",
	}
	if len(g.Command) != 1 || g.Command[0] != "/guard" {
		t.Fatalf("command = %v: the image's entrypoint is the manager", g.Command)
	}
	if strings.Join(g.Args, " ") != strings.Join(wantArgs, " ") {
		t.Fatalf("args:\n got %v\nwant %v", g.Args, wantArgs)
	}
	if v, _ := envValue(&p.Spec.Containers[0], envOpenAIBaseURL); v != "http://127.0.0.1:15080/v1" {
		t.Fatalf("app OPENAI_BASE_URL = %q", v)
	}
	if v, _ := envValue(&p.Spec.Containers[0], envAnthropicBaseURL); v != "http://127.0.0.1:15080" {
		t.Fatalf("app ANTHROPIC_BASE_URL = %q", v)
	}
	// @google/genai appends the API version (/v1beta) to GOOGLE_GEMINI_BASE_URL itself.
	if v, _ := envValue(&p.Spec.Containers[0], envGeminiBaseURL); v != "http://127.0.0.1:15080" {
		t.Fatalf("app GOOGLE_GEMINI_BASE_URL = %q", v)
	}
	if _, ok := envValue(&p.Spec.InitContainers[1], envOpenAIBaseURL); !ok {
		t.Fatal("an init container after the native sidecar can call through it and should get the base URL")
	}
	if p.Labels[guardv1.LabelInjected] != "true" || p.Annotations[guardv1.AnnotationInjectorVersion] != "v0.0.0-test" {
		t.Fatal("the injected pod is not marked")
	}
	if p.Annotations[guardv1.AnnotationCABundle] != testCA {
		t.Fatal("the CA bundle annotation is missing")
	}
	var token *corev1.Volume
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == volumeToken {
			token = &p.Spec.Volumes[i]
		}
	}
	if token == nil || token.Projected.Sources[0].ServiceAccountToken.Audience != guardv1.Audience {
		t.Fatal("no projected token with the control plane's audience")
	}
	if len(d.findings) != 0 {
		t.Fatalf("unexpected findings: %v", d.findings)
	}
}

func TestDecideRendersTheLegacyShapeBefore129(t *testing.T) {
	cfg := testConfig()
	cfg.NativeSidecars = false
	d := decide(newPod(withInitContainer("migrate")), "apps", enabledNS, cfg, []byte(testCA), providerChoice{})
	p := d.pod
	if p.Spec.Containers[0].Name != guardv1.ContainerName || p.Spec.Containers[0].RestartPolicy != nil {
		t.Fatalf("the guard is not the first regular container: %v", p.Spec.Containers)
	}
	if len(p.Spec.InitContainers) != 1 {
		t.Fatal("the guard must not be an init container before 1.29")
	}
	if _, ok := envValue(&p.Spec.InitContainers[0], envOpenAIBaseURL); ok {
		t.Fatal("init containers run before a legacy guard exists and must keep their base URL")
	}
	if p.Annotations[annotationDefaultContainer] != "app" {
		t.Fatal("kubectl's default container should stay the app")
	}
}

func TestDecideKeepsAnExplicitBaseURL(t *testing.T) {
	d := decide(newPod(withEnv(envOpenAIBaseURL, "https://proxy.internal/v1")), "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
	if v, _ := envValue(&d.pod.Spec.Containers[0], envOpenAIBaseURL); v != "https://proxy.internal/v1" {
		t.Fatalf("the explicit OPENAI_BASE_URL was replaced: %q", v)
	}
	if v, _ := envValue(&d.pod.Spec.Containers[0], envAnthropicBaseURL); v == "" {
		t.Fatal("ANTHROPIC_BASE_URL, not set by the app, should point at the guard")
	}
	if len(d.findings) != 1 || d.findings[0].reason != ReasonBaseURLKept || !strings.Contains(d.findings[0].message, envOpenAIBaseURL) {
		t.Fatalf("findings = %v", d.findings)
	}
	if got := parseWarnings(d.pod.Annotations[guardv1.AnnotationInjectionWarnings]); len(got) != 1 || got[0] != d.findings[0] {
		t.Fatalf("the warning annotation does not round-trip: %v", got)
	}
}

func TestDecideRefusesBadAnnotationValues(t *testing.T) {
	cases := []struct {
		name, annotation, value string
		message                 string // substring of the warning
	}{
		{"negative memory", guardv1.AnnotationMemory, "-64Mi", "must be positive"},
		{"zero memory limit", guardv1.AnnotationMemoryLimit, "0", "must be positive"},
		{"unparsable CPU", guardv1.AnnotationCPU, "lots", "not a Kubernetes quantity"},
		{"unparsable CPU limit", guardv1.AnnotationCPULimit, "1.5cores", "not a Kubernetes quantity"},
		{"an upstream that is not http(s)", guardv1.AnnotationOpenAIUpstream, "ftp://models.internal", "http or https"},
		{"an upstream without a scheme", guardv1.AnnotationAnthropicUpstream, "models.internal:8080", "http or https"},
		{"an upstream with credentials", guardv1.AnnotationOpenAIUpstream, "https://user:secret@models.internal", "credentials"},
		{"a Gemini upstream with credentials", guardv1.AnnotationGeminiUpstream, "https://user:secret@models.internal", "credentials"},
		{"a Gemini upstream that is not http(s)", guardv1.AnnotationGeminiUpstream, "grpc://models.internal", "http or https"},
		{"a memory request above its limit", guardv1.AnnotationMemory, "1Gi", "exceeds the memory limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is warned about and the default used", func(t *testing.T) {
			d := decide(newPod(withAnnotation(tc.annotation, tc.value)), "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
			if d.pod == nil || guardOf(d.pod) == nil {
				t.Fatal("the pod should still be injected")
			}
			if len(d.findings) != 1 || d.findings[0].reason != ReasonInvalidAnnotation ||
				!strings.Contains(d.findings[0].message, tc.annotation) || !strings.Contains(d.findings[0].message, tc.message) {
				t.Fatalf("findings = %v", d.findings)
			}
			if strings.Contains(d.findings[0].message, "secret") {
				t.Fatal("the warning echoes a credential")
			}
			if err := validResources(guardOf(d.pod)); err != "" {
				t.Fatal(err)
			}
		})
		t.Run(tc.name+" is denied where the guard is required", func(t *testing.T) {
			d := decide(newPod(withAnnotation(tc.annotation, tc.value)), "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{})
			if !strings.Contains(d.deny, tc.annotation) || !strings.Contains(d.deny, "requires the guard") {
				t.Fatalf("denial = %q", d.deny)
			}
		})
	}
}

// validResources says what the apiserver would refuse in the guard's resources.
func validResources(c *corev1.Container) string {
	for name, req := range c.Resources.Requests {
		if req.Sign() <= 0 {
			return "non-positive request " + string(name)
		}
		if lim, ok := c.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
			return "request above limit for " + string(name)
		}
	}
	return ""
}

func TestDecideSizesTheGuardFromAnnotations(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		gomaxprocs  string
		cpuLimit    string
	}{
		{"no CPU limit: GOMAXPROCS from the request", nil, "1", ""},
		{"half a CPU: one P", map[string]string{guardv1.AnnotationCPULimit: "500m"}, "1", "500m"},
		{"one CPU: one P", map[string]string{guardv1.AnnotationCPULimit: "1"}, "1", "1"},
		{"1.5 CPU: two Ps", map[string]string{guardv1.AnnotationCPULimit: "1500m", guardv1.AnnotationCPU: "1"}, "2", "1500m"},
		{"a 3-CPU request without a limit: three Ps", map[string]string{guardv1.AnnotationCPU: "3"}, "3", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod()
			p.Annotations = tc.annotations
			d := decide(p, "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
			g := guardOf(d.pod)
			if v, _ := envValue(g, "GOMAXPROCS"); v != tc.gomaxprocs {
				t.Fatalf("GOMAXPROCS = %q, want %q", v, tc.gomaxprocs)
			}
			lim, ok := g.Resources.Limits[corev1.ResourceCPU]
			if (tc.cpuLimit == "") == ok || (ok && lim.String() != tc.cpuLimit) {
				t.Fatalf("cpu limit = %v (set %v), want %q", lim.String(), ok, tc.cpuLimit)
			}
			if v, _ := envValue(g, "GOMEMLIMIT"); v != "241591905" { // 90% of 256Mi, rounded down to whole tenths
				t.Fatalf("GOMEMLIMIT = %q", v)
			}
		})
	}
}

func TestDecideLeavesAnUninjectablePodMarked(t *testing.T) {
	t.Run("without the CA the pod is created without a guard and told why", func(t *testing.T) {
		d := decide(newPod(), "apps", enabledNS, testConfig(), nil, providerChoice{})
		if guardOf(d.pod) != nil || d.pod.Labels[guardv1.LabelInjected] != "false" {
			t.Fatal("want an uninjected pod labelled injected=false")
		}
		if len(d.findings) != 1 || d.findings[0].reason != ReasonNotInjected {
			t.Fatalf("findings = %v", d.findings)
		}
	})
	t.Run("without the CA a required namespace denies the pod", func(t *testing.T) {
		d := decide(newPod(), "apps", requiredNS, testConfig(), nil, providerChoice{})
		if !strings.Contains(d.deny, "CA") {
			t.Fatalf("denial = %q", d.deny)
		}
	})
}

func TestInjectedPodMeetsTheRestrictedStandard(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, native := range []bool{true, false} {
		cfg := testConfig()
		cfg.NativeSidecars = native
		d := decide(newPod(), "apps", enabledNS, cfg, []byte(testCA), providerChoice{})
		res := policy.AggregateCheckResults(evaluator.EvaluatePod(
			api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &d.pod.ObjectMeta, &d.pod.Spec))
		if !res.Allowed {
			t.Fatalf("native=%v: restricted refuses the injected pod: %s", native, res.ForbiddenDetail())
		}
	}
}

func TestNativeSidecarsFollowTheApiserverVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.28.9": false, "v1.27.0": false, "v1.29.0": true, "v1.29.3-eks-2b9c4e1": true, "v1.37.2": true, "v2.0.0": true,
	} {
		got, err := nativeSidecarsIn(v)
		if err != nil || got != want {
			t.Errorf("%s: native sidecars = %v (%v), want %v", v, got, err, want)
		}
	}
	if _, err := nativeSidecarsIn("unknown"); err == nil {
		t.Error("an unparsable version should be an error")
	}
}
