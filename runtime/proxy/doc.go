// Package proxy is the guard's HTTP side (DESIGN.md §2, §5): it routes the app's
// OpenAI and Anthropic calls, drives the engine over the request, the upstream call and
// the (streamed) response, and writes what the client sees. It knows nothing of category
// rules (the engine decides) nor of wire formats (runtime/wire encodes).
//
// Routes: POST /v1/chat/completions, /v1/responses, /v1/embeddings (Input only) and
// /v1/messages are guarded; GET routes (such as /v1/models) pass through; any other POST
// is refused with 404 unless listed in Config.PassThrough, so that no unguarded path
// exists by accident. Requests go to the Anthropic upstream when they are Anthropic
// calls (the /v1/messages route, or an anthropic-version or x-api-key header), else to
// the OpenAI upstream. Credentials are forwarded untouched and never logged.
//
// Without a policy the guard refuses guarded routes (503): it fails closed.
package proxy
