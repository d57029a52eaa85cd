// Package builtin is the in-process classifier backend (DESIGN.md §3.1): named detectors for
// personal data, credentials and prompt-injection phrases, plus user-authored regular
// expressions and keyword lists. It makes no network call, scores a category 1 when it matched
// anywhere and 0 otherwise, and returns every match as a byte span so the engine can redact
// (§4.5). It reports its longest possible match as the hold-back hint (§4.4).
//
// # How a call works
//
// Classify is built for the sidecar's hot path. It walks the text once, byte by byte, through
// a 256-entry trigger table built by New. Only bytes that can start or anchor a match of an
// enabled detector are triggers: '@' (email, URL passwords), digits (phone, card, IBAN, SSN,
// IPv4), ':' (IPv6, assignments), '=' (assignments), '-' (PEM headers, sk-, glpat-, xox?-),
// '_' (gh?_, github_pat_), 'A' (AWS key ids), 'J' (the J of eyJ), and word boundaries
// followed by the first two letters of an anchor word (prompt injection, keywords). At a
// trigger a hand-written validator looks at a few bytes around it (Luhn, mod-97, octet ranges,
// prefixes, entropy) and either records a span or returns; it then tells the walk how far it
// may skip so that no token is looked at twice. Custom patterns run the Go regexp only on a
// small window at their own trigger bytes (see custom.go). A call that matches nothing
// allocates only the Scores slice.
//
// # Spans and streaming
//
// Spans are byte offsets into Input.Text, sorted by Start then End. The end of the text counts
// as a word boundary, so a complete token at the end of a streamed prefix matches. Two
// detectors are "streaming-prefix" detectors: a PEM private-key block that is not closed yet,
// and a JWT whose header is complete but whose payload or signature is still arriving, both
// span to the end of the text. Their hint is the length of the part that must be seen before
// they match (the PEM header, the JWT header and its dot), not the block length, so a hold-back
// of HoldBackHint characters never releases a byte of a secret that a later evaluation would
// have matched (§4.4).
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
//   - us-ssn needs dashes; iban needs a country of the SWIFT registry (its length is known);
//     both are upper-case as printed.
//   - Assignment detectors (aws-secret-key, generic-secret) span the value only, so a redaction
//     keeps the key name readable. Unquoted code expressions (cfg.Token, getenv(...)) are not
//     values. generic-secret yields to a more specific secret detector on the same bytes.
//   - Prompt injection is English and matched with ASCII case folding; Unicode confusables and
//     zero-width characters are not normalized.
package builtin
