// Package policyeval runs `kubectl guardrail eval`: it reads a labelled dataset (JSONL),
// judges each text with the guard's engine through one Guardrail at one phase
// (policytest.Judge: the same compiler, engine and backends as `kubectl guardrail test`),
// and measures precision, recall and F1 per category, micro and macro averaged, and per
// line, with gates that fail the command below a minimum.
//
// A dataset can hold real secrets: nothing here writes a text unless asked to
// (Options.ShowText), and no error message quotes one.
package policyeval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/cmd/kubectl-guardrail/internal/policytest"
)

// MaxLine bounds a line of a dataset.
const MaxLine = 16 << 20

// maxErrors bounds the malformed lines an error lists.
const maxErrors = 20

// Fields of a dataset line.
const (
	fieldText    = "text"
	fieldLabels  = "labels"
	fieldLabel   = "label"
	fieldID      = "id"
	fieldVerdict = "verdict"
)

var fields = []string{fieldText, fieldLabels, fieldLabel, fieldID, fieldVerdict}

// NoCategory are the labels that say a text holds no category (as labels: [] does),
// unless the classifier has a category of that name.
var NoCategory = []string{"benign", "none"}

// Line is one labelled text of a dataset.
type Line struct {
	// Number is the line's number in the file, from 1.
	Number int
	// ID is the line's own identifier, when it gives one.
	ID   string
	Text string
	// Labels are the labels as given, without repeats.
	Labels []string
	// LabelField is the field that gave them: labels, or label.
	LabelField string
	// Verdict is a remote classifier's verdict for the text; HasVerdict says it was given.
	Verdict    policytest.Stub
	HasVerdict bool
}

// LineError is a malformed line: its number, the field and what is wrong.
type LineError struct {
	Line  int
	Field string
	Msg   string
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Msg)
}

// LineErrors are the malformed lines of a dataset.
type LineErrors []*LineError

func (es LineErrors) Error() string {
	var b strings.Builder
	if len(es) == 1 {
		return es[0].Error()
	}
	fmt.Fprintf(&b, "%d malformed lines:", len(es))
	for i, e := range es {
		if i == maxErrors {
			fmt.Fprintf(&b, "\n  … and %d more", len(es)-maxErrors)
			break
		}
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// Read reads a dataset: one JSON object per line (JSONL), blank lines skipped. Every
// malformed line is reported (LineErrors), each naming its line number and field; no
// message quotes a text.
func Read(r io.Reader) ([]Line, error) {
	lines, errs, err := read(r)
	switch {
	case err != nil:
		return nil, err
	case len(errs) > 0:
		return nil, errs
	}
	return lines, nil
}

// read returns the well-formed lines and the malformed ones; err is an error of r, or
// an empty dataset.
func read(r io.Reader) ([]Line, LineErrors, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	var lines []Line
	var errs LineErrors
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if n == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		l, err := parseLine(n, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		if !errors.Is(err, bufio.ErrTooLong) {
			return nil, nil, err
		}
		errs = append(errs, &LineError{Line: n + 1, Msg: fmt.Sprintf("longer than %d MiB (the lines after it were not read)", MaxLine>>20)})
	}
	if len(lines) == 0 && len(errs) == 0 {
		return nil, nil, errors.New("no line: a dataset holds one JSON object per line, e.g. {\"text\": \"…\", \"labels\": [\"email\"]}")
	}
	return lines, errs, nil
}

func parseLine(n int, b []byte) (Line, *LineError) {
	l := Line{Number: n}
	fail := func(field, format string, args ...any) (Line, *LineError) {
		return Line{}, &LineError{Line: n, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if t := bytes.TrimSpace(b); t[0] != '{' {
		return fail("", "not a JSON object: each line is one object, e.g. {\"text\": \"…\", \"labels\": [\"email\"]}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return fail("", "not valid JSON: %s", jsonError(err))
	}
	var unknown []string
	for k := range obj {
		if !slices.Contains(fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fail(unknown[0], "unknown field (a line has %s)", strings.Join(fields, ", "))
	}

	raw, ok := obj[fieldText]
	if !ok || isNull(raw) {
		return fail(fieldText, "required: the text to judge")
	}
	if err := json.Unmarshal(raw, &l.Text); err != nil {
		return fail(fieldText, "want a string, got %s", jsonKind(raw))
	}
	if strings.TrimSpace(l.Text) == "" {
		return fail(fieldText, "empty or only whitespace: the guard judges nothing in it")
	}

	rawLabels, hasLabels := obj[fieldLabels]
	rawLabel, hasLabel := obj[fieldLabel]
	switch {
	case hasLabels && hasLabel:
		return fail(fieldLabel, "give labels or label, not both")
	case !hasLabels && !hasLabel:
		return fail(fieldLabels, "required: the categories the text holds ([] or label: \"benign\" for none)")
	case hasLabels:
		l.LabelField = fieldLabels
		var list []string
		if isNull(rawLabels) || json.Unmarshal(rawLabels, &list) != nil {
			return fail(fieldLabels, "want a list of category ids ([] for none), got %s", jsonKind(rawLabels))
		}
		for i, s := range list {
			if strings.TrimSpace(s) == "" {
				return fail(fmt.Sprintf("labels[%d]", i), "empty: want a category id")
			}
			if !slices.Contains(l.Labels, s) {
				l.Labels = append(l.Labels, s)
			}
		}
	default:
		var s string
		if isNull(rawLabel) || json.Unmarshal(rawLabel, &s) != nil {
			return fail(fieldLabel, "want a category id (a string), got %s", jsonKind(rawLabel))
		}
		if strings.TrimSpace(s) == "" {
			return fail(fieldLabel, "empty: want a category id, or \"benign\" for none")
		}
		l.Labels, l.LabelField = []string{s}, fieldLabel
	}
	if l.Labels == nil {
		l.Labels = []string{}
	}

	if raw, ok := obj[fieldID]; ok {
		if err := json.Unmarshal(raw, &l.ID); err != nil || isNull(raw) {
			return fail(fieldID, "want a string, got %s", jsonKind(raw))
		}
	}
	if raw, ok := obj[fieldVerdict]; ok {
		if isNull(raw) {
			return fail(fieldVerdict, "want an object (scores, answers, refused or error), got null")
		}
		if err := json.Unmarshal(raw, &l.Verdict); err != nil {
			return fail(fieldVerdict, "%s", jsonError(err))
		}
		l.HasVerdict = true
	}
	return l, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonKind names the JSON type of raw, never its value.
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '[':
		return "a list"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonError says what is wrong with JSON without quoting the input: an unknown field is
// named, a type error names the field and types, a syntax error says where.
func jsonError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		msg := se.Error()
		// "invalid character 'x' looking for …": the character may be part of a secret.
		if i := strings.Index(msg, "'"); i >= 0 {
			if j := strings.Index(msg[i+1:], "'"); j >= 0 {
				msg = msg[:i] + "character" + msg[i+1+j+1:]
				msg = strings.Replace(msg, "invalid character character", "invalid character", 1)
			}
		}
		return fmt.Sprintf("%s (at byte %d)", msg, se.Offset)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("%s: want %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("want %s, got a JSON %s", te.Type, te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
