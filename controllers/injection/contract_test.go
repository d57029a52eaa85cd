package injection

import (
	"maps"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
)

// The files the guard reads at the contract's paths are in the volumes the injector mounts.
func TestTheContractsPathsAreWhereTheInjectorMounts(t *testing.T) {
	for path, want := range map[string]string{
		guardv1.TokenPath:  tokenDir + "/token",
		guardv1.CAPath:     caDir + "/ca.crt",
		guardv1.LabelsPath: podInfoDir + "/labels",
	} {
		if path != want {
			t.Errorf("the guard reads %s, the injector mounts %s", path, want)
		}
	}
}

// The tracing values the injector renders are the ones the guard reads.
func TestTheInjectorsTracingValuesAreTheGuards(t *testing.T) {
	if otelServiceName != tracing.DefaultServiceName {
		t.Errorf("service name %s, the guard's %s", otelServiceName, tracing.DefaultServiceName)
	}
	if otelProtocolHTTP != tracing.ProtocolHTTP || otelProtocolGRPC != tracing.ProtocolGRPC {
		t.Errorf("protocols %s %s, the guard's %s %s", otelProtocolHTTP, otelProtocolGRPC, tracing.ProtocolHTTP, tracing.ProtocolGRPC)
	}
	guards := map[string]bool{tracing.SamplerAlwaysOn: false, tracing.SamplerAlwaysOff: false, tracing.SamplerTraceIDRatio: true,
		tracing.SamplerParentBasedAlwaysOn: false, tracing.SamplerParentBasedAlwaysOff: false, tracing.SamplerParentBasedTraceIDRatio: true}
	if !maps.Equal(otelSamplers, guards) || otelDefaultSampler != tracing.SamplerParentBasedTraceIDRatio {
		t.Errorf("samplers %v (default %s), the guard's %v", otelSamplers, otelDefaultSampler, guards)
	}
	// What the injector renders is what the guard reads back.
	env := tracingEnv(Tracing{Endpoint: "http://otel:4318", Sampler: "traceidratio", SamplerArg: "0.5"})
	got, err := tracing.FromEnv(func(name string) string {
		for _, e := range env {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	})
	if err != nil || len(got.Warnings) > 0 || got.Endpoint != "http://otel:4318/v1/traces" || got.Sampler != "traceidratio" || got.SamplerArg != 0.5 {
		t.Errorf("the guard reads %+v, %v", got, err)
	}
}
