package builtin

import (
	"math/rand/v2"
	"testing"
)

// TestCRCTableTopBytes: the top bytes of the CRC table's entries are all different, which
// crcUnstep and crcJoin rely on.
func TestCRCTableTopBytes(t *testing.T) {
	var seen [256]bool
	for i, v := range crc32Table {
		if seen[v>>24] {
			t.Fatalf("entry %d repeats top byte %#x", i, v>>24)
		}
		seen[v>>24] = true
	}
}

// oneEdits returns every body one edit away from body: a base62 character changed, added or
// left out at every position.
func oneEdits(body string) []string {
	var out []string
	for p := 0; p <= len(body); p++ {
		for k := 0; k < len(base62Digits); k++ {
			c := base62Digits[k : k+1]
			if p < len(body) && c != body[p:p+1] {
				out = append(out, body[:p]+c+body[p+1:])
			}
			out = append(out, body[:p]+c+body[p:])
		}
		if p < len(body) {
			out = append(out, body[:p]+body[p+1:])
		}
	}
	return out
}

// nearByBruteForce is base62CRCNear by trying every edit.
func nearByBruteForce(body string) bool {
	if base62CRCOK(body) {
		return true
	}
	for _, e := range oneEdits(body) {
		if base62CRCOK(e) {
			return true
		}
	}
	return false
}

func randomB62(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = base62Digits[rng.IntN(62)]
	}
	return string(b)
}

// TestBase62CRCNear: every one-edit change of an issued token is near it; base62CRCNear
// agrees with trying every edit on tokens two edits away and on random bodies; and random
// bodies, what the format's near misses are, are almost never near.
func TestBase62CRCNear(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 62))
	for range 20 {
		data := randomB62(rng, 30)
		token := data + base62CRC32(data)
		for _, e := range oneEdits(token) {
			if !base62CRCNear(e) {
				t.Fatalf("%q, one edit from the token %q, is not near", e, token)
			}
		}
		edits := oneEdits(token)
		for range 50 {
			two := oneEdits(edits[rng.IntN(len(edits))])
			e := two[rng.IntN(len(two))]
			if got, want := base62CRCNear(e), nearByBruteForce(e); got != want {
				t.Fatalf("%q (two edits from %q): near %v, trying every edit says %v", e, token, got, want)
			}
		}
	}
	near := 0
	const n = 3000
	for k := range n {
		body := randomB62(rng, 35+k%3)
		got := base62CRCNear(body)
		if k < 300 && got != nearByBruteForce(body) {
			t.Fatalf("%q: near %v, trying every edit says otherwise", body, got)
		}
		if got {
			near++
		}
	}
	t.Logf("%d of %d random bodies near", near, n)
	if near > 1 {
		t.Errorf("%d of %d random bodies are one edit from a checksum", near, n)
	}
}

// BenchmarkBase62CRCNear: the cost of judging a token body whose checksum fails.
func BenchmarkBase62CRCNear(b *testing.B) {
	body := randomB62(rand.New(rand.NewPCG(1, 2)), 36)
	for b.Loop() {
		base62CRCNear(body)
	}
}
