package rulelang

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// Agreement with cel-go is tested in runtime/policy (rulelang_diff_test.go); these tests pin
// the package's own contract: its refusals, its error messages and its key references.

var (
	testAnswers = map[string]Answer{
		"topic":   {Type: "answer", Choice: "other"},
		"unsafe":  {Type: "refusal"},
		"quality": {Type: "answer", Probability: 0.25, Score: 0.5},
	}
	testScores = map[string]float64{"pii": 0.75, "credit-card": 0.5, "nan": math.NaN()}
)

func TestEval(t *testing.T) {
	for expr, want := range map[string]bool{
		"answers.topic.type == 'refusal' || answers.topic.choice == 'other'":    true,
		"answers.unsafe.type == 'refusal' && answers.unsafe.probability == 0.0": true,
		"scores['credit-card'] >= 0.5 && scores.`credit-card` < 0.6":            true,
		"answers.exists(q, answers[q].type == 'refusal')":                       true,
		"answers.all(q, has(answers[q].choice))":                                false,
		"false && answers.missing.choice == 'x'":                                false,
		"answers.missing.choice == 'x' || true":                                 true,
		"[1, 2, 3].map(x, x > 1, x * 2) == [4, 6]":                              true,
		"{'a': 1, 'b': 2}.filter(k, k == 'b') == ['b']":                         true,
		"[1, 2, 3].exists_one(x, x > 2)":                                        true,
		"'héllo'.size() == 5 && 'héllo'.matches('^h.l+o$')":                     true,
		`'\x41\101\u0041\U00000041' == "AAAA" && r'\n' == '\\n'`:                true,
		"-9223372036854775808 < 0 && 0x10 == 16 && 18446744073709551615u > 0u":  true,
		"1 == 1.0 && [1, 'a'][0] == 1u && 2 in [1.0, 2.0]":                      true,
		"string(0.5) == '0.5' && int('-3') == -3 && uint(2.9) == 2u":            true,
		"!!true && --1 == 1": true,
	} {
		p, err := Parse(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		got, err := p.Eval(testAnswers, testScores)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"answers.missing.choice == 'other'":                    "no such key: missing",
		"scores['gone'] > 0.5":                                 "no such key: gone",
		"answers[answers.topic.choice].score > 0":              "no such key", // never the answer's content
		"scores.nan > 0.5":                                     "NaN values cannot be ordered",
		"1 / (answers.topic.score == 0.0 ? 0 : 1) == 1":        "division by zero",
		"9223372036854775807 + (scores.pii > 0.0 ? 1 : 0) > 0": "integer overflow",
		"int(answers.topic.choice) == 1":                       "type conversion error from 'string' to 'int'",
		"'x'.matches(answers.topic.choice + '(')":              "invalid regular expression in matches()",
		"answers.topic.choice":                                 "result is string, not bool",
		"[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(a, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(b, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(c, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(d, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(e, a + b + c + d + e > 0)))))": "cost limit exceeded",
	} {
		p, err := Parse(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		got, err := p.Eval(testAnswers, testScores)
		if err == nil || got || !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %v, %v; want an error containing %q", expr, got, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "other")) {
			t.Errorf("%s: the error %q shows an answer's content", expr, err)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	for expr, want := range map[string]string{
		"type(answers.topic) == policy.Answer":             UnsupportedPrefix + "function 'type'",
		"dyn(answers.topic.score) == 0.5":                  UnsupportedPrefix + "function 'dyn'",
		"answers.topic == policy.Answer{type: 'answer'}":   UnsupportedPrefix + "message construction",
		"b'abc' == b'abc'":                                 UnsupportedPrefix + "bytes literals",
		"timestamp('2024-01-01T00:00:00Z') > timestamp(0)": UnsupportedPrefix + "function 'timestamp'",
		"duration('1s') > duration('0s')":                  UnsupportedPrefix + "function 'duration'",
		"int == int":                                       UnsupportedPrefix + "type names (int)",
		".answers.topic.choice == 'x'":                     UnsupportedPrefix + "identifiers with a leading '.'",
		"{answers.topic.choice: 1}.size() == 1":            UnsupportedPrefix + "map literals whose keys",
		"x.y == 1":                                         "undeclared reference to 'x'",
		"answers.topic.chioce == 'x'":                      "undefined field 'chioce'",
		"has(answers['topic'].nope)":                       "undefined field 'nope'",
		"answers.topic.choice.lowerAscii() == 'x'":         "undeclared reference to 'lowerAscii'",
		"answers.topic.choice ==":                          "syntax error",
		"'unterminated":                                    "syntax error",
		"'\\q' == ''":                                      "syntax error",
		"'\\uD800' == ''":                                  "invalid unicode code point",
		"99999999999999999999 > 0":                         "invalid int literal",
		"1e999 > 0.0":                                      "invalid double literal",
		"if == 1":                                          "reserved identifier: if",
		"has(answers)":                                     "invalid argument to has() macro",
		"[1].all(1, true)":                                 "argument must be a simple name",
		"'a'.matches('[')":                                 "error parsing regexp",
		"int('x') == 1":                                    "type conversion error",
		"answers.?topic":                                   "unsupported syntax '.?'",
	} {
		_, err := Parse(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one containing %q", expr, err, want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error %q is not one line", expr, err)
		}
		if IsUnsupported(err) != strings.HasPrefix(want, UnsupportedPrefix) {
			t.Errorf("%s: IsUnsupported(%v) = %v", expr, err, IsUnsupported(err))
		}
	}
}

func TestKeyRefs(t *testing.T) {
	p, err := Parse("answers.topic.choice == 'x' || has(answers.unsafe) && answers['quality'].score > scores.pii + scores['credit-card'] && answers.exists(q, answers[q].type == 'x' && has(scores.v))")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.KeyRefs("answers"), []string{"topic", "unsafe", "quality"}; !slices.Equal(got, want) {
		t.Errorf("answers: %q, want %q", got, want)
	}
	if got, want := p.KeyRefs("scores"), []string{"pii", "credit-card", "v"}; !slices.Equal(got, want) {
		t.Errorf("scores: %q, want %q", got, want)
	}
}

// TestNoPanics feeds Parse and Eval malformed and odd inputs.
func TestNoPanics(t *testing.T) {
	for _, expr := range []string{"", "(", ")", "[", "{", "}", "'", `"""`, "r'''", "`", "a.`", "a.`b", "1.", ".5", "0x", "1e", "1u2",
		"-", "!", "?", "a ? b", "a ? b :", "[1,2,][", "{'a':}", "{:1}", "f(,)", "x.(y)", "\xff", "'\xff'", "answers.topic.choice.matches(",
		strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000), strings.Repeat("!", 10000) + "true", strings.Repeat("[", 300)} {
		p, err := Parse(expr)
		if err == nil {
			_, _ = p.Eval(nil, nil)
		}
	}
}

func BenchmarkEval(b *testing.B) {
	p, err := Parse("answers.unsafe.type == 'refusal' || answers.unsafe.probability > 0.8 || scores['credit-card'] >= 0.9")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = p.Eval(testAnswers, testScores)
	}
}
