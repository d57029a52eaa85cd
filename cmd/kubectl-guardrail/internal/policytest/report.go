package policytest

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Report is what a test command found.
type Report struct {
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Errors  int      `json:"errors"`
	Cases   int      `json:"cases"`
	Results []Result `json:"results"`
}

// Summarize counts results.
func Summarize(results []Result) Report {
	r := Report{Results: results}
	if r.Results == nil {
		r.Results = []Result{}
	}
	seen := map[string]bool{}
	for _, res := range results {
		switch res.Status {
		case StatusPassed:
			r.Passed++
		case StatusFailed:
			r.Failed++
		default:
			r.Errors++
		}
		if k := res.File + "\x00" + res.Case; !seen[k] {
			seen[k] = true
			r.Cases++
		}
	}
	return r
}

// OK reports whether every run passed.
func (r *Report) OK() bool { return r.Failed == 0 && r.Errors == 0 }

// SummaryLine is the report's last line, e.g. "Test summary: 12 passed, 1 failed, 0 errors (5 cases)".
func (r *Report) SummaryLine() string {
	return fmt.Sprintf("Test summary: %d passed, %d failed, %d errors (%d cases)", r.Passed, r.Failed, r.Errors, r.Cases)
}

// WriteText writes the report for a person: a line per case that passed (per run with
// verbose), each failed run with its mismatches as want/got pairs, and the summary line.
func (r *Report) WriteText(w io.Writer, verbose bool) {
	type group struct {
		name    string
		results []Result
	}
	var groups []*group
	byCase := map[string]*group{}
	for _, res := range r.Results {
		k := res.File + "\x00" + res.Case
		g := byCase[k]
		if g == nil {
			g = &group{name: res.Case}
			byCase[k] = g
			groups = append(groups, g)
		}
		g.results = append(g.results, res)
	}
	for _, g := range groups {
		allPassed := true
		for _, res := range g.results {
			allPassed = allPassed && res.Status == StatusPassed
		}
		if allPassed && !verbose {
			_, _ = fmt.Fprintf(w, "PASS   %s (%s)\n", g.name, runList(g.results))
			continue
		}
		for _, res := range g.results {
			writeResult(w, &res)
		}
	}
	_, _ = fmt.Fprintln(w, r.SummaryLine())
}

func runList(rs []Result) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Run
	}
	return strings.Join(names, "; ")
}

func writeResult(w io.Writer, res *Result) {
	switch res.Status {
	case StatusPassed:
		_, _ = fmt.Fprintf(w, "PASS   %s [%s]\n", res.Case, res.Run)
		return
	case StatusError:
		_, _ = fmt.Fprintf(w, "ERROR  %s [%s]\n       %s\n", res.Case, res.Run, res.Error)
		return
	}
	_, _ = fmt.Fprintf(w, "FAIL   %s [%s]\n", res.Case, res.Run)
	guardrails := "none"
	if len(res.Guardrails) > 0 {
		guardrails = strings.Join(res.Guardrails, ", ")
	}
	width := len("guardrails")
	for _, m := range res.Mismatches {
		width = max(width, len(m.Field))
	}
	_, _ = fmt.Fprintf(w, "       %-*s  %s\n", width, "guardrails", guardrails)
	for _, m := range res.Mismatches {
		_, _ = fmt.Fprintf(w, "       %-*s  want  %s\n", width, m.Field, m.Want)
		_, _ = fmt.Fprintf(w, "       %-*s  got   %s\n", width, "", m.Got)
		if at, ok := firstDifference(m.Want, m.Got); ok {
			_, _ = fmt.Fprintf(w, "       %-*s        %s^ differs from here\n", width, "", strings.Repeat(" ", at))
		}
	}
}

// firstDifference returns the column (in characters) where two quoted texts first
// differ, when both are quoted texts worth pointing into.
func firstDifference(want, got string) (int, bool) {
	if !strings.HasPrefix(want, `"`) || !strings.HasPrefix(got, `"`) || utf8.RuneCountInString(want) < 12 {
		return 0, false
	}
	wr, gr := []rune(want), []rune(got)
	for i := 0; i < len(wr) && i < len(gr); i++ {
		if wr[i] != gr[i] {
			return i, true
		}
	}
	return min(len(wr), len(gr)) - 1, true
}
