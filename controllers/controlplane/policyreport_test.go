package controlplane_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/policyreport"
)

// installPolicyReportCRD installs a minimal wgpolicyk8s.io/v1alpha2 PolicyReport CRD, as
// policy tooling would, and waits until it is served.
func installPolicyReportCRD(t *testing.T) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "policyreports.wgpolicyk8s.io"},
		"spec": map[string]any{
			"group": "wgpolicyk8s.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "PolicyReport", "listKind": "PolicyReportList", "plural": "policyreports", "singular": "policyreport"},
			"versions": []any{map[string]any{"name": "v1alpha2", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if err := k8s.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := cs.RESTClient().Get().AbsPath("/apis/wgpolicyk8s.io/v1alpha2/policyreports").Do(context.Background()).Error(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the PolicyReport CRD is not served")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestReportModeDecisionsReachAPolicyReport(t *testing.T) {
	installPolicyReportCRD(t)
	ns := fixture(t)
	editGuardrail(t, ns, "web-words", func(g *v1alpha1.Guardrail) { g.Spec.Mode = v1alpha1.ModeReport })
	tok := token(t, pod(t, ns, "web-1", "web"), guardv1.Audience)
	if status := postDecisions(t, baseURL, tok, cumulative(ns, "inc-1", 4, 0)); status != http.StatusNoContent {
		t.Fatalf("batch answered %d", status)
	}
	report := &unstructured.Unstructured{}
	report.SetGroupVersionKind(policyreport.GVK)
	key := client.ObjectKey{Namespace: ns, Name: policyreport.Name}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := k8s.Get(context.Background(), key, report); err == nil {
			results, _, _ := unstructured.NestedSlice(report.Object, "results")
			if len(results) == 1 {
				r := results[0].(map[string]any)
				props, _ := r["properties"].(map[string]any)
				if r["policy"] == "web-words" && r["result"] == "fail" && props["wouldBlock"] == "4" {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PolicyReport with web-words failing on 4 would-blocks: %v", report.Object)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Back to Enforce: no Report-mode Guardrail is left, nor the report.
	editGuardrail(t, ns, "web-words", func(g *v1alpha1.Guardrail) { g.Spec.Mode = v1alpha1.ModeEnforce })
	deadline = time.Now().Add(30 * time.Second)
	for err := k8s.Get(context.Background(), key, report); !apierrors.IsNotFound(err); err = k8s.Get(context.Background(), key, report) {
		if time.Now().After(deadline) {
			t.Fatal("the PolicyReport outlived the namespace's last Report-mode Guardrail")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
