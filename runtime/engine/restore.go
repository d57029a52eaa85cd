package engine

// Restoration: the answer's placeholders become the values again before the client
// receives them. In a stream it is the same problem as a match arriving in parts
// (hold-back of pending text), with the placeholder grammar as the
// pattern: text from a '<' that may still become a placeholder of this request is pending
// and withheld until the text that decides it arrives; everything before it is released
// as the stream's hold-back allows. Only the request's own tags and numbers make a
// placeholder, so ordinary prose is not delayed and a '<' is decided by the next few
// characters.
//
// The grammar: '<', a tag of the request (the category upper-cased, '-' as '_'; letters
// compared without case, so <email_1> is <EMAIL_1>), '_', a number without leading
// zeros, '>'. In JSON text (tool-call arguments, the object channel) '<' and '>' may also
// be spelled \u003c and \u003e, as encoders that escape HTML write them, and the value is
// restored escaped for the JSON string it stands in. Anything else — spaces inside the
// brackets, a missing bracket, a number the request never gave out, a placeholder the
// request itself contained — is left as it is: never mapped to another value.

// restoration replaces [start, end) of a text by value.
type restoration struct {
	start, end int
	value      string
	// tenant: a namespaced Guardrail masked the value (see restored.go).
	tenant bool
}

// matchState is how text starting at a '<' compares to the placeholder grammar.
type matchState uint8

const (
	noMatch matchState = iota
	// partialMatch: the text ended while it still matched: more text decides.
	partialMatch
	fullMatch
)

// match compares b (from a candidate opening) to the grammar: fullMatch with the length
// and the pseudonym (nil when the request never gave that placeholder out).
func (v *vault) match(b []byte, json bool) (matchState, int, *pseudonym) {
	i, st := matchBracket(b, '<', `\u003c`, json)
	if st != fullMatch {
		return st, 0, nil
	}
	for _, tag := range v.tags {
		n, st := matchFold(b[i:], tag)
		switch st {
		case partialMatch:
			return partialMatch, 0, nil
		case noMatch:
			continue
		}
		j := i + n
		if j == len(b) {
			return partialMatch, 0, nil
		}
		if b[j] != '_' {
			continue
		}
		j++
		d := j
		for j < len(b) && j-d < maxPlaceholderDigits && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		switch {
		case j == d && j == len(b):
			return partialMatch, 0, nil
		case j == d || b[d] == '0':
			continue
		case j == len(b):
			return partialMatch, 0, nil
		}
		k, st := matchBracket(b[j:], '>', `\u003e`, json)
		switch st {
		case partialMatch:
			return partialMatch, 0, nil
		case noMatch:
			continue
		}
		return fullMatch, j + k, v.byPlaceholder[tag+"_"+string(b[d:j])]
	}
	return noMatch, 0, nil
}

// matchBracket matches c, or in JSON text its escape esc (hex digits in either case).
func matchBracket(b []byte, c byte, esc string, json bool) (int, matchState) {
	if len(b) == 0 {
		return 0, partialMatch
	}
	if b[0] == c {
		return 1, fullMatch
	}
	if !json || b[0] != '\\' {
		return 0, noMatch
	}
	n, st := matchFold(b, esc)
	return n, st
}

// matchFold matches the ASCII word w at the start of b, without case.
func matchFold(b []byte, w string) (int, matchState) {
	for i := 0; i < len(w); i++ {
		if i == len(b) {
			return 0, partialMatch
		}
		if lower(b[i]) != lower(w[i]) {
			return 0, noMatch
		}
	}
	return len(w), fullMatch
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// scan finds the placeholders of b[:lim] to restore (b runs on to the end of the text
// known so far). Unless final, a placeholder still arriving at the end of b, or one that
// crosses lim, is pending: cut is where the release must stop, before it (lim when
// nothing is pending). skip reports ranges that an edit rewrote, which are not
// placeholders any more.
func (v *vault) scan(b []byte, from, lim int, final, json bool, skip func(a, b int) bool, rs []restoration) (cut int, _ []restoration) {
	for i := from; i < lim; i++ {
		if c := b[i]; c != '<' && (!json || c != '\\') {
			continue
		}
		st, n, p := v.match(b[i:], json)
		switch {
		case st == noMatch:
			continue
		case st == partialMatch:
			if final || skip != nil && skip(i, len(b)) {
				continue
			}
			return i, rs
		case skip != nil && skip(i, i+n):
			continue
		case p == nil:
			// A placeholder this request never gave out: left as it is.
			i += n - 1
			continue
		case i+n > lim:
			if final {
				return lim, rs
			}
			return i, rs
		}
		value := p.value
		if json {
			value = p.jsonValue
		}
		rs = append(rs, restoration{start: i, end: i + n, value: value, tenant: !p.cluster})
		i += n - 1
	}
	return lim, rs
}

// restoreRelease prepares the release of c's text [released, p): it moves p back before a
// placeholder that is still pending (not when the channel has ended) and returns the
// placeholders to restore in what is released, in upstream offsets.
func (s *Session) restoreRelease(c *channel, p pos) (pos, []restoration) {
	if !s.vault.active() {
		return p, nil
	}
	t := &c.t
	b := t.bytes(t.base.b, t.total.b)
	base := t.base.b
	skip := func(a, e int) bool { return t.edited(a+base, e+base) }
	cut, rs := s.vault.scan(b, c.released.b-base, p.b-base, c.ended, restoresJSON(c.id.Kind), skip, s.restored[:0])
	s.restored = rs // kept for the next release: a stream's restorations allocate once
	for i := range rs {
		rs[i].start += base
		rs[i].end += base
	}
	if cut+base < p.b {
		p = t.posOf(cut+base, c.released)
	}
	return p, rs
}

// renderRestored appends the text of upstream [from, to) with its edits and the
// restorations (which no edit overlaps) applied.
func (t *textBuf) renderRestored(dst []byte, from, to int, rs []restoration) []byte {
	for _, r := range rs {
		dst = t.render(dst, from, r.start)
		dst = append(dst, r.value...)
		from = r.end
	}
	return t.render(dst, from, to)
}
