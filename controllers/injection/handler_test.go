package injection

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

func newTestHandler(tb testing.TB, nsLabels map[string]string) *Handler {
	tb.Helper()
	return newKeylessTestHandler(tb, nsLabels, nil)
}

// newKeylessTestHandler is a handler whose namespace "apps" has nsLabels and
// nsAnnotations, with testProviders in its cache.
func newKeylessTestHandler(tb testing.TB, nsLabels, nsAnnotations map[string]string) *Handler {
	tb.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: nsLabels, Annotations: nsAnnotations}}
	providers := fake.NewClientBuilder().WithScheme(scheme)
	for _, mp := range testProviders {
		providers = providers.WithObjects(mp.DeepCopy())
	}
	return &Handler{
		Config:     *testConfig(),
		Namespaces: fake.NewClientBuilder().WithScheme(scheme).WithObjects(ns).Build(),
		Providers:  providers.Build(),
		CA:         func() ([]byte, error) { return []byte(testCA), nil },
		Decoder:    admission.NewDecoder(scheme),
	}
}

func podRequest(tb testing.TB, pod *corev1.Pod) admission.Request {
	tb.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		tb.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "1",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "apps",
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

// applyPatch applies a response's patch to the request's object as the apiserver does.
func applyPatch(tb testing.TB, req admission.Request, resp admission.Response) *corev1.Pod {
	tb.Helper()
	ops := resp.Patch
	if len(resp.Patches) > 0 {
		var err error
		if ops, err = json.Marshal(resp.Patches); err != nil {
			tb.Fatal(err)
		}
	}
	p, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := p.Apply(req.Object.Raw)
	if err != nil {
		tb.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(out, pod); err != nil {
		tb.Fatal(err)
	}
	return pod
}

func TestHandlerReinvocationIsANoOp(t *testing.T) {
	for name, nsLabels := range map[string]map[string]string{"enabled": enabledNS, "required": requiredNS} {
		t.Run("in a namespace labelled "+name, func(t *testing.T) {
			h := newTestHandler(t, nsLabels)
			h.FailClosed = name == "required"
			req := podRequest(t, newPod())
			first := h.Handle(context.Background(), req)
			if !first.Allowed || len(first.Patch) == 0 || *first.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Fatalf("first admission: allowed=%v, patch %s", first.Allowed, first.Patch)
			}
			injected := applyPatch(t, req, first)
			if guardOf(injected) == nil {
				t.Fatal("the patched pod has no guard")
			}
			// Another webhook changes the pod afterwards; the apiserver calls the injector again.
			injected.Labels["mesh"] = "on"
			second := h.Handle(context.Background(), podRequest(t, injected))
			if !second.Allowed || len(second.Patch) != 0 || len(second.Patches) != 0 || len(second.Warnings) != 0 {
				t.Fatalf("second admission: allowed=%v, patch %s, warnings %v", second.Allowed, second.Patch, second.Warnings)
			}
		})
	}
}

func TestTheRequiredEntryTreatsItsNamespaceAsRequired(t *testing.T) {
	// The apiserver calls the required entry for a namespace it sees labelled required;
	// the manager's cache may not have the label yet.
	h := newTestHandler(t, nil)
	h.FailClosed = true
	req := podRequest(t, newPod(withLabel("guardrail.dev/injected", "true")))
	resp := h.Handle(context.Background(), req)
	if !resp.Allowed || len(resp.Patch) == 0 || guardOf(applyPatch(t, req, resp)) == nil {
		t.Fatalf("allowed=%v patch=%s: want the pod injected", resp.Allowed, resp.Patch)
	}
}

func TestHandlerWarnsAndDenies(t *testing.T) {
	t.Run("a refused annotation value is an admission warning", func(t *testing.T) {
		h := newTestHandler(t, enabledNS)
		resp := h.Handle(context.Background(), podRequest(t, newPod(withAnnotation(guardv1.AnnotationCPU, "lots"))))
		if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], guardv1.AnnotationCPU) {
			t.Fatalf("allowed=%v warnings=%v", resp.Allowed, resp.Warnings)
		}
	})
	t.Run("a required namespace denies with a message naming the annotation", func(t *testing.T) {
		h := newTestHandler(t, requiredNS)
		resp := h.Handle(context.Background(), podRequest(t, newPod(withAnnotation(guardv1.AnnotationMemory, "-1Gi"))))
		if resp.Allowed || !strings.Contains(resp.Result.Message, guardv1.AnnotationMemory) {
			t.Fatalf("allowed=%v message=%q", resp.Allowed, resp.Result.Message)
		}
	})
	t.Run("an injector that cannot read the namespace admits the pod unguarded, with a warning", func(t *testing.T) {
		h := newTestHandler(t, enabledNS)
		req := podRequest(t, newPod())
		req.Namespace = "unknown"
		resp := h.Handle(context.Background(), req)
		if !resp.Allowed || len(resp.Patch) != 0 || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "not injected") {
			t.Fatalf("allowed=%v patch=%s warnings=%v", resp.Allowed, resp.Patch, resp.Warnings)
		}
	})
	t.Run("behind the required entry (failurePolicy Fail) the same failure denies the pod", func(t *testing.T) {
		h := newTestHandler(t, requiredNS)
		h.FailClosed = true
		req := podRequest(t, newPod())
		req.Namespace = "unknown"
		if resp := h.Handle(context.Background(), req); resp.Allowed {
			t.Fatal("a required namespace's pod was admitted without the injector knowing its namespace")
		}
	})
	t.Run("updates are not touched", func(t *testing.T) {
		h := newTestHandler(t, enabledNS)
		req := podRequest(t, newPod())
		req.Operation = admissionv1.Update
		if resp := h.Handle(context.Background(), req); !resp.Allowed || len(resp.Patch) != 0 {
			t.Fatal("an update was mutated")
		}
	})
}

func TestPatchProducesTheDecidedPod(t *testing.T) {
	noLabels := newPod()
	noLabels.Labels = nil
	cases := map[string]struct {
		pod    *corev1.Pod
		native bool
	}{
		"a plain pod":                 {newPod(), true},
		"a pod without labels":        {noLabels, true},
		"a pod with init containers":  {newPod(withInitContainer("migrate")), true},
		"the legacy shape":            {newPod(withInitContainer("migrate")), false},
		"a pod with a forged warning": {newPod(withAnnotation(guardv1.AnnotationInjectionWarnings, "Injected: forged"), withAnnotation("a/b~c", "x")), true},
		"a pod that is not injected":  {newPod(withPort(15090)), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.NativeSidecars = tc.native
			d := decide(tc.pod, "apps", enabledNS, cfg, []byte(testCA), providerChoice{})
			req := podRequest(t, tc.pod)
			patch, err := encodePatch(patchFor(tc.pod, d.pod))
			if err != nil {
				t.Fatal(err)
			}
			got := applyPatch(t, req, admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Patch: patch}})
			if !equality.Semantic.DeepEqual(got, d.pod) {
				t.Fatalf("the patched pod differs from the decided one:\n%s", cmp.Diff(d.pod, got))
			}
		})
	}
}

// BenchmarkHandle is one pod's admission as the webhook server sees it: an AdmissionReview
// in, the review with its JSON patch out.
func BenchmarkHandle(b *testing.B) {
	h := newTestHandler(b, enabledNS)
	// A CA certificate of the size the rotator makes (RSA 2048: ~1.2 KB of PEM), which the
	// patch carries in the ca-bundle annotation.
	realSizeCA := []byte("-----BEGIN CERTIFICATE-----\n" + strings.Repeat(strings.Repeat("A", 64)+"\n", 17) + "-----END CERTIFICATE-----\n")
	h.CA = func() ([]byte, error) { return realSizeCA, nil }
	wh := &webhook.Admission{Handler: h}
	req := podRequest(b, newPod(withAnnotation(guardv1.AnnotationCPULimit, "1"), withEnv("LOG_LEVEL", "info")))
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req.AdmissionRequest,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, WebhookPath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		wh.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"patch"`)) {
			b.Fatalf("%d %s", w.Code, w.Body.String())
		}
	}
}
