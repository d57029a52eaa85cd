package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// The secret-format corpora: snippets of configuration, code, command lines and manifests in
// which every credential value is marked ⟦like this⟧. A snippet whose kind begins with
// "lookalike-" has no marked value and must match nothing: placeholders, test fixtures,
// malformed tokens, hashes, UUIDs under keys that are not a secret's, base64 that is not a
// credential. See testdata/README.md.

// Markers of a secret value in the corpora; they are removed before classification.
const (
	secretOpen  = "⟦"
	secretClose = "⟧"
)

// markedSnippet is a snippet whose secret values are known by their byte ranges.
type markedSnippet struct {
	kind    string
	text    string
	secrets [][2]int
	origin  string
}

func (s markedSnippet) lookalike() bool { return strings.HasPrefix(s.kind, "lookalike-") }

// loadMarked reads a JSON-lines file of testdata ({"kind": …, "text": …}), expands its
// placeholders and removes its markers, recording where each marked value is.
func loadMarked(t testing.TB, name string) []markedSnippet {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []markedSnippet
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var row struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		s := markedSnippet{kind: row.Kind, origin: fmt.Sprintf("%s:%d", name, line)}
		text := expandPlaceholders(t, row.Text)
		var b strings.Builder
		for {
			i := strings.Index(text, secretOpen)
			if i < 0 {
				break
			}
			j := strings.Index(text[i:], secretClose)
			if j < 0 {
				t.Fatalf("%s: unclosed marker", s.origin)
			}
			b.WriteString(text[:i])
			start := b.Len()
			b.WriteString(text[i+len(secretOpen) : i+j])
			s.secrets = append(s.secrets, [2]int{start, b.Len()})
			text = text[i+j+len(secretClose):]
		}
		b.WriteString(text)
		s.text = b.String()
		if strings.Contains(s.text, secretClose) {
			t.Fatalf("%s: stray closing marker", s.origin)
		}
		if s.lookalike() != (len(s.secrets) == 0) {
			t.Fatalf("%s: a lookalike has no marked value and every other snippet has one", s.origin)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// secretsScore is how the secrets pack fared on a marked corpus.
type secretsScore struct {
	values, found     int // marked values, and those every byte of which a span covers
	lookalikes, fp    int // look-alike snippets, and those with a span
	extra             int // spans in positive snippets that touch no marked value
	missedKinds       map[string]int
	fpKinds           map[string]int
	kinds, kindsNever int // kinds with a marked value, and kinds none of whose values was found
	foundPerKind      map[string]int
	valuesPerKind     map[string]int
}

func (s secretsScore) recall() float64 { return float64(s.found) / float64(max(1, s.values)) }
func (s secretsScore) fpRate() float64 { return float64(s.fp) / float64(max(1, s.lookalikes)) }

// secretsPack returns a classifier with the secrets pack.
func secretsPack(t testing.TB) *Classifier {
	t.Helper()
	c, err := New(Config{Detectors: Packs()["secrets"]})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// covered reports whether every byte of [a, b) is inside one of spans.
func covered(spans []classify.Span, a, b int) bool {
	for _, sp := range spans {
		if sp.Start <= a && sp.End > a {
			a = sp.End
			if a >= b {
				return true
			}
		}
	}
	return a >= b
}

// scoreSecrets classifies every snippet with the secrets pack and counts found values and
// look-alikes with a match, logging each miss and false positive.
func scoreSecrets(t *testing.T, corpus []markedSnippet) secretsScore {
	t.Helper()
	c := secretsPack(t)
	sc := secretsScore{missedKinds: map[string]int{}, fpKinds: map[string]int{}, foundPerKind: map[string]int{}, valuesPerKind: map[string]int{}}
	for _, s := range corpus {
		r, err := c.Classify(context.Background(), classify.Input{Text: s.text})
		if err != nil {
			t.Fatal(err)
		}
		if s.lookalike() {
			sc.lookalikes++
			if len(r.Spans) > 0 {
				sc.fp++
				sc.fpKinds[s.kind]++
				t.Logf("%s: %s: false positive %s", s.origin, s.kind, describeSpans(c, s.text, r.Spans))
			}
			continue
		}
		for _, v := range s.secrets {
			sc.values++
			sc.valuesPerKind[s.kind]++
			if covered(r.Spans, v[0], v[1]) {
				sc.found++
				sc.foundPerKind[s.kind]++
			} else {
				sc.missedKinds[s.kind]++
				t.Logf("%s: %s: missed %q in %q, spans %s", s.origin, s.kind, s.text[v[0]:v[1]], s.text, describeSpans(c, s.text, r.Spans))
			}
		}
		for _, sp := range r.Spans {
			touches := slices.ContainsFunc(s.secrets, func(v [2]int) bool { return sp.Start < v[1] && sp.End > v[0] })
			if !touches {
				sc.extra++
				t.Logf("%s: %s: span outside the marked values %s", s.origin, s.kind, describeSpans(c, s.text, []classify.Span{sp}))
			}
		}
	}
	for k, n := range sc.valuesPerKind {
		sc.kinds++
		if sc.foundPerKind[k] == 0 && n > 0 {
			sc.kindsNever++
		}
	}
	return sc
}

// logSecretsScore logs the summary lines the README quotes.
func logSecretsScore(t *testing.T, name string, sc secretsScore) {
	t.Helper()
	var never []string
	for k, n := range sc.valuesPerKind {
		if sc.foundPerKind[k] == 0 && n > 0 {
			never = append(never, k)
		}
	}
	sort.Strings(never)
	t.Logf("%s: recall %d/%d = %.3f over %d kinds (%d never found: %v); look-alikes matched %d/%d = %.3f; spans outside marked values %d",
		name, sc.found, sc.values, sc.recall(), sc.kinds, sc.kindsNever, never, sc.fp, sc.lookalikes, sc.fpRate(), sc.extra)
}

// TestSecretsHeldOut reports the secrets pack's recall and false-positive rate on the held-out
// files: secrets_heldout.jsonl, written from vendors' published token formats before the
// detectors of issue 31 (measured once after them, then learnt from), and
// secrets_heldout_b.jsonl, written after that measurement and before the changes that
// followed it (credentials of other vendors, tools and config files). Neither is used to tune. It holds them to no bar (a bar would
// invite tuning on it); it fails only when the file is malformed or too small. Run with -v.
func TestSecretsHeldOut(t *testing.T) {
	for _, f := range []struct {
		name string
		min  int
	}{{"secrets_heldout.jsonl", 400}, {"secrets_heldout_b.jsonl", 200}} {
		t.Run(f.name, func(t *testing.T) {
			corpus := loadMarked(t, f.name)
			if len(corpus) < f.min {
				t.Fatalf("held-out file has %d snippets, want at least %d", len(corpus), f.min)
			}
			logSecretsScore(t, f.name, scoreSecrets(t, corpus))
		})
	}
}

// vendorContexts are the surroundings of the generated vendor tokens.
var vendorContexts = []string{
	"TOKEN_VALUE=%s\n",
	`{"credential": "%s", "enabled": true}`,
	"please rotate %s today.",
	"curl -H 'X-Custom: %s' https://api.example.com",
}

// generatedSecrets returns a snippet per vendor rule and per shaped token kind in each of
// vendorContexts, and look-alikes: each rule's token one character short, and its prefix
// with a placeholder body, in a sentence.
func generatedSecrets() []markedSnippet {
	var out []markedSnippet
	add := func(kind, format, value string, secret bool) {
		text := fmt.Sprintf(format, value)
		s := markedSnippet{kind: kind, text: text, origin: "generated " + kind}
		if secret {
			a := strings.Index(text, value)
			s.secrets = [][2]int{{a, a + len(value)}}
		} else {
			s.kind = "lookalike-" + kind
		}
		out = append(out, s)
	}
	for k := range vendorRules {
		r := &vendorRules[k]
		for n, format := range vendorContexts {
			add(r.kind, format, fakeVendorToken(r, 600+10*k+n, false), true)
		}
		add(r.kind+"-short", "the value %s was cut", fakeVendorToken(r, 700+k, true), false)
		add(r.kind+"-placeholder", "tokens look like %s in the docs", r.prefix+strings.Repeat("X", r.segs[0].min), false)
	}
	for n, format := range vendorContexts {
		for kind, value := range fakeShapedTokens(800 + n) {
			add(kind, format, value, true)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].origin < out[j].origin })
	return out
}

// TestSecretsTuning holds the secrets pack to recall ≥ 0.98 and a look-alike match rate
// ≤ 0.02 on the tuning set: secrets_tuning.jsonl (contexts: URLs, command lines, headers,
// Kubernetes Secrets, XML, keys) and a token of every vendor rule in every context of
// vendorContexts, with each rule's look-alikes. Run with -v to see the figures.
func TestSecretsTuning(t *testing.T) {
	corpus := append(loadMarked(t, "secrets_tuning.jsonl"), generatedSecrets()...)
	sc := scoreSecrets(t, corpus)
	logSecretsScore(t, "tuning (secrets_tuning.jsonl and generated vendor tokens)", sc)
	if sc.recall() < 0.98 || sc.fpRate() > 0.02 {
		t.Errorf("recall %.3f, look-alike match rate %.3f; want ≥ 0.98 and ≤ 0.02", sc.recall(), sc.fpRate())
	}
	if sc.kindsNever > 0 {
		t.Errorf("%d kinds never found", sc.kindsNever)
	}
}

// TestREADMEListsEveryKind keeps README.md's detector table in step with the rules: every
// vendor rule's kind and every shaped token's kind has a row.
func TestREADMEListsEveryKind(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	kinds := slices.Collect(maps.Keys(fakeShapedTokens(1)))
	for _, r := range vendorRules {
		kinds = append(kinds, r.kind)
	}
	for _, k := range kinds {
		if !strings.Contains(readme, "| "+k+" |") {
			t.Errorf("README.md has no row for %s", k)
		}
	}
}
