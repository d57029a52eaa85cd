package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// The guards' client certificate in every snapshot: the platform keeps the certificate
// the guards present to their collector (mTLS) in a kubernetes.io/tls Secret of the
// operator's namespace (the manager's --guard-otel-client-cert-secret,
// Options.TracingClientCert): tls.crt, tls.key and, optionally, ca.crt, the CA the
// collector's certificate must chain to. It travels as the headers do (tracing.go): the
// control plane reads the Secret when it compiles a snapshot and sends it, with the
// endpoint it is for, in Snapshot.Tracing.ClientCertificate to every verified guard
// injected to export to that endpoint (tracedTo); the guard keeps it in memory and presents it only to that endpoint. The Secret's identity
// and resource version are part of the snapshot's version (key "tracing-client-cert"),
// never its content, so a rotation (cert-manager's renewal) reaches running guards.
//
// Unlike the headers, a Secret that cannot be used does not take the certificate away: a
// missing Secret (deleted to be recreated), a missing tls.crt or tls.key, PEM that does
// not parse, a key that is not the certificate's, a certificate not for client
// authentication, or a ca.crt without a certificate sends KeepLast, and the guards keep
// the certificate they have. The manager logs it once per version of the Secret, naming
// the Secret and the reason, never its content, and
// guardrail_controlplane_tracing_client_certificate_valid is 0. Only a manager without
// the flag sends no certificate, which removes it from the guards.

// Bounds of the Secret's values: a certificate chain and its key are a few KiB; a CA
// bundle may be a system's.
const (
	maxClientCertBytes = 64 << 10
	maxClientCABytes   = 512 << 10
)

// tracingClientCertValid has the Secret's name as its label, so that it is absent until
// the manager with the flag has read the Secret once.
var tracingClientCertValid = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "guardrail_controlplane_tracing_client_certificate_valid",
	Help: "1 when the Secret of --guard-otel-client-cert-secret (label secret) holds a client certificate and key the " +
		"guards can present, 0 when it is missing or malformed (the guards then keep the certificate they have; the " +
		"manager's log says why). Absent without the flag.",
}, []string{"secret"})

func init() { ctrlmetrics.Registry.MustRegister(tracingClientCertValid) }

// tracingClientCertificate returns the client certificate of every snapshot: nil when the
// platform set none, KeepLast when its Secret cannot be used. It records the Secret's
// version in secretVersions (key "tracing-client-cert").
func (b *builder) tracingClientCertificate(ctx context.Context, secretVersions map[string]string) (*cp.ClientCertificate, error) {
	cc := b.tracingClientCert
	if !cc.On() {
		return nil, nil
	}
	s := &corev1.Secret{}
	err := b.secrets.Get(ctx, types.NamespacedName{Namespace: b.operatorNamespace, Name: cc.Secret}, s)
	switch {
	case apierrors.IsNotFound(err):
		b.clientCertProblem("missing", "the Secret does not exist")
		return &cp.ClientCertificate{KeepLast: true}, nil
	case err != nil:
		return nil, err // the snapshot waits, as for the headers
	}
	version := string(s.UID) + "/" + s.ResourceVersion
	out, notAfter, perr := checkClientCertificate(s.Data)
	if perr != nil {
		// Not an error of the snapshot: the guards keep the certificate they have.
		b.clientCertProblem("invalid/"+version, perr.Error())
		return &cp.ClientCertificate{KeepLast: true}, nil
	}
	tracingClientCertValid.WithLabelValues(cc.Secret).Set(1)
	if b.clientCertState.change("ok/" + version) {
		b.log.Info("Guards get their client certificate for the collector from the Secret of --guard-otel-client-cert-secret",
			"secret", b.operatorNamespace+"/"+cc.Secret, "notAfter", notAfter.UTC().Format(time.RFC3339),
			"collectorCA", out.CA != "", "endpoint", cc.Endpoint)
	}
	secretVersions["tracing-client-cert"] = version
	return out, nil
}

// clientCertProblem logs, once per state, why the guards keep the certificate they have.
// why never holds the Secret's content.
func (b *builder) clientCertProblem(state, why string) {
	tracingClientCertValid.WithLabelValues(b.tracingClientCert.Secret).Set(0)
	if b.clientCertState.change(state) {
		b.log.Info("Guards keep the client certificate they have: the Secret of --guard-otel-client-cert-secret is not usable",
			"secret", b.operatorNamespace+"/"+b.tracingClientCert.Secret, "reason", why)
	}
}

// checkClientCertificate checks a kubernetes.io/tls Secret's data: tls.crt a certificate
// chain (leaf first) for client authentication, tls.key its private key, ca.crt (optional;
// empty is none) PEM certificates. The errors name keys and what is wrong, never content.
func checkClientCertificate(data map[string][]byte) (*cp.ClientCertificate, time.Time, error) {
	crt, key, ca := data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey], data[corev1.ServiceAccountRootCAKey]
	if len(bytes.TrimSpace(ca)) == 0 {
		ca = nil // cert-manager writes an empty ca.crt when its issuer gives none
	}
	switch {
	case len(crt) == 0:
		return nil, time.Time{}, errors.New("the Secret has no " + corev1.TLSCertKey)
	case len(key) == 0:
		return nil, time.Time{}, errors.New("the Secret has no " + corev1.TLSPrivateKeyKey)
	case len(crt) > maxClientCertBytes || len(key) > maxClientCertBytes:
		return nil, time.Time{}, fmt.Errorf("%s or %s is larger than %d KiB", corev1.TLSCertKey, corev1.TLSPrivateKeyKey, maxClientCertBytes>>10)
	case len(ca) > maxClientCABytes:
		return nil, time.Time{}, fmt.Errorf("%s is larger than %d KiB", corev1.ServiceAccountRootCAKey, maxClientCABytes>>10)
	}
	if err := onlyCertificates(crt); err != nil {
		return nil, time.Time{}, fmt.Errorf("%s: %w", corev1.TLSCertKey, err)
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		// crypto/tls's errors name PEM block types and what failed, not the content.
		return nil, time.Time{}, fmt.Errorf("%s and %s are not a certificate and its key: %w", corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, time.Time{}, fmt.Errorf("%s: %w", corev1.TLSCertKey, err)
		}
	}
	if len(leaf.ExtKeyUsage) > 0 && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) &&
		!slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny) {
		return nil, time.Time{}, errors.New(corev1.TLSCertKey + ": the certificate is not for client authentication (its extended key usage lacks clientAuth)")
	}
	out := &cp.ClientCertificate{Certificate: string(crt), Key: string(key)}
	if len(ca) > 0 {
		if err := onlyCertificates(ca); err != nil {
			return nil, time.Time{}, fmt.Errorf("%s: %w", corev1.ServiceAccountRootCAKey, err)
		}
		out.CA = string(ca)
	}
	return out, leaf.NotAfter, nil
}

// onlyCertificates checks that b is one or more PEM certificates that parse, and nothing
// else (a key pasted into tls.crt or ca.crt would otherwise travel as a certificate).
func onlyCertificates(b []byte) error {
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a PEM block of type %q, not only certificates", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d does not parse: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("holds no PEM certificate")
	}
	return nil
}
