package injection

import (
	"context"
	"strconv"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// apiTokenMounts are the mounts of c of the volume the ServiceAccount admission plugin
// adds (kube-api-access-*): the pod's Kubernetes API token.
func apiTokenMounts(c corev1.Container) []string {
	var out []string
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(m.Name, "kube-api-access-") {
			out = append(out, m.Name)
		}
	}
	return out
}

var _ = Describe("A namespace labelled required", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(map[string]string{guardv1.LabelInjection: "required"}) })

	DescribeTable("admits a pod with the guard, whatever its labels, annotations and containers claim",
		func(warning string, opts ...podOption) {
			warnings := &warningCollector{}
			pod := newPod(opts...)
			pod.Namespace = ns
			Expect(clientWithWarnings(warnings).Create(context.Background(), pod)).To(Succeed())

			Expect(VerifyGuard(pod, suiteGuard())).To(Succeed())
			Expect(pod.Labels).To(HaveKeyWithValue(guardv1.LabelInjected, "true"))
			Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "OPENAI_BASE_URL", Value: "http://127.0.0.1:15080/v1"}))
			if warning != "" {
				Expect(warnings.all()).To(ContainElement(ContainSubstring(warning)))
				Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeWarning, ReasonOptOutIgnored, warning))
			}
			Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeNormal, ReasonInjected, "native sidecar"))
		},
		Entry("labelled injected=true and annotated enforced", "",
			withLabel(guardv1.LabelInjected, "true"), withAnnotation("guardrail.dev/enforced", "true")),
		Entry("labelled injected=false", "", withLabel(guardv1.LabelInjected, "false")),
		Entry("labelled inject=false, which is ignored with a warning", guardv1.LabelInject+"=false is ignored",
			withLabel(guardv1.LabelInject, "false")),
	)

	DescribeTable("refuses a pod that would escape or reach into the guard, saying why",
		func(reason string, opts ...podOption) {
			pod := newPod(opts...)
			pod.Namespace = ns
			err := k8sClient.Create(context.Background(), pod)
			Expect(err).To(MatchError(And(ContainSubstring("requires the guard"), ContainSubstring(reason))))
		},
		Entry("an app container named like the guard", "a container named "+guardv1.ContainerName+" that is not the injector's guard",
			withAppName(guardv1.ContainerName)),
		Entry("an app container named like the guard, labelled injected=true", "that is not the injector's guard",
			withAppName(guardv1.ContainerName), withLabel(guardv1.LabelInjected, "true")),
		Entry("a shared process namespace", "shareProcessNamespace",
			func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) }),
		Entry("an app container running as the guard's user", "runs as user "+strconv.Itoa(guardUID),
			withAppUser(guardUID)),
		Entry("an app container that mounts the guard's token", "mounts volume "+volumeToken,
			withAppMount(volumeToken)),
	)

	It("keeps the pod's Kubernetes API token out of the guard, and gives it to the app as before", func() {
		pod := createPod(ns)
		guard := pod.Spec.InitContainers[0]
		Expect(guard.Name).To(Equal(guardv1.ContainerName))
		// The ServiceAccount admission plugin ran: the app has the token.
		Expect(apiTokenMounts(pod.Spec.Containers[0])).To(HaveLen(1))
		Expect(apiTokenMounts(guard)).To(BeEmpty())
		Expect(guard.VolumeMounts).To(ContainElement(corev1.VolumeMount{
			Name: volumeNoAPIToken, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}))
	})

	It("injects the pod of the report: labelled injected=true and inject=false, annotated enforced, by hand", func() {
		pod := createPod(ns, withLabel(guardv1.LabelInjected, "true"), withAnnotation("guardrail.dev/enforced", "true"),
			withLabel(guardv1.LabelInject, "false"))
		Expect(guardOf(pod)).NotTo(BeNil())
	})
})

var _ = Describe("A namespace labelled enabled", func() {
	It("records no Injected Event for a pod that only carries the injector's label", func() {
		ns := newNamespace(map[string]string{guardv1.LabelInjection: "enabled"})
		// The enabled entry skips pods labelled injected: the pod is admitted as written.
		pod := createPod(ns, withLabel(guardv1.LabelInjected, "true"))
		Expect(guardOf(pod)).To(BeNil())

		Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeWarning, ReasonNotInjected, "does not carry the injector's guard"))
		Expect(eventsOf(pod)()).NotTo(haveEvent(corev1.EventTypeNormal, ReasonInjected, ""))
	})

	It("keeps the pod's Kubernetes API token out of the guard", func() {
		pod := createPod(newNamespace(map[string]string{guardv1.LabelInjection: "enabled"}))
		Expect(apiTokenMounts(pod.Spec.Containers[0])).To(HaveLen(1))
		Expect(apiTokenMounts(pod.Spec.InitContainers[0])).To(BeEmpty())
	})
})
