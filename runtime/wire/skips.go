package wire

// skipTable lets the walk of one validated JSON text skip a string, an object or an array
// in one step. Validation reads every byte once anyway; it records where each of them
// ends. Without the table a decoder scans a nested value again at every level it walks
// through: a chat chunk's content was scanned five times, which made decoding the largest
// cost the guard adds to a streamed event.
type skipTable struct {
	// data is the text last validated, nil when the table holds nothing usable.
	data []byte
	// ends[i] is the index after the string, object or array whose first byte is data[i];
	// other entries are left from earlier texts and never read.
	ends []uint16
}

// maxSkipTable bounds the texts a table is built for, and so its size (two bytes per
// byte of text); a longer text is validated and walked by scanning, as before.
const maxSkipTable = 16 << 10

// validate reports whether data is one valid JSON value, exactly as validJSON does, and
// builds the table for it.
func (t *skipTable) validate(data []byte) bool {
	t.data = nil
	if len(data) > maxSkipTable {
		return validJSON(data)
	}
	if cap(t.ends) < len(data) {
		t.ends = make([]uint16, max(len(data), 1024))
	}
	i, ok := validValue(data, skipWS(data, 0), 0, t.ends[:len(data)])
	if !ok || skipWS(data, i) != len(data) {
		return false
	}
	t.data = data
	return true
}

// release forgets the text, whose buffer the caller may reuse: iterators made after it
// scan.
func (t *skipTable) release() { t.data = nil }

// iterOf is iterOf for v. When v lies in the text last validated (a value a walk of it
// returned), the iterator skips with the table.
func (t *skipTable) iterOf(v []byte, open byte) (jsonIter, bool) {
	it, ok := iterOf(v, open)
	if !ok || t.data == nil {
		return it, ok
	}
	off, in := offsetIn(t.data, v)
	if !in {
		return it, ok
	}
	it.ends, it.base = t.ends[off:off+len(v)], off
	return it, ok
}

// offsetIn returns where v, not empty, starts in data when v is a slice of it. A slice
// data[off:…] has the capacity of data less off; the address check rules out a slice of
// another array (a copy) or one with a cut capacity.
func offsetIn(data, v []byte) (int, bool) {
	off := cap(data) - cap(v)
	if len(v) == 0 || off < 0 || off+len(v) > len(data) || &data[off] != &v[0] {
		return 0, false
	}
	return off, true
}
