package classifier

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guardrail"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/index"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policyreconciler"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// AllowLocalURLs is the manager's --classifier-allow-local-urls: backend URLs may name
// loopback, link-local and unspecified addresses (policy.LocalBackendURLs), for
// development, where fake backends listen on 127.0.0.1. It is a package variable, bound
// by main before the manager starts, because it is one process-wide setting; tests and
// the local harnesses set it before starting a manager. Both kinds of classifier read it.
var AllowLocalURLs bool

// Reconciler reconciles Classifiers.
type Reconciler = policyreconciler.Classifiers[*v1alpha1.Classifier, *v1alpha1.Guardrail, Kind, guardrail.Kind]

// +kubebuilder:rbac:groups=guardrail.dev,resources=classifiers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=classifiers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=classifiers/finalizers,verbs=update
// +kubebuilder:rbac:groups=guardrail.dev,resources=guardrails,verbs=get;list;watch
// Secrets: config/rbac/secret_reader_role.yaml, bound cluster-wide or per watched namespace.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Kind is the Classifier: namespaced, with its credentials in a Secret of its namespace.
type Kind struct{}

var _ policyreconciler.ClassifierKind[*v1alpha1.Classifier] = Kind{}

// New returns an empty Classifier.
func (Kind) New() *v1alpha1.Classifier { return &v1alpha1.Classifier{} }

// NewList returns an empty ClassifierList.
func (Kind) NewList() client.ObjectList { return &v1alpha1.ClassifierList{} }

// Source returns c as the compiler reads it.
func (Kind) Source(c *v1alpha1.Classifier) policy.ClassifierObject { return policykube.Classifier(c) }

// AllowLocalURLs is the package's AllowLocalURLs, read at each reconcile.
func (Kind) AllowLocalURLs() bool { return AllowLocalURLs }

// Parts returns c's spec and status.
func (Kind) Parts(c *v1alpha1.Classifier) (*v1alpha1.ClassifierSpec, *v1alpha1.ClassifierStatus) {
	return &c.Spec, &c.Status
}

// SecretNamespace is the Classifier's own namespace.
func (Kind) SecretNamespace(c *v1alpha1.Classifier, _ string) string { return c.Namespace }

// ForSecret finds the Classifiers of the Secret's namespace that name it, through a field
// index.
func (Kind) ForSecret(secret client.Object, _ string) ([]client.ListOption, bool) {
	return []client.ListOption{client.InNamespace(secret.GetNamespace()),
		client.MatchingFields{index.ClassifierSecret: secret.GetName()}}, true
}

// ForGuards finds every Classifier of the guards' namespace (there are few, and a guard
// that stopped enforcing a Guardrail no longer names it).
func (Kind) ForGuards(namespace string) ([]client.ListOption, bool) {
	return []client.ListOption{client.InNamespace(namespace)}, namespace != ""
}
