package policyreport

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Name is the PolicyReport of a namespace's Report-mode Guardrails.
const Name = "guardrail-report-mode"

// GVK is the kind written.
var GVK = schema.GroupVersionKind{Group: "wgpolicyk8s.io", Version: "v1alpha2", Kind: "PolicyReport"}

// Build returns the PolicyReport of the Report-mode Guardrails among gs (sorted by name),
// or nil when there is none. A Guardrail's result is fail when it would have blocked a
// request, warn when it would have warned, stripped or redacted one, error when its
// evaluations failed, pass otherwise. A result's timestamp is the Guardrail's latest
// decision (or its creation): the report changes only when the counters do.
func Build(ns string, gs []v1alpha1.Guardrail) *unstructured.Unstructured {
	var results []any
	summary := map[string]int64{"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}
	sorted := append([]v1alpha1.Guardrail(nil), gs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i := range sorted {
		g := &sorted[i]
		if mode, _ := policy.ModeOf(g.Spec.Mode); mode != policy.ModeReport {
			continue
		}
		d := v1alpha1.DecisionCounts{}
		if g.Status.Decisions != nil {
			d = *g.Status.Decisions
		}
		result, msg := "pass", fmt.Sprintf("%d requests evaluated in Report mode, none would have been acted on", d.Allowed)
		others := d.WouldWarn + d.WouldStrip + d.WouldRedact + d.WouldPseudonymize
		switch {
		case d.WouldBlock > 0:
			result, msg = "fail", fmt.Sprintf("%d requests would have been blocked in Enforce mode", d.WouldBlock)
		case others > 0:
			result, msg = "warn", fmt.Sprintf("%d requests would have been warned on, stripped, redacted or pseudonymized in Enforce mode", others)
		case d.Failed > 0:
			result, msg = "error", fmt.Sprintf("%d evaluations failed", d.Failed)
		}
		summary[result]++
		props := map[string]any{}
		for k, v := range map[string]int64{"allowed": d.Allowed, "wouldBlock": d.WouldBlock, "wouldWarn": d.WouldWarn,
			"wouldStrip": d.WouldStrip, "wouldRedact": d.WouldRedact, "wouldPseudonymize": d.WouldPseudonymize,
			"failed": d.Failed, "notInspected": d.NotInspected} {
			props[k] = strconv.FormatInt(v, 10)
		}
		for _, c := range d.Categories {
			props["category."+c.Name] = strconv.FormatInt(c.Matches, 10)
		}
		at := g.CreationTimestamp.Time
		if g.Status.LastDecisionTime != nil {
			at = g.Status.LastDecisionTime.Time
		}
		r := map[string]any{
			"source": "guardrail-operator", "policy": g.Name, "rule": "decisions", "result": result,
			"message": msg, "properties": props, "category": "Guardrail",
			"timestamp": map[string]any{"seconds": at.Unix(), "nanos": int64(0)},
		}
		results = append(results, r)
	}
	if len(results) == 0 {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK)
	u.SetNamespace(ns)
	u.SetName(Name)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "guardrail-operator"})
	sum := map[string]any{}
	for k, v := range summary {
		sum[k] = v
	}
	u.Object["summary"] = sum
	u.Object["results"] = results
	return u
}
