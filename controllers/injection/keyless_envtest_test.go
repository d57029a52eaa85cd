package injection

import (
	"context"
	"encoding/json"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Keyless apps against the real apiserver: the ModelProvider CRD's validation, the
// manager reading providers and namespaces with its installed RBAC, the apiserver
// applying the patch.
var _ = Describe("The pod injector for keyless apps", func() {
	// The provider's credential, in the operator's namespace: nothing of it may reach a pod.
	const credential = "sk-envtest-provider-credential-0123456789"

	// createProvider creates a ModelProvider of api for the namespaces labelled
	// matchLabels (nil: every namespace), with its Secret, and returns its name.
	createProvider := func(api v1alpha1.ProviderAPI, matchLabels map[string]v1alpha1.LabelValue) (string, string) {
		ctx := context.Background()
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "provider-key-", Namespace: operatorNamespace},
			StringData: map[string]string{"apiKey": credential},
		}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())
		mp := &v1alpha1.ModelProvider{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "provider-"},
			Spec: v1alpha1.ModelProviderSpec{
				API:                  api,
				URL:                  "https://models.example.com/v1",
				CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: secret.Name, Key: "apiKey"},
				NamespaceSelector:    &v1alpha1.LabelSelector{MatchLabels: matchLabels},
			},
		}
		Expect(k8sClient.Create(ctx, mp)).To(Succeed())
		DeferCleanup(func() {
			Expect(k8sClient.Delete(context.Background(), mp)).To(Succeed())
			Expect(k8sClient.Delete(context.Background(), secret)).To(Succeed())
		})
		return mp.Name, secret.Name
	}
	// namespaceWithDefault creates a namespace labelled labels whose pods use provider by
	// default.
	namespaceWithDefault := func(labels map[string]string, provider string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "keyless-", Labels: labels,
			Annotations: map[string]string{guardv1.AnnotationProvider: provider}}}
		Expect(k8sClient.Create(context.Background(), ns)).To(Succeed())
		createDefaultServiceAccount(ns.Name)
		return ns.Name
	}

	It("gives a pod of a required namespace with a default provider the guard's --provider flag and a placeholder key, and no reference to any Secret", func() {
		provider, secretName := createProvider(v1alpha1.ProviderAPIOpenAI, nil)
		ns := namespaceWithDefault(map[string]string{guardv1.LabelInjection: "required"}, provider)
		pod := createPod(ns, withInitContainer("migrate"))

		guard := guardOf(pod)
		Expect(guard).NotTo(BeNil())
		Expect(guard.Args).To(ContainElement("--provider=" + provider))
		for _, c := range []corev1.Container{pod.Spec.Containers[0], pod.Spec.InitContainers[1]} {
			Expect(c.Env).To(ContainElements(
				corev1.EnvVar{Name: "OPENAI_API_KEY", Value: guardv1.PlaceholderAPIKey},
				corev1.EnvVar{Name: "OPENAI_BASE_URL", Value: "http://127.0.0.1:15080/v1"}), c.Name)
			Expect(c.Env).NotTo(ContainElement(HaveField("Name", "ANTHROPIC_API_KEY")), c.Name)
		}

		By("carrying nothing of the credential: no Secret reference of any kind, neither its name nor its value")
		Expect(secretReferences(pod)).To(BeEmpty())
		for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
			Expect(c.EnvFrom).To(BeEmpty(), c.Name)
		}
		raw, err := json.Marshal(pod)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(Or(ContainSubstring(credential), ContainSubstring(secretName)))

		By("passing the verification the control plane serves guards by, with the provider recorded")
		Expect(VerifyGuard(pod, suiteGuard())).To(Succeed())
		Expect(GuardProviders(pod)).To(Equal([]string{provider}))
		Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeNormal, ReasonInjected, ""))
	})

	It("denies a pod that asks for a provider that does not serve its namespace, and one that does not exist, saying why", func() {
		provider, _ := createProvider(v1alpha1.ProviderAPIAnthropic, map[string]v1alpha1.LabelValue{"team": "ml"})
		ns := newNamespace(map[string]string{guardv1.LabelInjection: "enabled"})
		p := newPod(withProvider(provider))
		p.Namespace = ns
		Expect(k8sClient.Create(context.Background(), p)).To(MatchError(And(
			ContainSubstring("denied the request"),
			ContainSubstring("ModelProvider "+provider+" does not serve namespace "+ns))))

		p = newPod(withProvider("no-such-provider"))
		p.Namespace = ns
		Expect(k8sClient.Create(context.Background(), p)).To(MatchError(ContainSubstring("ModelProvider no-such-provider does not exist")))

		By("and injects it once the namespace carries the label the provider selects")
		nsObj := &corev1.Namespace{}
		Expect(k8sClient.Get(context.Background(), client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		nsObj.Labels["team"] = "ml"
		Expect(k8sClient.Update(context.Background(), nsObj)).To(Succeed())
		Eventually(func() error {
			p = newPod(withProvider(provider))
			p.Namespace = ns
			return k8sClient.Create(context.Background(), p)
		}).Should(Succeed())
		Expect(guardOf(p).Args).To(ContainElement("--provider=" + provider))
		Expect(p.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ANTHROPIC_API_KEY", Value: guardv1.PlaceholderAPIKey}))
	})

	It("keeps an app's own key, warns without quoting it, and records a Warning APIKeyKept Event", func() {
		const ownKey = "sk-ant-app-own-key-0123456789"
		provider, _ := createProvider(v1alpha1.ProviderAPIAnthropic, nil)
		ns := namespaceWithDefault(map[string]string{guardv1.LabelInjection: "enabled"}, provider)
		warnings := &warningCollector{}
		pod := newPod(withEnv("ANTHROPIC_API_KEY", ownKey))
		pod.Namespace = ns
		Expect(clientWithWarnings(warnings).Create(context.Background(), pod)).To(Succeed())

		Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ANTHROPIC_API_KEY", Value: ownKey}))
		Expect(warnings.all()).To(ContainElement(And(ContainSubstring("ANTHROPIC_API_KEY"), ContainSubstring(provider))))
		Expect(warnings.all()).NotTo(ContainElement(ContainSubstring(ownKey)))
		Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeWarning, ReasonAPIKeyKept, "ANTHROPIC_API_KEY"))
		Expect(eventsOf(pod)()).NotTo(ContainElement(HaveField("Note", ContainSubstring(ownKey))))
	})
})
