// Package index registers the field indexes the reconcilers share, so that each is
// registered once per manager.
package index

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

const (
	// GuardrailClassifier indexes Guardrails by spec.classifierRef.name.
	GuardrailClassifier = "spec.classifierRef.name"
	// ClassifierSecret indexes Classifiers by spec.credentialsSecretRef.name.
	ClassifierSecret = "spec.credentialsSecretRef.name"
)

// Setup registers the indexes with mgr's cache.
func Setup(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.Guardrail{}, GuardrailClassifier, func(o client.Object) []string {
		return []string{o.(*v1alpha1.Guardrail).Spec.ClassifierRef.Name}
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &v1alpha1.Classifier{}, ClassifierSecret, func(o client.Object) []string {
		if ref := o.(*v1alpha1.Classifier).Spec.CredentialsSecretRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	})
}
