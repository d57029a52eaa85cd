package prom

import (
	"math"
	"strconv"
)

// textWriter appends the text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
type textWriter struct{ b []byte }

// header writes the HELP and TYPE lines of a family.
func (w *textWriter) header(d *desc) {
	w.b = append(w.b, "# HELP "...)
	w.b = append(w.b, d.name...)
	w.b = append(w.b, ' ')
	w.b = appendEscaped(w.b, d.help, false)
	w.b = append(w.b, "\n# TYPE "...)
	w.b = append(w.b, d.name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, d.typ...)
	w.b = append(w.b, '\n')
}

// sample writes one sample line: name and suffix, the labels names[i]=values[i] and then
// extraName=extraValue when extraName is set (a histogram's le, a summary's quantile), and
// the value.
func (w *textWriter) sample(name, suffix string, names, values []string, extraName, extraValue string, v float64) {
	w.b = append(w.b, name...)
	w.b = append(w.b, suffix...)
	if len(names) > 0 || extraName != "" {
		w.b = append(w.b, '{')
		for i, n := range names {
			w.label(n, values[i])
			w.b = append(w.b, ',')
		}
		if extraName != "" {
			w.label(extraName, extraValue)
		} else {
			w.b = w.b[:len(w.b)-1] // the last comma
		}
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ' ')
	w.b = appendFloat(w.b, v)
	w.b = append(w.b, '\n')
}

func (w *textWriter) label(name, value string) {
	w.b = append(w.b, name...)
	w.b = append(w.b, `="`...)
	w.b = appendEscaped(w.b, value, true)
	w.b = append(w.b, '"')
}

// appendEscaped escapes a backslash and a newline, and a double quote in a label value.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat formats v as Prometheus's own writer does: the shortest representation that
// reads back as v, integers below a million without exponent (12, 404), larger ones with
// one (1.6777216e+07), and +Inf, -Inf, NaN.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 0:
		return append(b, '0') // and not -0
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// formatFloat is appendFloat to a string: the le and quantile label values.
func formatFloat(v float64) string { return string(appendFloat(nil, v)) }
