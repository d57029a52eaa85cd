// Package engine enforces guardrails on LLM traffic: it judges a request's
// messages, then the response as it streams, and answers at each step what to release to
// the client, what to keep holding, what to rewrite, and whether to stop with a verdict. It
// has no network, HTTP or Kubernetes dependency: the guard proxy drives it, and classifier
// calls go through classify.Classifier.
//
// # API
//
// New(Config) prepares an Engine from the compiled guardrails selecting the pod, their
// compiled classifiers and a Backends resolver (classifier key → classify.Classifier). An
// Engine is immutable and shared; each request gets a Session from NewSession(Options),
// whose Options carry the ids copied into decision records (pod, request id, trace and span
// ids, model) and a Record sink.
//
//	s.Input(ctx, msgs)            → InputResult{Stop | Messages to send upstream}
//	s.Delta(ctx, ch, text)        → Step{Release, Stop}   text, reasoning, tool-call arguments
//	s.Snapshot(ctx, ch, json)     → Step                  the object channel
//	s.EndChannel(ctx, ch)         → Step                  a text, reasoning or object channel ends
//	s.EndToolCall(ctx, ch, name)  → Step                  a tool call is complete
//	s.Finish(ctx)                 → Step                  the stream ends
//	s.Output(ctx, contents)       → OutputResult          a non-streamed response
//	s.Warnings()                  → keys of the guardrails that warned (the response header)
//
// Calls are synchronous and may block while classifiers run. A Step's chunks alias session
// memory until the next call. A Verdict gives the proxy what its responses need:
// Blocked with the guardrail's key and authored reason, or Failed with the code and the
// fixed FailureMessage; the Phase says which response shape applies. Once a verdict is
// given, every later call returns it. Errors are the caller's context's, or misuse
// (ErrFinished, ErrChannelEnded, ErrWrongChannel); evaluation failures are never errors.
//
// Characters are Unicode code points: cadence, hold-back and maxInputChars count them,
// and released text is never split inside one. classify.Span offsets are byte offsets
// into Input.Text. Deltas are expected to be valid UTF-8, as decoded JSON strings are.
//
// # Phases and channels
//
// Input judges each text part and each media part of the judged messages (messages: Last
// judges the last message that still has parts, All every message) with one classifier call
// per part and guardrail. ToolResults runs before it and judges what tools returned (parts
// marked ToolResult): with messages: Last the results after the last assistant message,
// with All every one; Session.ToolResults judges an MCP server's results and tool lists
// the same way outside a request. Stream judges each channel at the cadence. Output judges
// each text, reasoning and object channel and each tool call's arguments whole, at its end
// (or the contents of a non-streamed response). ToolCalls judges each call alone (as
// {"name":…,"arguments":…}) when it is complete, then, at Finish (or in Output), the calls
// of each choice together (a JSON array) when the choice has more than one. Tool-call
// arguments are always withheld until Finish, whatever the hold-back: a client never
// receives a call that was not judged. Text that is empty or only whitespace makes no
// classifier call.
//
// One rule for tool calls, streamed or not: what reaches a tool does not
// depend on whether the client streamed. A streamed call's arguments are judged by Stream
// guardrails as they arrive, then by Output guardrails whole and by ToolCalls guardrails
// as a call; a non-streamed call's by the same Output and ToolCalls guardrails. A guardrail
// with Stream and Output therefore judges arguments in both modes, and Redact or Strip,
// which cannot rewrite a call, blocks it in both.
//
// # Cadence and the number of classifier calls
//
// Each Stream guardrail keeps, per channel, a cursor classifiedUpTo. A delta after which
// the channel's text beyond the cursor is at least evaluateEveryChars characters (any
// growth when it is 0) makes one evaluation, and the cursor moves to the end of the text
// sent. At a channel's end, text beyond the cursor is classified (the terminal evaluation)
// before it is released. So, for one guardrail and one channel of N characters in deltas of
// d characters with cadence C > 0, with k = ⌈C/d⌉ deltas per evaluation:
//
//	cadence calls   E = min(⌊N / (k·d)⌋, maxEvaluations left)      (C = 0: one per delta)
//	terminal call   1 if the cursor is short of N (N mod k·d ≠ 0, or the cap stopped E), else 0
//	Output phase    1 per channel at its end
//
// For example, C = 100, d = 10: N = 1000 makes 10 calls, N = 1005 makes 11, and the Output
// phase adds one; maxEvaluations: 3 makes 3 cadence calls and the terminal one. maxEvaluations
// counts per guardrail across the stream's channels; the terminal evaluation is never
// skipped. When the cap first skips an evaluation on a channel the guardrail records
// notInspected (partial), and its terminal record is partial. With Sentences, an evaluation
// also needs a sentence completed since the cursor (a '.', '!' or '?' followed by
// whitespace, or a newline), or pending text of maxInputChars characters, which is cut as a
// sentence. The object channel evaluates every snapshot (counted against maxEvaluations),
// plus one terminal call if the cap skipped the final snapshot, plus the Output phase.
//
// The text sent is: with chunkWindow N, the last N deltas; with Sentences, the previous
// sentence (the overlap) and the complete sentences since the cursor; otherwise the
// accumulated channel — for a span-capable classifier, the text from its hint before its
// first unsettled character (see Hold-back and release), which keeps the cost of a stream
// linear in its length. Stream texts are truncated to maxInputChars from the end (not a
// span-capable classifier's, whose window is already bounded); whole texts
// (Input parts, Output contents, tool calls, object snapshots) from the start, and such a
// truncated evaluation is recorded partial. The effective maxInputChars is the smaller of
// the guardrail's and the classifier's.
//
// # Hold-back and release
//
// What a channel releases after each delta is the minimum, over the Enforce guardrails with
// the Stream phase (Report guardrails withhold nothing), of what each lets go:
//
//   - holdBackChars unset with a span-capable (built-in) classifier (policy.HoldBackPending):
//     everything its classifier has settled. Each of its evaluations is sent with
//     classify.Input.More on an unfinished channel, and the classifier answers how far the
//     text is settled (classify.Result.Open): a match that touches the end of the text
//     seen so far, or a beginning that more text could turn into one, is pending. Nothing
//     from the start of pending text is released, and it is not redacted yet, until text
//     arrives that decides it or the channel ends; text past the guard's cursor (not judged
//     yet, below the cadence) is withheld too. Ordinary prose is released as it arrives,
//     less its last word; an entity is never released in part, whatever its length.
//   - an integer holdBackChars H: everything but the last H characters, and, with a
//     span-capable classifier, never its pending text. Text below the cadence is judged
//     later, so with H smaller than the cadence up to C − H characters reach the client
//     before they are judged (remote classifiers: holdBackChars unset is 0).
//   - Unbounded: nothing until the channel ends.
//
// At a channel's end the terminal evaluation judges, without More, every guard's text not
// judged or still pending; after it and the Output phase pass, the rest is released.
// Because an evaluation runs whenever the unclassified text reaches C, a hold-back H ≥ C
// releases no unclassified character; and with a span-capable classifier no part of a
// match is released whatever H is. With Sentences the text after the last complete sentence
// is not judged yet; it is withheld under the pending hold-back and needs H to cover a
// sentence otherwise. After maxEvaluations a guard that followed pending matches withholds
// its classifier's longest match (its hint), as a fixed hold-back would.
//
// Stream classifiers are sent what the sanitizers before them left, so a remote
// judge never receives what was redacted — except span-capable classifiers, which are
// judged incrementally on upstream text (strips applied, redactions not): from their hint
// before the first character they have not settled to the end, untruncated. An entity
// evaluations saw in parts is therefore recognised whole, and its redaction is one marker
// covering it, however many evaluations saw it.
//
// # Actions and composition
//
// Category rules (score ≥ threshold, per-category overrides, refusals matching unless
// refusal: Ignore) and CEL rules give findings in the classifier's authored category order,
// then rules in authored order; the strongest action wins (Block > Strip > Redact >
// Pseudonymize > Warn), with the reason of its first finding. Block stops the content. Strip drops an input part,
// reasoning, or a stream's held text; it escalates to Block on the last user part of a
// request and on an answer text or object at the Output phase (the whole final output).
// Redact replaces matched spans with [REDACTED:<category>]; overlapping spans, from one
// answer or from two guardrails, merge into one marker labelled with the category of the
// span that starts first, then of the longer one, then of the earlier one; a redaction
// touching stripped text is dropped with it. Redact or Pseudonymize without a span for a
// matched category, and Strip and Redact on tool calls, act as Block. Escalations are
// recorded.
//
// Sanitizers (guardrails with a Strip, Redact or Pseudonymize action) run first, one after
// the other by priority then name, each judging what the previous ones left; the other
// guardrails then judge the sanitized content concurrently (remote backends on their own
// goroutines, built-in ones on the caller's). Records come in that order: sanitizers in run order, then
// the others by key. A block wins over a failure; warnings add up.
//
// ClusterGuardrails (policy.Guardrail.Cluster) form a tier of their own that runs first
// (policy.RunOrder): their sanitizers, then their checks, on the content as
// it arrives; the namespace's guardrails then judge what the cluster tier left. So a
// tenant's guardrail adds to a cluster one and never weakens it: a tenant's Report or
// Warn leaves a cluster Block standing, and a tenant's Redact or Strip cannot hide content
// from a cluster check. (In a stream, text a tenant's Strip dropped before a cluster
// guardrail's next cadence evaluation is not judged by it; it never reaches the client.)
//
// # Pseudonymization
//
// Pseudonymize (Input and ToolResults) is a sanitizer: it replaces each span of a matched
// category with a placeholder <TAG_N> (the category upper-cased, '-' as '_') from the
// session's mapping (pseudonym.go) — one per distinct value, numbers skipping the
// placeholders the request already spells, at most 512 values, then redaction — and,
// once the phases have run, masks every other occurrence of the values in the request's
// text and in the history's tool-call arguments (Message.Calls). Answers are restored on
// release (restore.go): releaseTo withholds, on top of the hold-back, text from a '<'
// that may still become one of the request's placeholders, and renders the whole ones
// with their values (escaped for JSON in tool-call arguments and the object channel,
// where \u003c and \u003e spell the brackets too); a placeholder the request never gave
// out is left as it is. Stream and Output guardrails judge the upstream text
// (placeholders); ToolCalls judge the call restored; records count values per category
// (Finding.Count), never the values. Session.End drops the mapping.
//
// A namespaced Guardrail's Pseudonymize cannot restore what the cluster tier keeps out of
// answers (restored.go): the ClusterGuardrails with the Stream or Output phase also judge
// the text the client receives, the values a namespaced Guardrail masked restored — each
// release of a stream that restores one (Stream), each whole content or channel at its end
// (Output) — and their verdicts apply to it: a block stops the answer before the value is
// released, a redaction covering a value releases its placeholder as the marker. Values a
// ClusterGuardrail masked itself, and engines without a cluster tier judging answers, are
// restored as described above.
//
// # Failures and modes
//
// A classifier error, a deadline (the guardrail's timeout, or the classifier's, per
// evaluation), a panic, an invalid answer (a score not finite or outside [0,1], a missing or
// extra score or answer, a span outside the text, a choice outside the criteria, a rule
// that cannot be evaluated) or a guardrail whose classifier is not configured is an
// evaluation failure with a code. failurePolicy Closed stops the content with a Failed
// verdict, in either mode, releasing nothing of that step; Open passes the content and
// records notInspected. Report mode records would* outcomes and never blocks, strips,
// redacts or withholds. A part whose modality the classifier cannot inspect follows
// unsupported (Block, Warn, Allow with a notInspected finding), or fails with UNSUPPORTED.
//
// # Decision records
//
// Every evaluation yields a Record, handed to Options.Record in a deterministic order:
// guardrail key and generation, classifier key, phase, location (message and part, or
// channel), outcome, mode, findings (category id or rule name, score, threshold), error
// code, duration, escalation and partial-inspection flags, and the session's ids. Records,
// verdicts and errors never contain prompt or completion text, category descriptions, media
// URLs or credentials.
//
// # Memory
//
// A session keeps no records and, per channel, only the upstream text it may still need:
// from the smallest of the released position and each Stream guardrail's next window start
// (its last maxInputChars characters for Cumulative, its last chunkWindow deltas, the start
// of the previous sentence for Sentences, its hint before its first unsettled character for
// a span-capable classifier) to the end, plus a head of maxInputChars characters for the
// Output phase, plus the redaction markers inside that text. The buffer is trimmed when it
// has doubled, so it stays under twice the larger of 4 KiB and that span, plus a delta.
// This is bounded by the hold-back, the pending text and the windows, not by the stream's
// length, when no hold-back is Unbounded, every Stream guardrail has a span-capable
// classifier, an effective maxInputChars or a chunkWindow, and every Output guardrail has
// an effective maxInputChars. Otherwise the whole channel is kept: under Unbounded (the
// held text), and when a remote classifier's Cumulative or Sentences stream guardrail or
// an Output guardrail has no maxInputChars (the classifier is sent the whole channel, so
// each such evaluation also costs time in the channel's length: set maxInputChars on
// streaming guardrails). Pending text is kept until it is decided (an unclosed private-key
// block, say, until its END line). Tool-call arguments are kept until Finish; the object
// channel keeps its current snapshot.
package engine
