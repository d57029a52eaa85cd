package injection

import (
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// collector is a tracing setting as a platform would give it.
var collector = Tracing{Endpoint: "http://otel-collector.observability.svc:4318", Sampler: "parentbased_traceidratio",
	SamplerArg: "0.25", ResourceAttributes: "k8s.cluster.name=east,deployment.environment=prod"}

func tracingConfig(t Tracing, previous ...Tracing) *Config {
	cfg := testConfig()
	cfg.Tracing, cfg.PreviousTracing = t, previous
	return cfg
}

// otelEnv is the guard's OTEL_* variables, in order.
func otelEnv(g *corev1.Container) []corev1.EnvVar {
	return slices.DeleteFunc(slices.Clone(g.Env), func(e corev1.EnvVar) bool { return !strings.HasPrefix(e.Name, "OTEL_") })
}

func TestTracingIsRenderedOnlyWhenTheManagerSetsAnEndpoint(t *testing.T) {
	off := injectedPodWith(t, testConfig())
	if g, _ := findGuard(off); len(otelEnv(g)) > 0 {
		t.Fatalf("tracing off renders %v", otelEnv(g))
	}
	on := injectedPodWith(t, tracingConfig(collector))
	g, _ := findGuard(on)
	want := []corev1.EnvVar{
		{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: collector.Endpoint},
		{Name: "OTEL_EXPORTER_OTLP_PROTOCOL", Value: "http/protobuf"},
		{Name: "OTEL_TRACES_SAMPLER", Value: "parentbased_traceidratio"},
		{Name: "OTEL_TRACES_SAMPLER_ARG", Value: "0.25"},
		{Name: "OTEL_SERVICE_NAME", Value: "guardrail-guard"},
		{Name: "OTEL_RESOURCE_ATTRIBUTES", Value: collector.ResourceAttributes},
	}
	if got := otelEnv(g); !slices.Equal(got, want) {
		t.Fatalf("OTEL env\n got %v\nwant %v", got, want)
	}
	// The defaults: no sampler argument, no resource attributes.
	minimal := injectedPodWith(t, tracingConfig(Tracing{Endpoint: "https://collector:4317", Protocol: "grpc"}))
	g, _ = findGuard(minimal)
	names := []string{}
	for _, e := range otelEnv(g) {
		names = append(names, e.Name+"="+e.Value)
	}
	if got := strings.Join(names, " "); got != "OTEL_EXPORTER_OTLP_ENDPOINT=https://collector:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc "+
		"OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_SERVICE_NAME=guardrail-guard" {
		t.Fatalf("OTEL env %s", got)
	}
}

// injectedPodWith is the fixture pod as the injector admits it in a required namespace
// under cfg.
func injectedPodWith(t *testing.T, cfg *Config) *corev1.Pod {
	t.Helper()
	d := decide(newPod(), "apps", requiredNS, cfg, []byte(testCA), providerChoice{})
	if d.pod == nil {
		t.Fatalf("not injected: deny %q, skip %q", d.deny, d.skip)
	}
	return d.pod
}

// A guard verifies with no tracing, with the manager's current setting or with one it
// still accepts (--guard-otel-previous); a platform that changes its setting without
// listing the earlier one makes the earlier pods unverified.
func TestVerificationAcceptsTheManagersTracingSettingsOnly(t *testing.T) {
	moved := Tracing{Endpoint: "http://otel-gateway.observability.svc:4318"}
	for _, tc := range []struct {
		name          string
		injectedWith  *Config
		verifiedUnder *Config
		verifies      bool
	}{
		{"off, verified with tracing off", testConfig(), testConfig(), true},
		{"on, verified with the same setting", tracingConfig(collector), tracingConfig(collector), true},
		{"injected before tracing was turned on", testConfig(), tracingConfig(collector), true},
		{"injected with an earlier endpoint the manager still accepts", tracingConfig(collector), tracingConfig(moved, collector), true},
		{"injected with an earlier setting after tracing was turned off, still accepted", tracingConfig(collector), tracingConfig(Tracing{}, collector), true},
		{"injected with an earlier endpoint no longer accepted", tracingConfig(collector), tracingConfig(moved), false},
		{"injected with tracing on, verified after it was turned off", tracingConfig(collector), testConfig(), false},
		{"injected with an earlier sampler ratio no longer accepted", tracingConfig(collector), tracingConfig(func() Tracing { c := collector; c.SamplerArg = "0.1"; return c }()), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := injectedPodWith(t, tc.injectedWith)
			err := VerifyGuard(pod, tc.verifiedUnder.Guard())
			if (err == nil) != tc.verifies {
				t.Fatalf("verification: %v, want it to pass: %v", err, tc.verifies)
			}
		})
	}
}

// What a tenant could write into a guard's environment to send its spans elsewhere or
// shape them: none of it verifies, and the admission of a required namespace refuses it.
func TestATenantCannotRepointTheGuardsTracing(t *testing.T) {
	set := func(name, value string) func(g *corev1.Container) {
		return func(g *corev1.Container) {
			for i := range g.Env {
				if g.Env[i].Name == name {
					g.Env[i].Value = value
					return
				}
			}
			g.Env = append(g.Env, corev1.EnvVar{Name: name, Value: value})
		}
	}
	drop := func(name string) func(g *corev1.Container) {
		return func(g *corev1.Container) {
			g.Env = slices.DeleteFunc(g.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		}
	}
	for _, tc := range []struct {
		name    string
		manager Tracing
		edit    func(g *corev1.Container)
	}{
		{"re-pointed endpoint", collector, set("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.tenant.example")},
		{"an endpoint added while the manager's tracing is off", Tracing{}, func(g *corev1.Container) {
			g.Env = append(g.Env, tracingEnv(Tracing{Endpoint: "https://collector.tenant.example"})...)
		}},
		{"a traces endpoint beside the manager's", collector, set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://collector.tenant.example/v1/traces")},
		{"headers added", collector, set("OTEL_EXPORTER_OTLP_HEADERS", "x-token=abc")},
		{"another protocol", collector, set("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")},
		{"another sampler", collector, set("OTEL_TRACES_SAMPLER", "always_on")},
		{"another ratio", collector, set("OTEL_TRACES_SAMPLER_ARG", "1")},
		{"the ratio dropped", collector, drop("OTEL_TRACES_SAMPLER_ARG")},
		{"the protocol dropped", collector, drop("OTEL_EXPORTER_OTLP_PROTOCOL")},
		{"another service name", collector, set("OTEL_SERVICE_NAME", "billing")},
		{"the service name dropped", collector, drop("OTEL_SERVICE_NAME")},
		{"another namespace's name in the resource", collector, set("OTEL_RESOURCE_ATTRIBUTES", collector.ResourceAttributes+",k8s.namespace.name=payments")},
		{"settings without an endpoint", collector, drop("OTEL_EXPORTER_OTLP_ENDPOINT")},
		{"the endpoint from a ConfigMap", collector, func(g *corev1.Container) {
			for i := range g.Env {
				if g.Env[i].Name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
					g.Env[i].ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "mine"}, Key: "endpoint"}}
				}
			}
		}},
		{"the endpoint set twice", collector, func(g *corev1.Container) {
			g.Env = append(g.Env, corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "https://collector.tenant.example"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tracingConfig(tc.manager)
			pod := injectedPodWith(t, cfg)
			g, _ := findGuard(pod)
			tc.edit(g)
			// Not counted as a guard: the manager's cache and the control plane verify so.
			if err := VerifyGuard(pod, cfg.Guard()); err == nil {
				t.Fatal("the edited guard verified")
			} else if strings.Contains(err.Error(), "tenant") {
				t.Fatalf("the error echoes a value: %v", err)
			}
			// Created so in a required namespace, it is refused.
			d := decide(pod, "apps", requiredNS, cfg, []byte(testCA), providerChoice{})
			if d.deny == "" {
				t.Fatalf("admitted: skip %q, changed %v", d.skip, d.pod != nil)
			}
		})
	}
	// A guard without tracing verifies (a pod injected before it was on), but one created
	// so by hand now is refused: admission wants the current setting.
	cfg := tracingConfig(collector)
	pod := injectedPodWith(t, cfg)
	g, _ := findGuard(pod)
	g.Env = slices.DeleteFunc(g.Env, func(e corev1.EnvVar) bool { return strings.HasPrefix(e.Name, "OTEL_") })
	if err := VerifyGuard(pod, cfg.Guard()); err != nil {
		t.Fatalf("a guard without tracing: %v", err)
	}
	if d := decide(pod, "apps", requiredNS, cfg, []byte(testCA), providerChoice{}); !strings.Contains(d.deny, "tracing settings are not the manager's current ones") {
		t.Fatalf("a hand-written guard without tracing: deny %q", d.deny)
	}
	// The injector's own guard with the current setting is left as it is (re-invocation).
	if d := decide(injectedPodWith(t, cfg), "apps", requiredNS, cfg, []byte(testCA), providerChoice{}); d.deny != "" || d.pod != nil {
		t.Fatalf("re-invocation: deny %q, changed %v", d.deny, d.pod != nil)
	}
}

func TestTracingFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) (*Flags, Options, error) {
		t.Helper()
		var f Flags
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(append([]string{"--operator-namespace=ops", "--guard-image=guard:1"}, args...)); err != nil {
			return nil, Options{}, err
		}
		o, err := f.options(context.Background(), nil)
		return &f, o, err
	}
	t.Run("off by default", func(t *testing.T) {
		f, o, err := parse(t)
		if err != nil || o.Config.Tracing != (Tracing{}) || len(f.Guard("ops", "guard:1").Tracing) != 0 {
			t.Fatalf("tracing %+v, %v", o.Config.Tracing, err)
		}
	})
	t.Run("every setting", func(t *testing.T) {
		f, o, err := parse(t, "--guard-otel-endpoint=http://otel:4317", "--guard-otel-protocol=grpc",
			"--guard-otel-sampler=traceidratio", "--guard-otel-sampler-arg=0.5", "--guard-otel-resource-attributes=k8s.cluster.name=east",
			`--guard-otel-previous={"endpoint":"http://old:4318"}`)
		if err != nil {
			t.Fatal(err)
		}
		want := Tracing{Endpoint: "http://otel:4317", Protocol: "grpc", Sampler: "traceidratio", SamplerArg: "0.5", ResourceAttributes: "k8s.cluster.name=east"}
		if o.Config.Tracing != want {
			t.Fatalf("tracing %+v", o.Config.Tracing)
		}
		old := Tracing{Endpoint: "http://old:4318", Protocol: "http/protobuf", Sampler: "parentbased_traceidratio"}
		if !slices.Equal(o.Config.PreviousTracing, []Tracing{old}) {
			t.Fatalf("previous %+v", o.Config.PreviousTracing)
		}
		// The manager's cache and control plane verify as the injector does.
		if g, c := f.Guard("ops", "guard:1"), o.Config.Guard(); !slices.Equal(g.Tracing, c.Tracing) || len(g.Tracing) != 2 {
			t.Fatalf("Flags.Guard %+v, Config.Guard %+v", g.Tracing, c.Tracing)
		}
	})
	for _, bad := range []struct{ arg, says string }{
		{"--guard-otel-endpoint=otel:4317", "endpoint"},
		{"--guard-otel-endpoint=http://user:pw@otel:4318", "credentials"},
		{"--guard-otel-endpoint=http://otel:4318?token=x", "query"},
		{"--guard-otel-protocol=http/json", "protocol"},
		{"--guard-otel-sampler=sometimes", "sampler"},
		{"--guard-otel-sampler-arg=1.5", "ratio"},
		{"--guard-otel-sampler=always_on --guard-otel-sampler-arg=0.5", "only the traceidratio"},
		{"--guard-otel-resource-attributes=k8s.pod.name=x", "the guard's own"},
		{"--guard-otel-resource-attributes=novalue", "key=value"},
	} {
		t.Run(bad.arg+" is refused at start", func(t *testing.T) {
			args := append([]string{"--guard-otel-endpoint=http://otel:4318"}, strings.Fields(bad.arg)...)
			if _, _, err := parse(t, args...); err == nil || !strings.Contains(err.Error(), bad.says) {
				t.Fatalf("error = %v, want one saying %q", err, bad.says)
			}
		})
	}
	for _, bad := range []string{`{"endpoint":""}`, `{"endpoint":"http://old:4318","token":"x"}`, `http://old:4318`, `{"endpoint":"http://old:4318","protocol":"udp"}`} {
		t.Run("--guard-otel-previous="+bad+" is refused", func(t *testing.T) {
			if _, _, err := parse(t, "--guard-otel-previous="+bad); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// --guard-otel-headers-secret names a Secret's key for the control plane, with the endpoint
// the headers are for; it renders nothing into the guard.
func TestTracingHeadersFlag(t *testing.T) {
	parse := func(args ...string) (*Flags, error) {
		var f Flags
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Bind(fs)
		return &f, fs.Parse(append([]string{"--operator-namespace=ops", "--guard-image=guard:1"}, args...))
	}
	f, err := parse("--guard-otel-endpoint=http://otel:4318", "--guard-otel-headers-secret=otlp-auth/headers")
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.TracingHeaders()
	if err != nil || h != (TracingHeaders{Endpoint: "http://otel:4318", Secret: "otlp-auth", Key: "headers"}) {
		t.Fatalf("TracingHeaders() = %+v, %v", h, err)
	}
	o, err := f.options(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tracingEnv(o.Config.Tracing) {
		if strings.Contains(e.Name, "HEADERS") || strings.Contains(e.Value, "otlp-auth") {
			t.Errorf("the guard's environment names the headers: %s=%s", e.Name, e.Value)
		}
	}
	if f, _ := parse(); !func() bool { h, err := f.TracingHeaders(); return err == nil && !h.On() }() {
		t.Error("headers without the flag")
	}
	if f, _ := parse("--guard-otel-headers-secret=otlp-auth/headers"); func() bool { _, err := f.TracingHeaders(); return err == nil }() {
		t.Error("headers accepted without an endpoint")
	}
	for _, bad := range []string{"otlp-auth", "otlp-auth/", "/headers", "Otlp_Auth/headers", "otlp-auth/a/b", "otlp-auth/bad key"} {
		if _, err := parse("--guard-otel-endpoint=http://otel:4318", "--guard-otel-headers-secret="+bad); err == nil {
			t.Errorf("--guard-otel-headers-secret=%s accepted", bad)
		}
	}
}

// --guard-otel-client-cert-secret names a Secret for the control plane, with the endpoint
// the certificate is for, which must be https://; it renders nothing into the guard.
func TestTracingClientCertFlag(t *testing.T) {
	parse := func(args ...string) (*Flags, error) {
		var f Flags
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Bind(fs)
		return &f, fs.Parse(append([]string{"--operator-namespace=ops", "--guard-image=guard:1"}, args...))
	}
	f, err := parse("--guard-otel-endpoint=https://otel:4318", "--guard-otel-client-cert-secret=otlp-client")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.TracingClientCert()
	if err != nil || c != (TracingClientCert{Endpoint: "https://otel:4318", Secret: "otlp-client"}) {
		t.Fatalf("TracingClientCert() = %+v, %v", c, err)
	}
	o, err := f.options(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tracingEnv(o.Config.Tracing) {
		if strings.Contains(e.Name, "CERTIFICATE") || strings.Contains(e.Name, "KEY") || strings.Contains(e.Value, "otlp-client") {
			t.Errorf("the guard's environment names the client certificate: %s=%s", e.Name, e.Value)
		}
	}
	if f, _ := parse(); !func() bool { c, err := f.TracingClientCert(); return err == nil && !c.On() }() {
		t.Error("a client certificate without the flag")
	}
	if f, _ := parse("--guard-otel-client-cert-secret=otlp-client"); func() bool { _, err := f.TracingClientCert(); return err == nil }() {
		t.Error("a client certificate accepted without an endpoint")
	}
	for _, plain := range []string{"http://otel:4318", "HTTP://otel:4318"} {
		if f, _ := parse("--guard-otel-endpoint="+plain, "--guard-otel-client-cert-secret=otlp-client"); func() bool {
			_, err := f.TracingClientCert()
			return err == nil || !strings.Contains(err.Error(), "https://")
		}() {
			t.Errorf("a client certificate accepted for the plaintext endpoint %s", plain)
		}
	}
	for _, bad := range []string{"", "Otlp_Client", "otlp-client/tls.crt", "a b"} {
		if _, err := parse("--guard-otel-endpoint=https://otel:4318", "--guard-otel-client-cert-secret="+bad); err == nil {
			t.Errorf("--guard-otel-client-cert-secret=%q accepted", bad)
		}
	}
}
