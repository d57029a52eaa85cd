// Package wire is the guard's wire layer for the guarded provider routes:
// it extracts what the guard judges from requests and responses of each API family, and
// encodes what clients receive when the guard changes, holds back or stops content, so
// that unmodified OpenAI, Anthropic and Gemini SDKs see valid provider traffic and surface
// blocks and failures as their normal error types.
//
// # Families
//
//   - FamilyChat: OpenAI POST /v1/chat/completions, streamed as data-only
//     chat.completion.chunk events ended by "data: [DONE]".
//   - FamilyResponses: OpenAI POST /v1/responses, streamed as typed events
//     (response.output_text.delta, response.completed, ...).
//   - FamilyEmbeddings: OpenAI POST /v1/embeddings, judged on input only.
//   - FamilyMessages: Anthropic POST /v1/messages, streamed as typed events
//     (message_start, content_block_*, message_delta, message_stop).
//   - FamilyGemini: the Gemini API's POST /v1beta/models/{model}:generateContent and
//     :streamGenerateContent (also under /v1 and /v1alpha; GeminiCall reads the model and
//     the stream from the path), streamed with alt=sse as data-only events, each a
//     GenerateContentResponse, without a terminator.
//   - FamilyGeminiInput: the Gemini API's :countTokens, :embedContent and
//     :batchEmbedContents of a model, judged on input only: their contents, content,
//     requests[].content and titles, and a countTokens' generateContentRequest.
//
// A Responses answer fetched again (GET /v1/responses/{id}) is the same object as the
// answer to a non-streamed POST: StoredRequest reads from it what of its request shapes
// it, and DecodeResponse decodes it.
//
// # Neutral model
//
// A Request carries messages of Parts (text, or media by reference with a
// classify.Modality), system instructions flagged, tool calls of the history, declared
// tools, and the flags that shape the response: Stream, N, Object (JSON output format),
// IncludeUsage and Background. Request bodies are read as encoding/json reads them, but a
// field the guard reads may be named only once (package jsonx, ambiguous.go). A response is made of
// content.Channels — per choice, the answer text,
// reasoning text, each tool call's arguments, or the object — the same channels the engine
// judges. A stream is decoded into Items: deltas, tool call starts, channel ends,
// finishes, usage, the terminator, upstream errors, and pass-through for everything with
// nothing to judge.
//
// # Streams
//
// A Stream decodes each upstream sse.Event into Items and encodes what the client
// receives for it with Emit, given the content the engine released. When the releases
// are exactly the event's own deltas, Emit forwards the event's raw bytes; otherwise it
// builds delta events on the upstream's template (same ids, model, created, indexes),
// followed by what remains of the event, and rewrites events that repeat accumulated
// content (Responses done events) to match what the client received. Tool calls are
// never forwarded as they stream; each is sent complete once released, and for the
// index-ordered formats (Messages, Responses) whatever follows a withheld call waits
// behind it, so the client never sees an index out of order and never an actionable call
// that was not judged. AppendBlock and AppendFailure end a stream as clients expect (config/samples/README.md, "What clients see").
//
// A block never takes back what the client received and replaces everything it did not
// receive by the reason, after BlockSeparator when answer text came before. Its ending
// is written in two parts, AppendBlockReason then AppendBlockEnd, so that the proxy can
// read on from the upstream in between (Decode only) while AwaitsUsage holds: the event
// that closes the block (chat usage chunk, Messages message_delta, Responses
// response.incomplete) then carries the provider's own usage.
//
// What the proxy does per upstream event, in outline:
//
//	items, err := st.Decode(items[:0], &ev) // err: malformed upstream, a recorded failure
//	for _, it := range items {
//		switch it.Kind {
//		case ItemDelta:        // session.Delta, or Snapshot(it.Snapshot) for content.Object
//		case ItemChannelEnd:   // session.EndChannel, or EndToolCall(it.Name) for a tool call
//		case ItemFinish:       // when it.Final: session.Finish (releases the tool calls)
//		case ItemTerminator:   // session.Finish if not done yet
//		}
//		// append copies of the released chunks to rel; stop on a verdict
//	}
//	out, err = st.Emit(out[:0], &ev, rel) // or st.AppendBlock / st.AppendFailure
//
// Content outside the judged channels: OpenAI refusal text (chat delta.refusal and
// message.refusal, Responses refusal parts) is the provider's own refusal message, not a
// channel, and passes through unjudged. Content that would reach the
// client outside delta events never does: an Anthropic message_start carrying content
// blocks is malformed, and Responses done events and final responses are checked on
// every stream to repeat only what the client received.
//
// # Errors and blocks
//
// Blocked and Failed build the guard's own errors; AppendErrorBody and WriteError write
// them in OpenAI's shape ({"error":{"message","type","param","code","guardrail"}}) or
// Anthropic's ({"type":"error","error":{"type","message","details":{"error_code"},
// "guardrail"}}) or Google's ({"error":{"code","message","status","details":[ErrorInfo]}});
// only these two, policy verdicts, carry x-should-retry: false (Final).
// BlockResponse replaces a non-streamed response by the reason: finish_reason
// content_filter for OpenAI, and for Anthropic stop_reason "refusal" with the reason as
// the text and as stop_details.explanation — Anthropic has no content_filter stop
// reason, and "refusal" is its native signal for content the model will not produce. For
// Gemini every candidate's content is the reason with finishReason SAFETY (FinishSafety)
// and the reason as finishMessage: SAFETY is Gemini's own reason for content stopped by a
// filter, which the SDKs expose; a stream ends the same way, then ends (Gemini streams have
// no terminator), and a failure mid-stream is a chunk holding the error object, which
// @google/genai raises as an ApiError.
package wire
