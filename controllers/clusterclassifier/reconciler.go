package clusterclassifier

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/classifier"
	"github.com/guardrail-dev/guardrail-operator/controllers/clusterguardrail"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policyreconciler"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Reconciler reconciles ClusterClassifiers.
type Reconciler = policyreconciler.Classifiers[*v1alpha1.ClusterClassifier, *v1alpha1.ClusterGuardrail, Kind, clusterguardrail.Kind]

// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterclassifiers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterclassifiers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterclassifiers/finalizers,verbs=update
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterguardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=guardrail-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Kind is the ClusterClassifier: cluster-scoped, with its credentials in a Secret of the
// operator's namespace.
type Kind struct{}

var _ policyreconciler.ClassifierKind[*v1alpha1.ClusterClassifier] = Kind{}

// New returns an empty ClusterClassifier.
func (Kind) New() *v1alpha1.ClusterClassifier { return &v1alpha1.ClusterClassifier{} }

// NewList returns an empty ClusterClassifierList.
func (Kind) NewList() client.ObjectList { return &v1alpha1.ClusterClassifierList{} }

// Source returns c as the compiler reads it.
func (Kind) Source(c *v1alpha1.ClusterClassifier) policy.ClassifierObject {
	return policykube.ClusterClassifier(c)
}

// AllowLocalURLs is classifier.AllowLocalURLs, read at each reconcile.
func (Kind) AllowLocalURLs() bool { return classifier.AllowLocalURLs }

// Parts returns c's spec and status.
func (Kind) Parts(c *v1alpha1.ClusterClassifier) (*v1alpha1.ClassifierSpec, *v1alpha1.ClassifierStatus) {
	return &c.Spec, &c.Status
}

// SecretNamespace is the operator's namespace, never a tenant's: tenants cannot read its
// Secrets, and the guards of every namespace receive the credentials over their
// subscription.
func (Kind) SecretNamespace(_ *v1alpha1.ClusterClassifier, operatorNamespace string) string {
	return operatorNamespace
}

// ForSecret finds every ClusterClassifier (there are few) for a Secret of the operator's
// namespace; those that do not name it are skipped.
func (Kind) ForSecret(secret client.Object, operatorNamespace string) ([]client.ListOption, bool) {
	return nil, secret.GetNamespace() == operatorNamespace
}

// ForGuards finds every ClusterClassifier, whichever namespace's guard acknowledged.
func (Kind) ForGuards(string) ([]client.ListOption, bool) { return nil, true }
