package sharedguard_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/controllers/sharedguard"
)

// servingPair is a self-signed certificate for the Service's DNS names and its key, in
// PEM, valid until notAfter.
func servingPair(t *testing.T, ns, name string, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	host := name + "." + ns + ".svc"
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: host},
		DNSNames: []string{host, host + ".cluster.local"}, NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// condition is the SharedGuard's condition of type typ.
func condition(t *testing.T, ns, name, typ string) (*metav1.Condition, *v1alpha1.SharedGuard) {
	t.Helper()
	sg := &v1alpha1.SharedGuard{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, sg))
	return meta.FindStatusCondition(sg.Status.Conditions, typ), sg
}

// TestExtProcSharedGuardServesTLSFromASecret: with spec.tls.secretName the processor's
// pods mount the Secret's tls.crt and tls.key and take them as --tls-cert-file and
// --tls-key-file, the Service's port advertises https and status.url is https. A Secret
// that does not exist yet is waited for (Reconciling, TLSSecretNotFound), one that does not
// hold a valid pair is reported (Stalled, TLSSecretInvalid) without its content reaching
// the status or the events, and a valid one lets the SharedGuard become Ready. The Secret
// may be renamed; TLS cannot be added or removed.
func TestExtProcSharedGuardServesTLSFromASecret(t *testing.T) {
	ns := namespace(t, "sg-extproc-tls")
	sg := newSharedGuard(ns, "gw", 1)
	sg.Spec.Mode = v1alpha1.SharedGuardModeExtProc
	sg.Spec.PodLabels = map[string]string{"app": "gateway"}
	sg.Spec.TLS = &v1alpha1.SharedGuardTLS{SecretName: "gw-tls"}
	must(t, k8s.Create(t.Context(), sg))

	dep := deployment(t, ns, "gw")
	tmpl := dep.Spec.Template
	want, _, err := renderer.SharedExtProcPodWithTLS(tmpl.Labels, nil, "gw-tls")
	must(t, err)
	c := tmpl.Spec.Containers[0]
	if !slices.Equal(c.Args, want.Spec.Containers[0].Args) ||
		!slices.Contains(c.Args, "--tls-cert-file=/var/run/secrets/guardrail.dev/tls/tls.crt") ||
		!slices.Contains(c.Args, "--tls-key-file=/var/run/secrets/guardrail.dev/tls/tls.key") {
		t.Errorf("the processor's arguments %q lack the TLS files", c.Args)
	}
	vol := tmpl.Spec.Volumes[len(tmpl.Spec.Volumes)-1]
	if vol.Secret == nil || vol.Secret.SecretName != "gw-tls" || len(vol.Secret.Items) != 2 {
		t.Errorf("the Secret's volume is %+v", vol)
	}
	if err := injection.VerifyGuard(&corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}, renderer.Guard()); err != nil {
		t.Errorf("the TLS processor's pod does not verify: %v", err)
	}
	svc := &corev1.Service{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gw"}, svc))
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != sharedguard.ExtProcServicePort || ptr.Deref(svc.Spec.Ports[0].AppProtocol, "") != "https" {
		t.Errorf("Service ports %+v, want grpc 15081 with appProtocol https", svc.Spec.Ports)
	}

	// No Secret yet: waited for.
	eventually(t, "Reconciling, TLSSecretNotFound", func() error {
		cond, got := condition(t, ns, "gw", v1alpha1.ConditionReconciling)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != sharedguard.ReasonTLSSecretNotFound ||
			!strings.Contains(cond.Message, "gw-tls") || got.Status.URL != "https://gw."+ns+".svc:15081" {
			return fmt.Errorf("Reconciling %v, url %q", cond, got.Status.URL)
		}
		if r, _ := condition(t, ns, "gw", v1alpha1.ConditionReady); r == nil || r.Status == metav1.ConditionTrue || r.Reason != sharedguard.ReasonTLSSecretNotFound {
			return fmt.Errorf("Ready %v", r)
		}
		return nil
	})

	// A pair that does not match: Stalled, naming the Secret, quoting none of it.
	cert1, key1 := servingPair(t, ns, "gw", time.Now().Add(24*time.Hour))
	_, key2 := servingPair(t, ns, "gw", time.Now().Add(24*time.Hour))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert1, corev1.TLSPrivateKeyKey: key2}}
	must(t, k8s.Create(t.Context(), secret))
	eventually(t, "Stalled, TLSSecretInvalid", func() error {
		cond, _ := condition(t, ns, "gw", v1alpha1.ConditionStalled)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != sharedguard.ReasonTLSSecretInvalid ||
			!strings.Contains(cond.Message, "gw-tls") || !strings.Contains(cond.Message, "private key does not match") {
			return fmt.Errorf("Stalled %v", cond)
		}
		return nil
	})

	// An expired certificate: Stalled too.
	expired, expiredKey := servingPair(t, ns, "gw", time.Now().Add(-time.Hour))
	secret.Data = map[string][]byte{corev1.TLSCertKey: expired, corev1.TLSPrivateKeyKey: expiredKey}
	must(t, k8s.Update(t.Context(), secret))
	eventually(t, "Stalled on an expired certificate", func() error {
		cond, _ := condition(t, ns, "gw", v1alpha1.ConditionStalled)
		if cond == nil || cond.Reason != sharedguard.ReasonTLSSecretInvalid || !strings.Contains(cond.Message, "expired") {
			return fmt.Errorf("Stalled %v", cond)
		}
		return nil
	})

	// cert-manager issues the certificate: the processor pod serves, the SharedGuard is Ready.
	secret.Data = map[string][]byte{corev1.TLSCertKey: cert1, corev1.TLSPrivateKeyKey: key1}
	must(t, k8s.Update(t.Context(), secret))
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "tls1"
	guardPod(t, ns, "gw-tls1-x1", "10.4.0.5", tmpl)
	eventually(t, "the processor in the EndpointSlice, appProtocol https", func() error {
		got, err := endpoints(t, ns, "gw")
		if err != nil || !slices.Equal(got, []string{"10.4.0.5"}) {
			return fmt.Errorf("endpoints %v, %v", got, err)
		}
		slice := &discoveryv1.EndpointSlice{}
		must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gw-ipv4"}, slice))
		if len(slice.Ports) != 1 || ptr.Deref(slice.Ports[0].AppProtocol, "") != "https" || ptr.Deref(slice.Ports[0].Port, 0) != 15081 {
			return fmt.Errorf("EndpointSlice ports %+v", slice.Ports)
		}
		return nil
	})
	dep = deployment(t, ns, "gw")
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	must(t, k8s.Status().Update(t.Context(), dep))
	eventually(t, "Ready", func() error {
		cond, got := ready(t, ns, "gw")
		if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "https://gw."+ns+".svc:15081") {
			return fmt.Errorf("Ready %v, status %+v", cond, got.Status)
		}
		if s, _ := condition(t, ns, "gw", v1alpha1.ConditionStalled); s != nil && s.Status == metav1.ConditionTrue {
			return fmt.Errorf("still Stalled: %v", s)
		}
		return nil
	})

	// Neither the status nor the events quote the Secret's content.
	_, got := ready(t, ns, "gw")
	events := &eventsv1.EventList{}
	must(t, k8s.List(t.Context(), events, client.InNamespace(ns)))
	var written strings.Builder
	for _, c := range got.Status.Conditions {
		written.WriteString(c.Message + "\n")
	}
	for _, e := range events.Items {
		written.WriteString(e.Note + "\n")
	}
	for _, b := range [][]byte{key1, key2, expiredKey, cert1} {
		body := strings.Join(strings.Split(string(b), "\n")[1:2], "")
		if strings.Contains(written.String(), "PRIVATE KEY") || strings.Contains(written.String(), body[:24]) {
			t.Fatalf("the status or the events quote the Secret:\n%s", written.String())
		}
	}
	if !strings.Contains(written.String(), "gw-tls") {
		t.Errorf("neither the status nor the events name the Secret:\n%s", written.String())
	}

	// Another Secret's name is a rollout; removing TLS is refused at apply time.
	cur := &v1alpha1.SharedGuard{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gw"}, cur))
	cur.Spec.TLS = &v1alpha1.SharedGuardTLS{SecretName: "gw-tls-2"}
	must(t, k8s.Update(t.Context(), cur))
	eventually(t, "the Deployment mounts the renamed Secret", func() error {
		vols := deployment(t, ns, "gw").Spec.Template.Spec.Volumes
		if v := vols[len(vols)-1]; v.Secret == nil || v.Secret.SecretName != "gw-tls-2" {
			return fmt.Errorf("volume %+v", v)
		}
		return nil
	})
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gw"}, cur))
	cur.Spec.TLS = nil
	if err := k8s.Update(t.Context(), cur); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.tls") {
		t.Errorf("removing spec.tls: %v, want Invalid naming spec.tls", err)
	}
}

// spec.tls is checked at apply time, in either mode: a Secret's name, and not added to or
// removed from a SharedGuard that serves in cleartext or over TLS.
func TestInvalidTLSIsRefusedAtApplyTime(t *testing.T) {
	ns := namespace(t, "sg-tls-invalid")
	for name, tc := range map[string]struct {
		edit func(*v1alpha1.SharedGuard)
		says string
	}{
		"name": {func(sg *v1alpha1.SharedGuard) {
			sg.Spec.Mode = v1alpha1.SharedGuardModeExtProc
			sg.Spec.TLS = &v1alpha1.SharedGuardTLS{SecretName: "Not_A/Name"}
		}, "spec.tls.secretName must be a Secret's name"},
		"proxy-name": {func(sg *v1alpha1.SharedGuard) {
			sg.Spec.TLS = &v1alpha1.SharedGuardTLS{SecretName: "Not_A/Name"}
		}, "spec.tls.secretName must be a Secret's name"},
		"empty": {func(sg *v1alpha1.SharedGuard) {
			sg.Spec.Mode = v1alpha1.SharedGuardModeExtProc
			sg.Spec.TLS = &v1alpha1.SharedGuardTLS{}
		}, "spec.tls.secretName"},
		"proxy-empty": {func(sg *v1alpha1.SharedGuard) { sg.Spec.TLS = &v1alpha1.SharedGuardTLS{} }, "spec.tls.secretName"},
	} {
		sg := newSharedGuard(ns, "sg-"+name, 1)
		tc.edit(sg)
		if err := k8s.Create(t.Context(), sg); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want Invalid saying %q", name, err, tc.says)
		}
	}
	for _, mode := range []v1alpha1.SharedGuardMode{v1alpha1.SharedGuardModeExtProc, "", v1alpha1.SharedGuardModeProxy} {
		name := "cleartext-" + strings.ToLower(string(mode))
		sg := newSharedGuard(ns, strings.TrimSuffix(name, "-"), 1)
		sg.Spec.Mode = mode
		must(t, k8s.Create(t.Context(), sg))
		sg.Spec.TLS = &v1alpha1.SharedGuardTLS{SecretName: "cleartext-tls"}
		if err := k8s.Update(t.Context(), sg); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.tls cannot be added or removed") {
			t.Errorf("mode %q: adding spec.tls: %v, want Invalid naming spec.tls", mode, err)
		}
	}
}

// TestProxySharedGuardServesHTTPSFromASecret: in Proxy mode (the default) spec.tls has the
// guard's proxy serve HTTPS: the pods mount the Secret's tls.crt and tls.key and the proxy
// takes them as --tls-cert-file and --tls-key-file after its other flags, the Service's port
// is https 443 (to the proxy's 15080) with appProtocol https, and status.url is
// https://NAME.NAMESPACE.svc
// (apps append /v1 for OpenAI SDKs). The Secret is checked as in ExtProc mode: missing
// (Reconciling, TLSSecretNotFound), not a pair (Stalled, TLSSecretInvalid, naming the
// Secret and quoting none of it), then valid and Ready. TLS cannot be removed.
func TestProxySharedGuardServesHTTPSFromASecret(t *testing.T) {
	ns := namespace(t, "sg-proxy-tls")
	sg := newSharedGuard(ns, "llm", 1) // mode unset: Proxy
	sg.Spec.TLS = &v1alpha1.SharedGuardTLS{SecretName: "llm-tls"}
	must(t, k8s.Create(t.Context(), sg))

	dep := deployment(t, ns, "llm")
	tmpl := dep.Spec.Template
	want, _, err := renderer.SharedGuardPodWithTLS(map[string]string{"app": "chat", v1alpha1.LabelSharedGuard: "llm"}, nil, "llm-tls")
	must(t, err)
	plain, _, err := renderer.SharedGuardPod(map[string]string{"app": "chat", v1alpha1.LabelSharedGuard: "llm"}, nil)
	must(t, err)
	c := tmpl.Spec.Containers[0]
	wantArgs := append(slices.Clone(plain.Spec.Containers[0].Args), "--tls-cert-file=/var/run/secrets/guardrail.dev/tls/tls.crt",
		"--tls-key-file=/var/run/secrets/guardrail.dev/tls/tls.key")
	if !slices.Equal(c.Args, want.Spec.Containers[0].Args) || !slices.Equal(c.Args, wantArgs) {
		t.Errorf("the proxy's arguments %q\nwant %q", c.Args, wantArgs)
	}
	if !slices.Contains(c.Args, "--listen=:15080") {
		t.Errorf("the proxy does not listen on its pod's address: %q", c.Args)
	}
	vol := tmpl.Spec.Volumes[len(tmpl.Spec.Volumes)-1]
	if vol.Secret == nil || vol.Secret.SecretName != "llm-tls" || len(vol.Secret.Items) != 2 {
		t.Errorf("the Secret's volume is %+v", vol)
	}
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	if err := injection.VerifyGuard(pod, renderer.Guard()); err != nil {
		t.Errorf("the TLS proxy's pod does not verify: %v", err)
	}
	if injection.IsExtProc(pod, renderer.Guard()) {
		t.Error("the TLS proxy is taken for the processor")
	}
	svc := &corev1.Service{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "llm"}, svc))
	if p := svc.Spec.Ports; len(p) != 1 || p[0].Name != "https" || p[0].Port != sharedguard.TLSServicePort ||
		p[0].TargetPort.IntValue() != 15080 || ptr.Deref(p[0].AppProtocol, "") != "https" || svc.Spec.Selector != nil {
		t.Errorf("Service %+v, want port https 443 -> 15080 with appProtocol https and no selector", svc.Spec)
	}

	eventually(t, "Reconciling, TLSSecretNotFound", func() error {
		cond, got := condition(t, ns, "llm", v1alpha1.ConditionReconciling)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != sharedguard.ReasonTLSSecretNotFound ||
			!strings.Contains(cond.Message, "llm-tls") || got.Status.URL != "https://llm."+ns+".svc" {
			return fmt.Errorf("Reconciling %v, url %q", cond, got.Status.URL)
		}
		return nil
	})

	cert1, key1 := servingPair(t, ns, "llm", time.Now().Add(24*time.Hour))
	_, key2 := servingPair(t, ns, "llm", time.Now().Add(24*time.Hour))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert1, corev1.TLSPrivateKeyKey: key2}}
	must(t, k8s.Create(t.Context(), secret))
	eventually(t, "Stalled, TLSSecretInvalid", func() error {
		cond, _ := condition(t, ns, "llm", v1alpha1.ConditionStalled)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != sharedguard.ReasonTLSSecretInvalid ||
			!strings.Contains(cond.Message, "llm-tls") || strings.Contains(cond.Message, "PRIVATE KEY") {
			return fmt.Errorf("Stalled %v", cond)
		}
		return nil
	})
	secret.Data = map[string][]byte{corev1.TLSCertKey: cert1, corev1.TLSPrivateKeyKey: key1}
	must(t, k8s.Update(t.Context(), secret))
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "tls1"
	guardPod(t, ns, "llm-tls1-x1", "10.4.1.5", tmpl)
	eventually(t, "the proxy in the EndpointSlice, port https, appProtocol https", func() error {
		got, err := endpoints(t, ns, "llm")
		if err != nil || !slices.Equal(got, []string{"10.4.1.5"}) {
			return fmt.Errorf("endpoints %v, %v", got, err)
		}
		slice := &discoveryv1.EndpointSlice{}
		must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "llm-ipv4"}, slice))
		if len(slice.Ports) != 1 || ptr.Deref(slice.Ports[0].Name, "") != "https" || ptr.Deref(slice.Ports[0].AppProtocol, "") != "https" ||
			ptr.Deref(slice.Ports[0].Port, 0) != 15080 {
			return fmt.Errorf("EndpointSlice ports %+v", slice.Ports)
		}
		return nil
	})
	dep = deployment(t, ns, "llm")
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	must(t, k8s.Status().Update(t.Context(), dep))
	eventually(t, "Ready", func() error {
		cond, got := ready(t, ns, "llm")
		if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "https://llm."+ns+".svc") || strings.Contains(cond.Message, "https://llm."+ns+".svc:") {
			return fmt.Errorf("Ready %v, status %+v", cond, got.Status)
		}
		return nil
	})

	cur := &v1alpha1.SharedGuard{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "llm"}, cur))
	cur.Spec.TLS = nil
	if err := k8s.Update(t.Context(), cur); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.tls cannot be added or removed") {
		t.Errorf("removing spec.tls: %v, want Invalid naming spec.tls", err)
	}
}
