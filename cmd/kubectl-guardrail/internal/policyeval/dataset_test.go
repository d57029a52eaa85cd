package policyeval

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestReadTakesBothLabelFormsAndKeepsLineNumbers(t *testing.T) {
	in := "\xef\xbb\xbf" + `{"text": "mail jo@example.com", "labels": ["email", "email", "phone"], "id": "a-1"}` + "\r\n" +
		"\n" +
		"   \n" +
		`{"text": "hello", "label": "benign"}` + "\n" +
		`{"text": "hello", "labels": [], "verdict": {"scores": {"toxic": 0.2}}}` // no final newline
	lines, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	want := []struct {
		n      int
		id     string
		labels []string
		field  string
	}{
		{1, "a-1", []string{"email", "phone"}, "labels"},
		{4, "", []string{"benign"}, "label"},
		{5, "", []string{}, "labels"},
	}
	for i, w := range want {
		l := lines[i]
		if l.Number != w.n || l.ID != w.id || !reflect.DeepEqual(l.Labels, w.labels) || l.LabelField != w.field {
			t.Errorf("line %d: got number %d id %q labels %q field %s, want %+v", i, l.Number, l.ID, l.Labels, l.LabelField, w)
		}
	}
	if lines[0].Text != "mail jo@example.com" || lines[0].HasVerdict || !lines[2].HasVerdict || lines[2].Verdict[0].Scores["toxic"] != 0.2 {
		t.Errorf("text or verdict: %+v", lines)
	}
}

// Each malformed line is reported with its line number and field; the lines after it
// are still read, so that one run lists every problem.
func TestReadNamesTheLineAndFieldOfEveryMalformedLine(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`not json`, `not a JSON object: each line is one object, e.g. {"text": "…", "labels": ["email"]}`},
		{`["a"]`, `not a JSON object`},
		{`{"text": "a", "labels": []`, `not valid JSON: unexpected end of JSON input`},
		{`{"text": "a", "labels": []} {}`, `not valid JSON: invalid character after top-level value (at byte 29)`},
		{`{"text": "a", "labels": [], "lables": []}`, `lables: unknown field (a line has text, labels, label, id, verdict)`},
		{`{"labels": []}`, `text: required: the text to judge`},
		{`{"text": null, "labels": []}`, `text: required`},
		{`{"text": 5, "labels": []}`, `text: want a string, got a number`},
		{`{"text": ["a"], "labels": []}`, `text: want a string, got a list`},
		{`{"text": "", "labels": []}`, `text: empty or only whitespace`},
		{`{"text": " \t", "labels": []}`, `text: empty or only whitespace`},
		{`{"text": "a"}`, `labels: required: the categories the text holds ([] or label: "benign" for none)`},
		{`{"text": "a", "labels": "email"}`, `labels: want a list of category ids ([] for none), got a string`},
		{`{"text": "a", "labels": null}`, `labels: want a list of category ids ([] for none), got null`},
		{`{"text": "a", "labels": [1]}`, `labels: want a list of category ids ([] for none), got a list`},
		{`{"text": "a", "labels": ["email", " "]}`, `labels[1]: empty: want a category id`},
		{`{"text": "a", "label": ["email"]}`, `label: want a category id (a string), got a list`},
		{`{"text": "a", "label": ""}`, `label: empty: want a category id, or "benign" for none`},
		{`{"text": "a", "label": "email", "labels": ["email"]}`, `label: give labels or label, not both`},
		{`{"text": "a", "labels": [], "id": 7}`, `id: want a string, got a number`},
		{`{"text": "a", "labels": [], "verdict": null}`, `verdict: want an object (scores, answers, refused or error), got null`},
		{`{"text": "a", "labels": [], "verdict": {"score": {}}}`, `verdict: unknown field "score"`},
		{`{"text": "a", "labels": [], "verdict": {"scores": {"toxic": "high"}}}`, `verdict: scores: want float64, got a JSON string`},
	} {
		t.Run(tc.line, func(t *testing.T) {
			good := `{"text": "fine", "labels": []}`
			lines, errs, err := read(strings.NewReader(good + "\n\n" + tc.line + "\n" + good + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if len(lines) != 2 || lines[1].Number != 4 {
				t.Errorf("the well-formed lines around it: %+v", lines)
			}
			if len(errs) != 1 || errs[0].Line != 3 {
				t.Fatalf("want one error on line 3, got %v", errs)
			}
			got := errs[0].Error()
			if !strings.HasPrefix(got, "line 3: ") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want it to contain %q", got, tc.want)
			}
			if _, err := Read(strings.NewReader(tc.line)); err == nil {
				t.Error("Read accepts it")
			}
		})
	}
}

// A dataset can hold real secrets: no error quotes a line's text, even when the text is
// what is wrong with it.
func TestErrorsNeverQuoteTheText(t *testing.T) {
	const secret = "ghp_8vKpZq2mW4xR7tY1nB3cD5fG9hJ0kL6sQwEr"
	for _, line := range []string{
		`{"text": "` + secret + `", "labels": "github-token"}`,
		`{"text": "` + secret + `", "labels": ["github-token"], "extra": 1}`,
		`{"text": ["` + secret + `"], "labels": []}`,
		`{"text": "` + secret + `", "labels": [` + secret + `]}`,
		secret,
		`{"text": "` + secret + `" "labels": []}`,
		`{"text": "a", "label": {"` + secret + `": 1}}`,
	} {
		_, err := Read(strings.NewReader(line))
		if err == nil {
			t.Fatalf("%s: accepted", line)
		}
		if msg := err.Error(); strings.Contains(msg, secret) || strings.Contains(msg, "ghp_") || strings.Contains(msg, "'g'") {
			t.Errorf("the error quotes the text: %s", msg)
		}
	}
}

func TestReadListsManyMalformedLinesAtOnce(t *testing.T) {
	var b strings.Builder
	for range 25 {
		b.WriteString(`{"text": "a"}` + "\n")
	}
	_, err := Read(strings.NewReader(b.String()))
	var errs LineErrors
	if !errors.As(err, &errs) || len(errs) != 25 {
		t.Fatalf("%v", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "25 malformed lines:\n  line 1: labels: required") || !strings.Contains(msg, "\n  line 20: ") ||
		strings.Contains(msg, "line 21:") || !strings.HasSuffix(msg, "\n  … and 5 more") {
		t.Errorf("%s", msg)
	}
}

func TestReadRefusesAnEmptyDatasetAndAnOverlongLine(t *testing.T) {
	if _, err := Read(strings.NewReader("\n  \n")); err == nil || !strings.Contains(err.Error(), "no line: a dataset holds one JSON object per line") {
		t.Errorf("empty: %v", err)
	}
	long := `{"text": "` + strings.Repeat("a", MaxLine) + `", "labels": []}`
	_, err := Read(strings.NewReader(`{"text": "a", "labels": []}` + "\n" + long + "\n"))
	if err == nil || err.Error() != "line 2: longer than 16 MiB (the lines after it were not read)" {
		t.Errorf("long line: %v", err)
	}
}
