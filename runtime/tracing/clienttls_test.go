package tracing_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
)

// The client certificate the control plane delivers (SetClientTLS), against a real OTLP
// receiver on loopback that requires one (crypto/tls RequireAndVerifyClientCert), over
// both protocols: without it the collector refuses the handshake and no span arrives;
// with it spans arrive; a rotated pair is presented from the next export on, by the same
// exporter; an unusable pair, or KeepLast, keeps the last one; a delivered CA replaces
// OTEL_EXPORTER_OTLP_CERTIFICATE; a pair for another endpoint, or none, removes it.
func TestDeliveredClientCertificate(t *testing.T) {
	for _, protocol := range []string{tracing.ProtocolGRPC, tracing.ProtocolHTTP} {
		t.Run(protocol, func(t *testing.T) {
			pki := otlptest.NewPKI(t)
			col := otlptest.NewMTLS(t, protocol, pki.Server(t), pki.Pool)
			caFile := filepath.Join(t.TempDir(), "ca.pem")
			if err := os.WriteFile(caFile, pki.CAPEM, 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := tracing.FromEnv(env(map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":    col.Endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL":    protocol,
				"OTEL_EXPORTER_OTLP_CERTIFICATE": caFile, // the collector is trusted from the start
				"OTEL_TRACES_SAMPLER":            "always_on",
			}))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := tracing.Setup(t.Context(), cfg, tracing.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tr.Shutdown(t.Context()) }()

			// export sends one span named model; it returns the common name of the
			// certificate the span arrived with, or the export's error.
			export := func(model string) (string, error) {
				t.Helper()
				tr.StartCall(t.Context(), http.Header{}, tracing.CallInfo{Operation: "chat", Model: model}).End("allowed")
				if err := tr.ForceFlush(t.Context()); err != nil {
					return "", err
				}
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if slices.ContainsFunc(col.Spans(), func(s otlptest.Span) bool { return s.Name == "chat "+model }) {
						peers := col.Peers()
						return peers[len(peers)-1], nil
					}
				}
				return "", errors.New("the span did not arrive")
			}
			arrives := func(model, cn string) {
				t.Helper()
				if got, err := export(model); err != nil || got != cn {
					t.Fatalf("export %s: presented %q, %v; want %q", model, got, err, cn)
				}
			}
			// refused: the collector refuses the handshake of a client without a certificate.
			refused := func(model string) {
				t.Helper()
				before := len(col.ServerLog())
				if got, err := export(model); err == nil {
					t.Fatalf("export %s without a client certificate arrived, presented %q", model, got)
				}
				for deadline := time.Now().Add(5 * time.Second); len(col.ServerLog()) == before && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				if l := col.ServerLog(); len(l) == before || !strings.Contains(l[len(l)-1], "client didn't provide a certificate") {
					t.Fatalf("export %s: the collector did not refuse a client without a certificate: %q", model, l[before:])
				}
			}
			pair := func(cn string) *tracing.ClientTLS {
				c, k := pki.Client(t, cn)
				return &tracing.ClientTLS{Certificate: c, Key: k}
			}

			refused("none")
			if err := tr.SetClientTLS(col.Endpoint, pair("guard-1")); err != nil {
				t.Fatal(err)
			}
			arrives("first", "guard-1")
			if !tr.KeepsClientTLS(col.Endpoint) {
				t.Error("KeepsClientTLS: false with a pair")
			}

			// A rotation: the same exporter presents the new pair from the next export on.
			if err := tr.SetClientTLS(col.Endpoint, pair("guard-2")); err != nil {
				t.Fatal(err)
			}
			arrives("rotated", "guard-2")
			// The same pair again (every snapshot carries it) keeps the transport and its
			// connections.
			same := pair("guard-same")
			if err := tr.SetClientTLS(col.Endpoint, same); err != nil {
				t.Fatal(err)
			}
			kept := tr.Transport()
			if err := tr.SetClientTLS(col.Endpoint, &tracing.ClientTLS{Certificate: same.Certificate, Key: same.Key}); err != nil {
				t.Fatal(err)
			}
			if tr.Transport() != kept {
				t.Error("the same pair delivered again replaced the transport")
			}
			if err := tr.SetClientTLS(col.Endpoint, pair("guard-2")); err != nil {
				t.Fatal(err)
			}

			// What cannot be used keeps the last good pair: a key of another certificate,
			// a pair without a key, a CA without a certificate, KeepLast.
			other, _ := pki.Client(t, "guard-other")
			_, key := pki.Client(t, "guard-3")
			for _, bad := range []*tracing.ClientTLS{
				{Certificate: other, Key: key},
				{Certificate: other},
				{Certificate: []byte("x"), Key: []byte("y")},
				{Certificate: pair("guard-3").Certificate, Key: key, CA: []byte("not a certificate")},
			} {
				if err := tr.SetClientTLS(col.Endpoint, bad); !errors.Is(err, tracing.ErrNoClientCertificate) {
					t.Errorf("SetClientTLS of an unusable pair: %v", err)
				} else if strings.Contains(err.Error(), "PRIVATE KEY") {
					t.Errorf("the error quotes the key: %v", err)
				}
			}
			if err := tr.SetClientTLS(col.Endpoint, &tracing.ClientTLS{KeepLast: true}); err != nil {
				t.Fatal(err)
			}
			arrives("kept", "guard-2")

			// A delivered CA replaces OTEL_EXPORTER_OTLP_CERTIFICATE: one the collector's
			// certificate does not chain to fails; a bundle holding its CA works.
			stranger := pair("guard-4")
			stranger.CA = otlptest.NewPKI(t).CAPEM
			if err := tr.SetClientTLS(col.Endpoint, stranger); err != nil {
				t.Fatal(err)
			}
			before := len(col.ServerLog())
			if _, err := export("stranger-ca"); err == nil {
				t.Fatal("exported to a collector that the delivered CA does not sign")
			}
			for deadline := time.Now().Add(5 * time.Second); len(col.ServerLog()) == before && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if l := col.ServerLog(); len(l) == before || !strings.Contains(l[len(l)-1], "bad certificate") {
				t.Fatalf("the guard did not refuse the collector's certificate: %q", l[before:])
			}
			p5 := pair("guard-5")
			p5.CA = append(append([]byte{}, stranger.CA...), pki.CAPEM...)
			if err := tr.SetClientTLS(col.Endpoint, p5); err != nil {
				t.Fatal(err)
			}
			arrives("new-ca", "guard-5")

			// For another endpoint: removed, with the CA.
			if err := tr.SetClientTLS("https://elsewhere:4318", pair("guard-6")); !errors.Is(err, tracing.ErrOtherEndpoint) {
				t.Errorf("SetClientTLS for another endpoint: %v", err)
			}
			if tr.KeepsClientTLS(col.Endpoint) {
				t.Error("KeepsClientTLS: true after a pair for another endpoint")
			}
			refused("other-endpoint")
			if err := tr.SetClientTLS(col.Endpoint, &tracing.ClientTLS{KeepLast: true}); err != nil {
				t.Fatal(err)
			}
			refused("nothing-to-keep")
			if err := tr.SetClientTLS(col.Endpoint, pair("guard-7")); err != nil {
				t.Fatal(err)
			}
			arrives("again", "guard-7")
			if err := tr.SetClientTLS(col.Endpoint, nil); err != nil {
				t.Fatal(err)
			}
			refused("removed")
		})
	}
}

// A tracer that is off takes no certificate.
func TestSetClientTLSWhenOff(t *testing.T) {
	var tr *tracing.Tracer
	if err := tr.SetClientTLS("https://c:4318", &tracing.ClientTLS{}); !errors.Is(err, tracing.ErrNoExporter) {
		t.Errorf("SetClientTLS on a nil tracer: %v", err)
	}
	if tr.KeepsClientTLS("https://c:4318") {
		t.Error("KeepsClientTLS on a nil tracer")
	}
}
