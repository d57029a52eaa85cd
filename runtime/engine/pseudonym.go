package engine

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// maxPseudonyms bounds the distinct values one request pseudonymizes. Past it, a newly
// found value is redacted ([REDACTED:<category>]) instead: the provider still receives
// none of it, and the answer cannot get it back. It bounds the mapping's memory and the
// cost of masking every occurrence of every value in every message.
const maxPseudonyms = 512

// maxPlaceholderDigits bounds the number in a placeholder: maxPseudonyms has 3 digits,
// and a number skips the ones the request already spelled (see vault.reserve).
const maxPlaceholderDigits = 6

// vault is one request's mapping between the values a Pseudonymize guardrail found and
// their placeholders. It lives in the session only: nothing of it is recorded, logged or
// sent, and End drops it.
type vault struct {
	// byValue maps a value to its entry; byPlaceholder maps the upper-cased "TAG_N".
	byValue       map[string]*pseudonym
	byPlaceholder map[string]*pseudonym
	// entries in the order they were made.
	entries []*pseudonym
	// next is the next number per tag; reserved holds the "TAG_N" the request already
	// contained as placeholders, which are never given to a value (an input that spells
	// <EMAIL_1> must not have it restored to somebody's address).
	next     map[string]int
	reserved map[string]bool
	// tags are the tags of the entries, for the answer's placeholder grammar.
	tags []string
	// tenant counts the entries a namespaced Guardrail made (see pseudonym.cluster).
	tenant int
}

// pseudonym is one value and its placeholder.
type pseudonym struct {
	value       string
	placeholder string // <EMAIL_1>
	jsonValue   string // value escaped for the inside of a JSON string
	// cluster: a ClusterGuardrail masked the value. A value a namespaced Guardrail masked
	// is judged again, restored, by the ClusterGuardrails that judge answers (restored.go).
	cluster bool
}

// tagOf is the placeholder tag of a category id: upper case, '-' as '_' (credit-card →
// CREDIT_CARD).
func tagOf(category string) string {
	return strings.ToUpper(strings.ReplaceAll(category, "-", "_"))
}

// placeholderShape finds what the request already spells as a placeholder, in plain text
// or escaped as JSON does (\u003c…\u003e).
var placeholderShape = regexp.MustCompile(`(?:<|\\u003[cC])([A-Za-z][A-Za-z0-9_]*)_([1-9][0-9]{0,5})(?:>|\\u003[eE])`)

// reserve records the placeholders the request's texts already contain.
func (v *vault) reserve(text string) {
	if !strings.Contains(text, "<") && !strings.Contains(text, `\u003`) {
		return
	}
	for _, m := range placeholderShape.FindAllStringSubmatch(text, -1) {
		if v.reserved == nil {
			v.reserved = map[string]bool{}
		}
		v.reserved[strings.ToUpper(m[1])+"_"+m[2]] = true
	}
}

// assign returns the placeholder of value, making one for category when the value is new
// (masked by a ClusterGuardrail when cluster is set: the first to find a value makes its
// entry); ok is false past maxPseudonyms.
func (v *vault) assign(category, value string, cluster bool) (string, bool) {
	if p := v.byValue[value]; p != nil {
		return p.placeholder, true
	}
	if len(v.entries) >= maxPseudonyms {
		return "", false
	}
	if v.byValue == nil {
		v.byValue, v.byPlaceholder, v.next = map[string]*pseudonym{}, map[string]*pseudonym{}, map[string]int{}
	}
	tag := tagOf(category)
	n := v.next[tag]
	var key string
	for {
		n++
		key = tag + "_" + strconv.Itoa(n)
		if !v.reserved[key] {
			break
		}
	}
	v.next[tag] = n
	p := &pseudonym{value: value, placeholder: "<" + key + ">", jsonValue: jsonEscape(value), cluster: cluster}
	v.byValue[value], v.byPlaceholder[key] = p, p
	v.entries = append(v.entries, p)
	if !cluster {
		v.tenant++
	}
	if !slices.Contains(v.tags, tag) {
		v.tags = append(v.tags, tag)
	}
	return p.placeholder, true
}

// active reports whether anything was pseudonymized, so that answers are restored.
func (v *vault) active() bool { return v != nil && len(v.entries) > 0 }

// tenantMasked reports whether a namespaced Guardrail pseudonymized anything.
func (v *vault) tenantMasked() bool { return v != nil && v.tenant > 0 }

// drop forgets the mapping.
func (v *vault) drop() {
	if v == nil {
		return
	}
	clear(v.byValue)
	clear(v.byPlaceholder)
	clear(v.entries)
	*v = vault{}
}

// jsonEscape escapes s for the inside of a JSON string.
func jsonEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)) + h)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pseudonymize replaces the spans a classifier found in an input item (offsets into the
// text sent through w) with placeholders. A span touching text an earlier sanitizer
// rewrote is left to that rewrite: the value under a redaction marker must not come back
// in the answer. Overlapping spans merge and take the first one's category, as Redact's do.
// cluster says a ClusterGuardrail is masking.
func (s *Session) pseudonymize(it *item, w *window, spans []classify.Span, cats []policy.Category, cluster bool) {
	if s.vault == nil {
		s.vault = &vault{}
	}
	t := it.doc
	spans = slices.Clone(spans)
	slices.SortStableFunc(spans, func(a, b classify.Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	type mapped struct {
		us, ue int
		cat    string
	}
	var ms []mapped
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].Start < cur.End; i++ {
			cur.End = max(cur.End, spans[i].End)
		}
		us, ue, _, ok := t.upstreamSpan(w, cur.Start, cur.End)
		if ok && !t.edited(us, ue) && !blank(string(t.bytes(us, ue))) {
			ms = append(ms, mapped{us, ue, cats[cur.Category].ID})
		}
	}
	for _, m := range ms {
		ph, ok := s.vault.assign(m.cat, string(t.bytes(m.us, m.ue)), cluster)
		if !ok {
			ph = "[REDACTED:" + m.cat + "]"
		}
		t.addEdit(m.us, m.ue, m.cat, ph, false)
	}
}

// maskEverywhere replaces every other occurrence of a pseudonymized value in the request's
// text parts with its placeholder: a value found in one message (a secret after "token=",
// say) may stand bare in another, where no detector sees it, or inside a longer word, and
// the provider must not receive it there either. Restoring the answer gives the word back
// whole.
func (s *Session) maskEverywhere(items []*item) {
	if !s.vault.active() {
		return
	}
	entries := slices.Clone(s.vault.entries)
	slices.SortStableFunc(entries, func(a, b *pseudonym) int { return len(b.value) - len(a.value) })
	for _, it := range items {
		if it.doc == nil || it.dropped {
			continue
		}
		t := it.doc
		text := string(t.bytes(t.base.b, t.total.b))
		for _, p := range entries {
			for off := 0; ; {
				i := strings.Index(text[off:], p.value)
				if i < 0 {
					break
				}
				a, b := off+i, off+i+len(p.value)
				off = b
				if t.edited(a, b) {
					continue
				}
				t.addEdit(a, b, "", p.placeholder, false)
			}
		}
	}
}

// maskCalls masks, in the arguments of the history's tool calls (JSON text), the values
// pseudonymized in the request, as maskEverywhere does in its text: a call the previous
// answer made with a restored value would otherwise hand the value back to the provider
// in the next turn. The value is looked for as a JSON string spells it.
func (s *Session) maskCalls(msgs []Message) {
	if !s.vault.active() {
		return
	}
	entries := slices.Clone(s.vault.entries)
	slices.SortStableFunc(entries, func(a, b *pseudonym) int { return len(b.jsonValue) - len(a.jsonValue) })
	for mi := range msgs {
		m := &msgs[mi]
		cloned := false // Calls alias the caller's messages until changed
		for ci, args := range m.Calls {
			if masked := maskText(args, entries); masked != args {
				if !cloned {
					m.Calls, cloned = slices.Clone(m.Calls), true
				}
				m.Calls[ci] = masked
			}
		}
	}
}

// maskText replaces the JSON spellings of the entries' values in text with their
// placeholders.
func maskText(text string, entries []*pseudonym) string {
	for _, p := range entries {
		v := p.jsonValue
		if !strings.Contains(text, v) {
			continue
		}
		var b strings.Builder
		from := 0
		for off := 0; ; {
			i := strings.Index(text[off:], v)
			if i < 0 {
				break
			}
			a, e := off+i, off+i+len(v)
			off = e
			b.WriteString(text[from:a])
			b.WriteString(p.placeholder)
			from = e
		}
		if from > 0 {
			b.WriteString(text[from:])
			text = b.String()
		}
	}
	return text
}

// pseudonymCounts fills in, for a Pseudonymize decision, how many spans of each matched
// category it masks (or would mask, in Report mode): decision records count categories,
// never values.
func pseudonymCounts(j *judgment, cats []policy.Category) {
	for i := range j.findings {
		f := &j.findings[i]
		if f.Kind != FindingCategory {
			continue
		}
		for _, sp := range j.spans {
			if sp.Category < len(cats) && cats[sp.Category].ID == f.Name {
				f.Count++
			}
		}
	}
}

// restoresJSON reports whether a channel's text is JSON (tool-call arguments, the object
// channel), where a value is restored escaped for a JSON string and a placeholder may be
// spelled with \u003c and \u003e.
func restoresJSON(k content.Kind) bool { return k == content.ToolCall || k == content.Object }

// restore returns s with the placeholders of the vault restored (whole texts: a
// non-streamed answer, a tool call's arguments).
func (v *vault) restore(s string, json bool) string {
	if !v.active() || s == "" {
		return s
	}
	var rs []restoration
	_, rs = v.scan([]byte(s), 0, len(s), true, json, nil, nil)
	if len(rs) == 0 {
		return s
	}
	var b strings.Builder
	from := 0
	for _, r := range rs {
		b.WriteString(s[from:r.start])
		b.WriteString(r.value)
		from = r.end
	}
	b.WriteString(s[from:])
	return b.String()
}
