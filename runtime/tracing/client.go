package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/guardrail-dev/guardrail-operator/runtime/egress"
)

// client sends spans to the collector: OTLP over HTTP (a protobuf POST to …/v1/traces) or
// over gRPC (the unary call TraceService/Export, framed by hand over net/http's HTTP/2).
//
// It is the guard's own and not the OpenTelemetry exporters': those link gRPC's library
// (otlptracegrpc, and otlptracehttp through the generated service package), which the
// guard does not link (runtime/linkcheck_test.go: every library costs memory in every
// pod). OTLP's request is one repeated field of the span messages the SDK already builds
// (otlptrace), so little is left to write: the framing and the status.
type client struct {
	cfg  Config
	http *http.Client
	// delivered are the headers the control plane gave (Tracer.SetHeaders), added to every
	// export after cfg.Headers; nil when none.
	delivered atomic.Pointer[http.Header]
}

// exportPath is the gRPC method of OTLP trace export.
const exportPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// maxAnswer bounds what is read of a collector's answer.
const maxAnswer = 64 << 10

func newClient(cfg Config) (*client, error) {
	var roots *x509.CertPool
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, errors.New("OTEL_EXPORTER_OTLP_CERTIFICATE: no PEM certificate in the file")
		}
	}
	// The egress transport: no proxy from the environment, the system's fixed roots.
	t := egress.Transport(roots)
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/KEY: %w", err)
		}
		t.TLSClientConfig.Certificates = []tls.Certificate{cert}
	}
	t.MaxIdleConnsPerHost = 2
	if cfg.Protocol == ProtocolGRPC {
		// gRPC is HTTP/2 only: with TLS (ALPN h2) or, for http://, with prior knowledge.
		var p http.Protocols
		if strings.HasPrefix(cfg.Endpoint, "http://") {
			p.SetUnencryptedHTTP2(true)
		} else {
			p.SetHTTP2(true)
		}
		t.Protocols = &p
	}
	return &client{cfg: cfg, http: &http.Client{Transport: t, Timeout: cfg.Timeout}}, nil
}

func (c *client) Start(context.Context) error { return nil }

func (c *client) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces sends one ExportTraceServiceRequest.
func (c *client) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	if len(spans) == 0 {
		return nil
	}
	msg, err := marshalRequest(spans)
	if err != nil {
		return err
	}
	if c.cfg.Protocol == ProtocolGRPC {
		return c.grpc(ctx, msg)
	}
	return c.post(ctx, msg)
}

// marshalRequest encodes ExportTraceServiceRequest{resource_spans = 1 (repeated)}.
func marshalRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	opts := proto.MarshalOptions{}
	for _, rs := range spans {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(opts.Size(rs)))
		var err error
		if b, err = opts.MarshalAppend(b, rs); err != nil {
			return nil, fmt.Errorf("OTLP export: encoding spans: %w", err)
		}
	}
	return b, nil
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func (c *client) request(ctx context.Context, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("OTLP export: invalid endpoint")
	}
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, v)
	}
	if d := c.delivered.Load(); d != nil {
		for k, v := range *d {
			req.Header[k] = v
		}
	}
	req.Header.Set("User-Agent", "guardrail-guard")
	return req, nil
}

// post is OTLP/HTTP with binary protobuf.
func (c *client) post(ctx context.Context, msg []byte) error {
	if c.cfg.Gzip {
		msg = gzipped(msg)
	}
	req, err := c.request(ctx, c.cfg.Endpoint, msg)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return sendError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("OTLP export: the collector answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// grpc is OTLP/gRPC: one length-prefixed message each way, the status in the trailers.
func (c *client) grpc(ctx context.Context, msg []byte) error {
	flag := byte(0)
	if c.cfg.Gzip {
		msg, flag = gzipped(msg), 1
	}
	framed := make([]byte, 5, 5+len(msg))
	framed[0] = flag
	binary.BigEndian.PutUint32(framed[1:], uint32(len(msg))) //nolint:gosec // a span batch is far below 4 GiB
	framed = append(framed, msg...)
	req, err := c.request(ctx, strings.TrimSuffix(c.cfg.Endpoint, "/")+exportPath, framed)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	if c.cfg.Gzip {
		req.Header.Set("Grpc-Encoding", "gzip")
	}
	req.Header.Set("Grpc-Timeout", fmt.Sprintf("%dm", c.cfg.Timeout.Milliseconds()))
	resp, err := c.http.Do(req)
	if err != nil {
		return sendError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("OTLP export: the collector answered HTTP %d", resp.StatusCode)
	}
	status := resp.Trailer.Get("Grpc-Status")
	if status == "" {
		status = resp.Header.Get("Grpc-Status") // a trailers-only answer
	}
	if status != "0" {
		return fmt.Errorf("OTLP export: the collector answered gRPC status %q", status)
	}
	return nil
}

// sendError is an export's transport error without the URL it names (whose host is
// configuration, but whose form is not the guard's to log).
func sendError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("OTLP export: timed out")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("OTLP export: %w", err)
}
