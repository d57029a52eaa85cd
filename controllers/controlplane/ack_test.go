package controlplane

import (
	"strings"
	"testing"
	"unicode/utf8"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"k8s.io/utils/ptr"

	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

func TestAPollWritesOnlyWhatTheAckChanges(t *testing.T) {
	cur := map[string]string{guardv1.AnnotationPolicyVersion: "v1", guardv1.AnnotationEnforced: "web=1"}
	if want := ackAnnotations(cur, &cp.SubscribeRequest{Running: "v1"}, "web=1", true); len(want) != 0 {
		t.Errorf("the same ack changes %v", want)
	}
	want := ackAnnotations(cur, &cp.SubscribeRequest{Running: "v2"}, "", false)
	if v := want[guardv1.AnnotationPolicyVersion]; v == nil || *v != "v2" {
		t.Errorf("a new version is not recorded: %v", want)
	}
	if v, ok := want[guardv1.AnnotationEnforced]; !ok || v != nil {
		t.Errorf("a version this replica never compiled keeps what the previous one enforced: %v", want)
	}
	want = ackAnnotations(cur, &cp.SubscribeRequest{Running: "v1", Refused: &cp.Refusal{Version: "v2",
		Error: "\x1b[2J" + strings.Repeat("é", 400)}}, "web=1", true)
	r := want[guardv1.AnnotationRefused]
	if r == nil || len(*r) > guards.MaxRefusalChars || !strings.HasPrefix(*r, "v2: [2J") || !utf8.ValidString(*r) {
		t.Errorf("refusal %q", ptr.Deref(r, ""))
	}
}
