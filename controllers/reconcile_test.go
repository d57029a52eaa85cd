package controllers_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// condition returns a getter of condition t of obj, re-read from the apiserver.
func condition(obj status.Object, t string) func(g Gomega) metav1.Condition {
	return func(g Gomega) metav1.Condition {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		c := meta.FindStatusCondition(obj.GetConditions(), t)
		g.Expect(c).NotTo(BeNil(), "condition %s is not set", t)
		return *c
	}
}

func haveStatus(s metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(
		HaveField("Status", s),
		HaveField("Reason", reason),
	)
}

// readSamples decodes every document of config/samples/*.yaml and
// config/samples/remote/*.yaml.
func readSamples() []*unstructured.Unstructured {
	files, err := filepath.Glob(filepath.Join(envtestutil.RepoRoot(), "config", "samples", "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	remote, err := filepath.Glob(filepath.Join(envtestutil.RepoRoot(), "config", "samples", "remote", "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	files = append(files, remote...)
	Expect(files).NotTo(BeEmpty())
	var objs []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		for _, doc := range strings.Split(string(b), "\n---\n") {
			u := &unstructured.Unstructured{}
			Expect(utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&u.Object)).To(Succeed(), f)
			objs = append(objs, u)
		}
	}
	return objs
}

var _ = Describe("Reconciling Classifiers and Guardrails", func() {
	ctx := context.Background()

	It("makes every sample Ready once the Secrets it names exist", func() {
		ns := newNamespace()
		for _, name := range []string{"openai-credentials", "judge-credentials"} {
			Expect(k8sClient.Create(ctx, secret(ns, name, map[string]string{"apiKey": "test-token"}))).To(Succeed())
		}
		samples := readSamples()
		Expect(len(samples)).To(BeNumerically(">=", 8))
		for _, u := range samples {
			u.SetNamespace(ns)
			Expect(k8sClient.Create(ctx, u)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
		}
		for _, u := range samples {
			var obj status.Object = &v1alpha1.Guardrail{}
			if u.GetKind() == "Classifier" {
				obj = &v1alpha1.Classifier{}
			}
			obj.SetNamespace(ns)
			obj.SetName(u.GetName())
			Eventually(condition(obj, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded),
				"%s %s", u.GetKind(), u.GetName())
			Expect(obj.GetObservedGeneration()).To(Equal(obj.GetGeneration()))
		}
		c := &v1alpha1.Classifier{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pii-secrets"}, c)).To(Succeed())
		Expect(c.Status.Backend).To(Equal("builtin"))
		Expect(c.Status.Categories).To(ContainElements("email", "credit-card", "aws-access-key", "employee-id"))
		Expect(c.Status.HoldBackHint).To(BeNumerically(">", 0))
		Expect(c.Status.Guardrails).To(BeEquivalentTo(1))
	})

	It("reports ClassifierNotFound and becomes Ready when the Classifier appears, without touching the Guardrail", func() {
		ns := newNamespace()
		g := newGuardrail(ns, "no-pii", "pii")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		generation := g.Generation

		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonClassifierNotFound))
		Expect(condition(g, v1alpha1.ConditionReconciling)(Default)).To(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonClassifierNotFound))
		Expect(condition(g, v1alpha1.ConditionClassifierResolved)(Default).Message).To(HavePrefix("Classifier pii does not exist in namespace"))
		Expect(condition(g, v1alpha1.ConditionReconciling)(Default).Message).To(HavePrefix("Waiting for Classifier pii to be created in namespace"))
		Eventually(eventsOf(ns, "no-pii")).Should(ContainElement(HavePrefix("Warning/ClassifierNotFound")))

		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		Expect(g.Generation).To(Equal(generation), "the Guardrail's spec was not changed")
		Expect(g.Status.ObservedGeneration).To(Equal(generation))
		Expect(meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReconciling)).To(BeNil())
		Expect(condition(g, v1alpha1.ConditionClassifierResolved)(Default)).To(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
	})

	It("re-resolves a Classifier's credentials when its Secret changes", func() {
		ns := newNamespace()
		c := newClassifier(ns, "judge", withWebhook("judge-token", choiceQuestion("topic", "billing", "other")))
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		Eventually(condition(c, v1alpha1.ConditionCredentialsResolved)).Should(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound))
		Expect(condition(c, v1alpha1.ConditionReady)(Default)).To(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound))

		s := secret(ns, "judge-token", map[string]string{"other": "x"})
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		Eventually(condition(c, v1alpha1.ConditionCredentialsResolved)).Should(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonSecretKeyNotFound))

		s.Data["apiKey"] = []byte("sekret-value")
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		Eventually(condition(c, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		Expect(condition(c, v1alpha1.ConditionCredentialsResolved)(Default)).To(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))

		Expect(k8sClient.Delete(ctx, s)).To(Succeed())
		Eventually(condition(c, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound))

		By("never writing the credential into status or events")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		Expect(statusText(c)).NotTo(ContainSubstring("sekret-value"))
		var list eventsv1.EventList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for _, e := range list.Items {
			Expect(e.Note).NotTo(ContainSubstring("sekret-value"))
		}
	})

	It("stalls a Guardrail whose CEL rule does not compile, naming the rule", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, newClassifier(ns, "topic", withWebhook("", choiceQuestion("topic", "billing", "other"))))).To(Succeed())
		g := newGuardrail(ns, "topics", "topic", withRule("off-topic", "answers.topic.choice == "))
		Expect(k8sClient.Create(ctx, g)).To(Succeed())

		Eventually(condition(g, v1alpha1.ConditionStalled)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec))
		stalled := condition(g, v1alpha1.ConditionStalled)(Default)
		Expect(stalled.Message).To(ContainSubstring("spec.rules[off-topic].expression"))
		Expect(condition(g, v1alpha1.ConditionReady)(Default)).To(haveStatus(metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec))
		Expect(g.Status.ObservedGeneration).To(Equal(g.Generation), "a terminal stall handles the generation")
		Expect(meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReconciling)).To(BeNil())

		By("recovering when the rule is fixed")
		update(g, func() {
			g.Spec.Rules[0].Expression = "answers.topic.type == 'refusal' || answers.topic.choice == 'other'"
		})
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
		Expect(meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled)).To(BeNil())
	})

	It("stalls a Guardrail that does not fit its Classifier, and recovers when the Classifier changes", func() {
		ns := newNamespace()
		c := newClassifier(ns, "pii")
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		g := newGuardrail(ns, "keys", "pii", withCategories("aws-access-key"))
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		Eventually(condition(g, v1alpha1.ConditionStalled)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonClassifierMismatch))
		Expect(condition(g, v1alpha1.ConditionClassifierResolved)(Default).Message).To(ContainSubstring("spec.categories[0]"))

		update(c, func() { c.Spec.Builtin.Packs = append(c.Spec.Builtin.Packs, v1alpha1.PackSecrets) })
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
	})

	It("does not write status when nothing changed", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, newClassifier(ns, "pii"))).To(Succeed())
		g := newGuardrail(ns, "quiet", "pii")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))

		// A metadata change triggers a reconcile that finds nothing to do.
		update(g, func() { g.Annotations = map[string]string{"example.com/touched": "yes"} })
		rv := g.ResourceVersion
		Consistently(func(gm Gomega) string {
			gm.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(g), g)).To(Succeed())
			return g.ResourceVersion
		}, "2s", "200ms").Should(Equal(rv))
	})
})

// update re-reads obj, applies mutate and writes it, retrying when the controller wrote
// the object (its status) in between.
func update(obj client.Object, mutate func()) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return k8sClient.Update(context.Background(), obj)
	})).To(Succeed())
}

func statusText(obj any) string {
	var b strings.Builder
	switch o := obj.(type) {
	case *v1alpha1.Classifier:
		for _, c := range o.Status.Conditions {
			b.WriteString(c.Message + c.Reason)
		}
	case *v1alpha1.Guardrail:
		for _, c := range o.Status.Conditions {
			b.WriteString(c.Message + c.Reason)
		}
	}
	return b.String()
}

var _ = Describe("One tenant's invalid manifest", func() {
	ctx := context.Background()

	It("is refused while valid Guardrails in other namespaces keep reconciling", func() {
		good := newNamespace()
		Expect(k8sClient.Create(ctx, newClassifier(good, "pii"))).To(Succeed())
		g := newGuardrail(good, "valid", "pii")
		Expect(k8sClient.Create(ctx, g)).To(Succeed())
		Eventually(condition(g, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))

		By("refusing a Guardrail and a Classifier with durations Go cannot decode")
		bad := newNamespace()
		err := k8sClient.Create(ctx, guardrailManifest(bad, "typo", set("spec.timeout", "3 seconds")))
		Expect(err).To(MatchError(ContainSubstring("spec.timeout")))
		err = k8sClient.Create(ctx, classifierManifest(bad, "typo", set("spec.cache", map[string]any{"ttl": "ten minutes", "maxEntries": int64(10)})))
		Expect(err).To(MatchError(ContainSubstring("spec.cache.ttl")))

		By("listing every Guardrail and Classifier of the cluster into the Go types, as the informers do")
		Expect(k8sClient.List(ctx, &v1alpha1.GuardrailList{})).To(Succeed())
		Expect(k8sClient.List(ctx, &v1alpha1.ClassifierList{})).To(Succeed())

		By("reconciling a new generation of the valid Guardrail")
		update(g, func() { g.Spec.Mode = v1alpha1.ModeReport })
		Eventually(func(gm Gomega) int64 {
			gm.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(g), g)).To(Succeed())
			return g.Status.ObservedGeneration
		}).Should(Equal(g.Generation))
		Expect(condition(g, v1alpha1.ConditionReady)(Default)).To(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))

		By("reconciling a Guardrail created after the refusal")
		later := newGuardrail(good, "later", "pii")
		Expect(k8sClient.Create(ctx, later)).To(Succeed())
		Eventually(condition(later, v1alpha1.ConditionReady)).Should(haveStatus(metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
	})
})

// eventsOf returns a getter of the Events about the object named name in ns, as
// "Type/Reason: note", oldest first.
func eventsOf(ns, name string) func(g Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		sort.SliceStable(list.Items, func(i, j int) bool {
			return list.Items[i].EventTime.Before(&list.Items[j].EventTime)
		})
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				out = append(out, e.Type+"/"+e.Reason+": "+e.Note)
			}
		}
		return out
	}
}
