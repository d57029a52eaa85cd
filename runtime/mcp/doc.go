// Package mcp fronts MCP servers reached over the streamable HTTP transport and judges
// their traffic with the guard's Guardrails: `--mcp-upstream NAME=URL`
// serves /mcp/NAME on the guard's proxy listener. User documentation: README.md beside
// this file.
//
// # Transport
//
// The Handler speaks the transport as the server does, so that a client cannot tell it
// from the server but for the verdicts: POST of JSON-RPC messages answered with JSON or
// an event stream, GET for the server's own stream, DELETE to end a session, the
// Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID and credential headers passed
// untouched both ways, and batches where the protocol version allows them (no
// MCP-Protocol-Version header, or one before 2025-06-18). Answers are relayed as they
// come: the GET stream's headers are flushed at once, and each event is written as soon
// as it is judged. When the server's stream ends before it answered the requests of its
// POST, each gets a JSON-RPC error (code -32000, data.code upstream_unreachable) at once;
// a client going away cancels the call to the server, and notifications/cancelled passes
// as every notification does.
//
// # What is judged
//
// Requests: tools/call's arguments, before the call is forwarded, exactly as a model's
// tool call in a non-streamed answer (Output-phase guardrails on the toolCall channel,
// then the ToolCalls phase). Everything the server sends is judged by its shape, wherever
// it comes (JSON answer, a POST's stream, the GET stream): tool results (content texts and
// embedded resources' texts, joined as one text and each on its own, so that an entity
// split across items is found; structuredContent), tool lists (each tool's title,
// description and schemas, on their own) and progress messages, all by the ToolResults
// phase. Other messages pass unjudged (see README.md, Limits).
//
// A JSON-RPC message whose members the guard reads is refused when a member is named
// twice, in any case: the guard would judge one copy while the receiver reads another.
//
// With Config.Tracer, each judged POST is a span named as MCP's semantic conventions name
// a client's ("tools/call search"), a child of the caller's context in params._meta or the
// traceparent header, with its guardrail evaluations as children (tracing.go).
package mcp
