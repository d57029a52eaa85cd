package builtin

import (
	"slices"
	"testing"
)

// vendorRules are the rules of vendorRuleSets in one slice, for the tests that index them.
var vendorRules = func() []vendorRule {
	var out []vendorRule
	eachVendorRule(func(r *vendorRule) bool {
		out = append(out, *r)
		return true
	})
	return out
}()

// TestStaticTablesAsMaps: the tables built into static storage at init answer as the maps
// they replaced did (confusables: the later set's letter for a rune listed twice).
func TestStaticTablesAsMaps(t *testing.T) {
	conf := map[rune]byte{}
	for _, set := range confusableSets {
		for _, r := range set.runes {
			conf[r] = set.letter
		}
	}
	if confusables.n != len(conf) {
		t.Fatalf("confusables has %d runes, the sets %d", confusables.n, len(conf))
	}
	for r := range rune(0x20000) {
		b, ok := confusables.letter(r)
		if want, wok := conf[r]; b != want || ok != wok {
			t.Fatalf("confusables.letter(%U) = %q %v, want %q %v", r, b, ok, want, wok)
		}
	}
	iban := map[[2]byte]int{}
	for _, e := range ibanRegistry {
		iban[[2]byte{e.cc[0], e.cc[1]}] = int(e.n)
	}
	for b0 := range 256 {
		for b1 := range 256 {
			n, ok := ibanLength(byte(b0), byte(b1))
			if want, wok := iban[[2]byte{byte(b0), byte(b1)}]; n != want || ok != wok {
				t.Fatalf("ibanLength(%q, %q) = %d %v, want %d %v", byte(b0), byte(b1), n, ok, want, wok)
			}
		}
	}
	// The vendor index's dense tables hold every rule under its pair, in the rules' order.
	for _, p := range []*pairRules{&vendors.sep, &vendors.head, &vendors.low} {
		for k := range p.pairs {
			if k > 0 && p.pairs[k-1] > p.pairs[k] {
				t.Fatal("pairs not sorted")
			}
			got := p.get(byte(p.pairs[k]>>8), byte(p.pairs[k]))
			if len(got) == 0 || !slices.Contains(got, p.rules[k]) {
				t.Fatalf("get(%04x) misses rule %s", p.pairs[k], p.rules[k].r.kind)
			}
		}
		if len(p.get(0, 0)) != 0 || len(p.get(0xff, 0xff)) != 0 {
			t.Fatal("an unused pair has rules")
		}
	}
}

// TestTriMaskAsBranches: the pass's one-load test of a word's first three bytes (injTriMask)
// decides every triple of bytes as the branches on their classes that it replaced did.
func TestTriMaskAsBranches(t *testing.T) {
	loadInjection()
	for b1 := range 256 {
		for b2 := range 256 {
			for b3 := range 256 {
				var want bool
				if c0 := injTriClass[b1]; c0 < injTriOther {
					if c1 := injTriClass[b2]; c1 < injTriOther {
						k := int(c0)*(26*28) + int(c1)*28 + int(injTriClass[b3])
						want = injTriples[k>>6&511]&(1<<(k&63)) != 0
					} else {
						want = c1 == injTriOther && injSig.wordPairs.has(byte(b1), byte(b2))
					}
				} else {
					want = c0 == injTriOther && injTriClass[b2] != injTriEnd && injSig.wordPairs.has(byte(b1), byte(b2))
				}
				m := injTriMask[(int(injTriClass[b1])*28+int(injTriClass[b2]))&1023]
				got := m>>injTriClass[b3]&1 != 0
				if m&injTriPairs != 0 {
					got = injSig.wordPairs.has(byte(b1), byte(b2))
				}
				if got != want {
					t.Fatalf("bytes %q %q %q: %v, want %v", byte(b1), byte(b2), byte(b3), got, want)
				}
			}
		}
	}
}

// TestWordFilterCoversBothLayers: a word the pass passes over by injWordFilter is one that
// both the engine's filter (wordAt) and the phrase list's (injWordAt) pass over.
func TestWordFilterCoversBothLayers(t *testing.T) {
	loadInjection()
	for n := 1; n < 8; n++ {
		for f := range 26 {
			for l := range 26 {
				sig := n >= 2 && injSig.anchorFilter[n][f]&(1<<l) != 0
				phrase := injection.lenFirst[n]&(1<<f) != 0 && injection.lenLast[n]&(1<<l) != 0
				if got := injWordFilter[n][f]&(1<<l) != 0; got != (sig || phrase) {
					t.Fatalf("length %d, %c…%c: %v, want %v", n, 'a'+f, 'a'+l, got, sig || phrase)
				}
			}
		}
	}
}
