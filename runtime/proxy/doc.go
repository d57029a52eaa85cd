// Package proxy is the guard's HTTP side: it routes the app's
// OpenAI, Anthropic and Gemini calls, drives the engine over the request, the upstream call and
// the (streamed) response, and writes what the client sees. It knows nothing of category
// rules (the engine decides) nor of wire formats (runtime/wire encodes).
//
// Routes: POST /v1/chat/completions, /v1/responses, /v1/embeddings (Input only) and
// /v1/messages are guarded, and the Gemini API's {version}/models/{model}:generateContent
// and :streamGenerateContent, and its :countTokens, :embedContent and :batchEmbedContents
// (Input only, as embeddings: the answer passes through as it is); GET routes (such as
// /v1/models) pass through; any other POST
// is refused with 404 unless listed in Config.PassThrough, so that no unguarded path
// exists by accident. Requests go to the Anthropic upstream when they are Anthropic
// calls (the /v1/messages route, or an anthropic-version or x-api-key header), to the
// Gemini upstream when they are Gemini calls, else to the OpenAI upstream. Credentials are forwarded untouched and never logged — except for
// the families of a keyless pod (Config.Providers), whose calls go to the snapshot's
// ModelProvider with its credential instead (keyless.go).
//
// Without a policy the guard refuses guarded routes (503): it fails closed.
//
// # What is refused before any route
//
// The guard routes on the path as it arrives and forwards that path, so a path a provider
// (or a proxy in front of it) could resolve to another one is refused with 400: dot
// segments, plain or percent-encoded (GET /v1/../../internal/admin), empty segments,
// encoded slashes, backslashes, control characters and double encoding
// (unforwardablePath). Normalising instead would guess how each provider normalises. A
// GET or HEAD with a body is refused with 400 on every path: a provider that reads it
// would read a prompt nobody judged. Guarded requests naming a field the guard reads
// twice are refused with 400 by runtime/wire (two spellings, or one spelling repeated,
// wherever judged content nests), since providers differ in which copy they read.
//
// # Answers collected later
//
// A Responses answer can be fetched again with GET /v1/responses/{id}: stored answers
// (store defaults to true) as the provider made them, before the guard's redactions, and
// answers made with background: true, which never went through the guard at all.
//
//   - POST /v1/responses with background: true is refused with 400 (code
//     unsupported_parameter) while a guardrail selecting the pod enforces Stream, Output or
//     ToolCalls. A background answer is meant to be collected in pieces (polled while in
//     progress, or streamed from any event on), which the guard cannot judge as one
//     answer. Report-mode guardrails do not refuse it: Report never changes traffic.
//   - GET /v1/responses/{id} is judged: the retrieved object is the same as the answer to
//     a non-streamed POST, so it takes that path (Output and ToolCalls phases; allowed
//     unchanged, redacted, replaced by the verdict, or refused as a failure), with what
//     the stored object repeats of its request (its text format). Errors pass through.
//     Without a policy it is refused (503), as guarded routes are.
//   - GET /v1/responses/{id}?stream=true, the streamed retrieval of a background answer,
//     is refused with 400 before the provider is called, and an event stream a provider
//     sends to a retrieval anyway is a recorded failure: a stream resumed at any event
//     cannot be judged as a whole, and background answers are refused in the first place.
//     (openai-go's GetStreaming puts stream in the body of the GET instead: refused as
//     every GET with a body is.)
//   - Stored chat completions (store: true, made by any app of the project, through a
//     guard or not) are judged the same way (storedchat.go): GET /v1/chat/completions/{id}
//     as the answer to a non-streamed POST, GET /v1/chat/completions each listed
//     completion as one answer, and GET /v1/chat/completions/{id}/messages each message
//     (content, text content parts, tool calls) as one; a blocked one is replaced by the
//     verdict in its place.
//
// Other sub-routes (/v1/responses/{id}/input_items: the prompt as the guard forwarded it)
// pass through as GET routes do.
//
// # Timeouts
//
// Each read of a request body must make progress within Config.ReadIdleTimeout, and each
// write to the client within Config.WriteIdleTimeout; a body or an answer that keeps
// moving is never cut, however long it takes. The server's own ReadTimeout and
// WriteTimeout are not used: they are deadlines for the whole request, which streams
// outlast (see idleReader). Header and keep-alive timeouts are the server's
// (cmd/guard).
package proxy
