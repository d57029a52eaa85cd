package v1alpha1

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
