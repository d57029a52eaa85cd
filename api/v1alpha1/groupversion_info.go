// Package v1alpha1 contains the guardrail.dev/v1alpha1 API: Classifier (how content is
// judged) and Guardrail (what is enforced where).
//
// The package imports only apimachinery. The guard sidecar does not link it: it decodes
// policy manifests into its own exact copy of these types (runtime/policy/v1alpha1), and the
// operator converts with runtime/policy/kube.
// +kubebuilder:object:generate=true
// +groupName=guardrail.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "guardrail.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Classifier{}, &ClassifierList{},
		&Guardrail{}, &GuardrailList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
