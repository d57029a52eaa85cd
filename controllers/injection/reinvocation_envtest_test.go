package injection

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var relabelOnce sync.Once

// relabelAfterTheInjector installs another mutating webhook, called after the injector
// (configurations run in name order), that labels every pod of the namespaces labelled
// relabel=yes: the apiserver then re-invokes the injector (reinvocationPolicy IfNeeded).
func relabelAfterTheInjector() {
	relabelOnce.Do(func() {
		testMgr.GetWebhookServer().Register("/mutate-relabel", &webhook.Admission{Handler: admission.HandlerFunc(
			func(_ context.Context, req admission.Request) admission.Response {
				pod := &corev1.Pod{}
				if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
					return admission.Errored(http.StatusBadRequest, err)
				}
				pod.Labels["relabelled"] = "true"
				raw, err := json.Marshal(pod)
				if err != nil {
					return admission.Errored(http.StatusInternalServerError, err)
				}
				return admission.PatchResponseFromRaw(req.Object.Raw, raw)
			})})
		ca, err := (&FileCA{Path: certDir + "/ca.crt"}).Get()
		Expect(err).NotTo(HaveOccurred())
		url := "https://localhost:" + strconv.Itoa(testEnv.WebhookInstallOptions.LocalServingPort) + "/mutate-relabel"
		Expect(k8sClient.Create(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "zz-relabel"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name:                    "relabel.test.guardrail.dev",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
				Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
				NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"relabel": "yes"}},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			}},
		})).To(Succeed())
	})
}

var _ = Describe("Re-invocation by the apiserver", func() {
	DescribeTable("injects once when a webhook after the injector changes the pod",
		func(mode string) {
			relabelAfterTheInjector()
			ns := newNamespace(map[string]string{guardv1.LabelInjection: mode, "relabel": "yes"})

			// The apiserver's webhook configuration cache takes a moment to see the new one.
			Eventually(func(g Gomega) {
				p := newPod()
				p.Namespace = ns
				p.GenerateName, p.Name = "app-", ""
				g.Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
				g.Expect(p.Labels).To(HaveKeyWithValue("relabelled", "true"))
				g.Expect(VerifyGuard(p, suiteGuard())).To(Succeed())
				guards, volumes := 0, 0
				for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
					if c.Name == guardv1.ContainerName {
						guards++
					}
				}
				for _, v := range p.Spec.Volumes {
					if strings.HasPrefix(v.Name, "guardrail-") {
						volumes++
					}
				}
				g.Expect(guards).To(Equal(1))
				g.Expect(volumes).To(Equal(len(guardVolumeNames)))
				g.Expect(p.Spec.Containers[0].Env).To(HaveLen(3)) // the OpenAI, Anthropic and Gemini base URLs
			}).Should(Succeed())
		},
		Entry("in a namespace labelled enabled, whose entry skips pods labelled injected", "enabled"),
		Entry("in a namespace labelled required, whose entry calls the injector for every pod", "required"),
	)
})
