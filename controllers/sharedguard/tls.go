package sharedguard

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// tlsSecretName is the Secret whose certificate a SharedGuard's proxy or processor
// presents, or "" for a guard in cleartext.
func tlsSecretName(sg *v1alpha1.SharedGuard) string {
	if sg.Spec.TLS == nil {
		return ""
	}
	return sg.Spec.TLS.SecretName
}

// checkTLSSecret says, with a reason, why the Secret spec.tls.secretName names cannot be
// the certificate of the guard's proxy or processor (either mode), or "" when it can (or
// the SharedGuard serves no TLS). The guard's pods mount the Secret; the kubelet reports
// a missing Secret or key only in the pod's events, and a guard refusing its pair only by
// crashing, so the Secret is read here instead (through the API reader: the manager caches Secrets' metadata only) and
// its pair parsed as the guard parses it. Nothing of it is kept, and the messages name
// the Secret and its keys, never their content. A manager not allowed to read the
// namespace's Secrets skips the check (the pods' status then tells).
func (r *Reconciler) checkTLSSecret(ctx context.Context, sg *v1alpha1.SharedGuard) (reason, message string, err error) {
	name := tlsSecretName(sg)
	if name == "" {
		return "", "", nil
	}
	secret := &corev1.Secret{}
	err = r.APIReader.Get(ctx, types.NamespacedName{Namespace: sg.Namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return ReasonTLSSecretNotFound, fmt.Sprintf("Waiting for Secret %s (spec.tls.secretName) to be created in namespace %s: "+
			"the guard's pods cannot start without their certificate", name, sg.Namespace), nil
	case apierrors.IsForbidden(err):
		ctrl.LoggerFrom(ctx).V(1).Info("Not allowed to read the Secret of spec.tls.secretName; not checked", "secret", name)
		return "", "", nil
	case err != nil:
		return "", "", fmt.Errorf("reading Secret %s: %w", name, err)
	}
	invalid := func(format string, args ...any) (string, string, error) {
		return ReasonTLSSecretInvalid, fmt.Sprintf("Secret %s (spec.tls.secretName) ", name) + fmt.Sprintf(format, args...) +
			": guard pods that start now cannot serve, running ones keep the pair they loaded", nil
	}
	for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if len(secret.Data[key]) == 0 {
			return invalid("has no %s (a kubernetes.io/tls Secret holds tls.crt and tls.key)", key)
		}
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		// crypto/tls's errors name PEM block types and what failed, never the content.
		return invalid("does not hold a certificate and its key (%v)", err)
	}
	if leaf := pair.Leaf; leaf != nil && time.Now().After(leaf.NotAfter) {
		return invalid("holds a certificate that expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return "", "", nil
}

// forSecret finds the SharedGuards of a Secret's namespace that serve its certificate.
func (r *Reconciler) forSecret(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.SharedGuardList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if tlsSecretName(&list.Items[i]) == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
