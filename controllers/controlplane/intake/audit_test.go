package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// auditIntake is an intake on a fake apiserver with its audit log into out, and the
// handler of batches from the guard of pod tenant/app.
func auditIntake(t *testing.T, out *bytes.Buffer) http.HandlerFunc {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "guardrail-system", Name: "guard-uid-1"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}},
		&v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: "baseline"}}, lease).Build()
	opts := Options{Cache: c, API: c, Writer: c, Identity: "manager-0",
		Lease: func(ctx context.Context, _ *metav1.PartialObjectMetadata, _ bool) (*coordinationv1.Lease, error) {
			l := &coordinationv1.Lease{}
			return l, c.Get(ctx, types.NamespacedName{Namespace: "guardrail-system", Name: "guard-uid-1"}, l)
		}}
	if out != nil {
		opts.AuditLog = out
	}
	in := New(opts)
	pod := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "app", UID: "uid-1"}}
	return in.Handler(func(*http.Request) (*metav1.PartialObjectMetadata, error) { return pod, nil })
}

func postBatch(t *testing.T, h http.HandlerFunc, req guardv1.DecisionsRequest) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodPost, guardv1.DecisionsPath, bytes.NewReader(body)))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

// TestTheAuditLogHasALinePerClaimedPart: a batch taken by the handler makes one line per
// guardrail, outcome, phase, category and code it adds to what was counted, with what it
// adds (a resent batch adds nothing and logs nothing), and no sample's request id or text.
func TestTheAuditLogHasALinePerClaimedPart(t *testing.T) {
	var out bytes.Buffer
	h := auditIntake(t, &out)
	started := time.Now().Add(-time.Minute).UnixMilli()
	last := time.Now().Add(-time.Second).UnixMilli()
	batch := func(blocked int64) guardv1.DecisionsRequest {
		return guardv1.DecisionsRequest{Incarnation: "0123456789abcdef", Started: started,
			Guardrails: []guardv1.GuardrailDecisions{
				{Guardrail: "tenant/pii", Last: last, Counts: []guardv1.DecisionCount{
					{Generation: 2, Phase: "Input", Outcome: "blocked", Category: "email", Requests: blocked},
					{Generation: 2, Phase: "Output", Outcome: "redacted", Category: "phone", Requests: 1},
				}},
				{Guardrail: "/baseline", Last: last, Counts: []guardv1.DecisionCount{
					{Generation: 1, Phase: "Input", Outcome: "wouldBlock", Category: "jailbreak", Code: "", Requests: 4},
				}},
			},
			Samples: []guardv1.Sample{{Guardrail: "tenant/pii", Phase: "Input", Outcome: "blocked", RequestID: "req-CANARY-77"}},
		}
	}
	postBatch(t, h, batch(3))
	postBatch(t, h, batch(3)) // resent: nothing new
	postBatch(t, h, batch(5)) // two more blocked

	var lines []BatchLine
	for _, raw := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		var l BatchLine
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %q: %v", raw, err)
		}
		if ts, err := time.Parse(time.RFC3339Nano, l.Time); err != nil || time.Since(ts) > time.Minute {
			t.Errorf("time %q", l.Time)
		}
		if lt, err := time.Parse(time.RFC3339Nano, l.LastDecision); err != nil || lt.UnixMilli() != last {
			t.Errorf("lastDecision %q", l.LastDecision)
		}
		l.Time, l.LastDecision = "", ""
		lines = append(lines, l)
	}
	base := BatchLine{Schema: BatchSchema, Pod: "app", Namespace: "tenant", Incarnation: "0123456789abcdef", Replica: "manager-0"}
	line := func(guardrail, ns string, cluster bool, outcome guardv1.Outcome, phase, category string, n int64) BatchLine {
		l := base
		l.Guardrail, l.GuardrailNamespace, l.ClusterScoped = guardrail, ns, cluster
		l.Outcome, l.Phase, l.Category, l.Count = outcome, phase, category, n
		return l
	}
	want := []BatchLine{
		line("baseline", "", true, "wouldBlock", "Input", "jailbreak", 4),
		line("pii", "tenant", false, "blocked", "Input", "email", 3),
		line("pii", "tenant", false, "redacted", "Output", "phone", 1),
		line("pii", "tenant", false, "blocked", "Input", "email", 2),
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, lines[i], want[i])
		}
	}
	if strings.Contains(out.String(), "CANARY") {
		t.Errorf("a sample's request id is in the log:\n%s", out.String())
	}
}

func TestTheAuditLogIsOffByDefault(t *testing.T) {
	if AuditWriter(false) != nil {
		t.Fatal("AuditWriter(false) is not nil")
	}
	// No writer: the batch is counted and nothing is written (or panics).
	h := auditIntake(t, nil)
	postBatch(t, h, guardv1.DecisionsRequest{Incarnation: "0123456789abcdef", Started: time.Now().Add(-time.Minute).UnixMilli(),
		Guardrails: []guardv1.GuardrailDecisions{{Guardrail: "tenant/pii", Counts: []guardv1.DecisionCount{
			{Generation: 2, Phase: "Input", Outcome: "blocked", Requests: 1}}}}})
}
