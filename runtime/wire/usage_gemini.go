package wire

// GeminiUsage reads a Gemini usageMetadata object (promptTokenCount; candidatesTokenCount
// plus thoughtsTokenCount, as generateContent's usage is counted); ok is false when raw is
// not one or counts nothing.
func GeminiUsage(raw []byte) (Usage, bool) {
	var u geminiUsage
	if err := decode(raw, &u); err != nil {
		return Usage{}, false
	}
	usage := u.usage()
	return usage, usage.InputTokens > 0 || usage.OutputTokens > 0
}

// TopLevelMember watches a JSON object go by, written in pieces of any size, and keeps
// the value of one of its top-level members, when that value is an object no larger than
// max bytes: the guard passes an answer through as it arrives, and reads that member of
// it without holding the rest. It reads what it is written and changes nothing. A member
// name spelled with escapes is not recognised.
type TopLevelMember struct {
	// Name is the member's name, Max the largest value kept.
	Name string
	Max  int

	depth             int
	inString, escaped bool
	// key collects the current top-level string while it may be a member name; keyOK is
	// false once it is longer than Name.
	key   []byte
	keyOK bool
	// expectKey: the next string at depth 1 is a member name; matched: the last member
	// name was Name, and its value is next.
	expectKey, matched bool
	capturing, done    bool
	value              []byte
	// object: the value watched is an object (an array's strings are no member names).
	object bool
}

// Write observes p; it never fails.
func (m *TopLevelMember) Write(p []byte) (int, error) {
	for _, c := range p {
		m.step(c)
	}
	return len(p), nil
}

// Value returns the member's value, nil when the object had none that fit.
func (m *TopLevelMember) Value() []byte {
	if !m.done {
		return nil
	}
	return m.value
}

func (m *TopLevelMember) step(c byte) {
	if m.capturing {
		if len(m.value) < m.Max {
			m.value = append(m.value, c)
		} else {
			m.capturing, m.value = false, nil // too large: not kept
		}
	}
	if m.inString {
		switch {
		case m.escaped:
			m.escaped = false
			m.keyOK = false
		case c == '\\':
			m.escaped = true
		case c == '"':
			m.inString = false
			if m.depth == 1 && m.expectKey {
				m.expectKey = false
				m.matched = m.keyOK && string(m.key) == m.Name
			}
		case m.depth == 1 && m.expectKey && m.keyOK:
			if len(m.key) < len(m.Name) {
				m.key = append(m.key, c)
			} else {
				m.keyOK = false
			}
		}
		return
	}
	switch c {
	case '"':
		m.inString = true
		if m.depth == 1 && m.expectKey {
			m.key, m.keyOK = m.key[:0], true
		}
	case '{', '[':
		if m.depth == 1 && m.matched && c == '{' && !m.done {
			m.capturing, m.value = true, append(m.value[:0], c)
		}
		m.matched = false
		m.depth++
		if m.depth == 1 && c == '{' {
			m.expectKey, m.object = true, true
		}
	case '}', ']':
		m.depth--
		if m.depth == 1 && m.capturing {
			m.capturing, m.done = false, true
		}
	case ',':
		if m.depth == 1 && m.object {
			m.expectKey, m.matched = true, false
		}
	case ' ', '\t', '\n', '\r', ':':
	default:
		if m.depth == 1 {
			m.matched = false // a scalar value
		}
	}
}
