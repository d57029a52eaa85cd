package controllers_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// kstatusOf computes the status Flux and Argo CD would see for obj.
func kstatusOf(obj client.Object) status.Status {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	Expect(err).NotTo(HaveOccurred())
	return res.Status
}

var _ = Describe("Health as GitOps tools judge it (kstatus)", func() {
	ctx := context.Background()

	It("is Current when Ready, InProgress when the generation is not observed yet, Failed when Stalled", func() {
		ns := newNamespace()

		waiting := newGuardrail(ns, "waiting", "missing")
		Expect(k8sClient.Create(ctx, waiting)).To(Succeed())
		Eventually(condition(waiting, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonClassifierNotFound))
		Expect(waiting.Status.ObservedGeneration).NotTo(Equal(waiting.Generation))
		Expect(kstatusOf(waiting)).To(Equal(status.InProgressStatus))

		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		ready := newGuardrail(ns, "ready", "pii")
		Expect(k8sClient.Create(ctx, ready)).To(Succeed())
		Eventually(condition(ready, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		Expect(kstatusOf(ready)).To(Equal(status.CurrentStatus))

		By("seeing a new generation as InProgress until the controller has observed it")
		stale := ready.DeepCopy()
		stale.Generation++
		Expect(kstatusOf(stale)).To(Equal(status.InProgressStatus))

		stalled := newGuardrail(ns, "stalled", "pii", withRule("bad", "scores['email'] >"))
		Expect(k8sClient.Create(ctx, stalled)).To(Succeed())
		Eventually(condition(stalled, v1alpha1.ConditionStalled)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec))
		Expect(kstatusOf(stalled)).To(Equal(status.FailedStatus))
	})
})

var _ = Describe("ModelProvider health as GitOps tools judge it (kstatus)", func() {
	ctx := context.Background()

	It("is InProgress while its Secret is missing, Current once it resolves, Failed when its URL is the guard's own pod", func() {
		provider := func(name, url string) *v1alpha1.ModelProvider {
			mp := &v1alpha1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1alpha1.ModelProviderSpec{API: v1alpha1.ProviderAPIOpenAI, URL: url,
					CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: name, Key: "apiKey"},
					NamespaceSelector:    &v1alpha1.LabelSelector{}}}
			Expect(k8sClient.Create(ctx, mp)).To(Succeed())
			// Cluster-scoped: gone before other specs list the guardrail-policies category.
			DeferCleanup(func() { Expect(k8sClient.Delete(context.Background(), mp)).To(Succeed()) })
			return mp
		}
		waiting := provider("kstatus-waiting", "https://api.openai.example/v1")
		Eventually(condition(waiting, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound))
		Expect(kstatusOf(waiting)).To(Equal(status.InProgressStatus))

		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: "kstatus-waiting"},
			StringData: map[string]string{"apiKey": "sk-kstatus"}}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(context.Background(), secret)).To(Succeed()) })
		Eventually(condition(waiting, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		Expect(kstatusOf(waiting)).To(Equal(status.CurrentStatus))

		stalled := provider("kstatus-loopback", "http://127.0.0.1:8000/v1")
		Eventually(condition(stalled, v1alpha1.ConditionStalled)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec))
		Expect(kstatusOf(stalled)).To(Equal(status.FailedStatus))
	})
})

var _ = Describe("kubectl explain", func() {
	It("prints the godoc of guardrail.spec.streaming", func() {
		// The apiserver publishes a new CRD's OpenAPI schema asynchronously.
		var out string
		Eventually(func() error {
			var err error
			out, err = kubectl("explain", "guardrail.spec.streaming")
			return err
		}).Should(Succeed(), func() string { return out })
		GinkgoWriter.Printf("kubectl explain guardrail.spec.streaming:\n%s\n", out)
		Expect(out).To(ContainSubstring("streaming sets the cadence and hold-back of the Stream phase"))
		Expect(out).To(ContainSubstring("holdBackChars"))
		Expect(out).To(ContainSubstring("Unbounded"))
	})

	DescribeTable("states list enums, ranges and formats that the schema alone does not show",
		func(field string, want ...string) {
			out, err := kubectl("explain", field)
			Expect(err).NotTo(HaveOccurred(), out)
			GinkgoWriter.Printf("kubectl explain %s:\n%s\n", field, out)
			// kubectl wraps descriptions itself; compare words, not lines.
			text := strings.Join(strings.Fields(out), " ")
			for _, w := range want {
				Expect(text).To(ContainSubstring(w))
			}
		},
		Entry(nil, "guardrail.spec.phases", "one or more of Input, Stream, Output, ToolCalls and ToolResults"),
		Entry(nil, "guardrail.spec.modalities", "one or more of text, image, audio and file"),
		Entry(nil, "guardrail.spec.threshold", "a number from 0 to 1"),
		Entry(nil, "guardrail.spec.thresholds.threshold", "a number from 0 to 1"),
		Entry(nil, "guardrail.spec.timeout", "a positive duration such as 500ms, 2s or 1m30s"),
		Entry(nil, "guardrail.spec.action", "Redact and Pseudonymize need a classifier that returns spans (builtin)"),
		Entry(nil, "classifier.spec.cache.ttl", "a positive duration such as 30s, 10m or 1h"),
		Entry(nil, "classifier.spec.builtin.detectors", "credit-card, iban, us-ssn"),
		Entry(nil, "modelprovider.spec.api", "OpenAI (also every OpenAI-compatible server) or Anthropic"),
		Entry(nil, "modelprovider.spec.namespaceSelector", "{} selects every namespace, which must be said"),
		Entry(nil, "modelprovider.spec.credentialsSecretRef", "a Secret in the operator's namespace"),
		Entry(nil, "modelprovider.spec.headers", "Credentials and connection headers are refused"),
		Entry(nil, "modelprovider.status.usage", "Never prompt or completion text"),
	)
})

var _ = Describe("kubectl get by resource and by category", func() {
	It("lists only Guardrails for guardrails, only Classifiers for classifiers, and both for the category", func() {
		ctx := context.Background()
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		Expect(k8sClient.Create(ctx, newGuardrail(ns, "redact", "pii"))).To(Succeed())

		for _, tc := range []struct {
			resource string
			want     []string
		}{
			{"guardrails", []string{"guardrail.guardrail.dev/redact"}},
			{"guardrail", []string{"guardrail.guardrail.dev/redact"}},
			{"gr", []string{"guardrail.guardrail.dev/redact"}},
			{"classifiers", []string{"classifier.guardrail.dev/pii"}},
			{"clf", []string{"classifier.guardrail.dev/pii"}},
			{"guardrail-policies", []string{"classifier.guardrail.dev/pii", "guardrail.guardrail.dev/redact"}},
		} {
			Eventually(func(g Gomega) []string {
				out, err := kubectl("get", tc.resource, "-n", ns, "-o", "name")
				g.Expect(err).NotTo(HaveOccurred(), out)
				return strings.Fields(out)
			}).Should(ConsistOf(tc.want), "kubectl get %s", tc.resource)
		}
	})
})

var _ = Describe("kubectl get modelproviders", func() {
	It("lists them by resource, short name and category, cluster-wide, with whether they are Ready and how many pods use them", func() {
		ctx := context.Background()
		mp := &v1alpha1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: "get-by-name"},
			Spec: v1alpha1.ModelProviderSpec{API: v1alpha1.ProviderAPIAnthropic, URL: "https://api.anthropic.example",
				CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: "get-by-name", Key: "apiKey"},
				NamespaceSelector:    &v1alpha1.LabelSelector{}}}
		Expect(k8sClient.Create(ctx, mp)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(context.Background(), mp)).To(Succeed()) })
		for _, resource := range []string{"modelproviders", "modelprovider", "mp", "guardrail-policies"} {
			Eventually(func(g Gomega) []string {
				out, err := kubectl("get", resource, "-o", "name")
				g.Expect(err).NotTo(HaveOccurred(), out)
				return strings.Fields(out)
			}).Should(ContainElement("modelprovider.guardrail.dev/get-by-name"), "kubectl get %s", resource)
		}
		Eventually(condition(mp, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound))
		out, err := kubectl("get", "modelprovider", "get-by-name")
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Println(out)
		Expect(strings.Fields(strings.SplitN(out, "\n", 2)[0])).To(Equal([]string{"NAME", "API", "URL", "READY", "PODS", "REQUESTS", "BUDGET", "AGE"}))
		Expect(out).To(ContainSubstring("Anthropic"))
		Expect(out).To(ContainSubstring("False"))

		// BUDGET is the mode of its limits: Report unless said otherwise.
		one := int64(1)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(mp), mp)).To(Succeed())
		mp.Spec.Limits = &v1alpha1.ProviderLimits{RequestsPerDay: &one}
		Expect(k8sClient.Update(ctx, mp)).To(Succeed())
		out, err = kubectl("get", "modelprovider", "get-by-name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("Report"))
	})
})

var (
	kubeconfigOnce sync.Once
	kubeconfigDir  string
)

// kubectl runs kubectl as a cluster admin of the test control plane, with a discovery
// cache of its own, and returns its combined output.
func kubectl(args ...string) (string, error) {
	GinkgoHelper()
	bin, err := exec.LookPath("kubectl")
	Expect(err).NotTo(HaveOccurred(), "kubectl must be on PATH for this test")
	kubeconfigOnce.Do(func() {
		user, err := testEnv.AddUser(envtest.User{Name: "kubectl", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kc, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		kubeconfigDir, err = os.MkdirTemp("", "kubectl-")
		Expect(err).NotTo(HaveOccurred())
		Expect(writeFile(filepath.Join(kubeconfigDir, "kubeconfig"), kc)).To(Succeed())
	})
	args = append([]string{"--kubeconfig", filepath.Join(kubeconfigDir, "kubeconfig"),
		"--cache-dir", filepath.Join(kubeconfigDir, "cache")}, args...)
	out, err := exec.Command(bin, args...).CombinedOutput() //nolint:gosec // kubectl with test arguments
	return string(out), err
}
