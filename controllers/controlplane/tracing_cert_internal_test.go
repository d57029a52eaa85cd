package controlplane

import (
	"bytes"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
)

// checkClientCertificate takes a kubernetes.io/tls Secret's certificate, its key and an
// optional CA bundle, and refuses what the guards could not present, with a reason that
// names keys, never content.
func TestCheckClientCertificate(t *testing.T) {
	pki := otlptest.NewPKI(t)
	crt, key := pki.Client(t, "guards")
	otherCrt, otherKey := pki.Client(t, "other")
	serverCrt, serverKey := pki.ServerOnly(t, "collector")
	cc, notAfter, err := checkClientCertificate(map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": pki.CAPEM})
	if err != nil || cc.Certificate != string(crt) || cc.Key != string(key) || cc.CA != string(pki.CAPEM) || cc.KeepLast || notAfter.IsZero() {
		t.Fatalf("a good Secret: %+v, %v, %v", cc != nil, notAfter, err)
	}
	for name, ca := range map[string][]byte{"absent": nil, "empty": {}, "blank": []byte("\n")} {
		if cc, _, err := checkClientCertificate(map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": ca}); err != nil || cc.CA != "" {
			t.Errorf("ca.crt %s: %+v, %v", name, cc, err)
		}
	}
	chain := append(append([]byte{}, crt...), pki.CAPEM...)
	if _, _, err := checkClientCertificate(map[string][]byte{"tls.crt": chain, "tls.key": key}); err != nil {
		t.Errorf("a chain: %v", err)
	}
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want string
	}{
		{"no tls.crt", map[string][]byte{"tls.key": key}, "no tls.crt"},
		{"no tls.key", map[string][]byte{"tls.crt": crt}, "no tls.key"},
		{"a key of another certificate", map[string][]byte{"tls.crt": crt, "tls.key": otherKey}, "not a certificate and its key"},
		{"a key that does not parse", map[string][]byte{"tls.crt": otherCrt, "tls.key": []byte("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")}, "not a certificate and its key"},
		{"not PEM", map[string][]byte{"tls.crt": []byte("certificate"), "tls.key": key}, "tls.crt: holds no PEM certificate"},
		{"a key in tls.crt", map[string][]byte{"tls.crt": append(append([]byte{}, crt...), key...), "tls.key": key}, `tls.crt: holds a PEM block of type "PRIVATE KEY"`},
		{"a certificate only for servers", map[string][]byte{"tls.crt": serverCrt, "tls.key": serverKey}, "not for client authentication"},
		{"a CA that is not PEM", map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": []byte("ca")}, "ca.crt: holds no PEM certificate"},
		{"a key in ca.crt", map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": key}, "ca.crt: holds a PEM block"},
		{"too large", map[string][]byte{"tls.crt": bytes.Repeat(crt, 64<<10/len(crt)+1), "tls.key": key}, "larger than"},
	} {
		cc, _, err := checkClientCertificate(tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want an error naming %q", tc.name, cc != nil, err, tc.want)
			continue
		}
		for _, v := range tc.data {
			if len(v) > 40 && strings.Contains(err.Error(), string(v[30:40])) {
				t.Errorf("%s: the error quotes the Secret: %v", tc.name, err)
			}
		}
	}
}
