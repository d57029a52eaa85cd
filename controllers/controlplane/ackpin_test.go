package controlplane_test

import (
	"encoding/json"
	"net/http"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// A guard's acknowledgement counts only for a policy compiled for its own namespace: a
// guard that acknowledges another namespace's snapshot version (same Guardrail names and
// generations, other classifiers and credentials) enforces nothing of its own namespace's.
func TestAnAckOfAnotherNamespacesPolicyEnforcesNothing(t *testing.T) {
	nsA, nsB := fixture(t), fixture(t)
	a, b := pod(t, nsA, "web-1", "web"), pod(t, nsB, "web-1", "web")
	status, body := waitSnapshot(t, token(t, a, guardv1.Audience))
	if status != http.StatusOK {
		t.Fatalf("namespace %s's snapshot: %d %s", nsA, status, body)
	}
	var snapA cp.Snapshot
	must(t, json.Unmarshal(body, &snapA))

	tokB := token(t, b, guardv1.Audience)
	if status, body := waitSnapshot(t, tokB); status != http.StatusOK {
		t.Fatalf("namespace %s's snapshot: %d %s", nsB, status, body)
	}
	poll(t, tokB, cp.SubscribeRequest{Running: snapA.Version})
	l, err := leaseOf(t, b)
	must(t, err)
	if got := l.Annotations[guardv1.AnnotationPolicyVersion]; got != snapA.Version {
		t.Fatalf("the Lease records version %q, want the acknowledged %q", got, snapA.Version)
	}
	if got := l.Annotations[guardv1.AnnotationEnforced]; got != "" {
		t.Errorf("a guard of %s running %s's policy enforces %q", nsB, nsA, got)
	}
}
