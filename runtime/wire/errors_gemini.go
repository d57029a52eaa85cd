package wire

import (
	"net/http"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// geminiStatus maps an HTTP status to the google.rpc status name Google's APIs answer
// with it.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// geminiErrorDomain is the ErrorInfo domain of the guard's own errors.
const geminiErrorDomain = "guardrail.dev"

// appendGeminiError appends the whole error object as Google's APIs write it:
// {"error":{"code","message","status","details":[{"@type":".../google.rpc.ErrorInfo",
// "reason","domain","metadata":{"code","guardrail"}}]}}. @google/genai raises it as an
// ApiError whose status is code and whose message holds the JSON; the ErrorInfo reason is
// the guard's code in upper case (CONTENT_POLICY_VIOLATION), as ErrorInfo reasons are
// spelled, and metadata repeats the code as the other formats spell it.
func appendGeminiError(dst []byte, e *APIError) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = jsonx.AppendInt(dst, e.Status)
	dst = append(dst, `,"message":`...)
	dst = jsonx.AppendString(dst, e.Message)
	dst = append(dst, `,"status":"`...)
	dst = append(dst, geminiStatus(e.Status)...)
	dst = append(dst, '"')
	if e.Code != "" || e.Guardrail != "" {
		dst = append(dst, `,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":`...)
		dst = jsonx.AppendString(dst, strings.ToUpper(cmpOr(e.Code, "guardrail")))
		dst = append(dst, `,"domain":"`+geminiErrorDomain+`","metadata":{`...)
		sep := ""
		if e.Code != "" {
			dst = append(dst, `"code":`...)
			dst = jsonx.AppendString(dst, e.Code)
			sep = ","
		}
		if e.Guardrail != "" {
			dst = append(dst, sep+`"guardrail":`...)
			dst = jsonx.AppendString(dst, e.Guardrail)
		}
		dst = append(dst, "}}]"...)
	}
	return append(dst, '}', '}')
}
