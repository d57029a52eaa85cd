package injection

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/http"
	"os"
	"sync"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Where the manager's webhook server serves the injector: one handler, two paths, so that
// it knows the failure policy of the entry that called (see Handler.FailClosed).
const (
	WebhookPath         = "/mutate-v1-pod"
	WebhookPathRequired = "/mutate-v1-pod-required"
)

// The injector's webhook configuration. Three entries call the same handler; their
// selectors keep the apiserver from calling it for pods it would skip:
//   - namespaces labelled enabled: failurePolicy Ignore (an operator outage must not stop
//     deployments; such pods run without a guard, as before the namespace opted in);
//   - namespaces labelled required: failurePolicy Fail (no pod starts unguarded);
//   - pods labelled guardrail.dev/inject=true elsewhere: Ignore.
// The enabled and required entries have no objectSelector: pod labels are the tenant's to
// write, and none may keep a pod from the injector, which refuses a container named like
// the guard that is not the one it renders (a hand-written guard would send its token
// wherever its flags point); decide itself tells the injector's own guard (re-invocation)
// from a tenant's claim, and honours inject=false where injection is enabled. The
// inject=true entry sees the pods that opt in elsewhere; a pod elsewhere that does not opt
// in is never seen, and a guard in it counts only if it passes VerifyGuard. All skip the
// system namespaces; config/default also excludes the operator's namespace.
//
// +kubebuilder:webhookconfiguration:mutating=true,name=guardrail-pod-injector
// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=enabled.inject.guardrail.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=5,serviceName=guardrail-webhook,serviceNamespace=guardrail-system,matchPolicy=Equivalent,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"guardrail.dev/injection","operator":"In","values":["enabled"]},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease"]}]}}`
// +kubebuilder:webhook:path=/mutate-v1-pod-required,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=required.inject.guardrail.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=5,serviceName=guardrail-webhook,serviceNamespace=guardrail-system,matchPolicy=Equivalent,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"guardrail.dev/injection","operator":"In","values":["required"]},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease"]}]}}`
// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=pod.inject.guardrail.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=5,serviceName=guardrail-webhook,serviceNamespace=guardrail-system,matchPolicy=Equivalent,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"guardrail.dev/injection","operator":"NotIn","values":["enabled","required"]},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease"]}]},"objectSelector":{"matchExpressions":[{"key":"guardrail.dev/inject","operator":"In","values":["true"]}]}}`

// Handler is the Pod mutating admission handler.
type Handler struct {
	// Config is the manager's configuration of the guard.
	Config Config
	// Namespaces reads the labels and annotations of a pod's namespace (the manager's
	// cache).
	Namespaces client.Reader
	// Providers reads the ModelProviders a pod asks for (the manager's cache).
	Providers client.Reader
	// APIReader reads a namespace or a ModelProvider the cache has not seen yet (created
	// a moment ago).
	APIReader client.Reader
	// CA returns the operator's CA certificate (PEM) that the guard trusts.
	CA func() ([]byte, error)
	// Decoder decodes the admitted pod.
	Decoder admission.Decoder
	// FailClosed is set on the handler of the required entry (WebhookPathRequired), whose
	// failure policy is Fail: when the injector itself fails (the namespace cannot be
	// read), true denies the pod, false admits it without a guard and with a warning. An
	// error answer would not do: the apiserver applies failurePolicy only to a webhook it
	// cannot call, and takes an error answer as a denial. It also makes the namespace
	// required whatever the cache says: the apiserver calls that entry only for namespaces
	// it sees labelled required, and the cache may not have seen the label yet.
	FailClosed bool
}

var _ admission.Handler = &Handler{}

// Handle answers one admission review: a JSON patch that injects the guard, nothing for a
// pod it skips, or a denial in a namespace that requires the guard.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		return admission.Allowed("")
	}
	log := logf.FromContext(ctx)
	pod := &corev1.Pod{}
	if err := h.Decoder.DecodeRaw(req.Object, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	ns, err := h.namespace(ctx, req.Namespace)
	if err != nil {
		log.Error(err, "Reading the pod's namespace", "namespace", req.Namespace)
		if h.FailClosed {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.Allowed("").WithWarnings(
			"the guard was not injected: the injector could not read namespace " + req.Namespace)
	}
	providers, err := lookUpProviders(ctx, requestedProviders(pod.Annotations, ns.Annotations, req.Namespace), h.provider)
	if err != nil {
		log.Error(err, "Reading the pod's model providers", "namespace", req.Namespace)
		if h.FailClosed {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.Allowed("").WithWarnings(
			"the guard was not injected: the injector could not read the pod's model providers")
	}
	nsLabels := ns.Labels
	if h.FailClosed && nsLabels[guardv1.LabelInjection] != injectionRequired {
		nsLabels = maps.Clone(nsLabels)
		if nsLabels == nil {
			nsLabels = map[string]string{}
		}
		nsLabels[guardv1.LabelInjection] = injectionRequired
	}
	var ca []byte
	if h.CA != nil {
		if ca, err = h.CA(); err != nil {
			log.Error(err, "Reading the operator's CA certificate")
		}
	}
	d := decide(pod, req.Namespace, nsLabels, &h.Config, ca, providers)
	switch {
	case d.deny != "":
		return admission.Denied(d.deny)
	case d.pod == nil:
		return admission.Allowed(d.skip)
	}
	patch, err := encodePatch(patchFor(pod, d.pod))
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.Allowed("")
	resp.Patch = patch
	resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
	for _, f := range d.findings {
		resp.Warnings = append(resp.Warnings, f.message)
	}
	return resp
}

// namespace reads the pod's namespace: its labels opt it in, its annotations hold the
// default of its pods' model providers.
func (h *Handler) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	err := h.Namespaces.Get(ctx, types.NamespacedName{Name: name}, ns)
	if apierrors.IsNotFound(err) && h.APIReader != nil {
		err = h.APIReader.Get(ctx, types.NamespacedName{Name: name}, ns)
	}
	if err != nil {
		return nil, err
	}
	return ns, nil
}

// provider reads a ModelProvider, or nil when it does not exist.
func (h *Handler) provider(ctx context.Context, name string) (*v1alpha1.ModelProvider, error) {
	if h.Providers == nil {
		return nil, errors.New("the injector has no reader of ModelProviders")
	}
	mp := &v1alpha1.ModelProvider{}
	err := h.Providers.Get(ctx, types.NamespacedName{Name: name}, mp)
	if apierrors.IsNotFound(err) && h.APIReader != nil {
		err = h.APIReader.Get(ctx, types.NamespacedName{Name: name}, mp)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return mp, nil
}

// FileCA reads the CA certificate from path, again only when the file changes: the
// certificate rotator and cert-manager both replace it in place.
type FileCA struct {
	Path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	pem     []byte
}

// Get returns the PEM CA certificate.
func (f *FileCA) Get() ([]byte, error) {
	st, err := os.Stat(f.Path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pem != nil && st.ModTime().Equal(f.modTime) && st.Size() == f.size {
		return f.pem, nil
	}
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil
	}
	f.pem, f.modTime, f.size = append(b, '\n'), st.ModTime(), st.Size()
	return f.pem, nil
}
