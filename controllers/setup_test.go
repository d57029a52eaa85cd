package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
)

// TestTrimPodIsIdempotent: client-go transforms an object twice when an informer's initial
// list is streamed (WatchList: once into its temporary store, once on Replace); a trimmed
// pod keeps its verification instead of being judged again without its spec.
func TestTrimPodIsIdempotent(t *testing.T) {
	trim := trimPod("registry.test/guardrail/operator:v1", []string{"/guard"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Annotations: map[string]string{
			"example.com/blob": strings.Repeat("x", 1<<20), injection.AnnotationInjectorVersion: "v1",
			injection.AnnotationInjectionWarnings: strings.Repeat("w", maxKeptAnnotation+1),
			guards.AnnotationGuardVerification:    "verified",
		}},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{
			{Name: injection.ContainerName, Image: "registry.test/guardrail/operator:v0", Command: []string{"/guard"},
				VolumeMounts: []corev1.VolumeMount{{Name: "guardrail-token", MountPath: "/t"}}},
			{Name: "app", Image: "app"},
		}, Volumes: []corev1.Volume{{Name: "guardrail-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "guardrail.dev"}}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
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
		if len(p.Annotations) != 2 || p.Annotations[injection.AnnotationInjectorVersion] != "v1" {
			t.Errorf("transform %d: annotations %v, want the injector's version and the verification", i+1, keys(p.Annotations))
		}
		if len(p.Spec.Containers) != 0 || p.Status.Phase != corev1.PodRunning {
			t.Errorf("transform %d: spec %+v, phase %s", i+1, p.Spec, p.Status.Phase)
		}
	}
	forged := pod.DeepCopy()
	forged.Spec.Containers = forged.Spec.Containers[1:]
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
