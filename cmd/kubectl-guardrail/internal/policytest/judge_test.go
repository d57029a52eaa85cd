package policytest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

func loadManifests(t *testing.T, body string) *Policies {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policies.yaml")
	writeFile(t, path, body)
	p, err := LoadManifests([]string{path}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const piiClassifier = `apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: pii}
spec:
  builtin:
    packs: [pii]
    keywords:
      - {category: project-name, words: [bluebird]}
`

// The figures eval reports are the guard's: a text in which the Judge finds a category is
// a text the Guardrail, enforcing, acts on, at every phase eval judges.
func TestTheJudgeFindsWhatTheGuardActsOn(t *testing.T) {
	pols, err := LoadPolicies([]string{filepath.Join("testdata", "policies.yaml")}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	runner, err := NewRunner(pols)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"Write to jo@example.com today.",
		"Charge 4111 1111 1111 1111 please.",
		"The capital of France is Paris.",
		"We upgraded to 4.2.1.0 last week.",
		"Call +1 415 555 0132 or mail a.b@example.org",
		"Room 101, extension 4410.",
	}
	for _, phase := range []string{"Input", "Output", "Stream"} {
		j, err := NewJudge(pols, Target{Guardrail: "default/redact-pii", Phase: phase, DeltaSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		// Report mode and the one phase are the judge's: the compiled policies are unchanged
		if g := pols.Snapshot.Guardrails[0]; g.Key != "default/redact-pii" || g.Mode != policy.ModeEnforce ||
			!g.Phases.Has(policy.PhaseInput) || !g.Phases.Has(policy.PhaseStream) || !g.Phases.Has(policy.PhaseOutput) {
			t.Fatalf("the policies changed: %+v", g)
		}
		for _, text := range texts {
			got, err := j.Judge(context.Background(), text, nil)
			if err != nil || got.Code != "" {
				t.Fatalf("%s %q: %v %s", phase, text, err, got.Code)
			}
			// the same text through `kubectl guardrail test`'s run of the Enforce guardrail
			var c string
			switch phase {
			case "Input":
				c = fmt.Sprintf("request: {messages: [{role: user, content: %q}]}", text)
			case "Output":
				c = fmt.Sprintf("answer: {text: %q}", text)
			case "Stream":
				c = fmt.Sprintf("answer: {text: %q, deltas: [3], streamOnly: true}", text)
			}
			f, err := Parse([]byte(head + "cases:\n  - name: c\n    guardrails: [redact-pii]\n    " + c + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			res := runner.RunFile(context.Background(), f)
			acted := len(res) == 1 && len(res[0].Mismatches) == 1 && res[0].Mismatches[0].Got == "redacted"
			if passed := len(res) == 1 && res[0].Status == StatusPassed; !acted && !passed {
				t.Fatalf("%s %q: %+v", phase, text, res)
			}
			if acted != (len(got.Found) > 0) {
				t.Errorf("%s %q: the guard redacts: %v; eval found %v", phase, text, acted, got.Found)
			}
		}
	}
}

func TestTheJudgeReportsEveryCategoryOfAText(t *testing.T) {
	pols := loadManifests(t, piiClassifier)
	j, err := NewJudge(pols, Target{})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Synthesized || j.Phase.String() != "Input" || j.Guardrail.Name != EvalGuardrailName || j.Guardrail.Categories[0].Threshold != DefaultEvalThreshold {
		t.Errorf("a Classifier alone: %+v", j.Guardrail)
	}
	if got := strings.Join(j.Labels(), ","); got != "email,phone,credit-card,iban,us-ssn,ip-address,project-name" {
		t.Errorf("labels %s", got)
	}
	got, err := j.Judge(context.Background(), "Bluebird: mail jo@example.com, card 4111 1111 1111 1111.", nil)
	if err != nil || !slices.Equal(got.Found, []string{"email", "credit-card", "project-name"}) {
		t.Errorf("found %v, %v", got.Found, err)
	}
	// at ToolResults, as what a tool returned
	j, err = NewJudge(pols, Target{Phase: "toolresults", Categories: []string{"email"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = j.Judge(context.Background(), "Bluebird: mail jo@example.com.", nil)
	if err != nil || !slices.Equal(got.Found, []string{"email"}) || j.Phase.String() != "ToolResults" {
		t.Errorf("found %v at %s, %v", got.Found, j.Phase, err)
	}
}

// A remote classifier's text is judged on the verdict its line gives: eval measures the
// Guardrail's thresholds on recorded scores.
func TestARemoteClassifierIsJudgedOnTheLinesVerdict(t *testing.T) {
	pols, err := LoadPolicies([]string{filepath.Join("testdata", "policies.yaml")}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := NewJudge(pols, Target{Guardrail: "warn-toxic"})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Remote() || j.Phase.String() != "Input" {
		t.Fatalf("remote %v phase %s", j.Remote(), j.Phase)
	}
	for _, tc := range []struct {
		verdict Stub
		found   string
		code    string
	}{
		{Stub{{Scores: map[string]float64{"toxic": 0.7}}}, "toxic", ""}, // threshold 0.7
		{Stub{{Scores: map[string]float64{"toxic": 0.69}}}, "", ""},
		{Stub{{Scores: map[string]float64{}}}, "", ""},
		{Stub{{Error: "TIMEOUT"}}, "", "TIMEOUT"},
	} {
		v, err := j.Verdict(tc.verdict, "verdict")
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.Judge(context.Background(), "you are awful", v)
		if err != nil || strings.Join(got.Found, ",") != tc.found || string(got.Code) != tc.code {
			t.Errorf("%+v: found %v code %q, %v", tc.verdict, got.Found, got.Code, err)
		}
	}
	for _, tc := range []struct {
		verdict Stub
		want    string
	}{
		{Stub{{Scores: map[string]float64{"toxc": 0.7}}}, `verdict.scores.toxc: classifier default/judge has no category "toxc" (it has: toxic)`},
		{Stub{{Scores: map[string]float64{"toxic": 1.5}}}, `verdict.scores.toxic: 1.5 is not a score in [0, 1]`},
		{Stub{{Error: "BROKEN"}}, `verdict.error: "BROKEN" is not one of CLASSIFIER_FAILED, TIMEOUT, INVALID_ANSWER`},
		{Stub{}, `verdict: give a verdict (scores, answers or error)`},
	} {
		if _, err := j.Verdict(tc.verdict, "verdict"); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
	v, _ := j.Verdict(Stub{{WhenContains: "kill", Scores: map[string]float64{"toxic": 1}}}, "verdict")
	if _, err := j.Judge(context.Background(), "hello", v); err == nil || !strings.Contains(err.Error(), "no entry of the verdict applies") {
		t.Errorf("a verdict that does not apply: %v", err)
	}
}

func TestNewJudgeSaysWhatToName(t *testing.T) {
	two := piiClassifier + `---
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: secrets, namespace: team-a}
spec:
  builtin: {packs: [secrets]}
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: tool-calls, namespace: team-a}
spec:
  mode: Enforce
  classifierRef: {name: secrets}
  phases: [ToolCalls]
  threshold: 1
  action: Block
  reason: not here
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: out, namespace: team-a}
spec:
  mode: Report
  classifierRef: {name: secrets}
  phases: [Stream, Output]
  threshold: 1
  action: Redact
  reason: not here
`
	pols := loadManifests(t, two)
	th := 0.3
	for _, tc := range []struct {
		t    Target
		want string
	}{
		{Target{}, "the policies hold 2 Guardrails: name one with --guardrail (team-a/out, team-a/tool-calls), or a Classifier with --classifier"},
		{Target{Guardrail: "nope"}, "no Guardrail nope in the policies (they hold: team-a/out, team-a/tool-calls)"},
		{Target{Classifier: "x/pii"}, "no Classifier x/pii in the policies (they hold: default/pii, team-a/secrets)"},
		{Target{Guardrail: "out", Classifier: "pii"}, "give --guardrail or --classifier, not both"},
		{Target{Guardrail: "out", Threshold: &th}, "--threshold and --categories measure a Classifier alone"},
		{Target{Guardrail: "tool-calls"}, "the Guardrail team-a/tool-calls judges tool calls only (phases: ToolCalls): eval judges a text at Input, ToolResults, Output or Stream"},
		{Target{Guardrail: "out", Phase: "Input"}, "--phase Input: Guardrail team-a/out does not judge it (phases: Stream, Output)"},
		{Target{Guardrail: "out", Phase: "ToolCalls"}, `--phase "ToolCalls": eval judges a text at Input, ToolResults, Output or Stream`},
		{Target{Classifier: "pii", Categories: []string{"mail"}}, `--categories: classifier default/pii has no category "mail" (it has: credit-card, email, iban, ip-address, phone, project-name, us-ssn)`},
		{Target{Classifier: "pii", Threshold: ptr(1.2)}, "--threshold: 1.2 is not a score in [0, 1]"},
	} {
		if _, err := NewJudge(pols, tc.t); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %s", tc.t, err, tc.want)
		}
	}
	// the Guardrail's first phase eval can judge: Output before Stream
	j, err := NewJudge(pols, Target{Guardrail: "team-a/out"})
	if err != nil || j.Phase.String() != "Output" || j.Synthesized || j.Classifier.Key != "team-a/secrets" {
		t.Errorf("%v %+v", err, j)
	}
}

func ptr(f float64) *float64 { return &f }

// A Guardrail that blocks a stream at its first finding is judged in Report mode: the
// rest of the text is judged too, so that every category it holds is counted.
func TestABlockingStreamGuardrailIsJudgedToTheEnd(t *testing.T) {
	pols := loadManifests(t, piiClassifier+`---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: stop-pii}
spec:
  mode: Enforce
  classifierRef: {name: pii}
  phases: [Stream]
  threshold: 1
  action: Block
  reason: Personal data.
  streaming: {evaluateEveryChars: 8, holdBackChars: 0}
`)
	j, err := NewJudge(pols, Target{DeltaSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := j.Judge(context.Background(), "Mail jo@example.com now, and later charge 4111 1111 1111 1111 for bluebird.", nil)
	if err != nil || !slices.Equal(got.Found, []string{"email", "credit-card", "project-name"}) || j.Phase != policy.PhaseStream {
		t.Errorf("found %v at %s, %v", got.Found, j.Phase, err)
	}
}
