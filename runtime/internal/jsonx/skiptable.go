package jsonx

// SkipTable lets the walk of one validated JSON text skip a string, an object or an array
// in one step. Validation reads every byte once anyway; it records where each of them
// ends. Without the table a decoder scans a nested value again at every level it walks
// through: a chat chunk's content was scanned five times, which made decoding the largest
// cost the guard adds to a streamed event.
type SkipTable struct {
	// data is the text last validated, nil when the table holds nothing usable.
	data []byte
	// ends[i] is the index after the string, object or array whose first byte is data[i];
	// other entries are left from earlier texts and never read.
	ends []uint16
}

// maxSkipTable bounds the texts a table is built for, and so its size (two bytes per
// byte of text); a longer text is validated and walked by scanning, as before.
const maxSkipTable = 16 << 10

// Validate reports whether data is one valid JSON value, exactly as Valid does, and
// builds the table for it.
func (t *SkipTable) Validate(data []byte) bool {
	t.data = nil
	if len(data) > maxSkipTable {
		return Valid(data)
	}
	if cap(t.ends) < len(data) {
		t.ends = make([]uint16, max(len(data), 1024))
	}
	i, ok := validValue(data, SkipWS(data, 0), 0, t.ends[:len(data)])
	if !ok || SkipWS(data, i) != len(data) {
		return false
	}
	t.data = data
	return true
}

// Release forgets the text, whose buffer the caller may reuse: iterators made after it
// scan.
func (t *SkipTable) Release() { t.data = nil }

// IterOf is IterOf for v. When v lies in the text last validated (a value a walk of it
// returned), the iterator skips with the table.
func (t *SkipTable) IterOf(v []byte, open byte) (Iter, bool) {
	it, ok := IterOf(v, open)
	if !ok || t.data == nil {
		return it, ok
	}
	off, in := OffsetIn(t.data, v)
	if !in {
		return it, ok
	}
	it.ends, it.base = t.ends[off:off+len(v)], off
	return it, ok
}

// OffsetIn returns where v, not empty, starts in data when v is a slice of it. A slice
// data[off:…] has the capacity of data less off; the address check rules out a slice of
// another array (a copy) or one with a cut capacity.
func OffsetIn(data, v []byte) (int, bool) {
	off := cap(data) - cap(v)
	if len(v) == 0 || off < 0 || off+len(v) > len(data) || &data[off] != &v[0] {
		return 0, false
	}
	return off, true
}
