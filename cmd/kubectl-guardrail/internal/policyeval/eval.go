package policyeval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/cmd/kubectl-guardrail/internal/policytest"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Item is a line ready to judge.
type Item struct {
	Line Line
	// Labels are the line's labels that are measured; Ignored those the classifier has
	// but the Guardrail does not judge.
	Labels  []string
	Ignored []string
	verdict *policytest.LineVerdict
}

// Load reads a dataset (Read) and checks its lines against what j measures (Prepare):
// every malformed line is reported (LineErrors), in the order of the file.
func Load(r io.Reader, j *policytest.Judge) ([]Item, error) {
	lines, errs, err := read(r)
	if err != nil {
		return nil, err
	}
	items, err := Prepare(j, lines)
	var more LineErrors
	if errors.As(err, &more) {
		errs = append(errs, more...)
		sort.SliceStable(errs, func(a, b int) bool { return errs[a].Line < errs[b].Line })
	} else if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return items, nil
}

// Prepare checks lines against what j measures: every label is a category of its
// classifier (or a CEL rule of its Guardrail, or benign/none), and a remote classifier's
// lines give its verdict. Every malformed line is reported (LineErrors).
func Prepare(j *policytest.Judge, lines []Line) ([]Item, error) {
	measured := j.Labels()
	items := make([]Item, 0, len(lines))
	var errs LineErrors
	listed := false // the labels measured, listed in the first error about a label
	for _, l := range lines {
		it, err := prepare(j, measured, l, &listed)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		items = append(items, it)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return items, nil
}

func prepare(j *policytest.Judge, measured []string, l Line, listed *bool) (Item, *LineError) {
	it := Item{Line: l, Labels: []string{}}
	fail := func(field, format string, args ...any) (Item, *LineError) {
		return Item{}, &LineError{Line: l.Number, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for i, lab := range l.Labels {
		field := l.LabelField
		if field == fieldLabels {
			field = fmt.Sprintf("labels[%d]", i)
		}
		switch {
		case slices.Contains(measured, lab):
			it.Labels = append(it.Labels, lab)
		case j.Known(lab):
			it.Ignored = append(it.Ignored, lab)
		case slices.Contains(NoCategory, lab):
			if len(l.Labels) > 1 {
				return fail(field, "%q says the text holds no category: it cannot be given with other labels", lab)
			}
		case *listed:
			return fail(field, "%q is not a category of classifier %s%s", lab, j.Classifier.Key, rulesClause(j))
		default:
			*listed = true
			return fail(field, "%q is not a category of classifier %s%s (measured: %s; \"benign\" or [] for none)",
				lab, j.Classifier.Key, rulesClause(j), orNone(measured))
		}
	}
	switch {
	case j.Remote() && !l.HasVerdict:
		return fail(fieldVerdict, "required: classifier %s is a remote (%s) classifier and eval calls no network: give the verdict it gave for this text, e.g. %s",
			j.Classifier.Key, j.Classifier.Backend, verdictExample(j.Classifier))
	case !j.Remote() && l.HasVerdict:
		return fail(fieldVerdict, "classifier %s is built in and judges the text itself: remove verdict", j.Classifier.Key)
	case j.Remote():
		v, err := j.Verdict(l.Verdict, fieldVerdict)
		if err != nil {
			return Item{}, &LineError{Line: l.Number, Msg: err.Error()}
		}
		it.verdict = v
	}
	return it, nil
}

func rulesClause(j *policytest.Judge) string {
	if len(j.Guardrail.Rules) == 0 {
		return ""
	}
	return " nor a rule of Guardrail " + j.Guardrail.Key
}

func verdictExample(c *policy.Classifier) string {
	if len(c.Categories) > 0 {
		return fmt.Sprintf(`{"scores": {%q: 0.9}}`, c.Categories[0].ID)
	}
	if len(c.Questions) > 0 {
		return fmt.Sprintf(`{"answers": {%q: {...}}}`, c.Questions[0].ID)
	}
	return `{"scores": {}}`
}

// Options are what the report shows and checks.
type Options struct {
	// Dataset names the dataset in the report.
	Dataset string
	Gates   []Gate
	// Misclassified lists the lines with a false positive or a false negative.
	Misclassified bool
	// ShowText adds their texts: datasets can hold real secrets, so never by default.
	ShowText bool
}

// Report is what eval measured.
type Report struct {
	// Guardrail is the key of the Guardrail measured; empty when a Classifier is measured
	// alone (Threshold is then the threshold of every category).
	Guardrail  string   `json:"guardrail,omitempty"`
	Classifier string   `json:"classifier"`
	Threshold  *float64 `json:"threshold,omitempty"`
	Phase      string   `json:"phase"`
	DeltaSize  int      `json:"deltaSize,omitempty"`
	Dataset    string   `json:"dataset"`
	// Lines read; Evaluated those measured (the others' evaluation failed: Failures).
	Lines     int       `json:"lines"`
	Evaluated int       `json:"evaluated"`
	Failures  []Failure `json:"failures"`
	// IgnoredLabels counts, per category the classifier has but the Guardrail does not
	// judge, the lines labelled with it.
	IgnoredLabels map[string]int `json:"ignoredLabels,omitempty"`
	Metrics
	Gates         []GateResult `json:"gates"`
	Misclassified []Miss       `json:"misclassified,omitempty"`
	// Passed: every line was evaluated and every gate passed.
	Passed bool `json:"passed"`
}

// Failure is a line whose evaluation failed.
type Failure struct {
	Line int    `json:"line"`
	ID   string `json:"id,omitempty"`
	Code string `json:"code"`
}

// Miss is a line with a false positive or a false negative.
type Miss struct {
	Line int    `json:"line"`
	ID   string `json:"id,omitempty"`
	// Labels measured and Found by the guard.
	Labels []string `json:"labels"`
	Found  []string `json:"found"`
	// Missed are false negatives, Unexpected false positives.
	Missed     []string `json:"missed"`
	Unexpected []string `json:"unexpected"`
	// Text only with Options.ShowText.
	Text *string `json:"text,omitempty"`
}

// Run judges every item with j and measures the result.
func Run(ctx context.Context, j *policytest.Judge, items []Item, o Options) (*Report, error) {
	r := &Report{
		Classifier: j.Classifier.Key, Phase: j.Phase.String(), Dataset: o.Dataset,
		Lines: len(items), Failures: []Failure{},
	}
	if j.Synthesized {
		th := j.Guardrail.Categories[0].Threshold
		r.Threshold = &th
	} else {
		r.Guardrail = j.Guardrail.Key
	}
	if j.Phase == policy.PhaseStream {
		r.DeltaSize = j.DeltaSize
	}
	samples := make([]Sample, 0, len(items))
	for i := range items {
		it := &items[i]
		for _, lab := range it.Ignored {
			if r.IgnoredLabels == nil {
				r.IgnoredLabels = map[string]int{}
			}
			r.IgnoredLabels[lab]++
		}
		res, err := j.Judge(ctx, it.Line.Text, it.verdict)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", it.Line.Number, err)
		}
		if res.Code != "" {
			r.Failures = append(r.Failures, Failure{Line: it.Line.Number, ID: it.Line.ID, Code: string(res.Code)})
			continue
		}
		found := res.Found
		if found == nil {
			found = []string{}
		}
		samples = append(samples, Sample{Labels: it.Labels, Predicted: found})
		if o.Misclassified {
			if m := miss(it, found); m != nil {
				if o.ShowText {
					text := it.Line.Text
					m.Text = &text
				}
				r.Misclassified = append(r.Misclassified, *m)
			}
		}
	}
	r.Evaluated = len(samples)
	r.Metrics = Compute(j.Labels(), samples)
	r.Gates = Check(&r.Metrics, o.Gates)
	r.Passed = len(r.Failures) == 0
	for _, g := range r.Gates {
		r.Passed = r.Passed && g.Passed
	}
	if o.Misclassified && r.Misclassified == nil {
		r.Misclassified = []Miss{}
	}
	return r, nil
}

func miss(it *Item, found []string) *Miss {
	m := &Miss{Line: it.Line.Number, ID: it.Line.ID, Labels: it.Labels, Found: found, Missed: []string{}, Unexpected: []string{}}
	for _, l := range it.Labels {
		if !slices.Contains(found, l) {
			m.Missed = append(m.Missed, l)
		}
	}
	for _, f := range found {
		if !slices.Contains(it.Labels, f) {
			m.Unexpected = append(m.Unexpected, f)
		}
	}
	if len(m.Missed) == 0 && len(m.Unexpected) == 0 {
		return nil
	}
	return m
}

// Target describes what was measured, in a sentence.
func (r *Report) Target() string {
	var b strings.Builder
	if r.Guardrail != "" {
		fmt.Fprintf(&b, "Guardrail %s (classifier %s), phase %s", r.Guardrail, r.Classifier, r.Phase)
	} else {
		fmt.Fprintf(&b, "Classifier %s alone, threshold %s, phase %s", r.Classifier, num(*r.Threshold), r.Phase)
	}
	if r.DeltaSize > 0 {
		fmt.Fprintf(&b, " (streamed in %d-character deltas)", r.DeltaSize)
	}
	return b.String()
}

func num(f float64) string { return fmt.Sprintf("%g", f) }

func ignoredList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d %s)", k, m[k], plural(m[k], "line", "lines"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
