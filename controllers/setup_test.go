package controllers

import (
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
)

// TestTrimPodIsIdempotent: client-go transforms an object twice when an informer's initial
// list is streamed (WatchList: once into its temporary store, once on Replace); a trimmed
// pod keeps its verification instead of being judged again without its spec.
func TestTrimPodIsIdempotent(t *testing.T) {
	g := injection.Guard{Image: "registry.test/guardrail/operator:v1", Command: []string{"/guard"}, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: "https://guardrail-control-plane.guardrail-system.svc:9444"}
	trim := trimPod(g)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Annotations: map[string]string{
			"example.com/blob":                  strings.Repeat("x", 1<<20),
			guardv1.AnnotationInjectionWarnings: strings.Repeat("w", maxKeptAnnotation+1),
			guards.AnnotationGuardVerification:  "verified",
		}},
		Spec:   corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	g.Image = "registry.test/guardrail/operator:v0" // injected by the previous release
	injection.RenderGuard(pod, g, false, []byte("ca"))
	pod.Annotations[guardv1.AnnotationInjectorVersion] = "v1"
	once, err := trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := trim(once)
	if err != nil {
		t.Fatal(err)
	}
	for i, obj := range []any{once, twice} {
		p := obj.(*corev1.Pod)
		if err := guards.GuardVerification(p); err != nil {
			t.Errorf("transform %d: a pod that carries the guard is not verified: %v", i+1, err)
		}
		if len(p.Annotations) != 2 || p.Annotations[guardv1.AnnotationInjectorVersion] != "v1" {
			t.Errorf("transform %d: annotations %v, want the injector's version and the verification", i+1, keys(p.Annotations))
		}
		if len(p.Spec.Containers) != 0 || p.Status.Phase != corev1.PodRunning {
			t.Errorf("transform %d: spec %+v, phase %s", i+1, p.Spec, p.Status.Phase)
		}
	}
	forged := pod.DeepCopy()
	forged.Spec.Containers = forged.Spec.Containers[1:] // the guard is the first container
	out, _ := trim(forged)
	if guards.GuardVerification(out.(*corev1.Pod)) == nil {
		t.Error("a pod whose spec lacks the guard is verified because it says so in an annotation")
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
