// Package remote holds the classifier backends that judge content over HTTP: an OpenAI-style moderation endpoint, an LLM judge behind an OpenAI-compatible
// chat completions endpoint, and a webhook. New builds one from a Config, which the guard
// derives from a compiled policy classifier; each implements classify.Classifier and is
// safe for concurrent use. The package depends on classify alone.
//
// # What every backend does
//
// One call path serves the three backends (see base.call and endpoint.post):
//
//   - Input. A non-empty text needs the text modality and every part needs its modality
//     in the classifier's modalities, or the call fails with UNSUPPORTED before any
//     request. The text is truncated to its first maxInputChars characters (runes). The
//     engine already sends at most the smaller of the guardrail's and the classifier's
//     maxInputChars — the head of a whole text, the tail of a streamed channel — so this
//     cut never changes what the engine sends; it bounds what other callers send.
//   - Cache. With a cache configured, a valid answer is stored under the SHA-256 of the
//     exact prepared input (text and every part's modality, URL and media type) for ttl,
//     at most maxEntries, least recently used evicted first. Errors are never stored.
//   - Budget. The classifier's timeout covers waiting for a concurrency slot, every
//     attempt and the backoff between them; 0 leaves only the caller's context. At most
//     maxConcurrency calls are in flight; a call waiting for a slot gives up when its
//     context ends. Cancelling the context ends an in-flight request.
//   - Retries. Transport errors, 429 and 5xx are retried at most retries times (0–3),
//     with exponential backoff from 100ms and jitter, or after the server's Retry-After
//     when it is longer. A retry that could not start before the deadline is not waited
//     for: the call returns the last error at once. Without a deadline, a Retry-After
//     over 10s ends the call too. Other statuses are not retried.
//   - Breaker. After 5 calls in a row fail without an answer (transport errors, 429 and
//     5xx after the retries, deadlines), calls fail at once with CLASSIFIER_FAILED
//     ("circuit open") and no request, for 1 s, then one probe goes; each failed probe
//     doubles the wait up to 30 s, and any answer closes the breaker (breaker.go). Clients
//     that retry a fail-closed 5xx therefore cost a classifier that is down one probe per
//     cool-down, and fail-open guardrails stop waiting for its timeouts.
//   - Requests carry "Authorization: Bearer <token>" when the classifier has a token.
//     The package's own HTTP client does not follow redirects, so the token never leaves
//     the configured origin.
//   - Replies are read up to 1 MiB.
//
// Errors are *classify.Error values: TIMEOUT when the deadline passed; CLASSIFIER_FAILED
// for transport errors, non-2xx statuses and cancellation; INVALID_ANSWER for a reply
// that is not the wire format, a score that is not a finite number within [0,1] (a
// string, null, 1e999 and -0.5 are all invalid), or missing or extra keys;
// UNSUPPORTED for content the backend cannot inspect. Messages carry the HTTP status or a
// short reason and the authored ids involved — never judged text, media URLs, the
// endpoint URL, reply bodies or the token. The package does not log.
//
// # Moderation
//
// A request is POST {"model": model, "input": input}, the model omitted when unset. The
// input is the text as a string; with images, an array of content parts
// ({"type":"text","text":...} then {"type":"image_url","image_url":{"url":...}}); in a
// batch (Moderation.ClassifyBatch), an array of strings. Scores[i] is
// results[k].category_scores[categoryNames[i]]. Every mapped name must be present; other
// names the endpoint reports are ignored, as are flagged and categories. There must be
// exactly one result per input. The format has no audio or file parts.
//
// # LLM judge
//
// A request is POST {"model", "messages"} to a chat completions endpoint. Media parts
// follow the text as standard content parts: image_url with the part's URL, input_audio
// with the data of a base64 data URL, file with a data URL (file_data) or a file id
// (file_id). URLs are passed, never fetched.
//
// Format scores sends a system message (the instructions, then the categories with their
// descriptions in authored order, or the questions with their criteria) and the content
// as the user message, with response_format {"type":"json_schema","json_schema":
// {"name":"guardrail_scores","strict":true,"schema":...}}. The schema has exactly the
// category ids, each a number within [0,1]; or exactly the question ids, each
// {"type":"answer", "probability"|"choice"|"score": ...} or {"type":"refusal"}. The
// content of choices[0].message is parsed as that JSON object (one surrounding Markdown
// code fence is tolerated). A message.refusal refuses every category (Result.Refusals all
// true, scores 0) or every question.
//
// Format llamaGuard sends one user message holding Llama Guard's task prompt: the
// categories numbered S1..Sn in authored order, then the content as the user turn. The
// server must pass the message to the model as is (no chat template that adds its own
// categories). A reply "safe" scores every category 0; "unsafe" and a second line
// "S1,S3" scores those categories 1; anything else is INVALID_ANSWER.
//
// # Webhook contract
//
// A webhook is any HTTP service implementing this contract; it is a public API.
//
// The guard sends POST <url> with Content-Type application/json, Authorization: Bearer
// <token> when the Classifier has credentials, and this body:
//
//	{
//	  "text": "the content to judge (may be empty when parts are sent)",
//	  "parts": [{"type": "image", "url": "https://… or data:…", "mimeType": "image/png"}],
//	  "categories": [{"id": "violence", "description": "…"}],
//	  "questions": [{"id": "onTopic", "type": "boolean",
//	                 "criteria": [{"value": "true", "description": "…"},
//	                              {"value": "false", "description": "…"}],
//	                 "instructions": "…"}]
//	}
//
// parts is present only when media are judged; a part's type is image, audio or file,
// and its url is what the client sent (the guard never fetches it); mimeType is optional.
// Exactly one of categories (in authored order) and questions is present; descriptions
// and instructions are omitted when empty. Question types are boolean (criteria true and
// false), choice, and score (criteria are levels from lowest to highest).
//
// A classifier with categories expects, with status 200:
//
//	{"scores": {"violence": 0.93, "self-harm": 0.0}, "refusals": ["self-harm"]}
//
// scores has exactly one member per category id — a JSON number within [0,1] — and no
// other; refusals (optional) lists categories the service declines to judge: their score
// may be omitted and is ignored, and a guardrail counts them as matches unless it says
// refusal: Ignore. A classifier with questions expects:
//
//	{"answers": {"onTopic": {"type": "answer", "probability": 0.9},
//	             "tone": {"type": "answer", "choice": "neutral"},
//	             "severity": {"type": "answer", "score": 0.25},
//	             "legal": {"type": "refusal"}}}
//
// answers has exactly one member per question id and no other. A boolean answer carries
// probability (that "true" holds, within [0,1]); a choice answer carries choice, one of
// the criteria values; a score answer carries score within [0,1], the criteria being
// evenly spaced levels from 0 (first) to 1 (last). A refusal carries none of them.
// Members not named here are ignored; null counts as absent. Anything else — another
// status, a malformed body, a value of the wrong type, a number outside [0,1] or not
// finite, a missing or extra key — fails the evaluation, and the guardrail's
// failurePolicy decides. 429 and 5xx are retried within the classifier's retries and
// timeout, honouring Retry-After. Replies are read up to 1 MiB.
//
// With a caBundle, an https webhook must present a certificate chaining to one of its
// CAs; the system roots are not trusted.
package remote
