package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

const (
	evalSample  = "config/samples/pii-secrets-redaction.yaml"
	evalDataset = "config/samples/tests/pii-secrets-eval.jsonl"
)

// runEval runs `kubectl guardrail eval ARGS` in process, in the repository's root, with
// stdin as its standard input.
func runEval(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	t.Chdir(envtestutil.RepoRoot())
	var out, errOut bytes.Buffer
	root := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	root.SetArgs(append([]string{"eval"}, args...))
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

// readmeExample returns the command and the output of the README's eval example: the
// block that begins with "$ kubectl guardrail eval -f config/samples/".
func readmeExample(t *testing.T) ([]string, string) {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, found := strings.Cut(string(b), "```\n$ kubectl guardrail eval -f config/samples/")
	if !found {
		t.Fatal("README.md has no eval example")
	}
	block, _, _ = strings.Cut(block, "```\n")
	block = "-f config/samples/" + block
	var cmd []string
	for {
		line, rest, _ := strings.Cut(block, "\n")
		block = rest
		cont := strings.HasSuffix(line, `\`)
		cmd = append(cmd, strings.Fields(strings.TrimSuffix(line, `\`))...)
		if !cont {
			break
		}
	}
	return cmd, block
}

// The README shows what eval prints on the sample, the built-in pii and secrets packs
// with a custom pattern, exactly; the failed gate ends the command with status 1.
func TestTheREADMEShowsWhatEvalPrintsOnTheSample(t *testing.T) {
	args, want := readmeExample(t)
	out, err := runEval(t, "", args...)
	if !errors.Is(err, errSilent) {
		t.Errorf("want the exit status 1 of a failed gate, got %v", err)
	}
	if out != want {
		t.Errorf("README.md's eval example is not what eval prints: replace it with\n%s", out)
	}
}

func TestEvalJSONOnTheSample(t *testing.T) {
	out, err := runEval(t, "", "-f", evalSample, "--dataset", evalDataset, "-o", "json", "--misclassified", "--min-recall", "*=0.5")
	if err != nil { // every recall defined is 0.5 or more
		t.Fatal(err)
	}
	var r struct {
		Guardrail, Classifier, Phase string
		Lines, Evaluated             int
		Failures                     []any
		Categories                   []struct {
			Category                                                     string
			Support, Found                                               int
			TruePositives, FalsePositives, FalseNegatives, TrueNegatives int
			Precision, Recall, F1                                        *float64
		}
		Micro, Any struct {
			TruePositives, FalsePositives, FalseNegatives int
			Precision, Recall                             *float64
		}
		Macro struct {
			Categories int
			Recall     *float64
		}
		Gates []struct {
			Scope  string
			Passed bool
		}
		Misclassified []map[string]any
		Passed        bool
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Guardrail != "default/redact-pii-secrets" || r.Classifier != "default/pii-secrets" || r.Phase != "Output" ||
		r.Lines != 20 || r.Evaluated != 20 || r.Failures == nil || len(r.Failures) != 0 || !r.Passed {
		t.Errorf("%+v", r)
	}
	// every category of the pii and secrets packs, and the sample's pattern
	if len(r.Categories) != 17 || r.Categories[0].Category != "email" || r.Categories[16].Category != "employee-id" {
		t.Fatalf("categories %+v", r.Categories)
	}
	email := r.Categories[0]
	if email.Support != 4 || email.Found != 3 || email.TruePositives != 3 || email.FalseNegatives != 1 || email.TrueNegatives != 16 ||
		*email.Precision != 1 || *email.Recall != 0.75 {
		t.Errorf("email %+v", email)
	}
	if c := r.Categories[7]; c.Category != "aws-secret-key" || c.Precision != nil || c.Recall != nil || c.F1 != nil {
		t.Errorf("a category without lines has no figures: %+v", c)
	}
	if r.Micro.TruePositives != 14 || r.Micro.FalseNegatives != 1 || r.Macro.Categories != 11 || r.Any.TruePositives != 13 {
		t.Errorf("micro %+v macro %+v any %+v", r.Micro, r.Macro, r.Any)
	}
	if len(r.Gates) != 11 || !r.Gates[0].Passed || r.Gates[0].Scope != "email" {
		t.Errorf("gates %+v", r.Gates)
	}
	if len(r.Misclassified) != 1 || r.Misclassified[0]["line"] != 3.0 || r.Misclassified[0]["id"] != "email-obfuscated" {
		t.Errorf("misclassified %+v", r.Misclassified)
	}
	if _, ok := r.Misclassified[0]["text"]; ok || strings.Contains(out, "example dot com") {
		t.Errorf("the JSON holds a text without --show-text:\n%s", out)
	}

	y, err := runEval(t, "", "-f", evalSample, "--dataset", evalDataset, "-o", "yaml")
	if err != nil || !strings.Contains(y, "guardrail: default/redact-pii-secrets\n") || !strings.Contains(y, "- category: email\n") {
		t.Errorf("yaml: %v\n%s", err, y)
	}
}

// What CI runs: the exit status says whether the gates passed.
func TestEvalExitsNonZeroWhenAGateFails(t *testing.T) {
	_, stderr, code := runPlugin(t, "eval", "-f", evalSample, "--dataset", evalDataset, "--min-recall", "0.9", "--min-precision", "*=0.99")
	if code != 0 {
		t.Errorf("gates met: exit %d %s", code, stderr)
	}
	out, stderr, code := runPlugin(t, "eval", "-f", evalSample, "--dataset", evalDataset, "--min-recall", "0.95", "-o", "json")
	if code != 1 || stderr != "" || !strings.Contains(out, `"passed": false`) {
		t.Errorf("a gate missed: exit %d, stderr %q\n%s", code, stderr, out)
	}
	_, stderr, code = runPlugin(t, "eval", "-f", evalSample, "--dataset", evalDataset, "--min-recall", "emial=0.9")
	if code != 1 || !strings.Contains(stderr, `error: --min-recall emial=0.9: "emial" is not measured: give micro, macro, any, * or a category (email, phone,`) {
		t.Errorf("a misspelt gate: exit %d %s", code, stderr)
	}
}

// A dataset can hold real secrets: texts are printed only with --show-text.
func TestEvalPrintsTextsOnlyWithShowText(t *testing.T) {
	out, err := runEval(t, "", "-f", evalSample, "--dataset", evalDataset, "--misclassified")
	if err != nil || !strings.Contains(out, "  3     email-obfuscated  email   -\n") || strings.Contains(out, "example dot com") {
		t.Errorf("%v\n%s", err, out)
	}
	out, err = runEval(t, "", "-f", evalSample, "--dataset", evalDataset, "--show-text")
	if err != nil || !strings.Contains(out, "Misclassified: 1 line (texts shown)\n  LINE  ID                MISSED  UNEXPECTED  TEXT\n  3     email-obfuscated  email   -           \"Write to jo at example dot com.\"\n") {
		t.Errorf("%v\n%s", err, out)
	}
}

// A Classifier alone, from a file with no Guardrail, read from standard input: its
// categories at the threshold given, at the phase given.
func TestEvalMeasuresAClassifierAlone(t *testing.T) {
	dir := t.TempDir()
	classifier := filepath.Join(dir, "classifier.yaml")
	if err := os.WriteFile(classifier, []byte(`apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: leaks, namespace: team-a}
spec:
  builtin:
    packs: [pii, secrets]
    keywords:
      - {category: codename, words: [bluebird]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := `{"text": "Project Bluebird ships Monday; mail jo@example.com", "labels": ["codename", "email"]}
{"text": "the token is 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", "labels": ["github-token"]}
{"text": "Nothing to see here.", "label": "benign"}
{"text": "Call +1 415 555 0132.", "labels": ["phone"]}
`
	for _, phase := range []string{"Input", "ToolResults", "Output", "Stream"} {
		args := []string{"-f", classifier, "--dataset", "-", "--categories", "codename,email,github-token", "--phase", phase,
			"--min-recall", "1", "--min-precision", "1"}
		if phase == "Stream" {
			args = append(args, "--delta-size", "5")
		}
		out, err := runEval(t, data, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", phase, err, out)
		}
		head := "Classifier team-a/leaks alone, threshold 0.5, phase " + phase
		if phase == "Stream" {
			head += " (streamed in 5-character deltas)"
		}
		// phone is a category of the classifier, not measured: its label is ignored
		for _, want := range []string{
			head + "\nDataset (standard input): 4 lines, 4 evaluated\n",
			"\ncodename              1      1     1     0     0      3      1.000   1.000  1.000\n",
			"Labels of categories this Guardrail does not judge, not measured: phone (1 line)\n",
			"Eval summary: passed (2 gates passed; 4 of 4 lines evaluated)\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the report lacks %q:\n%s", phase, want, out)
			}
		}
	}
}

// A malformed dataset is refused before anything is judged, each line named with its
// field; so are flags that do not fit.
func TestEvalSaysWhatIsWrongWithItsInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"text": "mail jo@example.com", "labels": ["email"]}
{"text": "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", "labels": "github-token"}

{"text": "hello", "labels": ["emial"]}
{"text": "hello", "label": "benign", "score": 1}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", evalSample, "--dataset", bad}, "dataset " + bad + `: 3 malformed lines:
  line 2: labels: want a list of category ids ([] for none), got a string
  line 4: labels[0]: "emial" is not a category of classifier default/pii-secrets (measured: email, phone, credit-card, iban, us-ssn, ip-address, aws-access-key, aws-secret-key, github-token, gitlab-token, slack-token, openai-key, anthropic-key, private-key, jwt, generic-secret, employee-id; "benign" or [] for none)
  line 5: score: unknown field (a line has text, labels, label, id, verdict)`},
		{[]string{"-f", evalSample, "--dataset", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl: no such file or directory"},
		{[]string{"-f", evalSample}, `required flag(s) "dataset" not set`},
		{[]string{"-f", evalSample, "--dataset", evalDataset, "-o", "xml"}, `--output "xml" is not supported: use one of [table json yaml]`},
		{[]string{"-f", evalSample, "--dataset", evalDataset, "--delta-size", "4"}, "--delta-size: the texts are judged at Output, not streamed (--phase Stream streams them)"},
		{[]string{"-f", evalSample, "--dataset", evalDataset, "--phase", "Input"}, "--phase Input: Guardrail default/redact-pii-secrets does not judge it (phases: Stream, Output)"},
		{[]string{"-f", evalSample, "--dataset", evalDataset, "--threshold", "0.4"}, "--threshold and --categories measure a Classifier alone: Guardrail default/redact-pii-secrets has its own (measure its Classifier with --classifier default/pii-secrets)"},
		{[]string{"-f", evalSample, "--dataset", evalDataset, "--min-precision", "email=1.5"}, `--min-precision email=1.5: "1.5" is not a minimum in [0, 1] (e.g. 0.95)`},
	} {
		out, err := runEval(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %s", tc.args, err, tc.want)
		}
		if out != "" || err != nil && strings.Contains(err.Error(), "jo@example.com") || err != nil && strings.Contains(err.Error(), "ghp_") {
			t.Errorf("%v: printed %q or quoted a text: %v", tc.args, out, err)
		}
	}
}
