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
	"sync"
	"sync/atomic"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/egress"
)

// client sends spans to the collector: OTLP over HTTP (a protobuf POST to …/v1/traces) or
// over gRPC (the unary call TraceService/Export, framed by hand over net/http's HTTP/2).
//
// It is the guard's own and not the OpenTelemetry exporters': those link gRPC's library
// (otlptracegrpc, and otlptracehttp through the generated service package), which the
// guard does not link (runtime/linkcheck_test.go: every library costs memory in every
// pod). Nor does it take the SDK's otlptrace exporter, which converts spans to OTLP's
// generated messages: the guard encodes the request itself (exporter, otlpwire.go), and
// this client sends the bytes: the framing and the status.
type client struct {
	cfg Config
	// http is the current HTTP client: replaced (and the old one's idle connections
	// closed) when the control plane delivers another CA (SetClientTLS).
	http atomic.Pointer[http.Client]
	// delivered are the headers the control plane gave (Tracer.SetHeaders), added to every
	// export after cfg.Headers; nil when none.
	delivered atomic.Pointer[http.Header]
	// roots are the CAs of OTEL_EXPORTER_OTLP_CERTIFICATE (nil: the system's), envCert the
	// pair of OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY (nil: none).
	roots   *x509.CertPool
	envCert *tls.Certificate
	// pair is the client certificate the control plane delivered (SetClientTLS), which
	// every TLS handshake presents instead of envCert: read by the transport's
	// GetClientCertificate, so a new pair needs no new exporter. nil when none.
	pair atomic.Pointer[tls.Certificate]
	// mu serializes setTLS; id identifies the delivered pair ("" for none), ca is the PEM
	// of the delivered CA in use ("" for roots).
	mu     sync.Mutex
	id, ca string
}

// exportPath is the gRPC method of OTLP trace export.
const exportPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// maxAnswer bounds what is read of a collector's answer.
const maxAnswer = 64 << 10

func newClient(cfg Config) (*client, error) {
	c := &client{cfg: cfg}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		c.roots = x509.NewCertPool()
		if !c.roots.AppendCertsFromPEM(pem) {
			return nil, errors.New("OTEL_EXPORTER_OTLP_CERTIFICATE: no PEM certificate in the file")
		}
	}
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/KEY: %w", err)
		}
		c.envCert = &cert
	}
	c.http.Store(c.newHTTPClient(c.roots))
	return c, nil
}

// newHTTPClient is an HTTP client of the collector verifying it against roots (nil: the
// system's), presenting the current client certificate at every handshake.
func (c *client) newHTTPClient(roots *x509.CertPool) *http.Client {
	// The egress transport: no proxy from the environment, the system's fixed roots.
	t := egress.Transport(roots)
	t.TLSClientConfig.GetClientCertificate = c.clientCertificate
	t.MaxIdleConnsPerHost = 2
	if c.cfg.Protocol == ProtocolGRPC {
		// gRPC is HTTP/2 only: with TLS (ALPN h2) or, for http://, with prior knowledge.
		var p http.Protocols
		if strings.HasPrefix(c.cfg.Endpoint, "http://") {
			p.SetUnencryptedHTTP2(true)
		} else {
			p.SetHTTP2(true)
		}
		t.Protocols = &p
	}
	return &http.Client{Transport: t, Timeout: c.cfg.Timeout}
}

// clientCertificate is the transport's GetClientCertificate: the delivered pair, else
// the environment's, else none (an empty certificate sends none).
func (c *client) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if p := c.pair.Load(); p != nil {
		return p, nil
	}
	if c.envCert != nil {
		return c.envCert, nil
	}
	return &tls.Certificate{}, nil
}

// ClientTLS is a client certificate and key, and optionally the CA bundle the collector
// must chain to, as PEM: what the control plane delivers (Tracer.SetClientTLS).
type ClientTLS struct {
	Certificate, Key, CA []byte
	// KeepLast keeps the certificate set before, if any (Certificate, Key and CA unused).
	KeepLast bool
}

// setTLS makes exports present pair and verify the collector against ca (PEM; empty:
// the roots of the environment or the system's); pair nil presents the environment's
// certificate again. A connection keeps the certificate it shook hands with, so a change
// swaps in a new transport: the next export shakes hands anew, and reads the latest pair
// then (GetClientCertificate). The old transport's connections are closed when idle: now,
// and once more when an export still running on one has had its time.
//
// id identifies pair (a digest of its PEM): delivering the same pair and CA again, as
// every snapshot of the control plane does, changes nothing.
func (c *client) setTLS(pair *tls.Certificate, id, ca string, roots *x509.CertPool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == c.id && ca == c.ca {
		return
	}
	c.pair.Store(pair)
	if ca == "" {
		roots = c.roots
	}
	c.id, c.ca = id, ca
	prev := c.http.Swap(c.newHTTPClient(roots))
	prev.CloseIdleConnections()
	time.AfterFunc(c.cfg.Timeout+time.Second, prev.CloseIdleConnections)
}

// stop closes the idle connections to the collector.
func (c *client) stop() { c.http.Load().CloseIdleConnections() }

// send sends one ExportTraceServiceRequest, encoded (appendRequest).
func (c *client) send(ctx context.Context, msg []byte) error {
	if c.cfg.Protocol == ProtocolGRPC {
		return c.grpc(ctx, msg)
	}
	return c.post(ctx, msg)
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
	resp, err := c.http.Load().Do(req)
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
	resp, err := c.http.Load().Do(req)
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
