package controllers_test

import (
	"context"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
)

// createRunning creates p (and its service account) and marks it Running, as the kubelet
// would.
func createRunning(ctx context.Context, p *corev1.Pod) *corev1.Pod {
	if sa := p.Spec.ServiceAccountName; sa != "" {
		err := k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: sa}})
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
	Expect(k8sClient.Create(ctx, p)).To(Succeed())
	p.Status.Phase = corev1.PodRunning
	Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
	return p
}

// enforcement returns a getter of a Guardrail's summary and Enforced condition.
func enforcement(g *v1alpha1.Guardrail) func(Gomega) string {
	return func(gm Gomega) string {
		gm.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(g), g)).To(Succeed())
		c := condition(g, v1alpha1.ConditionEnforced)(gm)
		summary := ""
		if g.Status.Enforcement != nil {
			summary = g.Status.Enforcement.Summary
		}
		return summary + " " + c.Reason + ": " + c.Message
	}
}

var _ = Describe("A Guardrail's enforcement", func() {
	ctx := context.Background()

	It("does not count a pod that only claims a guard with the injected label and an acknowledgement", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		g := newGuardrail(ns, "web", "pii")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		createRunning(ctx, newPod(ns, "forged", withLabel(guardv1.LabelInjected, "true"),
			withAnnotation(guardv1.AnnotationEnforced, "web=1"), withAnnotation(guardv1.AnnotationPolicyVersion, "0123456789abcdef"),
			withAnnotation(guards.AnnotationGuardVerification, "verified")))

		Eventually(enforcement(g)).Should(And(HavePrefix("0/1 "+v1alpha1.ReasonPodsWithoutGuard+": "), ContainSubstring("forged")))
		Consistently(enforcement(g), 2*time.Second).Should(HavePrefix("0/1 " + v1alpha1.ReasonPodsWithoutGuard))
	})

	It("counts a guard while its Lease is live, and names its pod once the Lease expires, with no other event", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		g := newGuardrail(ns, "web", "pii")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		p := createRunning(ctx, newPod(ns, "web-1", withGuard()))
		Eventually(enforcement(g)).Should(HavePrefix("0/1 " + v1alpha1.ReasonAwaitingAcknowledgement))

		const duration = 3
		lease := guardLease(p, "other=4,web=1", time.Now(), duration)
		Expect(k8sClient.Create(ctx, lease)).To(Succeed())
		renewed := time.Now()
		Eventually(enforcement(g)).Should(HavePrefix("1/1 " + v1alpha1.ReasonSucceeded))

		// Nothing writes anything from here: the recount at the Lease's expiry finds it.
		Eventually(enforcement(g), 10*time.Second).Should(And(
			HavePrefix("0/1 "+v1alpha1.ReasonGuardsNotAnswering+": "), ContainSubstring("web-1")))
		took := time.Since(renewed)
		GinkgoWriter.Printf("a Lease of %ds went stale in status after %v\n", duration, took)
		Expect(took).To(BeNumerically("<", (duration+2)*time.Second))

		// The guard answers again, with a Lease long enough that a slow recount on a loaded
		// machine still finds it live.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(lease), lease)).To(Succeed())
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.RenewTime = &now
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](60)
		Expect(k8sClient.Update(ctx, lease)).To(Succeed())
		Eventually(enforcement(g)).Should(HavePrefix("1/1 " + v1alpha1.ReasonSucceeded))
	})

	It("does not count a Lease for a pod whose spec no longer carries the guard", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		g := newGuardrail(ns, "web", "pii")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		p := createRunning(ctx, newPod(ns, "web-1", withGuard()))
		Expect(k8sClient.Create(ctx, guardLease(p, "web=1", time.Now(), 600))).To(Succeed())
		Eventually(enforcement(g)).Should(HavePrefix("1/1 " + v1alpha1.ReasonSucceeded))

		// A pod's container images are mutable: the guard is swapped for something else.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == guardv1.ContainerName {
				p.Spec.Containers[i].Image = "registry.test/someone/else:v1"
			}
		}
		Expect(k8sClient.Update(ctx, p)).To(Succeed())
		Eventually(enforcement(g)).Should(HavePrefix("0/1 " + v1alpha1.ReasonPodsWithoutGuard))
	})
})

var _ = Describe("The manager's pod cache", func() {
	It("keeps only the annotations the manager reads, and whether the pod's spec carries the guard", func() {
		ctx := context.Background()
		ns := newNamespace()
		big := strings.Repeat("x", 200<<10)
		tenant := createRunning(ctx, newPod(ns, "tenant", withLabel(guardv1.LabelInjected, "true"),
			withAnnotation("example.com/blob", big),
			withAnnotation(guards.AnnotationGuardVerification, "verified"),
			withAnnotation(guardv1.AnnotationEnforced, "web=1"),
			withAnnotation(guardv1.AnnotationInjectionWarnings, "GuardResourcesRefused: cpu")))
		guarded := createRunning(ctx, newPod(ns, "guarded", withGuard()))

		cached := &corev1.Pod{}
		// The cache may hold the pod as created, before its status update to Running.
		Eventually(func(g Gomega) {
			g.Expect(managerCache.Get(ctx, client.ObjectKeyFromObject(tenant), cached)).To(Succeed())
			g.Expect(cached.Status.Phase).To(Equal(corev1.PodRunning))
		}).Should(Succeed())
		Expect(cached.Annotations).To(HaveLen(2))
		Expect(cached.Annotations).To(HaveKeyWithValue(guardv1.AnnotationInjectionWarnings, "GuardResourcesRefused: cpu"))
		Expect(guards.GuardVerification(cached)).To(MatchError(ContainSubstring("no container named " + guardv1.ContainerName)))
		Expect(cached.Spec.Containers).To(BeEmpty())

		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		Eventually(func() error { return managerCache.Get(ctx, client.ObjectKeyFromObject(tenant), meta) }).Should(Succeed())
		Expect(meta.Annotations).To(Equal(map[string]string{guardv1.AnnotationInjectionWarnings: "GuardResourcesRefused: cpu"}))

		Eventually(func() error { return managerCache.Get(ctx, client.ObjectKeyFromObject(guarded), cached) }).Should(Succeed())
		Expect(guards.GuardVerification(cached)).To(Succeed())
	})

	It("holds the guards' Leases of the operator's namespace only", func() {
		ctx := context.Background()
		ns := newNamespace()
		p := createRunning(ctx, newPod(ns, "web-1", withGuard()))
		elsewhere := guardLease(p, "web=1", time.Now(), 60)
		elsewhere.Namespace = ns
		Expect(k8sClient.Create(ctx, elsewhere)).To(Succeed())
		Expect(k8sClient.Create(ctx, guardLease(p, "web=1", time.Now(), 60))).To(Succeed())
		var list coordinationv1.LeaseList
		Eventually(func(g Gomega) {
			g.Expect(managerCache.List(ctx, &list, client.MatchingLabels{guardv1.LabelLeasePodNamespace: ns})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
		}).Should(Succeed())
		Expect(list.Items[0].Namespace).To(Equal(leaseNS))
	})
})
