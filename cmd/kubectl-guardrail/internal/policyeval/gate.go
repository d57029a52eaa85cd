package policyeval

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Metrics a gate can set a minimum for.
const (
	MetricPrecision = "precision"
	MetricRecall    = "recall"
	MetricF1        = "f1"
)

// Scopes of a gate beside a category id (or CEL rule name).
const (
	// ScopeMicro is the micro average: a bare minimum (--min-recall 0.9) sets it.
	ScopeMicro = "micro"
	ScopeMacro = "macro"
	// ScopeAny is per line: labelled with a category at all, found to hold one at all.
	ScopeAny = "any"
	// ScopeEach sets the minimum of every category whose figure is defined.
	ScopeEach = "*"
)

var scopes = []string{ScopeMicro, ScopeMacro, ScopeAny, ScopeEach}

// Gate is a minimum a figure must reach.
type Gate struct {
	Metric string  `json:"metric"`
	Scope  string  `json:"scope"`
	Min    float64 `json:"min"`
}

// ParseGate reads the value of a --min-<metric> flag: MIN, the micro average's minimum,
// or SCOPE=MIN, where SCOPE is micro, macro, any, * or one of labels. MIN is in [0, 1].
func ParseGate(metric, v string, labels []string) (Gate, error) {
	flag := "--min-" + metric
	scope, val, found := strings.Cut(v, "=")
	if !found {
		scope, val = ScopeMicro, v
	}
	scope = strings.TrimSpace(scope)
	minimum, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
	if err != nil || minimum < 0 || minimum > 1 {
		return Gate{}, fmt.Errorf("%s %s: %q is not a minimum in [0, 1] (e.g. 0.95)", flag, v, val)
	}
	reserved, known := slices.Contains(scopes, scope), slices.Contains(labels, scope)
	switch {
	case reserved && known:
		return Gate{}, fmt.Errorf("%s %s: %q is both a category and the %s average: eval cannot tell them apart", flag, v, scope, scope)
	case !reserved && !known:
		return Gate{}, fmt.Errorf("%s %s: %q is not measured: give micro, macro, any, * or a category (%s)", flag, v, scope, orNone(labels))
	}
	return Gate{Metric: metric, Scope: scope, Min: minimum}, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// GateResult is a gate checked against the figures: one per category for scope *.
type GateResult struct {
	Metric string   `json:"metric"`
	Scope  string   `json:"scope"`
	Min    float64  `json:"min"`
	Value  *float64 `json:"value"`
	Passed bool     `json:"passed"`
	// Note says why the figure is undefined: an undefined figure fails its gate.
	Note string `json:"note,omitempty"`
}

// epsilon absorbs the rounding of a figure computed from counts: 9/10 passes 0.9.
const epsilon = 1e-9

// Check checks gates against m. An undefined figure fails (a gate that cannot be
// verified does not pass); scope * checks each category whose figure is defined, and
// fails when there is none.
func Check(m *Metrics, gates []Gate) []GateResult {
	out := []GateResult{}
	for _, g := range gates {
		res := func(scope string, v *float64, note string) GateResult {
			r := GateResult{Metric: g.Metric, Scope: scope, Min: g.Min, Value: v}
			if v == nil {
				r.Note = note
			} else {
				r.Passed = *v+epsilon >= g.Min
			}
			return r
		}
		switch g.Scope {
		case ScopeMicro:
			out = append(out, res(g.Scope, figure(&m.Micro, g.Metric), undefined(g.Metric, "category")))
		case ScopeAny:
			out = append(out, res(g.Scope, figure(&m.Any, g.Metric), undefined(g.Metric, "category")))
		case ScopeMacro:
			out = append(out, res(g.Scope, macroFigure(&m.Macro, g.Metric), "undefined: no line is labelled with or found to hold a category"))
		case ScopeEach:
			n := 0
			for i := range m.Categories {
				c := &m.Categories[i]
				if v := figure(&c.Score, g.Metric); v != nil {
					out = append(out, res(c.Category, v, ""))
					n++
				}
			}
			if n == 0 {
				out = append(out, res(g.Scope, nil, "undefined for every category: "+strings.TrimPrefix(undefined(g.Metric, "category"), "undefined: ")))
			}
		default:
			for i := range m.Categories {
				if c := &m.Categories[i]; c.Category == g.Scope {
					out = append(out, res(g.Scope, figure(&c.Score, g.Metric), undefined(g.Metric, "it")))
				}
			}
		}
	}
	return out
}

func figure(s *Score, metric string) *float64 {
	switch metric {
	case MetricPrecision:
		return s.Precision
	case MetricRecall:
		return s.Recall
	}
	return s.F1
}

func macroFigure(a *Average, metric string) *float64 {
	switch metric {
	case MetricPrecision:
		return a.Precision
	case MetricRecall:
		return a.Recall
	}
	return a.F1
}

// undefined says why a figure has no value.
func undefined(metric, what string) string {
	switch metric {
	case MetricPrecision:
		return "undefined: no line was found to hold " + article(what)
	case MetricRecall:
		return "undefined: no line is labelled with " + article(what)
	}
	return "undefined: no line is labelled with or found to hold " + article(what)
}

func article(what string) string {
	if what == "it" {
		return what
	}
	return "a " + what
}
