package policystatus

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// CheckSpec judges a classifier's spec (obj is the classifier, m its policy form, which
// policy.CompileClassifier(m, "") turned into compiled or err) and fills st with its
// backend, categories and hold-back hint. What the schema cannot check (regular
// expressions, category map targets, ...) stalls the classifier with the offending field
// named; so does a backend URL on the guard's own host or link (policy.LocalBackendURLs)
// unless allowLocal. A Stalled classifier still shows its backend. err is not changed: a
// compilation may be shared.
func CheckSpec(obj status.Object, st *v1alpha1.ClassifierStatus, m *policy.ClassifierObject,
	compiled *policy.Classifier, err error, allowLocal bool) (ctrl.Result, error) {
	st.Backend = BackendOf(&m.Spec)
	if !allowLocal {
		if errs := policy.LocalBackendURLs(&m.Spec); len(errs) > 0 {
			perr := &policy.Error{Kind: m.Kind, Key: m.Key(), Reason: v1alpha1.ReasonInvalidSpec}
			if compileErr, ok := err.(*policy.Error); ok {
				*perr = *compileErr
				perr.Errs = slices.Clone(compileErr.Errs)
			}
			perr.Errs = append(perr.Errs, errs...)
			err = perr
		}
	}
	if err != nil {
		perr := err.(*policy.Error)
		status.MarkStalled(obj, perr.Reason, perr.Message())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	st.Backend = string(compiled.Backend)
	st.Categories = st.Categories[:0]
	for _, c := range compiled.Categories {
		st.Categories = append(st.Categories, c.ID)
	}
	if len(st.Categories) == 0 {
		st.Categories = nil
	}
	st.HoldBackHint = int32(compiled.HoldBackHint) //nolint:gosec // bounded by the detectors' longest match
	return ctrl.Result{}, nil
}

// BackendOf names the backend the spec sets (the schema allows exactly one).
func BackendOf(s *v1alpha1.ClassifierSpec) string {
	switch {
	case s.Builtin != nil:
		return string(policy.BackendBuiltin)
	case s.Moderation != nil:
		return string(policy.BackendModeration)
	case s.LLM != nil:
		return string(policy.BackendLLM)
	case s.Webhook != nil:
		return string(policy.BackendWebhook)
	}
	return ""
}

// Credentials checks that the Secret ref names, in namespace ns, holds a non-empty value
// under its key, and records it as CredentialsResolved on obj. The value is not kept.
func Credentials(ctx context.Context, secrets client.Reader, obj status.Object, ref *v1alpha1.SecretKeyReference, ns string) (ctrl.Result, error) {
	if ref == nil {
		status.Set(obj, v1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue,
			v1alpha1.ReasonNoCredentialsRequired, "The backend needs no credentials")
		return ctrl.Result{}, nil
	}
	key := ref.Key
	if key == "" {
		key = "apiKey"
	}
	secret := &corev1.Secret{}
	err := secrets.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		status.Set(obj, v1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound,
			fmt.Sprintf("Secret %s does not exist in namespace %s", ref.Name, ns))
		status.MarkReconciling(obj, v1alpha1.ReasonSecretNotFound,
			fmt.Sprintf("Waiting for Secret %s to be created in namespace %s", ref.Name, ns))
		return ctrl.Result{RequeueAfter: WaitInterval}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", ref.Name, err)
	}
	if len(secret.Data[key]) == 0 {
		status.Set(obj, v1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, v1alpha1.ReasonSecretKeyNotFound,
			fmt.Sprintf("Secret %s has no value under key %s", ref.Name, key))
		status.MarkReconciling(obj, v1alpha1.ReasonSecretKeyNotFound,
			fmt.Sprintf("Waiting for a value under key %s of Secret %s", key, ref.Name))
		return ctrl.Result{RequeueAfter: WaitInterval}, nil
	}
	status.Set(obj, v1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("Credentials read from Secret %s, key %s", ref.Name, key))
	return ctrl.Result{}, nil
}
