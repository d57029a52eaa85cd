package injection

import (
	"context"
	"slices"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

var _ = Describe("The guard's tracing", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(map[string]string{guardv1.LabelInjection: "required"}) })

	// handWritten is a pod created with a copy of an injected pod's spec (its guard written
	// by hand), after edit.
	handWritten := func(edit func(g *corev1.Container)) error {
		injected := createPod(ns)
		p := newPod()
		p.Namespace, p.Name = ns, injected.Name+"-copy"
		p.Labels, p.Annotations = injected.Labels, injected.Annotations
		p.Spec = *injected.Spec.DeepCopy()
		edit(guardOf(p))
		return k8sClient.Create(context.Background(), p)
	}

	It("is rendered from the manager's setting and verifies as stored by the apiserver", func() {
		pod := createPod(ns)
		Expect(VerifyGuard(pod, suiteGuard())).To(Succeed())
		Expect(guardOf(pod).Env).To(ContainElements(
			corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: suiteTracing.Endpoint},
			corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_PROTOCOL", Value: "http/protobuf"},
			corev1.EnvVar{Name: "OTEL_TRACES_SAMPLER_ARG", Value: "0.5"},
			corev1.EnvVar{Name: "OTEL_SERVICE_NAME", Value: "guardrail-guard"},
		))
	})

	It("cannot be re-pointed by a tenant in a required namespace", func() {
		err := handWritten(func(g *corev1.Container) {
			i := slices.IndexFunc(g.Env, func(e corev1.EnvVar) bool { return e.Name == "OTEL_EXPORTER_OTLP_ENDPOINT" })
			g.Env[i].Value = "https://collector.tenant.example"
		})
		Expect(err).To(MatchError(And(ContainSubstring("requires the guard"), ContainSubstring("tracing settings"))))
	})

	It("cannot be given an earlier setting, or none, by a tenant in a required namespace", func() {
		err := handWritten(func(g *corev1.Container) {
			g.Env = slices.DeleteFunc(g.Env, func(e corev1.EnvVar) bool { return strings.HasPrefix(e.Name, "OTEL_") })
			g.Env = append(g.Env, tracingEnv(suitePreviousTracing)...)
		})
		Expect(err).To(MatchError(ContainSubstring("not the manager's current ones")))
	})
})
