package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

func cond(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: reason + " message"}
}

func TestReady(t *testing.T) {
	const sub = v1alpha1.ConditionClassifierResolved
	tests := []struct {
		name       string
		conds      []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{
			name:       "all sub-conditions true and nothing in progress is Ready",
			conds:      []metav1.Condition{cond(sub, metav1.ConditionTrue, "Succeeded")},
			wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded,
		},
		{
			name: "Stalled wins over a true sub-condition and carries its reason",
			conds: []metav1.Condition{cond(sub, metav1.ConditionTrue, "Succeeded"),
				cond(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec)},
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonInvalidSpec,
		},
		{
			name: "a false sub-condition makes Ready false with its reason",
			conds: []metav1.Condition{cond(sub, metav1.ConditionFalse, v1alpha1.ReasonClassifierNotFound),
				cond(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonClassifierNotFound)},
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonClassifierNotFound,
		},
		{
			name:       "a missing sub-condition leaves Ready unknown",
			conds:      nil,
			wantStatus: metav1.ConditionUnknown, wantReason: v1alpha1.ReasonProgressing,
		},
		{
			name: "Reconciling with satisfied sub-conditions leaves Ready unknown",
			conds: []metav1.Condition{cond(sub, metav1.ConditionTrue, "Succeeded"),
				cond(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonProgressing)},
			wantStatus: metav1.ConditionUnknown, wantReason: v1alpha1.ReasonProgressing,
		},
		{
			name: "a false Stalled condition is ignored",
			conds: []metav1.Condition{cond(sub, metav1.ConditionTrue, "Succeeded"),
				cond(v1alpha1.ConditionStalled, metav1.ConditionFalse, "Fine")},
			wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Ready(tt.conds, 7, "Generation 7 is in effect", sub)
			if got.Status != tt.wantStatus || got.Reason != tt.wantReason {
				t.Fatalf("Ready() = %s/%s, want %s/%s", got.Status, got.Reason, tt.wantStatus, tt.wantReason)
			}
			if got.ObservedGeneration != 7 {
				t.Errorf("ObservedGeneration = %d, want 7", got.ObservedGeneration)
			}
		})
	}
}
