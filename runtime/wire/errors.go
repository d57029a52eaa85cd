package wire

import (
	"net/http"
	"strconv"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// Error codes the guard's own errors carry.
const (
	// CodeContentPolicyViolation is the code of an input block.
	CodeContentPolicyViolation = "content_policy_violation"
	// CodePolicyEvaluationFailed is the code of a fail-closed evaluation failure.
	CodePolicyEvaluationFailed = "policy_evaluation_failed"
	// FailureMessage is the fixed message of a fail-closed evaluation failure.
	FailureMessage = "policy evaluation failed"
)

// APIError is an error the guard answers itself, in the shape of the family's provider.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Type is the OpenAI error type (invalid_request_error, server_error, ...). The
	// Anthropic type is derived from Status.
	Type    string
	Code    string
	Message string
	// Guardrail is the namespace/name of the guardrail that decided, when one did.
	Guardrail string
	// Final marks an answer a retry cannot change: a policy verdict (a block, or a
	// fail-closed failure after the guard's own retries). WriteError then sets
	// x-should-retry: false. Every other error leaves the SDK to its own retry rules, as
	// it would apply them without the guard (a 502 or 503 is retried, a 4xx is not).
	Final bool
}

// Blocked is the error of an input block: HTTP 400, invalid_request_error,
// content_policy_violation, with the guardrail's authored reason.
func Blocked(reason, guardrail string) APIError {
	return APIError{Status: http.StatusBadRequest, Type: "invalid_request_error",
		Code: CodeContentPolicyViolation, Message: reason, Guardrail: guardrail, Final: true}
}

// Failed is the error of a fail-closed evaluation failure: HTTP 500, server_error,
// policy_evaluation_failed, with the fixed FailureMessage.
func Failed(guardrail string) APIError {
	return APIError{Status: http.StatusInternalServerError, Type: "server_error",
		Code: CodePolicyEvaluationFailed, Message: FailureMessage, Guardrail: guardrail, Final: true}
}

// anthropicType maps an HTTP status to Anthropic's error type.
func anthropicType(status int) string {
	switch {
	case status == http.StatusBadRequest:
		return "invalid_request_error"
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusPaymentRequired:
		return "billing_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusGatewayTimeout:
		return "timeout_error"
	case status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// appendOpenAIError appends the inner OpenAI error object:
// {"message","type","param":null,"code","guardrail"}.
func appendOpenAIError(dst []byte, e *APIError) []byte {
	dst = append(dst, `{"message":`...)
	dst = jsonx.AppendString(dst, e.Message)
	dst = append(dst, `,"type":`...)
	dst = jsonx.AppendString(dst, e.Type)
	dst = append(dst, `,"param":null,"code":`...)
	dst = appendOptString(dst, e.Code)
	if e.Guardrail != "" {
		dst = append(dst, `,"guardrail":`...)
		dst = jsonx.AppendString(dst, e.Guardrail)
	}
	return append(dst, '}')
}

// appendAnthropicError appends the whole Anthropic error object:
// {"type":"error","error":{"type","message","details":{"error_code"},"guardrail"}}.
// Anthropic's SDKs expose details.error_code as the error's code.
func appendAnthropicError(dst []byte, e *APIError) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = jsonx.AppendString(dst, anthropicType(e.Status))
	dst = append(dst, `,"message":`...)
	dst = jsonx.AppendString(dst, e.Message)
	if e.Code != "" {
		dst = append(dst, `,"details":{"error_code":`...)
		dst = jsonx.AppendString(dst, e.Code)
		dst = append(dst, '}')
	}
	if e.Guardrail != "" {
		dst = append(dst, `,"guardrail":`...)
		dst = jsonx.AppendString(dst, e.Guardrail)
	}
	return append(dst, '}', '}')
}

func appendOptString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return jsonx.AppendString(dst, s)
}

// AppendErrorBody appends the JSON body of e in f's shape: OpenAI's
// {"error":{"message","type","param","code","guardrail"}} or Anthropic's
// {"type":"error","error":{"type","message","details":{"error_code"},"guardrail"}}, or
// Gemini's {"error":{"code","message","status","details":[ErrorInfo]}}.
func AppendErrorBody(dst []byte, f Family, e APIError) []byte {
	if f.Anthropic() {
		return appendAnthropicError(dst, &e)
	}
	if f.Gemini() {
		return appendGeminiError(dst, &e)
	}
	dst = append(dst, `{"error":`...)
	dst = appendOpenAIError(dst, &e)
	return append(dst, '}')
}

// WriteError answers e in f's shape. A Final error carries x-should-retry: false, which
// both official SDKs honour: a block is deterministic and a fail-closed failure is
// already the end of the guard's own retries, so the SDKs' automatic retries (on every
// 5xx by default) would only multiply the load. Other errors (an unreachable provider,
// a guard without a policy yet) carry no such header, so that the SDKs retry them
// exactly as they would retry the provider itself.
func WriteError(w http.ResponseWriter, f Family, e APIError) error {
	body := AppendErrorBody(make([]byte, 0, 256), f, e)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if e.Final {
		h.Set("X-Should-Retry", "false")
	}
	w.WriteHeader(e.Status)
	_, err := w.Write(body)
	return err
}
