package extproc

import (
	"net/http"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// The ProcessingResponse messages the server sends, built in one place.

// headers is a header block as Envoy sends it: pseudo-headers apart, the others with
// their canonical names. Envoy lower-cases names and puts values in raw_value (value in
// older versions).
type headers struct {
	method, path, status string
	h                    http.Header
}

func readHeaders(m *corev3.HeaderMap) headers {
	out := headers{h: http.Header{}}
	for _, hv := range m.GetHeaders() {
		v := string(hv.GetRawValue())
		if v == "" {
			v = hv.GetValue()
		}
		switch k := hv.GetKey(); k {
		case ":method":
			out.method = v
		case ":path":
			out.path = v
		case ":status":
			out.status = v
		default:
			if !strings.HasPrefix(k, ":") {
				out.h.Add(k, v)
			}
		}
	}
	return out
}

// mutation is a header mutation: headers set (replacing any value) and removed.
type mutation struct {
	set    [][2]string
	remove []string
}

func (m *mutation) setHeader(k, v string) { m.set = append(m.set, [2]string{k, v}) }

func (m *mutation) proto() *extprocv3.HeaderMutation {
	if m == nil || len(m.set) == 0 && len(m.remove) == 0 {
		return nil
	}
	hm := &extprocv3.HeaderMutation{RemoveHeaders: m.remove}
	for _, kv := range m.set {
		hm.SetHeaders = append(hm.SetHeaders, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: kv[0], RawValue: []byte(kv[1])},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return hm
}

// body is what a body response does to the chunk it answers.
type body struct {
	// replace is set when the chunk is replaced by data (cleared when data is empty).
	replace bool
	data    []byte
}

func (b body) proto() *extprocv3.BodyMutation {
	switch {
	case !b.replace:
		return nil
	case len(b.data) == 0:
		return &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: true}}
	}
	return &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: b.data}}
}

func common(m *mutation, b body) *extprocv3.CommonResponse {
	hm, bm := m.proto(), b.proto()
	if hm == nil && bm == nil {
		return &extprocv3.CommonResponse{}
	}
	return &extprocv3.CommonResponse{HeaderMutation: hm, BodyMutation: bm}
}

func requestHeadersResponse(m *mutation, override *filterv3.ProcessingMode) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{ModeOverride: override, Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{Response: common(m, body{})}}}
}

func requestBodyResponse(m *mutation, b body) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
		RequestBody: &extprocv3.BodyResponse{Response: common(m, b)}}}
}

func responseHeadersResponse(m *mutation, override *filterv3.ProcessingMode) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{ModeOverride: override, Response: &extprocv3.ProcessingResponse_ResponseHeaders{
		ResponseHeaders: &extprocv3.HeadersResponse{Response: common(m, body{})}}}
}

func responseBodyResponse(m *mutation, b body) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
		ResponseBody: &extprocv3.BodyResponse{Response: common(m, b)}}}
}

// continueResponse answers any message with "go on unchanged"; trailers included.
func continueResponse(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	switch req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return requestHeadersResponse(nil, nil)
	case *extprocv3.ProcessingRequest_RequestBody:
		return requestBodyResponse(nil, body{})
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return responseHeadersResponse(nil, nil)
	case *extprocv3.ProcessingRequest_ResponseBody:
		return responseBodyResponse(nil, body{})
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{
			RequestTrailers: &extprocv3.TrailersResponse{}}}
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
			ResponseTrailers: &extprocv3.TrailersResponse{}}}
	}
	return nil
}

// immediate is the guard's own answer e, in f's error shape, as an ImmediateResponse:
// Envoy sends it to the client instead of forwarding the request (or instead of the
// provider's response, when its headers have not been sent downstream yet). The headers
// are the guard's: a Final error (a verdict) carries x-should-retry: false. details, which
// Envoy's access log shows as %RESPONSE_CODE_DETAILS%, is the error code, never content.
func immediate(f wire.Family, e wire.APIError, id string, warnings []string) *extprocv3.ProcessingResponse {
	b := wire.AppendErrorBody(make([]byte, 0, 256), f, e)
	m := &mutation{}
	m.setHeader("content-type", "application/json")
	m.setHeader("x-request-id", id)
	if e.Final {
		m.setHeader("x-should-retry", "false")
	}
	if len(warnings) > 0 {
		m.setHeader(warningsHeader, strings.Join(warnings, ", "))
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode(e.Status)}, //nolint:gosec // an HTTP status
			Headers: m.proto(),
			Body:    b,
			Details: "guardrail_" + e.Code,
		}}}
}

// warningsHeader names the guardrails that warned, as the guard's responses do.
const warningsHeader = "x-guardrail-warnings"

// bodyMode overrides the response body's processing mode for the rest of the request
// (honoured when the filter sets allow_mode_override).
func bodyMode(m filterv3.ProcessingMode_BodySendMode) *filterv3.ProcessingMode {
	return &filterv3.ProcessingMode{ResponseBodyMode: m}
}

func contentLength(n int) string { return strconv.Itoa(n) }
