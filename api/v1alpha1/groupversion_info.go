// Package v1alpha1 contains the guardrail.dev/v1alpha1 API: Classifier (how content is
// judged) and Guardrail (what is enforced where), and their cluster-scoped forms for
// platform baselines, ClusterClassifier and ClusterGuardrail (cluster_types.go), and
// ModelProvider, the provider credentials the platform holds for keyless apps
// (provider_types.go).
//
// The package imports only apimachinery and holds the Kubernetes objects: TypeMeta,
// ObjectMeta, status and conditions. Their specs are defined in package spec
// (api/v1alpha1/spec), which imports nothing from Kubernetes; this package names them by
// type aliases. The guard sidecar links only package spec.
// +kubebuilder:object:generate=true
// +groupName=guardrail.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: spec.Group, Version: spec.Version}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Classifier{}, &ClassifierList{},
		&Guardrail{}, &GuardrailList{},
		&ClusterClassifier{}, &ClusterClassifierList{},
		&ClusterGuardrail{}, &ClusterGuardrailList{},
		&ModelProvider{}, &ModelProviderList{},
		&SharedGuard{}, &SharedGuardList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
