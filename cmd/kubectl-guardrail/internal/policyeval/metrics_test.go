package policyeval

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// fig spells an optional figure for comparison: "-" when undefined.
func fig(f *float64) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.4f", *f)
}

func counts(s Score) string {
	return fmt.Sprintf("tp=%d fp=%d fn=%d tn=%d support=%d predicted=%d", s.TruePositives, s.FalsePositives, s.FalseNegatives, s.TrueNegatives, s.Support, s.Predicted)
}

func figures(p, r, f *float64) string { return fig(p) + " " + fig(r) + " " + fig(f) }

func s(labels ...string) []string { return labels }

func TestComputeCountsAndFigures(t *testing.T) {
	type cat struct{ counts, figures string }
	for _, tc := range []struct {
		name    string
		labels  []string
		samples []Sample
		cats    map[string]cat
		micro   cat
		macro   string // precision recall f1, and the categories averaged
		any     cat
	}{
		{
			name:   "perfect",
			labels: s("email", "phone"),
			samples: []Sample{
				{s("email"), s("email")},
				{s("phone"), s("phone")},
				{s(), s()},
			},
			cats: map[string]cat{
				"email": {"tp=1 fp=0 fn=0 tn=2 support=1 predicted=1", "1.0000 1.0000 1.0000"},
				"phone": {"tp=1 fp=0 fn=0 tn=2 support=1 predicted=1", "1.0000 1.0000 1.0000"},
			},
			micro: cat{"tp=2 fp=0 fn=0 tn=4 support=2 predicted=2", "1.0000 1.0000 1.0000"},
			macro: "1.0000 1.0000 1.0000 (2)",
			any:   cat{"tp=2 fp=0 fn=0 tn=1 support=2 predicted=2", "1.0000 1.0000 1.0000"},
		},
		{
			name:   "one of each error",
			labels: s("email", "phone"),
			samples: []Sample{
				{s("email"), s("email")},          // tp email
				{s("email"), s()},                 // fn email
				{s(), s("email")},                 // fp email
				{s("phone"), s("email")},          // fn phone, fp email; any: tp
				{s("email", "phone"), s("phone")}, // fn email, tp phone
			},
			cats: map[string]cat{
				// email: tp 1, fp 2, fn 2: p 1/3, r 1/3, f1 2/(2+2+2)
				"email": {"tp=1 fp=2 fn=2 tn=0 support=3 predicted=3", "0.3333 0.3333 0.3333"},
				// phone: tp 1, fn 1, tn 3: p 1, r 1/2, f1 2/3
				"phone": {"tp=1 fp=0 fn=1 tn=3 support=2 predicted=1", "1.0000 0.5000 0.6667"},
			},
			micro: cat{"tp=2 fp=2 fn=3 tn=3 support=5 predicted=4", "0.5000 0.4000 0.4444"},
			macro: "0.6667 0.4167 0.5000 (2)",
			// lines labelled at all: 1, 2, 4, 5; found at all: 1, 3, 4, 5
			any: cat{"tp=3 fp=1 fn=1 tn=0 support=4 predicted=4", "0.7500 0.7500 0.7500"},
		},
		{
			name:   "a category never labelled but found: precision 0, recall undefined, in the macro average",
			labels: s("email", "jwt"),
			samples: []Sample{
				{s("email"), s("email")},
				{s(), s("jwt")},
			},
			cats: map[string]cat{
				"email": {"tp=1 fp=0 fn=0 tn=1 support=1 predicted=1", "1.0000 1.0000 1.0000"},
				"jwt":   {"tp=0 fp=1 fn=0 tn=1 support=0 predicted=1", "0.0000 - 0.0000"},
			},
			micro: cat{"tp=1 fp=1 fn=0 tn=2 support=1 predicted=2", "0.5000 1.0000 0.6667"},
			// the undefined recall of jwt counts as 0 (scikit-learn, zero_division=0)
			macro: "0.5000 0.5000 0.5000 (2)",
			any:   cat{"tp=1 fp=1 fn=0 tn=0 support=1 predicted=2", "0.5000 1.0000 0.6667"},
		},
		{
			name:   "a category labelled but never found: precision undefined, recall 0",
			labels: s("email", "iban"),
			samples: []Sample{
				{s("iban"), s()},
				{s("email"), s("email")},
			},
			cats: map[string]cat{
				"email": {"tp=1 fp=0 fn=0 tn=1 support=1 predicted=1", "1.0000 1.0000 1.0000"},
				"iban":  {"tp=0 fp=0 fn=1 tn=1 support=1 predicted=0", "- 0.0000 0.0000"},
			},
			micro: cat{"tp=1 fp=0 fn=1 tn=2 support=2 predicted=1", "1.0000 0.5000 0.6667"},
			macro: "0.5000 0.5000 0.5000 (2)",
			any:   cat{"tp=1 fp=0 fn=1 tn=0 support=2 predicted=1", "1.0000 0.5000 0.6667"},
		},
		{
			name:   "categories neither labelled nor found are left out of the macro average",
			labels: s("email", "iban", "jwt"),
			samples: []Sample{
				{s("email"), s("email")},
				{s(), s()},
			},
			cats: map[string]cat{
				"email": {"tp=1 fp=0 fn=0 tn=1 support=1 predicted=1", "1.0000 1.0000 1.0000"},
				"iban":  {"tp=0 fp=0 fn=0 tn=2 support=0 predicted=0", "- - -"},
				"jwt":   {"tp=0 fp=0 fn=0 tn=2 support=0 predicted=0", "- - -"},
			},
			micro: cat{"tp=1 fp=0 fn=0 tn=5 support=1 predicted=1", "1.0000 1.0000 1.0000"},
			macro: "1.0000 1.0000 1.0000 (1)",
			any:   cat{"tp=1 fp=0 fn=0 tn=1 support=1 predicted=1", "1.0000 1.0000 1.0000"},
		},
		{
			name:    "only benign lines, nothing found: every figure undefined",
			labels:  s("email"),
			samples: []Sample{{s(), s()}, {s(), s()}},
			cats:    map[string]cat{"email": {"tp=0 fp=0 fn=0 tn=2 support=0 predicted=0", "- - -"}},
			micro:   cat{"tp=0 fp=0 fn=0 tn=2 support=0 predicted=0", "- - -"},
			macro:   "- - - (0)",
			any:     cat{"tp=0 fp=0 fn=0 tn=2 support=0 predicted=0", "- - -"},
		},
		{
			name:   "no sample",
			labels: s("email"),
			cats:   map[string]cat{"email": {"tp=0 fp=0 fn=0 tn=0 support=0 predicted=0", "- - -"}},
			micro:  cat{"tp=0 fp=0 fn=0 tn=0 support=0 predicted=0", "- - -"},
			macro:  "- - - (0)",
			any:    cat{"tp=0 fp=0 fn=0 tn=0 support=0 predicted=0", "- - -"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Compute(tc.labels, tc.samples)
			if m.Lines != len(tc.samples) || len(m.Categories) != len(tc.labels) {
				t.Fatalf("lines %d, categories %d", m.Lines, len(m.Categories))
			}
			for i, c := range m.Categories {
				if c.Category != tc.labels[i] {
					t.Errorf("category %d is %s, want %s (the order given)", i, c.Category, tc.labels[i])
				}
				want := tc.cats[c.Category]
				if got := counts(c.Score); got != want.counts {
					t.Errorf("%s counts: got %s, want %s", c.Category, got, want.counts)
				}
				if got := figures(c.Precision, c.Recall, c.F1); got != want.figures {
					t.Errorf("%s precision recall f1: got %s, want %s", c.Category, got, want.figures)
				}
			}
			if got := counts(m.Micro); got != tc.micro.counts {
				t.Errorf("micro counts: got %s, want %s", got, tc.micro.counts)
			}
			if got := figures(m.Micro.Precision, m.Micro.Recall, m.Micro.F1); got != tc.micro.figures {
				t.Errorf("micro: got %s, want %s", got, tc.micro.figures)
			}
			if got := fmt.Sprintf("%s (%d)", figures(m.Macro.Precision, m.Macro.Recall, m.Macro.F1), m.Macro.Categories); got != tc.macro {
				t.Errorf("macro: got %s, want %s", got, tc.macro)
			}
			if got := counts(m.Any); got != tc.any.counts {
				t.Errorf("any counts: got %s, want %s", got, tc.any.counts)
			}
			if got := figures(m.Any.Precision, m.Any.Recall, m.Any.F1); got != tc.any.figures {
				t.Errorf("any: got %s, want %s", got, tc.any.figures)
			}
		})
	}
}

// F1 is the harmonic mean of precision and recall wherever both are defined.
func TestF1IsTheHarmonicMean(t *testing.T) {
	for tp := 0; tp < 6; tp++ {
		for fp := 0; fp < 6; fp++ {
			for fn := 0; fn < 6; fn++ {
				sc := Score{TruePositives: tp, FalsePositives: fp, FalseNegatives: fn}
				sc.figures()
				if sc.Precision == nil || sc.Recall == nil {
					continue
				}
				p, r := *sc.Precision, *sc.Recall
				want := 0.0
				if p+r > 0 {
					want = 2 * p * r / (p + r)
				}
				if math.Abs(*sc.F1-want) > 1e-12 {
					t.Errorf("tp %d fp %d fn %d: f1 %v, want %v", tp, fp, fn, *sc.F1, want)
				}
			}
		}
	}
}

func TestGates(t *testing.T) {
	labels := s("email", "phone", "jwt", "iban")
	m := Compute(labels, []Sample{
		{s("email"), s("email")},
		{s("email"), s("email")},
		{s("email"), s("email")},
		{s("email"), s("email")},
		{s("email"), s("email")},
		{s("email"), s("email")},
		{s("email"), s("email")},
		{s("email"), s("email")},
		{s("email"), s("email")},
		{s("email"), s()}, // email recall 9/10
		{s("phone"), s("phone")},
		{s(), s("phone")}, // phone precision 1/2
		{s("iban"), s()},  // iban: recall 0, precision undefined
	})
	for _, tc := range []struct {
		metric, flag string
		want         []string // "PASS|FAIL scope value"
	}{
		{MetricRecall, "0.8", []string{"PASS micro 0.8333"}},
		{MetricRecall, "0.9", []string{"FAIL micro 0.8333"}},
		// 9/10 reaches 0.9 exactly, as the figure is computed
		{MetricRecall, "email=0.9", []string{"PASS email 0.9000"}},
		{MetricRecall, "email=0.91", []string{"FAIL email 0.9000"}},
		{MetricPrecision, "phone=0.5", []string{"PASS phone 0.5000"}},
		// an undefined figure fails, with why
		{MetricRecall, "jwt=0.5", []string{"FAIL jwt - undefined: no line is labelled with it"}},
		{MetricPrecision, "iban=0.5", []string{"FAIL iban - undefined: no line was found to hold it"}},
		// * checks every category whose figure is defined
		{MetricRecall, "*=0.5", []string{"PASS email 0.9000", "PASS phone 1.0000", "FAIL iban 0.0000"}},
		{MetricPrecision, "*=0.6", []string{"PASS email 1.0000", "FAIL phone 0.5000"}},
		{MetricF1, "macro=0.5", []string{"PASS macro 0.5380"}},
		{MetricPrecision, "any=0.95", []string{"FAIL any 0.9091"}},
		{MetricPrecision, " any = 0.909 ", []string{"PASS any 0.9091"}},
	} {
		t.Run(tc.metric+" "+tc.flag, func(t *testing.T) {
			g, err := ParseGate(tc.metric, tc.flag, labels)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range Check(&m, []Gate{g}) {
				status := "FAIL"
				if r.Passed {
					status = "PASS"
				}
				line := fmt.Sprintf("%s %s %s", status, r.Scope, fig(r.Value))
				if r.Note != "" {
					line += " " + r.Note
				}
				got = append(got, line)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

func TestAGateOnEveryCategoryWithNoneDefinedFails(t *testing.T) {
	m := Compute(s("email"), []Sample{{s(), s()}})
	res := Check(&m, []Gate{{Metric: MetricRecall, Scope: ScopeEach, Min: 0.5}, {Metric: MetricPrecision, Scope: ScopeMicro, Min: 0.5}})
	if len(res) != 2 || res[0].Passed || res[0].Scope != "*" || res[0].Note != "undefined for every category: no line is labelled with a category" ||
		res[1].Passed || res[1].Note != "undefined: no line was found to hold a category" {
		t.Errorf("%+v", res)
	}
}

func TestParseGateRefusesWhatItCannotCheck(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"1.5", `--min-recall 1.5: "1.5" is not a minimum in [0, 1] (e.g. 0.95)`},
		{"-0.1", `--min-recall -0.1: "-0.1" is not a minimum in [0, 1]`},
		{"email=high", `--min-recall email=high: "high" is not a minimum in [0, 1]`},
		{"emial=0.9", `--min-recall emial=0.9: "emial" is not measured: give micro, macro, any, * or a category (email, any)`},
		{"any=0.9", `--min-recall any=0.9: "any" is both a category and the any average: eval cannot tell them apart`},
		{"=0.9", `"" is not measured`},
	} {
		_, err := ParseGate(MetricRecall, tc.flag, s("email", "any"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.flag, err, tc.want)
		}
	}
}
