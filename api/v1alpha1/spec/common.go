package spec

// Modality is a kind of content part.
// +kubebuilder:validation:Enum=text;image;audio;file
type Modality string

// Modalities.
const (
	ModalityText  Modality = "text"
	ModalityImage Modality = "image"
	ModalityAudio Modality = "audio"
	ModalityFile  Modality = "file"
)

// Score is a number in [0, 1]: a classifier's confidence that content belongs to a category,
// or a threshold compared against it.
// +kubebuilder:validation:Minimum=0
// +kubebuilder:validation:Maximum=1
type Score float64

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// LabelSelector selects pods by label. It is the Kubernetes label selector
// (metav1.LabelSelector) with the rules of its parser stated in the schema, so that the
// apiserver refuses a selector the controller or the guard could not parse.
// +structType=atomic
type LabelSelector struct {
	// matchLabels are key=value pairs a pod's labels must all contain. Keys are label
	// keys (an optional DNS subdomain prefix and a slash, then a name of at most 63
	// characters); values are label values.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="every key must be a label key: an optional DNS subdomain prefix and a slash, then a name of at most 63 characters (letters, digits, -, _ or .) that starts and ends with a letter or digit, such as app.kubernetes.io/name or tier"
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`

	// matchExpressions are requirements a pod's labels must all meet.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorOperator relates a label key to values.
// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
type LabelSelectorOperator string

// Label selector operators.
const (
	LabelSelectorOpIn           LabelSelectorOperator = "In"
	LabelSelectorOpNotIn        LabelSelectorOperator = "NotIn"
	LabelSelectorOpExists       LabelSelectorOperator = "Exists"
	LabelSelectorOpDoesNotExist LabelSelectorOperator = "DoesNotExist"
)

// LabelSelectorRequirement is a requirement on one label key.
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",message="operators In and NotIn need at least one value",fieldPath=.values
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="operators Exists and DoesNotExist take no values: remove values",fieldPath=.values
type LabelSelectorRequirement struct {
	// key is the label key the requirement applies to.
	// +required
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="must be a label key: an optional DNS subdomain prefix and a slash, then a name of at most 63 characters (letters, digits, -, _ or .) that starts and ends with a letter or digit, such as app.kubernetes.io/name or tier"
	Key string `json:"key"`

	// operator is one of In, NotIn, Exists and DoesNotExist.
	// +required
	Operator LabelSelectorOperator `json:"operator"`

	// values: at least one for In and NotIn, none for Exists and DoesNotExist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Values []LabelValue `json:"values,omitempty"`
}

// LabelValue is a Kubernetes label value: empty, or at most 63 letters, digits, '-', '_'
// or '.', starting and ending with a letter or digit.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="!format.labelValue().validate(self).hasValue()",message="must be a label value: empty, or at most 63 letters, digits, -, _ or ., starting and ending with a letter or digit"
type LabelValue string
