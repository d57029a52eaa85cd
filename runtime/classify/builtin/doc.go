// Package builtin is the in-process classifier backend: named detectors for
// personal data, credentials and prompt-injection phrases, plus user-authored regular
// expressions and keyword lists. It makes no network call, scores a category 1 when it matched
// anywhere and 0 otherwise, and returns every match as a byte span so the engine can redact
// them. It reports its longest possible match as the hold-back hint.
//
// # How a call works
//
// Classify is built for the sidecar's hot path. It walks the text once, byte by byte, through
// a 256-entry trigger table built by New. Only bytes that can start or anchor a match of an
// enabled detector are triggers: '@' (email, URL passwords), digits (phone, card, IBAN, SSN,
// IPv4), ':' (IPv6, assignments, webhook URLs, Telegram/Asana/Ghost tokens), '=' and '>'
// (assignments, XML elements), ',' after a string literal (call arguments), '-' (PEM headers,
// sk-, glpat-, xox?-, xapp-, command-line flags, vendor prefixes), '_' (gh?_, github_pat_,
// vendor prefixes), '.' and '~' followed by a token byte (vendor prefixes such as hvs. and
// dt0c01., Entra's Q~), 'A' (AWS key ids, AIza, ATATT3 …), the capitals E L R S Z when the
// next byte makes a vendor prefix's first pair (EAAA, LTAI, SK, RWRTY0Iy) or begins base64
// of a JWT or PEM block (ZXlK, LS0t), 'J' (the J of eyJ), and word boundaries followed by
// the first two letters of an anchor word (prompt injection, keywords). The vendor tokens
// are one table (vendors.go) reached through a two-byte index, so a rule costs a bit in a
// pair set, not a step per byte. At a
// trigger a hand-written validator looks at a few bytes around it (Luhn, mod-97, octet ranges,
// prefixes, entropy) and either records a span or returns; it then tells the walk how far it
// may skip so that no token is looked at twice. Custom patterns run the Go regexp only on a
// small window at their own trigger bytes (see custom.go). A call that matches nothing
// allocates only the Scores slice.
//
// A text that holds invisible characters, combining marks, fullwidth, mathematical or
// circled forms of ASCII, look-alike letters of other scripts inside a Latin token, Unicode
// tag characters or a right-to-left override is scanned through a folded view of it, as a
// reader sees it, and its spans are mapped back (see fold.go); finding out reads 32 bytes
// at a time while they are ASCII.
//
// # Spans and streaming
//
// Spans are byte offsets into Input.Text, sorted by Start then End.
//
// Without Input.More the text is complete, and its end counts as a word boundary: a token at
// the end of the text matches. Two detectors are "streaming-prefix" detectors there: a PEM
// private-key block that is not closed yet, and a JWT whose header is complete but whose
// payload or signature is still arriving, both span to the end of the text. Result.Open is 0.
//
// With Input.More the text is a stream that has got this far, and its end is not a boundary.
// Result.Open is the offset of the earliest byte that text still to come could make part of
// a match: the start of a match still arriving (a token whose tail is on its way, an address
// whose domain could go on, a number with more groups to come, an unclosed PEM block), or of a
// beginning that could become one (the first words of an injection phrase, "sk-p", "-----BEG").
// It is len(Text) when nothing is pending. Every span ends at or before Open, and the text
// before Open is settled: its spans are exactly those a classification of any longer text
// would find there. The engine releases a stream only up to Open, so no part of a match
// is ever released before the whole of it can be redacted. Open is as late as the detectors
// allow — on prose, the start of the last word — so ordinary text streams almost as it
// arrives. pending.go says how each detector family computes it.
//
// HoldBackHint is the longest match, or the longest stretch of text before a match that
// decides it (the words before a number, the key before a value) when that is longer. A
// match that can be longer than 256 characters (a 1Password service account token, a base64
// PEM block in a Kubernetes Secret) is a streaming prefix, like a JWT: it matches once its
// first part has arrived and spans to the end of the text. The
// engine re-sends at least that many characters before Open, so a pending match is judged
// with its context.
//
// # Decisions worth knowing
//
//   - Emails inside code (string literals, git config, mailto:, JSON) are emails: the address
//     is personal data wherever it is written. Retina asset names (icon@2x.png), package specs
//     (react@18.2.0), decorators (@Override), scp-like git remotes (git@github.com:org/x.git)
//     and the user of a URL (https://user@host) are not. Non-ASCII letters are allowed in
//     addresses, except scripts written without spaces (Han, kana, Hangul, Thai).
//   - The password of scheme://user:password@host is a generic-secret, not an email.
//   - Phones, SSNs, card numbers and IPv4 addresses that follow an identifier word (order,
//     invoice, ref, ticket, part, sku, serial …; version, build, section, upgraded to …), a
//     '#', a minus sign or a URL path are identifiers, not matches. Seven-digit local numbers
//     (555-0132) and plain digit runs (4155550132) are not phones; +14155550132 is.
//   - us-ssn needs dashes, unless it follows "SSN" or "social security number" (then spaces
//     or nine digits will do); iban needs a country of the SWIFT registry (its length is
//     known) and is upper-case as printed. An international phone may begin with 00 instead
//     of '+' when a real country calling code follows.
//   - An email's local part may hold an apostrophe between letters (o'brien@example.ie).
//   - Assignment detectors (aws-secret-key, generic-secret) span the value only, so a redaction
//     keeps the key name readable. Keys are found in assignments of many languages (= : :=
//     => .= ?= += ::=, with a type between: var apiKey string = "…"), in name/value pairs
//     (<add key="ApiKey" value="…"/>, a YAML env item), XML elements (<password>…</password>)
//     and calls (setProperty("db.password", "…")). Unquoted code expressions (cfg.Token,
//     getenv(...)) are not values. generic-secret yields to a more specific secret detector
//     on the same bytes.
//   - Anti-forgery tokens (csrf, xsrf, authenticity_token) protect a form and are not
//     credentials. Documentation placeholders are not secrets: values with "your", "example",
//     "xxxx" and the like, AWS key ids repeating a character (AKIAXXXXXXXXXXXXXXXX), Slack
//     tokens ending in "-" or "####", PEM and PGP blocks whose body holds no key ("...",
//     nothing). AWS's published example id AKIAIOSFODNN7EXAMPLE is not a secret either.
//   - Secret tokens span their prefix (sk-, sk-ant-, glpat-, xoxb-, xoxe.xoxp-, ghp_,
//     github_pat_, shpat_, …), so a redaction leaves no part of the token visible. The
//     many vendor kinds (README.md lists them with their sources) are reported under the
//     API's categories: GitLab's under gitlab-token, Slack webhooks under slack-token, age
//     and minisign keys and base64-encoded PEM blocks under private-key, base64-encoded
//     JWTs under jwt, the rest under generic-secret.
//   - A webhook URL is redacted whole; a URL's password, a command line's password, a
//     base64 value whose decoding holds a secret (a Kubernetes Secret's data) and a UUID or
//     long number after a secret's key are secrets; a UUID alone, a key name of a test
//     fixture (nonMatchingToken, fakePassword) and a publishable key are not.
//   - Prompt injection is English. The phrase list (injection.go) matches with ASCII case
//     folding; the signal engine (injection_engine.go) reads normalised words — Unicode
//     look-alikes, zero-width characters, leetspeak, base64 and rot13 — and combines weighted
//     signals within 240 bytes. A match after a negation, after "asks you to", or inside a
//     quote a reporting word introduces (a defensive system prompt) is not one. Overlapping
//     matches are all reported. README.md has the rules, the evaluation and the figures.
package builtin
