// Package e2e is the guard's end-to-end suite: it builds the real
// cmd/guard binary once per run, starts it on loopback with a policy file, and
// drives it with the official OpenAI (openai-go) and Anthropic (anthropic-sdk-go) SDKs and
// with a raw HTTP client, against test/fakeprovider and test/fakeclassifiers. What the
// tests assert is what an unmodified application sees: provider bytes passed through
// unchanged, blocks and failures surfaced as the SDKs' own error types, redactions,
// withheld tool calls, policy reloads without broken streams, and decision logs and
// metrics free of prompt, completion and credential text.
//
// GUARD_BIN, when set, names a prebuilt guard binary to test instead of building one.
package e2e
