package guardrail

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/index"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policyreconciler"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Reconciler reconciles Guardrails.
type Reconciler = policyreconciler.Guardrails[*v1alpha1.Guardrail, *v1alpha1.Classifier, Kind]

// +kubebuilder:rbac:groups=guardrail.dev,resources=guardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=guardrails/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=classifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=guardrail-system,resources=leases,verbs=get;list;watch

// Kind is the Guardrail: namespaced, with a Classifier of its namespace, selecting pods of
// its namespace.
type Kind struct{}

var _ policyreconciler.GuardrailKind[*v1alpha1.Guardrail, *v1alpha1.Classifier] = Kind{}

// Kind is "Guardrail".
func (Kind) Kind() string { return "Guardrail" }

// ClassifierKind is "Classifier".
func (Kind) ClassifierKind() string { return "Classifier" }

// New returns an empty Guardrail.
func (Kind) New() *v1alpha1.Guardrail { return &v1alpha1.Guardrail{} }

// NewList returns an empty GuardrailList.
func (Kind) NewList() client.ObjectList { return &v1alpha1.GuardrailList{} }

// NewClassifier returns an empty Classifier.
func (Kind) NewClassifier() *v1alpha1.Classifier { return &v1alpha1.Classifier{} }

// Invalid is "": the compiler reads all of a Guardrail's spec.
func (Kind) Invalid(*v1alpha1.Guardrail) string { return "" }

// Where is the Guardrail's namespace.
func (Kind) Where(g *v1alpha1.Guardrail) string { return "namespace " + g.Namespace }

// WatchesNamespaces is false: a Guardrail selects no namespace.
func (Kind) WatchesNamespaces() bool { return false }

// Parts returns g's spec and status.
func (Kind) Parts(g *v1alpha1.Guardrail) (*v1alpha1.GuardrailSpec, *v1alpha1.GuardrailStatus) {
	return &g.Spec, &g.Status
}

// Sources returns g and c as the compiler reads them.
func (Kind) Sources(g *v1alpha1.Guardrail, c *v1alpha1.Classifier) (policy.GuardrailObject, policy.ClassifierObject) {
	return policykube.Guardrail(g), policykube.Classifier(c)
}

// Namespaces is nil: a Guardrail's pods are those of its namespace.
func (Kind) Namespaces(context.Context, client.Reader, *v1alpha1.Guardrail) (func(string) bool, error) {
	return nil, nil
}

// Breakdown does nothing: a Guardrail's status has no breakdown.
func (Kind) Breakdown(*v1alpha1.Guardrail, map[string]policystatus.Enforcement) {}

// Referencing finds the Guardrails of the Classifier's namespace that reference it
// through a field index.
func (Kind) Referencing(c client.Object) []client.ListOption {
	return []client.ListOption{client.InNamespace(c.GetNamespace()), client.MatchingFields{index.GuardrailClassifier: c.GetName()}}
}

// Recount finds the Guardrails of the namespace whose pods or guards changed.
func (Kind) Recount(namespace string) ([]client.ListOption, bool) {
	return []client.ListOption{client.InNamespace(namespace)}, namespace != ""
}

// Coalesce is how long pod events wait before the Guardrails of their namespace are
// recounted: a thousand guards acknowledging one apply is one status write per
// Guardrail, not a thousand.
func (Kind) Coalesce() time.Duration { return time.Second }
