package policyeval

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText writes the report for a person: what was measured, a table of the figures
// per category with the micro and macro averages and the per-line row, the lines not
// evaluated, the misclassified lines (when asked for), the gates and a summary line.
func (r *Report) WriteText(w io.Writer) {
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(w, format, args...) }
	p("%s\n", r.Target())
	p("Dataset %s: %d %s, %d evaluated\n\n", r.Dataset, r.Lines, plural(r.Lines, "line", "lines"), r.Evaluated)
	r.writeTable(w)
	if len(r.IgnoredLabels) > 0 {
		p("\nLabels of categories this Guardrail does not judge, not measured: %s\n", ignoredList(r.IgnoredLabels))
	}
	if len(r.Failures) > 0 {
		parts := make([]string, len(r.Failures))
		for i, f := range r.Failures {
			parts[i] = fmt.Sprintf("line %d%s (%s)", f.Line, idSuffix(f.ID), f.Code)
		}
		p("\nEvaluation failed, not measured: %s\n", strings.Join(parts, ", "))
	}
	if r.Misclassified != nil {
		r.writeMisses(w)
	}
	if len(r.Gates) > 0 {
		p("\nGates:\n")
		width := 0
		for _, g := range r.Gates {
			width = max(width, len(g.Scope))
		}
		for _, g := range r.Gates {
			status := "PASS"
			if !g.Passed {
				status = "FAIL"
			}
			switch {
			case g.Value == nil:
				p("  %s  %-9s  %-*s  %s (minimum %s)\n", status, g.Metric, width, g.Scope, g.Note, fixed(g.Min))
			case g.Passed:
				p("  %s  %-9s  %-*s  %s >= %s\n", status, g.Metric, width, g.Scope, fixed(*g.Value), fixed(g.Min))
			default:
				p("  %s  %-9s  %-*s  %s <  %s\n", status, g.Metric, width, g.Scope, fixed(*g.Value), fixed(g.Min))
			}
		}
	}
	p("\n%s\n", r.SummaryLine())
}

// SummaryLine is the report's last line, e.g.
// "Eval summary: passed (2 gates passed; 24 of 24 lines evaluated)".
func (r *Report) SummaryLine() string {
	failed := 0
	for _, g := range r.Gates {
		if !g.Passed {
			failed++
		}
	}
	var gates string
	switch {
	case len(r.Gates) == 0:
		gates = "no gate"
	case failed == 0:
		gates = fmt.Sprintf("%d %s passed", len(r.Gates), plural(len(r.Gates), "gate", "gates"))
	default:
		gates = fmt.Sprintf("%d of %d %s failed", failed, len(r.Gates), plural(len(r.Gates), "gate", "gates"))
	}
	status := "passed"
	if !r.Passed {
		status = "failed"
	}
	return fmt.Sprintf("Eval summary: %s (%s; %d of %d lines evaluated)", status, gates, r.Evaluated, r.Lines)
}

func (r *Report) writeTable(w io.Writer) {
	type row struct {
		name   string
		counts *Score
		p, rec *float64
		f1     *float64
	}
	var rows []row
	for i := range r.Categories {
		c := &r.Categories[i]
		rows = append(rows, row{c.Category, &c.Score, c.Precision, c.Recall, c.F1})
	}
	summary := len(rows)
	rows = append(rows,
		row{"micro", &r.Micro, r.Micro.Precision, r.Micro.Recall, r.Micro.F1},
		row{fmt.Sprintf("macro (%d)", r.Macro.Categories), nil, r.Macro.Precision, r.Macro.Recall, r.Macro.F1},
		row{"any (per line)", &r.Any, r.Any.Precision, r.Any.Recall, r.Any.F1},
	)
	width := len("CATEGORY")
	for _, rw := range rows {
		width = max(width, len(rw.name))
	}
	head := []string{"SUPPORT", "FOUND", "TP", "FP", "FN", "TN", "PRECISION", "RECALL", "F1"}
	widths := []int{7, 5, 4, 4, 4, 5, 9, 6, 5}
	var b strings.Builder
	line := func(name string, cells []string) {
		fmt.Fprintf(&b, "%-*s", width, name)
		for i, c := range cells {
			fmt.Fprintf(&b, "  %*s", widths[i], c)
		}
		b.WriteString("\n")
	}
	line("CATEGORY", head)
	for i, rw := range rows {
		if i == summary {
			b.WriteString(strings.Repeat("-", width+2*len(widths)+sum(widths)) + "\n")
		}
		cells := make([]string, 6, 9)
		if rw.counts != nil {
			s := rw.counts
			for k, n := range []int{s.Support, s.Predicted, s.TruePositives, s.FalsePositives, s.FalseNegatives, s.TrueNegatives} {
				cells[k] = strconv.Itoa(n)
			}
		}
		cells = append(cells, opt(rw.p), opt(rw.rec), opt(rw.f1))
		line(rw.name, cells)
	}
	_, _ = io.WriteString(w, b.String())
}

func (r *Report) writeMisses(w io.Writer) {
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(w, format, args...) }
	if len(r.Misclassified) == 0 {
		p("\nMisclassified: none\n")
		return
	}
	note := "texts not shown: --show-text shows them"
	if r.Misclassified[0].Text != nil {
		note = "texts shown"
	}
	p("\nMisclassified: %d %s (%s)\n", len(r.Misclassified), plural(len(r.Misclassified), "line", "lines"), note)
	head := []string{"LINE", "ID", "MISSED", "UNEXPECTED"}
	cells := make([][]string, len(r.Misclassified))
	widths := make([]int, len(head))
	for i, h := range head {
		widths[i] = len(h)
	}
	for i, m := range r.Misclassified {
		cells[i] = []string{strconv.Itoa(m.Line), dash(m.ID), dashList(m.Missed), dashList(m.Unexpected)}
		for k, c := range cells[i] {
			widths[k] = max(widths[k], len(c))
		}
	}
	row := func(cs []string, text string) {
		var b strings.Builder
		for k, c := range cs {
			fmt.Fprintf(&b, "  %-*s", widths[k], c)
		}
		if text != "" {
			b.WriteString("  " + text)
		}
		p("%s\n", strings.TrimRight(b.String(), " "))
	}
	textHead := ""
	if r.Misclassified[0].Text != nil {
		textHead = "TEXT"
	}
	row(head, textHead)
	for i, m := range r.Misclassified {
		text := ""
		if m.Text != nil {
			text = strconv.Quote(*m.Text)
		}
		row(cells[i], text)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// fixed spells a figure with three decimals.
func fixed(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

func opt(f *float64) string {
	if f == nil {
		return "-"
	}
	return fixed(*f)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dashList(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

func idSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " [" + id + "]"
}
