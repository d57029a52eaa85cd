package policyeval

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/cmd/kubectl-guardrail/internal/policytest"
)

const policies = `apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: pii}
spec:
  builtin: {packs: [pii]}
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: mail-and-phone}
spec:
  mode: Enforce
  classifierRef: {name: pii}
  phases: [Output]
  categories: [email, phone]
  threshold: 1
  action: Redact
  reason: Personal data is removed.
---
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: judge}
spec:
  webhook: {url: "https://judge.example.internal/classify"}
  categories: [{id: toxic}, {id: spam}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: toxic}
spec:
  mode: Report
  classifierRef: {name: judge}
  phases: [Input]
  threshold: 0.8
  thresholds: [{category: spam, threshold: 0.5}]
  action: Block
  reason: Toxic.
`

func judge(t *testing.T, target policytest.Target) *policytest.Judge {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(path, []byte(policies), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policytest.LoadManifests([]string{path}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := policytest.NewJudge(p, target)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Labels and verdicts are checked against what is measured; malformed lines of both
// kinds are listed together, in the order of the file.
func TestLoadChecksEveryLineAgainstWhatIsMeasured(t *testing.T) {
	j := judge(t, policytest.Target{Guardrail: "mail-and-phone"})
	_, err := Load(strings.NewReader(strings.Join([]string{
		`{"text": "a", "labels": ["email", "emial"]}`,
		`{"text": "a"}`,
		`{"text": "a", "labels": ["benign", "email"]}`,
		`{"text": "a", "labels": [], "verdict": {"scores": {}}}`,
		`{"text": "a", "labels": ["iban"]}`,
		`{"text": "a", "label": "none"}`,
	}, "\n")), j)
	want := `4 malformed lines:
  line 1: labels[1]: "emial" is not a category of classifier default/pii (measured: email, phone; "benign" or [] for none)
  line 2: labels: required: the categories the text holds ([] or label: "benign" for none)
  line 3: labels[0]: "benign" says the text holds no category: it cannot be given with other labels
  line 4: verdict: classifier default/pii is built in and judges the text itself: remove verdict`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}

	r := judge(t, policytest.Target{Guardrail: "toxic"})
	_, err = Load(strings.NewReader(strings.Join([]string{
		`{"text": "a", "label": "toxic"}`,
		`{"text": "a", "label": "toxic", "verdict": {"scores": {"toxicity": 0.9}}}`,
		`{"text": "a", "label": "toxic", "verdict": {"answers": {"q": {"choice": "x"}}}}`,
	}, "\n")), r)
	want = `3 malformed lines:
  line 1: verdict: required: classifier default/judge is a remote (webhook) classifier and eval calls no network: give the verdict it gave for this text, e.g. {"scores": {"toxic": 0.9}}
  line 2: verdict.scores.toxicity: classifier default/judge has no category "toxicity" (it has: spam, toxic)
  line 3: verdict.answers.q: classifier default/judge asks no question "q"`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

func TestRunMeasuresTheGuardrailAndNeverShowsTextsUnlessAsked(t *testing.T) {
	j := judge(t, policytest.Target{Guardrail: "mail-and-phone"})
	const secretish = "Mail jo@example.com about IBAN DE89 3704 0044 0532 0130 00."
	data := strings.Join([]string{
		`{"text": "` + secretish + `", "labels": ["email", "iban"], "id": "both"}`, // iban is not judged: ignored
		`{"text": "Call +1 415 555 0132 tomorrow.", "labels": []}`,                 // a false positive, as labelled
		`{"text": "Write to jo at example dot com.", "label": "email"}`,            // a false negative
		`{"text": "The capital of France is Paris.", "label": "benign"}`,
	}, "\n")
	items, err := Load(strings.NewReader(data), j)
	if err != nil {
		t.Fatal(err)
	}
	gates := []Gate{{Metric: MetricRecall, Scope: "email", Min: 0.5}, {Metric: MetricPrecision, Scope: ScopeMicro, Min: 0.9}}
	r, err := Run(context.Background(), j, items, Options{Dataset: "d.jsonl", Gates: gates, Misclassified: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Guardrail != "default/mail-and-phone" || r.Phase != "Output" || r.Lines != 4 || r.Evaluated != 4 || r.IgnoredLabels["iban"] != 1 {
		t.Errorf("report %+v", r)
	}
	if len(r.Categories) != 2 || r.Categories[0].Category != "email" || r.Categories[0].TruePositives != 1 || r.Categories[0].FalseNegatives != 1 ||
		r.Categories[1].FalsePositives != 1 {
		t.Errorf("categories %+v", r.Categories)
	}
	if r.Passed || len(r.Gates) != 2 || !r.Gates[0].Passed || r.Gates[1].Passed {
		t.Errorf("gates %+v", r.Gates)
	}
	if len(r.Misclassified) != 2 || r.Misclassified[0].Line != 2 || r.Misclassified[0].Unexpected[0] != "phone" ||
		r.Misclassified[1].Line != 3 || r.Misclassified[1].Missed[0] != "email" || r.Misclassified[0].Text != nil {
		t.Errorf("misclassified %+v", r.Misclassified)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	js, _ := json.Marshal(r)
	for _, out := range []string{text.String(), string(js)} {
		if strings.Contains(out, "jo@example.com") || strings.Contains(out, "415 555") || strings.Contains(out, "example dot com") {
			t.Errorf("a text is shown:\n%s", out)
		}
	}
	for _, want := range []string{
		"Guardrail default/mail-and-phone (classifier default/pii), phase Output\nDataset d.jsonl: 4 lines, 4 evaluated\n",
		"Labels of categories this Guardrail does not judge, not measured: iban (1 line)\n",
		"Misclassified: 2 lines (texts not shown: --show-text shows them)\n  LINE  ID  MISSED  UNEXPECTED\n  2     -   -       phone\n  3     -   email   -\n",
		"  PASS  recall     email  0.500 >= 0.500\n  FAIL  precision  micro  0.500 <  0.900\n",
		"Eval summary: failed (1 of 2 gates failed; 4 of 4 lines evaluated)\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks\n%s\nin\n%s", want, text.String())
		}
	}

	r, err = Run(context.Background(), j, items, Options{Dataset: "d.jsonl", Misclassified: true, ShowText: true})
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	r.WriteText(&text)
	if !r.Passed || r.Misclassified[1].Text == nil || *r.Misclassified[1].Text != "Write to jo at example dot com." ||
		!strings.Contains(text.String(), "  3     -   email   -           \"Write to jo at example dot com.\"\n") {
		t.Errorf("with ShowText:\n%s", text.String())
	}
}

// A remote classifier is measured on the verdicts of its lines, with the Guardrail's
// per-category thresholds; a line whose evaluation failed is not measured and fails
// the run.
func TestRunMeasuresARemoteClassifierOnRecordedVerdicts(t *testing.T) {
	j := judge(t, policytest.Target{Guardrail: "toxic"})
	items, err := Load(strings.NewReader(strings.Join([]string{
		`{"text": "a", "label": "toxic", "verdict": {"scores": {"toxic": 0.85}}}`,
		`{"text": "b", "label": "toxic", "verdict": {"scores": {"toxic": 0.75}}}`,              // below 0.8: missed
		`{"text": "c", "label": "spam", "verdict": {"scores": {"spam": 0.55}}}`,                // spam's own threshold, 0.5
		`{"text": "d", "label": "benign", "verdict": {"scores": {"toxic": 0.1, "spam": 0.6}}}`, // a false positive
		`{"text": "e", "labels": [], "id": "e-1", "verdict": {"error": "TIMEOUT"}}`,
	}, "\n")), j)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), j, items, Options{Dataset: "d.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Evaluated != 4 || len(r.Failures) != 1 || r.Failures[0] != (Failure{Line: 5, ID: "e-1", Code: "TIMEOUT"}) || r.Passed {
		t.Errorf("failures %+v, passed %v", r.Failures, r.Passed)
	}
	toxic, spam := r.Categories[0], r.Categories[1]
	if toxic.Category != "toxic" || fig(toxic.Recall) != "0.5000" || fig(toxic.Precision) != "1.0000" ||
		spam.Category != "spam" || fig(spam.Recall) != "1.0000" || fig(spam.Precision) != "0.5000" {
		t.Errorf("%+v %+v", toxic, spam)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	if !strings.Contains(text.String(), "Evaluation failed, not measured: line 5 [e-1] (TIMEOUT)\n") ||
		!strings.HasSuffix(text.String(), "Eval summary: failed (no gate; 4 of 5 lines evaluated)\n") {
		t.Errorf("%s", text.String())
	}
}
