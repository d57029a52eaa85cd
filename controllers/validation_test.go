package controllers_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Every manifest below is rejected by the apiserver when it is created — not by the
// controller later — with a message that names the offending field.
var _ = Describe("Admission of invalid manifests", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	type build func(ns string) *unstructured.Unstructured
	c := func(muts ...mutation) build {
		return func(ns string) *unstructured.Unstructured { return classifierManifest(ns, "c", muts...) }
	}
	g := func(muts ...mutation) build {
		return func(ns string) *unstructured.Unstructured { return guardrailManifest(ns, "g", muts...) }
	}
	webhook := set("spec.webhook", map[string]any{"url": "https://judge.example.com"})
	noBuiltin := unset("spec.builtin")
	cats := func(ids ...string) mutation {
		var l []any
		for _, id := range ids {
			l = append(l, map[string]any{"id": id})
		}
		return set("spec.categories", l)
	}

	DescribeTable("is rejected at create time, naming the field",
		func(b build, wantField, wantText string) {
			err := k8sClient.Create(context.Background(), b(ns))
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			Expect(err.Error()).To(ContainSubstring(wantField))
			Expect(err.Error()).To(ContainSubstring(wantText))
		},
		// Classifier
		Entry("a classifier without a backend", c(noBuiltin), "spec", "exactly one backend must be set"),
		Entry("a classifier with two backends", c(webhook, cats("x")), "spec", "exactly one backend must be set"),
		Entry("a builtin classifier with authored categories", c(cats("x")), "spec.categories", "derives its categories"),
		Entry("a builtin classifier with credentials", c(set("spec.credentialsSecretRef", map[string]any{"name": "s"})), "spec.credentialsSecretRef", "takes no credentials"),
		Entry("a builtin classifier with nothing enabled", c(set("spec.builtin", map[string]any{})), "spec.builtin", "at least one of packs, detectors, patterns or keywords"),
		Entry("an unknown pack", c(set("spec.builtin.packs", []any{"pci"})), "spec.builtin.packs[0]", "Unsupported value"),
		Entry("an unknown detector", c(set("spec.builtin.detectors", []any{"passport"})), "spec.builtin.detectors[0]", "Unsupported value"),
		Entry("a pattern category that is not a DNS label", c(set("spec.builtin.patterns", []any{map[string]any{"category": "Employee_ID", "regex": "E[0-9]+"}})), "spec.builtin.patterns[0].category", "should match"),
		Entry("a builtin classifier judging images", c(set("spec.modalities", []any{"text", "image"})), "spec.modalities", "inspects text only"),
		Entry("a moderation url that is not a URL", c(noBuiltin, set("spec.moderation", map[string]any{"url": "moderations"}), cats("violence")), "spec.moderation.url", "absolute http or https URL"),
		Entry("a moderation classifier without categories", c(noBuiltin, set("spec.moderation", map[string]any{"url": "https://api.example.com/v1/moderations"})), "spec.categories", "needs spec.categories"),
		Entry("an llm judge without a model", c(noBuiltin, set("spec.llm", map[string]any{"url": "https://judge.example.com", "format": "scores"}), cats("x")), "spec.llm.model", "Required value"),
		Entry("an llm judge with an unknown format", c(noBuiltin, set("spec.llm", map[string]any{"url": "https://judge.example.com", "model": "m", "format": "json"}), cats("x")), "spec.llm.format", "Unsupported value"),
		Entry("a webhook with both categories and questions", c(noBuiltin, webhook, cats("x"), set("spec.questions", []any{map[string]any{"id": "q", "type": "boolean", "criteria": []any{map[string]any{"value": "true", "description": "yes"}, map[string]any{"value": "false", "description": "no"}}}})), "spec.categories", "exactly one of spec.categories or spec.questions"),
		Entry("a category id with capitals", c(noBuiltin, webhook, cats("Violence")), "spec.categories[0].id", "should match"),
		Entry("a duplicated category id", c(noBuiltin, webhook, cats("violence", "violence")), "spec.categories[1]", "Duplicate value"),
		Entry("a boolean question with the wrong criteria", c(noBuiltin, webhook, set("spec.questions", []any{map[string]any{"id": "unsafe", "type": "boolean", "criteria": []any{map[string]any{"value": "yes", "description": "a"}, map[string]any{"value": "no", "description": "b"}}}})), "spec.questions[0].criteria", "exactly two criteria, with values true and false"),
		Entry("a question id that CEL cannot read", c(noBuiltin, webhook, set("spec.questions", []any{map[string]any{"id": "on-topic", "type": "choice", "criteria": []any{map[string]any{"value": "a", "description": "a"}, map[string]any{"value": "b", "description": "b"}}}})), "spec.questions[0].id", "should match"),
		Entry("too many retries", c(set("spec.retries", int64(5))), "spec.retries", "less than or equal to 3"),
		Entry("a concurrency limit of zero", c(set("spec.maxConcurrency", int64(0))), "spec.maxConcurrency", "greater than or equal to 1"),
		Entry("an unknown modality", c(noBuiltin, webhook, cats("x"), set("spec.modalities", []any{"video"})), "spec.modalities[0]", "Unsupported value"),
		Entry("a cache without a ttl", c(set("spec.cache", map[string]any{"maxEntries": int64(10)})), "spec.cache.ttl", "Required value"),
		Entry("a credentials key with a slash", c(noBuiltin, webhook, cats("x"), set("spec.credentialsSecretRef", map[string]any{"name": "s", "key": "a/b"})), "spec.credentialsSecretRef.key", "should match"),
		// Guardrail
		Entry("a guardrail without a mode", g(unset("spec.mode")), "spec.mode", "Required value"),
		Entry("an unknown mode", g(set("spec.mode", "Audit")), "spec.mode", "Unsupported value"),
		Entry("a guardrail without a classifierRef", g(unset("spec.classifierRef")), "spec.classifierRef", "Required value"),
		Entry("a threshold above 1", g(set("spec.threshold", 1.5)), "spec.threshold", "less than or equal to 1"),
		Entry("a guardrail with no rule at all", g(unset("spec.threshold"), unset("spec.action")), "spec.rules", "a guardrail needs a rule"),
		Entry("categories without a threshold", g(unset("spec.threshold"), set("spec.categories", []any{"email"})), "spec.threshold", "spec.threshold is required when category rules are used"),
		Entry("a threshold without an action", g(unset("spec.action")), "spec.action", "spec.action is required with spec.threshold"),
		Entry("a thresholds category that is not a category id", g(set("spec.thresholds", []any{map[string]any{"category": "Credit_Card", "threshold": 0.9}})), "spec.thresholds[0].category", "should match"),
		Entry("a thresholds value above 1", g(set("spec.thresholds", []any{map[string]any{"category": "email", "threshold": 2.0}})), "spec.thresholds[0].threshold", "less than or equal to 1"),
		Entry("a thresholds category outside the selected categories", g(set("spec.categories", []any{"email"}), set("spec.thresholds", []any{map[string]any{"category": "phone", "threshold": 0.9}})), "spec.thresholds", "must be listed in spec.categories"),
		Entry("a moderation categoryMap target that is not a category id", c(noBuiltin, set("spec.moderation", map[string]any{"url": "https://api.example.com/v1/moderations", "categoryMap": []any{map[string]any{"name": "self-harm/intent", "category": "self-harm/intent"}}}), cats("x")), "spec.moderation.categoryMap[0].category", "should match"),
		Entry("an unknown phase", g(set("spec.phases", []any{"Input", "Response"})), "spec.phases[1]", "Unsupported value"),
		Entry("streaming settings without the Stream phase", g(set("spec.streaming", map[string]any{"evaluateEveryChars": int64(100)})), "spec.streaming", "applies to the Stream phase"),
		Entry("a holdBackChars word other than Unbounded", g(set("spec.phases", []any{"Stream"}), set("spec.streaming", map[string]any{"holdBackChars": "All"})), "spec.streaming.holdBackChars", "integer between 0 and 1048576, or Unbounded"),
		Entry("a negative holdBackChars", g(set("spec.phases", []any{"Stream"}), set("spec.streaming", map[string]any{"holdBackChars": int64(-1)})), "spec.streaming.holdBackChars", "integer between 0 and 1048576, or Unbounded"),
		Entry("a negative cadence", g(set("spec.phases", []any{"Stream"}), set("spec.streaming", map[string]any{"evaluateEveryChars": int64(-5)})), "spec.streaming.evaluateEveryChars", "greater than or equal to 0"),
		Entry("chunkWindow together with Sentences", g(set("spec.phases", []any{"Stream"}), set("spec.streaming", map[string]any{"chunkWindow": int64(3), "segmentation": "Sentences"})), "spec.streaming.chunkWindow", "alternatives"),
		Entry("a rule that redacts", g(set("spec.rules", []any{map[string]any{"name": "r", "expression": "true", "action": "Redact"}})), "spec.rules[0].action", "Unsupported value"),
		Entry("a guardrail without a reason", g(unset("spec.reason")), "spec.reason", "Required value"),
		Entry("a reason longer than 1024 characters", g(set("spec.reason", strings.Repeat("x", 1025))), "spec.reason", "Too long"),
		Entry("an unknown failure policy", g(set("spec.failurePolicy", "Maybe")), "spec.failurePolicy", "Unsupported value"),
		Entry("a priority out of range", g(set("spec.priority", int64(5000))), "spec.priority", "less than or equal to 1000"),
		Entry("an unknown unsupported policy", g(set("spec.unsupported", "Ignore")), "spec.unsupported", "Unsupported value"),
	)

	// Values the schema used to accept and the manager's Go decoder refused: stored, they
	// made the informer's list of the whole kind fail, so no Guardrail (or Classifier) in
	// any namespace was reconciled until the object was deleted.
	const positiveDuration = "must be a positive duration such as 500ms, 2s or 1m30s"
	sel := func(v any) mutation { return set("spec.selector", v) }
	expr := func(key, op string, values ...any) map[string]any {
		e := map[string]any{"key": key, "operator": op}
		if values != nil {
			e["values"] = values
		}
		return map[string]any{"matchExpressions": []any{e}}
	}
	DescribeTable("refuses at create time what the controller could not decode or parse",
		func(b build, wantField, wantText string) {
			err := k8sClient.Create(context.Background(), b(ns))
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			GinkgoWriter.Println(err.Error())
			Expect(err.Error()).To(ContainSubstring(wantField + ": "))
			Expect(err.Error()).To(ContainSubstring(wantText))
			Expect(err.Error()).NotTo(ContainSubstring("evaluating rule"), "a rule failed to evaluate instead of refusing the value")
		},
		Entry("a guardrail timeout in words", g(set("spec.timeout", "3 seconds")), "spec.timeout", positiveDuration),
		Entry("a guardrail timeout with an abbreviated unit", g(set("spec.timeout", "5 sec")), "spec.timeout", positiveDuration),
		Entry("a negative guardrail timeout", g(set("spec.timeout", "-1s")), "spec.timeout", positiveDuration),
		Entry("a zero guardrail timeout", g(set("spec.timeout", "0s")), "spec.timeout", positiveDuration),
		Entry("a guardrail timeout without a unit", g(set("spec.timeout", "30")), "spec.timeout", positiveDuration),
		Entry("a guardrail timeout that overflows a Go duration", g(set("spec.timeout", "9999999999h")), "spec.timeout", positiveDuration),
		Entry("a classifier timeout in words", c(set("spec.timeout", "2 seconds")), "spec.timeout", positiveDuration),
		Entry("a negative classifier timeout", c(set("spec.timeout", "-2s")), "spec.timeout", positiveDuration),
		Entry("a cache ttl in words", c(set("spec.cache", map[string]any{"ttl": "ten minutes", "maxEntries": int64(10)})), "spec.cache.ttl", positiveDuration),
		Entry("a zero cache ttl", c(set("spec.cache", map[string]any{"ttl": "0s", "maxEntries": int64(10)})), "spec.cache.ttl", positiveDuration),
		Entry("a selector operator that does not exist", g(sel(expr("tier", "Equals", "web"))), "spec.selector.matchExpressions[0].operator", "Unsupported value"),
		Entry("a selector operator in lowercase", g(sel(expr("tier", "in", "web"))), "spec.selector.matchExpressions[0].operator", "Unsupported value"),
		Entry("In without values", g(sel(expr("tier", "In"))), "spec.selector.matchExpressions[0].values", "operators In and NotIn need at least one value"),
		Entry("NotIn with an empty list of values", g(sel(map[string]any{"matchExpressions": []any{map[string]any{"key": "tier", "operator": "NotIn", "values": []any{}}}})), "spec.selector.matchExpressions[0].values", "operators In and NotIn need at least one value"),
		Entry("Exists with values", g(sel(expr("tier", "Exists", "web"))), "spec.selector.matchExpressions[0].values", "operators Exists and DoesNotExist take no values"),
		Entry("DoesNotExist with values", g(sel(expr("tier", "DoesNotExist", "web"))), "spec.selector.matchExpressions[0].values", "operators Exists and DoesNotExist take no values"),
		Entry("a selector key with a space", g(sel(expr("my tier", "Exists"))), "spec.selector.matchExpressions[0].key", "must be a label key"),
		Entry("a selector key with two slashes", g(sel(expr("a/b/c", "Exists"))), "spec.selector.matchExpressions[0].key", "must be a label key"),
		Entry("an empty selector key", g(sel(expr("", "Exists"))), "spec.selector.matchExpressions[0].key", "must be a label key"),
		Entry("a selector value with a space", g(sel(expr("tier", "In", "web tier"))), "spec.selector.matchExpressions[0].values[0]", "must be a label value"),
		Entry("a matchLabels key that is not a label key", g(sel(map[string]any{"matchLabels": map[string]any{"app name": "bot"}})), "spec.selector.matchLabels", "every key must be a label key"),
		Entry("a matchLabels value that is not a label value", g(sel(map[string]any{"matchLabels": map[string]any{"app": "support bot!"}})), "spec.selector.matchLabels[app]", "must be a label value"),
		Entry("a matchLabels value longer than 63 characters", g(sel(map[string]any{"matchLabels": map[string]any{"app": strings.Repeat("a", 64)}})), "spec.selector.matchLabels.app", "Too long"),
		Entry("a holdBackChars above int32", g(set("spec.phases", []any{"Stream"}), set("spec.streaming", map[string]any{"holdBackChars": int64(1) << 33})), "spec.streaming.holdBackChars", "integer between 0 and 1048576, or Unbounded"),
	)
})
