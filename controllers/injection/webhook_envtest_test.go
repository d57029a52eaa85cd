package injection

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"net"
	"strconv"
	"sync"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newNamespace(labels map[string]string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "inject-", Labels: labels}}
	Expect(k8sClient.Create(context.Background(), ns)).To(Succeed())
	createDefaultServiceAccount(ns.Name)
	return ns.Name
}

// createPod creates the fixture pod in ns through the apiserver and returns it as stored.
func createPod(ns string, opts ...podOption) *corev1.Pod {
	p := newPod(opts...)
	p.Namespace = ns
	Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	return p
}

func eventsOf(pod *corev1.Pod) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		list := &eventsv1.EventList{}
		Expect(k8sClient.List(context.Background(), list, client.InNamespace(pod.Namespace))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Name == pod.Name {
				out = append(out, e)
			}
		}
		return out
	}
}

func haveEvent(eventType, reason, note string) OmegaMatcher {
	return ContainElement(And(
		HaveField("Type", eventType), HaveField("Reason", reason), HaveField("Note", ContainSubstring(note))))
}

func restricted(pod *corev1.Pod) policy.AggregateCheckResult {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	Expect(err).NotTo(HaveOccurred())
	return policy.AggregateCheckResults(evaluator.EvaluatePod(
		api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
}

var _ = Describe("The pod injector", func() {
	It("injects a pod created in a namespace labelled enabled, as a native sidecar, and records an Injected Event", func() {
		ns := newNamespace(map[string]string{guardv1.LabelInjection: "enabled"})
		pod := createPod(ns)

		Expect(pod.Labels).To(HaveKeyWithValue(guardv1.LabelInjected, "true"))
		Expect(pod.Annotations).To(HaveKeyWithValue(guardv1.AnnotationInjectorVersion, "v0.0.0-envtest"))
		Expect(pod.Spec.InitContainers).To(HaveLen(1))
		guard := pod.Spec.InitContainers[0]
		Expect(guard.Name).To(Equal(guardv1.ContainerName))
		Expect(guard.RestartPolicy).To(HaveValue(Equal(corev1.ContainerRestartPolicyAlways)))
		Expect(guard.Args).To(ContainElement("--control-plane=https://guardrail-control-plane.guardrail-system.svc:9444"))
		Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "OPENAI_BASE_URL", Value: "http://127.0.0.1:15080/v1"}))

		By("carrying the CA the manager serves with, for the guard to trust")
		ca, err := (&FileCA{Path: certDir + "/ca.crt"}).Get()
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Annotations[guardv1.AnnotationCABundle]).To(Equal(string(ca)))

		Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeNormal, ReasonInjected, "native sidecar"))
	})

	It("leaves an injected pod that meets the restricted Pod Security Standard, checked by the library and enforced by the apiserver", func() {
		ns := newNamespace(map[string]string{
			guardv1.LabelInjection:               "enabled",
			"pod-security.kubernetes.io/enforce": "restricted",
		})
		pod := createPod(ns) // the apiserver's PodSecurity admission runs after the webhook
		Expect(pod.Spec.InitContainers).To(ContainElement(HaveField("Name", guardv1.ContainerName)))
		res := restricted(pod)
		Expect(res.Allowed).To(BeTrue(), res.ForbiddenDetail())
	})

	It("injects a pod labelled inject=true in a namespace that is not labelled", func() {
		pod := createPod(newNamespace(nil), withLabel(guardv1.LabelInject, "true"))
		Expect(pod.Spec.InitContainers).To(ContainElement(HaveField("Name", guardv1.ContainerName)))
	})

	DescribeTable("leaves pods alone",
		func(nsLabels map[string]string, nsName string, opts ...podOption) {
			ns := nsName
			if ns == "" {
				ns = newNamespace(nsLabels)
			} else {
				existing := &corev1.Namespace{}
				Expect(k8sClient.Get(context.Background(), client.ObjectKey{Name: ns}, existing)).To(Succeed())
				existing.Labels[guardv1.LabelInjection] = "enabled"
				Expect(k8sClient.Update(context.Background(), existing)).To(Succeed())
				DeferCleanup(func() {
					Expect(k8sClient.Get(context.Background(), client.ObjectKey{Name: ns}, existing)).To(Succeed())
					delete(existing.Labels, guardv1.LabelInjection)
					Expect(k8sClient.Update(context.Background(), existing)).To(Succeed())
				})
			}
			p := newPod(opts...)
			p.Namespace = ns
			Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
			Expect(p.Spec.InitContainers).To(BeEmpty())
			Expect(p.Spec.Containers).To(HaveLen(1))
			Expect(p.Spec.Containers[0].Env).To(BeEmpty())
			Expect(p.Annotations).NotTo(HaveKey(guardv1.AnnotationCABundle))
		},
		Entry("in a namespace that does not opt in", nil, ""),
		Entry("that opt out in an enabled namespace", map[string]string{guardv1.LabelInjection: "enabled"}, "",
			withLabel(guardv1.LabelInject, "false")),
		Entry("on the host network", map[string]string{guardv1.LabelInjection: "enabled"}, "", withHostNetwork()),
		Entry("in kube-system, even labelled enabled", nil, "kube-system", withLabel(guardv1.LabelInject, "true")),
		Entry("in kube-public, even labelled enabled", nil, "kube-public"),
		Entry("in the operator's namespace, even labelled enabled", nil, operatorNamespace, withLabel(guardv1.LabelInject, "true")),
	)

	It("keeps an app's own OPENAI_BASE_URL, warns at admission and records a Warning Event", func() {
		ns := newNamespace(map[string]string{guardv1.LabelInjection: "enabled"})
		warnings := &warningCollector{}
		c := clientWithWarnings(warnings)
		pod := newPod(withEnv("OPENAI_BASE_URL", "https://llm-gateway.internal/v1"))
		pod.Namespace = ns
		Expect(c.Create(context.Background(), pod)).To(Succeed())

		Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "OPENAI_BASE_URL", Value: "https://llm-gateway.internal/v1"}))
		Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ANTHROPIC_BASE_URL", Value: "http://127.0.0.1:15080"}))
		Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "GOOGLE_GEMINI_BASE_URL", Value: "http://127.0.0.1:15080"}))
		Expect(warnings.all()).To(ContainElement(And(ContainSubstring("OPENAI_BASE_URL"), ContainSubstring("bypass the guard"))))
		Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeWarning, ReasonBaseURLKept, "OPENAI_BASE_URL"))
		Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeNormal, ReasonInjected, ""))
	})

	It("creates a pod with a bad annotation value with the default, an admission warning and a Warning Event", func() {
		ns := newNamespace(map[string]string{guardv1.LabelInjection: "enabled"})
		warnings := &warningCollector{}
		pod := newPod(withAnnotation(guardv1.AnnotationMemory, "-64Mi"))
		pod.Namespace = ns
		Expect(clientWithWarnings(warnings).Create(context.Background(), pod)).To(Succeed())

		Expect(pod.Spec.InitContainers[0].Resources.Requests.Memory().String()).To(Equal("64Mi"))
		Expect(warnings.all()).To(ContainElement(ContainSubstring(guardv1.AnnotationMemory)))
		Eventually(eventsOf(pod)).Should(haveEvent(corev1.EventTypeWarning, ReasonInvalidAnnotation, guardv1.AnnotationMemory))
	})

	It("denies a pod it cannot inject in a namespace labelled required, saying why", func() {
		ns := newNamespace(map[string]string{guardv1.LabelInjection: "required"})
		pod := newPod(withAnnotation(guardv1.AnnotationOpenAIUpstream, "ftp://models.internal"))
		pod.Namespace = ns
		err := k8sClient.Create(context.Background(), pod)
		Expect(err).To(MatchError(And(
			ContainSubstring("denied the request"),
			ContainSubstring(guardv1.AnnotationOpenAIUpstream),
			ContainSubstring("http or https"),
			ContainSubstring("requires the guard"))))

		By("and injects the same pod once the value is fixed")
		pod = createPod(ns, withAnnotation(guardv1.AnnotationOpenAIUpstream, "http://models.internal:8080"))
		Expect(pod.Spec.InitContainers[0].Args).To(ContainElement("--openai-upstream=http://models.internal:8080"))
	})

	It("serves the apiserver the legacy shape too: a regular first container it accepts and that meets restricted", func() {
		// The manager here talks to a 1.37 apiserver and injects native sidecars; the shape
		// for older clusters is rendered by the same code and must be a valid pod as well.
		cfg := testConfig()
		cfg.NativeSidecars = false
		d := decide(newPod(), "apps", enabledNS, cfg, []byte(testCA), providerChoice{})
		pod := d.pod
		pod.Namespace = newNamespace(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		Expect(k8sClient.Create(context.Background(), pod)).To(Succeed())
		Expect(pod.Spec.Containers[0].Name).To(Equal(guardv1.ContainerName))
		Expect(pod.Spec.InitContainers).To(BeEmpty())
	})

	It("reads the apiserver's version to choose native sidecars", func() {
		native, err := ServerHasNativeSidecars(cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(native).To(BeTrue())
	})

	Describe("certificate rotation", func() {
		servedCert := func() [32]byte {
			d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // reads the certificate, trusts nothing
			conn, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort(testEnv.WebhookInstallOptions.LocalServingHost,
				strconv.Itoa(testEnv.WebhookInstallOptions.LocalServingPort)))
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = conn.Close() }()
			return sha256.Sum256(conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Raw)
		}
		caBundle := func() []byte {
			mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
			Expect(k8sClient.Get(context.Background(), client.ObjectKey{Name: WebhookConfigName}, mwc)).To(Succeed())
			return mwc.Webhooks[0].ClientConfig.CABundle
		}
		rotate := func(mutate func(*corev1.Secret)) {
			s := &corev1.Secret{}
			Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: CertSecretName}, s)).To(Succeed())
			mutate(s)
			Expect(k8sClient.Update(context.Background(), s)).To(Succeed())
		}
		injects := func() {
			ns := newNamespace(map[string]string{guardv1.LabelInjection: "required"})
			pod := createPod(ns)
			Expect(pod.Spec.InitContainers).To(ContainElement(HaveField("Name", guardv1.ContainerName)))
		}

		It("serves a new serving certificate when the old one is gone, and the apiserver keeps calling", func() {
			before, ca := servedCert(), caBundle()
			rotate(func(s *corev1.Secret) { delete(s.Data, "tls.crt"); delete(s.Data, "tls.key") })
			Eventually(servedCert).ShouldNot(Equal(before))
			Expect(caBundle()).To(Equal(ca), "the CA is kept")
			injects()
		})

		It("rotates the CA, re-injects the caBundle and keeps being called", func() {
			before, ca := servedCert(), caBundle()
			rotate(func(s *corev1.Secret) { s.Data = nil })
			Eventually(caBundle).ShouldNot(Equal(ca))
			Eventually(servedCert).ShouldNot(Equal(before))
			// The required entry fails closed: a pod is created only through the webhook.
			Eventually(func() error {
				p := newPod()
				p.Namespace = newNamespace(map[string]string{guardv1.LabelInjection: "required"})
				return k8sClient.Create(context.Background(), p)
			}).Should(Succeed())
			injects()
			Expect(readyz()).To(Succeed())
		})
	})
})

// warningCollector keeps the admission warnings the apiserver relays.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningCollector) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningCollector) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func clientWithWarnings(w *warningCollector) client.Client {
	c := rest.CopyConfig(cfg)
	c.WarningHandlerWithContext = w
	cl, err := client.New(c, client.Options{Scheme: k8sClient.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return cl
}
