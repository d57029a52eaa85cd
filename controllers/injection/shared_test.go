package injection

import (
	"slices"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
)

func sharedRenderer() *Renderer {
	return NewRendererFor(*testConfig(), func() ([]byte, error) { return []byte(testCA), nil })
}

func sharedPod(t *testing.T, annotations map[string]string) *corev1.Pod {
	t.Helper()
	tmpl, refused, err := sharedRenderer().SharedGuardPod(map[string]string{"app": "chat"}, annotations)
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedGuardPod: %v, refused %v", err, refused)
	}
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}

// A shared guard's pod is the guard alone, listening on the pod's address, with the
// settings the annotations choose; the injector leaves it as it is in every namespace
// mode, a required one and one whose default ModelProvider it must not take.
func TestSharedGuardPodIsTheInjectorsGuard(t *testing.T) {
	pod := sharedPod(t, map[string]string{guardv1.AnnotationMemoryLimit: "512Mi", guardv1.AnnotationAuditLog: "true"})
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
		t.Fatalf("containers %d, init containers %d; want the guard alone", len(pod.Spec.Containers), len(pod.Spec.InitContainers))
	}
	g := pod.Spec.Containers[0]
	if !slices.Contains(g.Args, "--listen=:15080") || !slices.Contains(g.Args, "--audit-log=true") {
		t.Errorf("args %v", g.Args)
	}
	if g.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("memory limit %v", g.Resources.Limits.Memory())
	}
	// The namespace names a default ModelProvider; the pod's empty annotation keeps it out.
	choice := requestedProviders(pod.Annotations, map[string]string{guardv1.AnnotationProvider: "openai-prod"}, "apps")
	if len(choice.names) != 0 {
		t.Fatalf("the shared guard's pod takes its namespace's ModelProvider: %v", choice.names)
	}
	for _, ns := range []map[string]string{requiredNS, enabledNS, {}} {
		d := decide(pod.DeepCopy(), "apps", ns, testConfig(), []byte(testCA), choice)
		if d.deny != "" || d.pod != nil {
			t.Errorf("namespace %v: the shared guard's pod was denied (%q) or changed", ns, d.deny)
		}
	}
}

// A guard that listens beyond loopback and attaches a ModelProvider's credential would
// lend the platform's key to whoever reaches it: VerifyGuard refuses it, so the control
// plane serves it nothing and the injector admits no such pod.
func TestAGuardReachableByOthersCarriesNoProvider(t *testing.T) {
	pod := newPod()
	RenderGuard(pod, testConfig().Guard(), true, []byte(testCA), "openai-prod")
	if err := VerifyGuard(pod, testConfig().Guard()); err != nil {
		t.Fatalf("the keyless sidecar does not verify: %v", err)
	}
	g, _ := findGuard(pod)
	for i, a := range g.Args {
		if strings.HasPrefix(a, "--"+flagListen+"=") {
			g.Args[i] = "--" + flagListen + "=:15080"
		}
	}
	err := VerifyGuard(pod, testConfig().Guard())
	if err == nil || !strings.Contains(err.Error(), "beyond loopback") {
		t.Fatalf("VerifyGuard = %v, want the keyless guard on the pod's address refused", err)
	}
	d := decide(pod, "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{from: "pod", names: []string{"openai-prod"}})
	if d.deny == "" {
		t.Error("the injector admitted a keyless guard listening beyond loopback in a required namespace")
	}
}

// A shared guard fronts no MCP server, and renders nothing without the operator's CA.
func TestSharedGuardPodRefusals(t *testing.T) {
	if _, _, err := sharedRenderer().SharedGuardPod(nil, map[string]string{guardv1.AnnotationMCPUpstreams: "fs=http://mcp.test/mcp"}); err == nil {
		t.Error("an MCP upstream was accepted")
	}
	r := NewRendererFor(*testConfig(), func() ([]byte, error) { return nil, nil })
	if _, _, err := r.SharedGuardPod(nil, nil); err != ErrNoCA {
		t.Errorf("without a CA: %v, want ErrNoCA", err)
	}
	_, refused, err := sharedRenderer().SharedGuardPod(nil, map[string]string{guardv1.AnnotationCPU: "lots"})
	if err != nil || len(refused) != 1 || !strings.Contains(refused[0], guardv1.AnnotationCPU) {
		t.Errorf("a bad quantity: %v, refused %v", err, refused)
	}
}
