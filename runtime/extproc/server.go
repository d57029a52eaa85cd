package extproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// Config configures a Server.
type Config struct {
	// Policy holds the policy in force. The policy source applies snapshots to it
	// (Proxy.Apply: backends, the guardrails selecting the pod, the engine); the server
	// uses its policy only, never its HTTP side.
	Policy *proxy.Proxy
	// PassThrough lists POST paths let through unjudged (every other unknown POST is
	// refused), as the guard's --pass-through.
	PassThrough []string
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means 16 MiB.
	MaxBodyBytes int64
	// MaxResponseBytes bounds non-streamed response bodies judged; 0 means 64 MiB.
	MaxResponseBytes int64
	// Pod is copied into decision records.
	Pod       string
	Telemetry *telemetry.Telemetry
	Log       *slog.Logger
}

// Server is an Envoy external processor (envoy.service.ext_proc.v3.ExternalProcessor)
// that enforces the guard's policy. Each Process stream is one HTTP request.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer

	cfg         Config
	passThrough map[string]bool
	// observed logs once that a filter in observability mode calls the server.
	observed sync.Once
	// beforeMessage, when set (tests), runs before each message is handled.
	beforeMessage func(*extprocv3.ProcessingRequest)
}

// New returns a Server. Register it on a gRPC server with Register.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 64 << 20
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = telemetry.New(nil)
	}
	s := &Server{cfg: cfg, passThrough: map[string]bool{}}
	for _, p := range cfg.PassThrough {
		s.passThrough[p] = true
	}
	return s
}

// Register registers s as the ExternalProcessor service of g.
func (s *Server) Register(g grpc.ServiceRegistrar) { extprocv3.RegisterExternalProcessorServer(g, s) }

// Process serves one HTTP request's processing stream: it answers each message in
// order, synchronously, until Envoy closes the stream.
//
// A filter in observability mode ignores every answer, so nothing it sends can be
// enforced: such a stream is not judged (its records would count blocks and redactions
// that never happened); the server logs, once, that the filter enforces nothing.
func (s *Server) Process(stream grpc.BidiStreamingServer[extprocv3.ProcessingRequest, extprocv3.ProcessingResponse]) (err error) {
	x := s.newExchange(stream.Context())
	defer x.close()
	defer func() {
		// A bug must not take the server down with every other request in flight. The
		// stream fails instead, and Envoy, failing closed, answers 500 and forwards
		// nothing more. The panic's value is not logged: it may quote content.
		if r := recover(); r != nil {
			s.cfg.Log.Error("ext_proc stream failed on an internal error; Envoy refuses the request", "requestId", x.id,
				"family", x.family, "stack", string(debug.Stack()))
			x.result = "failed"
			err = status.Error(codes.Internal, "the guardrail ext_proc server failed on this request")
		}
	}()
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			x.gone = true
			return nil //nolint:nilerr // Envoy went away: nobody reads an answer
		}
		if req.GetObservabilityMode() {
			s.observed.Do(func() {
				s.cfg.Log.Error("An ext_proc filter in observability_mode calls this server: it ignores every answer, " +
					"so no guardrail is enforced or recorded on its traffic; set observability_mode: false")
			})
			continue
		}
		if s.beforeMessage != nil {
			s.beforeMessage(req)
		}
		resp := x.handle(req)
		if resp == nil {
			continue
		}
		if err := stream.Send(resp); err != nil {
			x.gone = true
			return nil //nolint:nilerr // as above
		}
	}
}

// handle answers one message; it is what Process does between Recv and Send.
func (x *exchange) handle(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	if pc := req.GetProtocolConfig(); pc != nil && !x.configured {
		x.configured = true
		x.protocol = pc
	}
	switch r := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return x.requestHeaders(r.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return x.requestBody(r.RequestBody)
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return x.responseHeaders(r.ResponseHeaders)
	case *extprocv3.ProcessingRequest_ResponseBody:
		return x.responseBody(r.ResponseBody)
	}
	return continueResponse(req)
}

func (s *Server) newExchange(ctx context.Context) *exchange {
	return &exchange{s: s, ctx: ctx}
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
