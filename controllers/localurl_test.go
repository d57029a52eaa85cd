package controllers_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// withURL points the classifier's webhook backend at u.
func withURL(u string) classifierOpt {
	return func(c *v1alpha1.Classifier) { c.Spec.Webhook.URL = u }
}

// The suite's manager runs with the default: no --classifier-allow-local-urls.
var _ = Describe("A Classifier whose backend URL is on the guard's own host or link", func() {
	ctx := context.Background()

	DescribeTable("is Stalled, naming the field and why, and so is a Guardrail that uses it",
		func(url, why string) {
			ns := newNamespace()
			Expect(k8sClient.Create(ctx, secret(ns, "judge-token", map[string]string{"apiKey": "t"}))).To(Succeed())
			c := newClassifier(ns, "judge", withWebhook("judge-token", choiceQuestion("topic", "billing", "other")), withURL(url))
			Expect(k8sClient.Create(ctx, c)).To(Succeed())
			g := newGuardrail(ns, "topics", "judge", withRule("off-topic", "answers.topic.choice == 'other'"))
			Expect(k8sClient.Create(ctx, g)).To(Succeed())

			Eventually(condition(c, v1alpha1.ConditionStalled)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec))
			stalled := condition(c, v1alpha1.ConditionStalled)(Default)
			Expect(stalled.Message).To(ContainSubstring(`spec.webhook.url: Invalid value: "` + url + `"`))
			Expect(stalled.Message).To(ContainSubstring(why))
			Expect(stalled.Message).To(ContainSubstring("--classifier-allow-local-urls"))
			Expect(condition(c, v1alpha1.ConditionReady)(Default)).To(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec))
			Eventually(condition(g, v1alpha1.ConditionStalled)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonClassifierStalled))
			Expect(condition(g, v1alpha1.ConditionStalled)(Default).Message).To(ContainSubstring("spec.webhook.url"))

			update(c, func() { c.Spec.Webhook.URL = "http://judge.ml.svc.cluster.local:8080/classify" })
			Eventually(condition(c, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
			Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		},
		Entry("loopback", "http://127.0.0.1:8080/classify", "127.0.0.1 is a loopback address"),
		Entry("the guard's own proxy port", "http://127.0.0.1:15080/v1", "loopback"),
		Entry("IPv6 loopback", "http://[::1]:8080/classify", "::1 is a loopback address"),
		Entry("localhost", "http://localhost:8080/classify", "localhost is a loopback address"),
		Entry("the cloud metadata endpoint", "http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
		Entry("the unspecified address", "http://0.0.0.0:8080/", "0.0.0.0 is an unspecified address"),
	)

	DescribeTable("is Ready when it names a Service of the cluster or a public endpoint",
		func(url string) {
			ns := newNamespace()
			c := newClassifier(ns, "judge", withWebhook("", choiceQuestion("topic", "billing", "other")), withURL(url))
			Expect(k8sClient.Create(ctx, c)).To(Succeed())
			Eventually(condition(c, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		},
		Entry("a bare service name", "http://judge:8080/classify"),
		Entry("a service's cluster name", "http://judge.ml.svc:8080/classify"),
		Entry("a public endpoint", "https://judge.example.com/classify"),
	)
})
