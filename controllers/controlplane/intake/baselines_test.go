package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// A tenant whose namespace a baseline does not select runs a real guard and reports
// decisions for that baseline anyway: they must not reach its status.
func TestAGuardCountsOnlyTheBaselinesThatSelectItsNamespace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	baseline := func(name, classifier string, sel *v1alpha1.LabelSelector) *v1alpha1.ClusterGuardrail {
		g := &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: name}}
		g.Spec.ClassifierRef.Name = classifier
		g.Spec.NamespaceSelector = sel
		return g
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Labels: map[string]string{"tier": "sandbox"}}},
		baseline("everywhere", "secrets", nil),
		baseline("production-only", "pii", &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "production"}}),
	).Build()
	in := New(Options{Cache: c})

	counts := func(name string) guardv1.GuardrailDecisions {
		return guardv1.GuardrailDecisions{Guardrail: name, Counts: []guardv1.DecisionCount{{Generation: 1, Phase: "Input", Outcome: "blocked", Requests: 500}}}
	}
	req := &guardv1.DecisionsRequest{Incarnation: "a", Started: 1,
		Guardrails:  []guardv1.GuardrailDecisions{counts("tenant/own"), counts("/everywhere"), counts("/production-only"), counts("/no-such-baseline")},
		Classifiers: []guardv1.ClassifierCalls{{Classifier: "/secrets", Calls: 3}, {Classifier: "/pii", Calls: 3}, {Classifier: "tenant/judge", Calls: 3}},
		Samples:     []guardv1.Sample{{Guardrail: "/production-only", Outcome: "blocked"}, {Guardrail: "/everywhere", Outcome: "blocked"}},
	}
	if err := validateBatch(req, "tenant"); err != nil {
		t.Fatal(err)
	}
	dropped, err := in.keepSelectedBaselines(context.Background(), req, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range req.Guardrails {
		names = append(names, g.Guardrail)
	}
	for _, c := range req.Classifiers {
		names = append(names, c.Classifier)
	}
	for _, s := range req.Samples {
		names = append(names, "sample:"+s.Guardrail)
	}
	want := []string{"tenant/own", "/everywhere", "/secrets", "tenant/judge", "sample:/everywhere"}
	if len(names) != len(want) || dropped != 3 {
		t.Fatalf("kept %v (dropped %d), want %v (dropped 3)", names, dropped, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("kept %v, want %v", names, want)
		}
	}
}

// The same tenant, through POST /v1/decisions as its guard sends it: the batch is taken
// (204), its own Guardrail and the baseline that selects it are counted, and the
// production baseline's forged blocks are pending nowhere.
func TestAForgedBaselineCountIsDroppedByTheHandler(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	prod := &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: "production-only"}}
	prod.Spec.NamespaceSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "production"}}
	everywhere := &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: "everywhere"}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "guardrail-system", Name: "guard-uid-1"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Labels: map[string]string{"tier": "sandbox"}}},
		prod, everywhere, lease).Build()
	in := New(Options{Cache: c, API: c, Writer: c,
		Lease: func(ctx context.Context, _ *metav1.PartialObjectMetadata, _ bool) (*coordinationv1.Lease, error) {
			l := &coordinationv1.Lease{}
			return l, c.Get(ctx, types.NamespacedName{Namespace: "guardrail-system", Name: "guard-uid-1"}, l)
		}})
	pod := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "app", UID: "uid-1"}}
	h := in.Handler(func(*http.Request) (*metav1.PartialObjectMetadata, error) { return pod, nil })

	blocked := func(name string, n int64) guardv1.GuardrailDecisions {
		return guardv1.GuardrailDecisions{Guardrail: name, Counts: []guardv1.DecisionCount{{Generation: 1, Phase: "Input", Outcome: "blocked", Requests: n}}}
	}
	body, err := json.Marshal(guardv1.DecisionsRequest{Incarnation: "inc-1", Started: time.Now().Add(-time.Minute).UnixMilli(),
		Guardrails: []guardv1.GuardrailDecisions{blocked("tenant/own", 2), blocked("/everywhere", 3), blocked("/production-only", 900)}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodPost, guardv1.DecisionsPath, bytes.NewReader(body)))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if p := in.cur.decisions[types.NamespacedName{Name: "production-only"}]; p != nil {
		t.Errorf("the forged baseline counts are pending: %v", p.outcomes)
	}
	for _, key := range []types.NamespacedName{{Namespace: "tenant", Name: "own"}, {Name: "everywhere"}} {
		if p := in.cur.decisions[key]; p == nil || p.outcomes["blocked"] == 0 {
			t.Errorf("%s: not counted", key)
		}
	}
}
