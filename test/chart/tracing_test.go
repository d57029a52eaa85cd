package chart

import (
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
)

// otelArgs are the manager's --guard-otel-* arguments in a render.
func otelArgs(t *testing.T, values string) []string {
	t.Helper()
	return slices.DeleteFunc(managerArgs(t, values), func(a string) bool { return !strings.HasPrefix(a, "--guard-otel-") })
}

// TestGuardTracingIsOffByDefault: no --guard-otel-* flag unless guard.tracing.endpoint or
// guard.tracing.previous is set; set, the flags are the manager's own and parse as such.
func TestGuardTracingIsOffByDefault(t *testing.T) {
	if got := otelArgs(t, ""); len(got) > 0 {
		t.Fatalf("by default: %v", got)
	}
	if got := otelArgs(t, "guard: {tracing: {protocol: grpc, samplerArg: '0.5'}}"); len(got) > 0 {
		t.Fatalf("without an endpoint: %v", got)
	}
	got := otelArgs(t, `guard:
  tracing:
    endpoint: http://otel-collector.observability.svc:4318
    samplerArg: "0.25"
    resourceAttributes: k8s.cluster.name=east,deployment.environment=prod
    previous:
      - endpoint: http://otel-old.observability.svc:4317
        protocol: grpc
`)
	want := []string{
		"--guard-otel-endpoint=http://otel-collector.observability.svc:4318",
		"--guard-otel-protocol=http/protobuf",
		"--guard-otel-sampler=parentbased_traceidratio",
		"--guard-otel-sampler-arg=0.25",
		"--guard-otel-resource-attributes=k8s.cluster.name=east,deployment.environment=prod",
		`--guard-otel-previous={"endpoint":"http://otel-old.observability.svc:4317","protocol":"grpc"}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("args\n got %q\nwant %q", got, want)
	}
	// The manager parses them (its flag set checks --guard-otel-previous; the injector's
	// own unit tests the rest).
	var f injection.Flags
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(append([]string{"--operator-namespace=ops", "--guard-image=guard:1"}, got...)); err != nil {
		t.Fatal(err)
	}
	if g := f.Guard("ops", "guard:1"); len(g.Tracing) != 2 {
		t.Fatalf("the manager accepts the tracing settings %+v", g.Tracing)
	}
}

func TestGuardTracingSchema(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"guard.tracing.endpoint=otel:4317", "/guard/tracing/endpoint"},
		{"guard.tracing.endpoint=http://user@otel:4318", "/guard/tracing/endpoint"},
		{"guard.tracing.protocol=http/json", "/guard/tracing/protocol"},
		{"guard.tracing.sampler=sometimes", "/guard/tracing/sampler"},
		{"guard.tracing.samplerArg=1.5", "/guard/tracing/samplerArg"},
		{"guard.tracing.headers=x", "tracing"},
	} {
		out, err := helm(t, "template", "guardrail-operator", chartDir, "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s rendered; want a refusal", tc.set)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("--set %s: the refusal does not name %q:\n%s", tc.set, tc.want, out)
		}
	}
	out, err := helm(t, "template", "guardrail-operator", chartDir, "--set-json", `guard.tracing.previous=[{"protocol":"grpc"}]`)
	if err == nil || !strings.Contains(out, "endpoint") {
		t.Errorf("a previous setting without an endpoint: %v\n%s", err, out)
	}
}

// TestGuardTracingHeadersSecret: guard.tracing.headersSecret renders
// --guard-otel-headers-secret, which the manager reads as the Secret's key for the
// endpoint; nothing else of it (no value, no environment variable) is rendered. Without an
// endpoint the chart refuses it, and the schema refuses a name that is not a Secret's.
func TestGuardTracingHeadersSecret(t *testing.T) {
	values := `guard:
  tracing:
    endpoint: http://otel-gateway.observability.svc:4318
    headersSecret: {name: otlp-auth}
`
	got := otelArgs(t, values)
	if !slices.Contains(got, "--guard-otel-headers-secret=otlp-auth/headers") {
		t.Fatalf("args %q lack --guard-otel-headers-secret with the default key", got)
	}
	var f injection.Flags
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(append([]string{"--operator-namespace=ops", "--guard-image=guard:1"}, got...)); err != nil {
		t.Fatal(err)
	}
	h, err := f.TracingHeaders()
	if err != nil || h != (injection.TracingHeaders{Endpoint: "http://otel-gateway.observability.svc:4318", Secret: "otlp-auth", Key: "headers"}) {
		t.Fatalf("the manager reads %+v, %v", h, err)
	}
	if got := otelArgs(t, "guard: {tracing: {endpoint: 'http://o:4318', headersSecret: {name: otlp-auth, key: token}}}"); !slices.Contains(got,
		"--guard-otel-headers-secret=otlp-auth/token") {
		t.Errorf("a key of its own: %q", got)
	}
	if got := otelArgs(t, "guard: {tracing: {endpoint: 'http://o:4318'}}"); slices.ContainsFunc(got, func(a string) bool {
		return strings.HasPrefix(a, "--guard-otel-headers-secret")
	}) {
		t.Errorf("headers without a Secret: %q", got)
	}
	for _, tc := range []struct{ set, want string }{
		{"guard.tracing.headersSecret.name=otlp-auth", "guard.tracing.endpoint"},
		{"guard.tracing.headersSecret.name=Otlp_Auth", "/guard/tracing/headersSecret/name"},
		{"guard.tracing.headersSecret.key=a/b", "/guard/tracing/headersSecret/key"},
		{"guard.tracing.headersSecret.value=x", "headersSecret"},
	} {
		out, err := helm(t, "template", "guardrail-operator", chartDir, "--set", "guard.tracing.endpoint=", "--set", tc.set)
		if tc.want != "guard.tracing.endpoint" {
			out, err = helm(t, "template", "guardrail-operator", chartDir, "--set", "guard.tracing.endpoint=http://o:4318", "--set", tc.set)
		}
		if err == nil {
			t.Errorf("--set %s rendered; want a refusal", tc.set)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("--set %s: the refusal does not name %q:\n%s", tc.set, tc.want, out)
		}
	}
}

// TestGuardTracingClientCertSecret: guard.tracing.clientCertSecret renders
// --guard-otel-client-cert-secret, which the manager reads as the Secret for the https://
// endpoint; nothing of the Secret (no volume, no environment variable, no projection, not
// its name) is in any pod the chart renders, nor a Secret of its own (the injector's
// environment of the guards is tested in controllers/injection). Without an endpoint, or with a plaintext one, the chart
// refuses it, and the schema refuses a name that is not a Secret's.
func TestGuardTracingClientCertSecret(t *testing.T) {
	values := `guard:
  tracing:
    endpoint: https://otel-gateway.observability.svc:4318
    protocol: grpc
    clientCertSecret: otlp-client-cert
`
	got := otelArgs(t, values)
	if !slices.Contains(got, "--guard-otel-client-cert-secret=otlp-client-cert") {
		t.Fatalf("args %q lack --guard-otel-client-cert-secret", got)
	}
	var f injection.Flags
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(append([]string{"--operator-namespace=ops", "--guard-image=guard:1"}, got...)); err != nil {
		t.Fatal(err)
	}
	c, err := f.TracingClientCert()
	if err != nil || c != (injection.TracingClientCert{Endpoint: "https://otel-gateway.observability.svc:4318", Secret: "otlp-client-cert"}) {
		t.Fatalf("the manager reads %+v, %v", c, err)
	}

	// No pod of the chart mounts, projects or names the Secret: its name appears in the
	// manager's argument only.
	out := renderYAML(t, "guardrail-system", values)
	if n := strings.Count(out, "otlp-client-cert"); n != 1 {
		t.Errorf("the render names the Secret %d times, want once (the flag):\n%s", n, out)
	}
	for _, o := range objects(t, out) {
		if md, _ := o["metadata"].(map[string]any); o["kind"] == "Secret" && md["name"] != "guardrail-webhook-cert" {
			t.Errorf("the chart renders a Secret %v", md["name"])
		}
	}
	if got := otelArgs(t, "guard: {tracing: {endpoint: 'https://o:4318'}}"); slices.ContainsFunc(got, func(a string) bool {
		return strings.HasPrefix(a, "--guard-otel-client-cert-secret")
	}) {
		t.Errorf("a client certificate without a Secret: %q", got)
	}

	for _, tc := range []struct{ endpoint, set, want string }{
		{"", "guard.tracing.clientCertSecret=otlp-client-cert", "guard.tracing.endpoint, which is empty"},
		{"http://o:4318", "guard.tracing.clientCertSecret=otlp-client-cert", "not https://"},
		{"https://o:4318", "guard.tracing.clientCertSecret=Otlp_Client", "/guard/tracing/clientCertSecret"},
		{"https://o:4318", "guard.tracing.clientCertSecret.name=x", "clientCertSecret"},
	} {
		out, err := helm(t, "template", "guardrail-operator", chartDir, "--set", "guard.tracing.endpoint="+tc.endpoint, "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s with endpoint %q rendered; want a refusal", tc.set, tc.endpoint)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("--set %s: the refusal does not name %q:\n%s", tc.set, tc.want, out)
		}
	}
}
