package extproc

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// benchStream is a streamed chat answer of 200 deltas as a provider sends it, cut into
// one chunk per event (as Envoy hands over what arrives), and the messages Envoy sends for
// it: request headers, the request body, response headers, then one per chunk.
func benchStream(b *testing.B) []*extprocv3.ProcessingRequest {
	b.Helper()
	body := chatBody("Summarise the meeting notes, please.", true)
	text := strings.Repeat("The meeting moved to Thursday; write to jane.doe@example.com with questions. ", 20)
	answer, ct := upstreamAnswer(b, "/v1/chat/completions", body, fakeprovider.Script{Choices: []fakeprovider.Choice{
		{Deltas: fakeprovider.Chunks(text, len(text)/200)}}})
	reqs := []*extprocv3.ProcessingRequest{
		{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: hdr(":method", "POST", ":path", "/v1/chat/completions", "content-type", "application/json",
				"content-length", strconv.Itoa(len(body)), "x-request-id", "bench")}}},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
		{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: hdr(":status", "200", "content-type", ct)}}},
	}
	events := bytes.SplitAfter(answer, []byte("\n\n"))
	for i, ev := range events {
		if len(ev) == 0 {
			continue
		}
		reqs = append(reqs, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: ev, EndOfStream: i == len(events)-1}}})
	}
	return reqs
}

// benchHarness is a server enforcing redactPolicy with metrics but without a decision
// log (the sidecar's default), served on loopback.
func benchHarness(b *testing.B) *harness {
	b.Helper()
	h := newHarness(b, redactPolicy)
	h.srv = New(Config{Policy: h.px, Pod: "bench", Log: slog.New(slog.DiscardHandler)})
	h.client = serve(b, h.srv)
	return h
}

// BenchmarkMessage is the server's own cost per ext_proc message of a streamed, redacted
// answer (the engine and the codecs included, gRPC not): every message of one exchange
// handled in order, the cost divided by the number of messages.
func BenchmarkMessage(b *testing.B) {
	h := benchHarness(b)
	reqs := benchStream(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		x := h.srv.newExchange(b.Context())
		for _, r := range reqs {
			if resp := x.handle(r); resp == nil || resp.GetImmediateResponse() != nil {
				b.Fatalf("%v", resp)
			}
		}
		x.close()
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(reqs)), "ns/msg")
	b.ReportMetric(float64(len(reqs)), "msgs/exchange")
}

// BenchmarkMessageGRPC is the same over a gRPC stream on loopback, as Envoy drives it:
// each message sent and its answer awaited before the next.
func BenchmarkMessageGRPC(b *testing.B) {
	h := benchHarness(b)
	reqs := benchStream(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		stream, err := h.client.Process(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range reqs {
			if err := stream.Send(r); err != nil {
				b.Fatal(err)
			}
			if _, err := stream.Recv(); err != nil {
				b.Fatal(err)
			}
		}
		_ = stream.CloseSend()
		_, _ = stream.Recv()
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(reqs)), "ns/msg")
}

// BenchmarkWholeAnswer is one non-streamed exchange (request judged, answer buffered and
// judged) through the server without gRPC.
func BenchmarkWholeAnswer(b *testing.B) {
	h := benchHarness(b)
	body := chatBody("Where do I write?", false)
	answer, ct := upstreamAnswer(b, "/v1/chat/completions", body, fakeprovider.Reply("Write to "+email+" today."))
	reqs := []*extprocv3.ProcessingRequest{
		{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: hdr(":method", http.MethodPost, ":path", "/v1/chat/completions", "content-length", strconv.Itoa(len(body)))}}},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
		{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: hdr(":status", "200", "content-type", ct)}}},
		{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: answer, EndOfStream: true}}},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		x := h.srv.newExchange(b.Context())
		for _, r := range reqs {
			x.handle(r)
		}
		x.close()
	}
}
