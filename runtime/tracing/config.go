package tracing

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlpheaders"
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config is the tracing configuration, from the standard OpenTelemetry variables
// (FromEnv). The zero Config is off.
type Config struct {
	// Endpoint is where spans go: for http/protobuf the full URL of the traces resource
	// (…/v1/traces), for grpc the collector's scheme://host:port. Empty: tracing is off.
	Endpoint string
	// Protocol is ProtocolHTTP or ProtocolGRPC.
	Protocol string
	// ConfiguredEndpoint is the endpoint variable's value as set (trimmed): the guard takes
	// headers from the control plane only for the endpoint they were given for
	// (Tracer.SetHeaders).
	ConfiguredEndpoint string
	// Headers are sent with every export (OTEL_EXPORTER_OTLP_HEADERS, checked by
	// otlpheaders.Parse): often a credential of the collector, so they are never logged
	// nor put in an error.
	Headers map[string]string
	// Timeout bounds one export.
	Timeout time.Duration
	// Gzip compresses the exports.
	Gzip bool
	// CAFile, CertFile and KeyFile are PEM files: the roots the collector's certificate is
	// verified against (the system's when empty), and the client certificate for mTLS.
	CAFile, CertFile, KeyFile string
	// Sampler and SamplerArg are OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, checked.
	Sampler    string
	SamplerArg float64
	// Warnings are settings FromEnv did not take, with what it did instead; the guard logs
	// them. They name variables, never their values.
	Warnings []string
}

// Enabled reports whether spans are exported.
func (c Config) Enabled() bool { return c.Endpoint != "" }

// Samplers of OTEL_TRACES_SAMPLER the guard knows.
const (
	SamplerAlwaysOn                = "always_on"
	SamplerAlwaysOff               = "always_off"
	SamplerTraceIDRatio            = "traceidratio"
	SamplerParentBasedAlwaysOn     = "parentbased_always_on"
	SamplerParentBasedAlwaysOff    = "parentbased_always_off"
	SamplerParentBasedTraceIDRatio = "parentbased_traceidratio"
)

// defaultSampler: a call that is part of a sampled trace is sampled, one that is not is not,
// and a call without an incoming trace is sampled at OTEL_TRACES_SAMPLER_ARG (1.0 unless set).
const defaultSampler = SamplerParentBasedTraceIDRatio

// FromEnv reads the configuration from the standard variables, through getenv (os.Getenv):
//
//   - OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none, turns tracing off;
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is), or else OTEL_EXPORTER_OTLP_ENDPOINT
//     (to which http/protobuf adds /v1/traces); neither set: tracing is off;
//   - OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL: http/protobuf (the default) or grpc;
//   - OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, _TIMEOUT (milliseconds, 10000), _COMPRESSION
//     (gzip), _INSECURE (grpc endpoints without a scheme), _CERTIFICATE,
//     _CLIENT_CERTIFICATE, _CLIENT_KEY;
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (parentbased_traceidratio, 1.0).
//
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read by Setup. An invalid endpoint or
// protocol is an error; other invalid settings are warnings, and their defaults apply.
func FromEnv(getenv func(string) string) (Config, error) {
	var c Config
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return c, nil
	}
	if exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp != "" {
		switch strings.ToLower(exp) {
		case "none":
			return c, nil
		case "otlp":
		default:
			c.Warnings = append(c.Warnings, "OTEL_TRACES_EXPORTER names an exporter the guard does not have: it exports OTLP")
		}
	}
	// signal returns the traces-specific variable, or else the general one.
	signal := func(name string) string {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	endpoint, perSignal := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")), true
	if endpoint == "" {
		endpoint, perSignal = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")), false
	}
	if endpoint == "" {
		return Config{}, nil
	}
	c.Protocol = strings.ToLower(signal("PROTOCOL"))
	switch c.Protocol {
	case "":
		c.Protocol = ProtocolHTTP
	case ProtocolHTTP, ProtocolGRPC:
	default:
		return Config{}, errors.New("OTEL_EXPORTER_OTLP_PROTOCOL: the guard exports http/protobuf or grpc")
	}
	var err error
	if c.Endpoint, err = endpointURL(endpoint, c.Protocol, perSignal, strings.EqualFold(signal("INSECURE"), "true")); err != nil {
		return Config{}, err
	}
	c.ConfiguredEndpoint = endpoint
	if c.Headers, err = otlpheaders.Parse(signal("HEADERS")); err != nil {
		// The error names the entry's position, never its content.
		c.Warnings = append(c.Warnings, "OTEL_EXPORTER_OTLP_HEADERS is malformed ("+err.Error()+"): no header is sent")
	}
	c.Timeout = 10 * time.Second
	if v := signal("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			c.Warnings = append(c.Warnings, "OTEL_EXPORTER_OTLP_TIMEOUT is not a positive number of milliseconds: 10000 applies")
		} else {
			c.Timeout = time.Duration(ms) * time.Millisecond
		}
	}
	switch v := strings.ToLower(signal("COMPRESSION")); v {
	case "", "none":
	case "gzip":
		c.Gzip = true
	default:
		c.Warnings = append(c.Warnings, "OTEL_EXPORTER_OTLP_COMPRESSION is neither gzip nor none: exports are not compressed")
	}
	c.CAFile, c.CertFile, c.KeyFile = signal("CERTIFICATE"), signal("CLIENT_CERTIFICATE"), signal("CLIENT_KEY")
	c.Sampler, c.SamplerArg, c.Warnings = sampler(getenv, c.Warnings)
	return c, nil
}

// endpointURL checks an endpoint and returns the URL exports go to.
func endpointURL(endpoint, protocol string, perSignal, insecure bool) (string, error) {
	if protocol == ProtocolGRPC && !strings.Contains(endpoint, "://") {
		// A gRPC endpoint may be host:port: TLS unless OTEL_EXPORTER_OTLP_INSECURE=true.
		if insecure {
			endpoint = "http://" + endpoint
		} else {
			endpoint = "https://" + endpoint
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		// The value is not quoted: it may hold a credential.
		return "", errors.New("OTEL_EXPORTER_OTLP_ENDPOINT: not an http:// or https:// URL with a host")
	}
	u.RawQuery, u.Fragment = "", ""
	switch {
	case protocol == ProtocolGRPC:
		u.Path, u.RawPath = "", ""
	case !perSignal:
		u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/")+"/v1/traces", ""
	case u.Path == "":
		u.Path = "/"
	}
	return u.String(), nil
}

// sampler reads OTEL_TRACES_SAMPLER and its argument.
func sampler(getenv func(string) string, warnings []string) (string, float64, []string) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	switch name {
	case "":
		name = defaultSampler
	case SamplerAlwaysOn, SamplerAlwaysOff, SamplerTraceIDRatio,
		SamplerParentBasedAlwaysOn, SamplerParentBasedAlwaysOff, SamplerParentBasedTraceIDRatio:
	default:
		warnings = append(warnings, fmt.Sprintf("OTEL_TRACES_SAMPLER names a sampler the guard does not have: %s applies", defaultSampler))
		name = defaultSampler
	}
	ratio := 1.0
	if name == SamplerTraceIDRatio || name == SamplerParentBasedTraceIDRatio {
		if v := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); v != "" {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r < 0 || r > 1 {
				warnings = append(warnings, "OTEL_TRACES_SAMPLER_ARG is not a ratio between 0 and 1: 1.0 applies")
			} else {
				ratio = r
			}
		}
	}
	return name, ratio, warnings
}
