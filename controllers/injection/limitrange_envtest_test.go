package injection

import (
	"context"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A platform's namespace usually has a LimitRange: the apiserver's LimitRanger plugin adds
// its default limits to the injected guard after the injector rendered it (it runs again
// after a webhook's change). Such a guard is still the guard, in required namespaces too.
var _ = Describe("A namespace with a LimitRange that sets default limits", func() {
	It("admits the injected guard with the limits added, and it counts as the guard", func() {
		ns := newNamespace(map[string]string{guardv1.LabelInjection: "required"})
		Expect(k8sClient.Create(context.Background(), &corev1.LimitRange{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type:    corev1.LimitTypeContainer,
				Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			}}},
		})).To(Succeed())
		pod := newPod()
		pod.Namespace = ns
		Expect(k8sClient.Create(context.Background(), pod)).To(Succeed())

		guard := guardOf(pod)
		Expect(guard).NotTo(BeNil())
		Expect(guard.Resources.Limits.Cpu().String()).To(Equal("2"), "the LimitRange's default CPU limit was not added: the test proves nothing")
		Expect(VerifyGuard(pod, suiteGuard())).To(Succeed())
	})
})
