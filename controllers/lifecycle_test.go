package controllers_test

import (
	"context"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// withPattern replaces the builtin detectors by one custom pattern.
func withPattern(category, regex string) classifierOpt {
	return func(c *v1alpha1.Classifier) {
		c.Spec.Builtin = &v1alpha1.BuiltinBackend{Patterns: []v1alpha1.PatternRule{{Category: category, Regex: regex}}}
	}
}

var _ = Describe("A Guardrail and the state of its Classifier", func() {
	ctx := context.Background()

	It("is Stalled while its Classifier is Stalled, pointing at it, and recovers when the Classifier is fixed", func() {
		ns := newNamespace()
		c := newClassifier(ns, "ids", withPattern("employee-id", "EMP-[0-9"))
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		g := newGuardrail(ns, "employee-ids", "ids")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())

		Eventually(condition(g, v1alpha1.ConditionStalled)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonClassifierStalled))
		stalled := condition(g, v1alpha1.ConditionStalled)(Default)
		GinkgoWriter.Println("Stalled:", stalled.Message)
		Expect(stalled.Message).To(ContainSubstring("Classifier ids is Stalled (InvalidSpec)"))
		Expect(stalled.Message).To(ContainSubstring("spec.builtin.patterns[0].regex"))
		Expect(condition(g, v1alpha1.ConditionReady)(Default)).To(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonClassifierStalled))
		Expect(g.Status.ObservedGeneration).To(Equal(g.Generation))
		Expect(kstatusOf(g)).To(Equal(status.FailedStatus), "GitOps tools see a failure, not a rollout in progress")
		Eventually(eventsOf(ns, "employee-ids")).Should(ContainElement(HavePrefix("Warning/ClassifierStalled: Classifier ids is Stalled")))

		update(c, func() { c.Spec.Builtin.Patterns[0].Regex = "EMP-[0-9]{6}" })
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		Expect(meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled)).To(BeNil())
		Expect(kstatusOf(g)).To(Equal(status.CurrentStatus))
	})

	It("waits for a Classifier that is still reconciling with Normal Events, never Warnings", func() {
		ns := newNamespace()
		c := newClassifier(ns, "judge", withWebhook("judge-token", choiceQuestion("topic", "billing", "other")))
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		g := newGuardrail(ns, "topics", "judge", withRule("off-topic", "answers.topic.choice == 'other'"))
		Expect(k8sClient.Create(ctx, g)).To(Succeed())

		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonClassifierNotReady))
		Eventually(condition(g, v1alpha1.ConditionReconciling)).Should(HaveField("Message",
			"Waiting for Classifier judge to become Ready: Secret judge-token does not exist in namespace "+ns))
		Expect(kstatusOf(g)).To(Equal(status.InProgressStatus))

		Expect(k8sClient.Create(ctx, secret(ns, "judge-token", map[string]string{"apiKey": "t"}))).To(Succeed())
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		Eventually(eventsOf(ns, "topics")).Should(ContainElement(HavePrefix("Normal/Succeeded: Generation 1 is in effect")))
		events := eventsOf(ns, "topics")(Default)
		GinkgoWriter.Println(strings.Join(events, "\n"))
		Expect(events).To(ContainElement(HavePrefix("Normal/ClassifierNotReady: Classifier judge is not Ready")))
		Expect(events).NotTo(ContainElement(HavePrefix("Warning/")))
	})
})

var _ = Describe("Switching a Guardrail's mode", func() {
	It("says the mode and generation in Ready and leaves a Normal Event for each switch", func() {
		ctx := context.Background()
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		g := newGuardrail(ns, "mode", "pii")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(HaveField("Message", "Generation 1 is in effect in Enforce mode"))

		update(g, func() { g.Spec.Mode = v1alpha1.ModeReport })
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(HaveField("Message",
			"Generation 2 is in effect in Report mode: decisions are recorded, content is left untouched"))
		update(g, func() { g.Spec.Mode = v1alpha1.ModeEnforce })
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(HaveField("Message", "Generation 3 is in effect in Enforce mode"))

		succeeded := func(events []string) []string {
			var out []string
			for _, e := range events {
				if strings.Contains(e, "/Succeeded: ") {
					out = append(out, e)
				}
			}
			return out
		}
		Eventually(eventsOf(ns, "mode")).Should(WithTransform(succeeded, Equal([]string{
			"Normal/Succeeded: Generation 1 is in effect in Enforce mode",
			"Normal/Succeeded: Generation 2 is in effect in Report mode: decisions are recorded, content is left untouched",
			"Normal/Succeeded: Generation 3 is in effect in Enforce mode",
		})))
	})
})

var _ = Describe("A streaming Guardrail on a remote classifier", func() {
	It("says in Ready how many characters may reach a client before they are judged", func() {
		ctx := context.Background()
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, secret(ns, "judge-token", map[string]string{"apiKey": "t"}))).To(Succeed())
		Expect(k8sClient.Create(ctx, newClassifier(ns, "judge", withWebhook("judge-token", choiceQuestion("topic", "billing", "other"))))).To(Succeed())
		g := newGuardrail(ns, "streamed", "judge", withRule("off-topic", "answers.topic.choice == 'other'"), func(g *v1alpha1.Guardrail) {
			g.Spec.Phases = []v1alpha1.Phase{v1alpha1.PhaseStream}
			g.Spec.Streaming = &v1alpha1.StreamingSpec{EvaluateEveryChars: ptr.To(int32(200))}
		})
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(HaveField("Message", "Generation 1 is in effect in Enforce mode; "+
			"up to 199 characters of a stream reach the client before they are judged (evaluateEveryChars 200, holdBackChars 0)"))

		update(g, func() { g.Spec.Streaming.HoldBackChars = ptr.To(spec.FromInt32(200)) })
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(HaveField("Message", "Generation 2 is in effect in Enforce mode"))
	})
})

// reconcileErrors sums a controller-runtime counter of a controller from the manager's
// metrics registry.
func reconcileErrors(name, controller string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

var _ = Describe("A Stalled object", func() {
	It("is not counted as a reconcile error: only a user can fix it", func() {
		ctx := context.Background()
		before := map[string]float64{}
		for _, ctl := range []string{"guardrail", "classifier"} {
			before[ctl] = reconcileErrors("controller_runtime_reconcile_errors_total", ctl)
		}
		ns := newNamespace()
		c := newClassifier(ns, "broken", withPattern("x", "(unclosed"))
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		g := newGuardrail(ns, "broken", "broken")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		bad := newGuardrail(ns, "bad-rule", "pii", withRule("bad", "scores['email'] >"))
		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		Expect(k8sClient.Create(ctx, bad)).To(Succeed())
		Eventually(condition(c, v1alpha1.ConditionStalled)).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(condition(g, v1alpha1.ConditionStalled)).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(condition(bad, v1alpha1.ConditionStalled)).Should(HaveField("Status", metav1.ConditionTrue))

		By("reconciling them again")
		for _, obj := range []client.Object{c, g, bad} {
			update(obj, func() { obj.SetAnnotations(map[string]string{"example.com/poke": "1"}) })
		}
		Consistently(func() map[string]float64 {
			return map[string]float64{
				"guardrail":  reconcileErrors("controller_runtime_reconcile_errors_total", "guardrail"),
				"classifier": reconcileErrors("controller_runtime_reconcile_errors_total", "classifier"),
			}
		}, "2s", "200ms").Should(Equal(before))
		for _, ctl := range []string{"guardrail", "classifier"} {
			Expect(reconcileErrors("controller_runtime_terminal_reconcile_errors_total", ctl)).To(BeZero())
		}
	})
})

var _ = Describe("A Classifier that is not Ready", func() {
	It("still reports its backend and how many Guardrails use it", func() {
		ctx := context.Background()
		ns := newNamespace()
		c := newClassifier(ns, "ids", withPattern("employee-id", "EMP-[0-9"))
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		Expect(k8sClient.Create(ctx, newGuardrail(ns, "ids", "ids"))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(c.Status.Backend).To(Equal("builtin"))
			g.Expect(c.Status.Guardrails).To(BeEquivalentTo(1))
		}).Should(Succeed())
		Expect(condition(c, v1alpha1.ConditionReady)(Default)).To(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec))

		out, err := kubectl("get", "classifiers", "-n", ns, "-o", "wide")
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Println(out)
		Expect(strings.Split(out, "\n")[1]).To(MatchRegexp(
			`^ids\s+builtin\s+False\s+1\s+spec\.builtin\.patterns\[0\]\.regex: Invalid value: error parsing regexp: missing closing \]: .\[0-9.\s+\d+s$`))
	})
})

var _ = Describe("Deleting a Classifier that Guardrails use", func() {
	It("waits until no Guardrail uses it, with a Warning Event naming them", func() {
		ctx := context.Background()
		ns := newNamespace()
		c := newClassifier(ns, "pii")
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		a, b := newGuardrail(ns, "a", "pii"), newGuardrail(ns, "b", "pii")
		Expect(k8sClient.Create(ctx, a)).To(Succeed())
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		Eventually(condition(b, v1alpha1.ConditionReady)).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(func(g Gomega) []string {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			return c.Finalizers
		}).Should(ContainElement(v1alpha1.InUseProtectionFinalizer))

		Expect(k8sClient.Delete(ctx, c)).To(Succeed())
		Eventually(eventsOf(ns, "pii")).Should(ContainElement(
			"Warning/InUse: Deletion waits until no Guardrail uses this Classifier; still used by a, b"))
		Eventually(condition(c, v1alpha1.ConditionInUse)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonInUse))
		Expect(c.DeletionTimestamp).NotTo(BeNil())

		By("serving its Guardrails while it is held")
		Expect(condition(c, v1alpha1.ConditionReady)(Default)).To(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		Consistently(condition(b, v1alpha1.ConditionReady), "1s").Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))

		By("naming the remaining user when one goes")
		Expect(k8sClient.Delete(ctx, a)).To(Succeed())
		Eventually(eventsOf(ns, "pii")).Should(ContainElement(
			"Warning/InUse: Deletion waits until no Guardrail uses this Classifier; still used by b"))
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c) }, "1s").Should(Succeed())

		By("completing the deletion when the last user is repointed")
		update(b, func() { b.Spec.ClassifierRef.Name = "other" })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c))
		}).Should(BeTrue())
	})
})

var _ = Describe("The samples", func() {
	It("apply as a set with kubectl and can be waited on, without a Warning", func() {
		ns := newNamespace()
		dir := filepath.Join(envtestutil.RepoRoot(), "config", "samples")
		out, err := kubectl("apply", "-n", ns, "-f", dir)
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Println(out)
		// Every namespaced Guardrail and Classifier of the samples becomes Ready.
		applied := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "guardrail.guardrail.dev/") || strings.HasPrefix(line, "classifier.guardrail.dev/") {
				applied++
			}
		}
		Expect(applied).To(BeNumerically(">=", 4), out)
		out, err = kubectl("wait", "-n", ns, "--for=condition=Ready", "guardrails,classifiers", "--all", "--timeout=60s")
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Println(out)
		Expect(strings.Count(out, "condition met")).To(Equal(applied))
		out, err = kubectl("get", "events", "-n", ns, "--field-selector", "type=Warning", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(BeEmpty())
	})
})

var _ = Describe("Refusing a Classifier with two backends", func() {
	It("says only that: not what neither backend would need", func() {
		ns := newNamespace()
		err := k8sClient.Create(context.Background(), classifierManifest(ns, "two",
			set("spec.webhook", map[string]any{"url": "https://judge.example.com"}),
			set("spec.categories", []any{map[string]any{"id": "x"}})))
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Println(err.Error())
		Expect(err.Error()).To(HaveSuffix(`"two" is invalid: spec: Invalid value: exactly one backend must be set: builtin, moderation, llm or webhook`))
	})
})
