package policytest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// runCases parses a cases file body and runs it against testdata/policies.yaml.
func runCases(t *testing.T, body string) Report {
	t.Helper()
	f, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	pols, err := LoadPolicies([]string{filepath.Join("testdata", "policies.yaml")}, false, nil)
	if err != nil {
		t.Fatalf("LoadPolicies: %v", err)
	}
	r, err := NewRunner(pols)
	if err != nil {
		t.Fatal(err)
	}
	return Summarize(r.RunFile(context.Background(), f))
}

const head = "apiVersion: cli.guardrail.dev/v1alpha1\nkind: PolicyTest\n"

func text(r Report, verbose bool) string {
	var b bytes.Buffer
	r.WriteText(&b, verbose)
	return b.String()
}

func TestACaseThatHoldsPassesInEveryRun(t *testing.T) {
	r := runCases(t, head+`
cases:
  - name: redacted
    request:
      messages: [{role: user, content: "mail jo@example.com"}]
    answer: {text: "Write to jo@example.com today.", deltas: [1, 5]}
    expect:
      outcome: redacted
      upstream: ["mail [REDACTED:email]"]
      answer: "Write to [REDACTED:email] today."
      neverReleased: [jo@example.com]
      decisions: {redact-pii: redacted}
`)
	if !r.OK() || r.Passed != 3 || r.Cases != 1 {
		t.Fatalf("want 3 runs passed, got:\n%s", text(r, true))
	}
	if got := text(r, false); !strings.Contains(got, "PASS   redacted (not streamed; streamed, 1-character deltas; streamed, 5-character deltas)") ||
		!strings.HasSuffix(got, "Test summary: 3 passed, 0 failed, 0 errors (1 cases)\n") {
		t.Errorf("report:\n%s", got)
	}
}

func TestACaseThatDoesNotHoldFailsWithAReadableDiff(t *testing.T) {
	r := runCases(t, head+`
cases:
  - name: expects the address to pass
    answer: {text: "Write to jo@example.com today."}
    expect:
      outcome: allowed
      answer: "Write to jo@example.com today."
`)
	if r.OK() || r.Failed != 1 {
		t.Fatalf("want 1 failed run, got:\n%s", text(r, true))
	}
	want := `FAIL   expects the address to pass [not streamed]
       guardrails  default/redact-pii
       outcome     want  allowed
                   got   redacted
       answer      want  "Write to jo@example.com today."
                   got   "Write to [REDACTED:email] today."
                                   ^ differs from here
Test summary: 0 passed, 1 failed, 0 errors (1 cases)
`
	if got := text(r, false); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}

func TestReportModeLetsContentPassAndNeverReleasedCatchesIt(t *testing.T) {
	r := runCases(t, head+`
pod: {namespace: rollout}
cases:
  - name: report mode
    answer: {text: "Write to jo@example.com today.", deltas: [3]}
    expect:
      outcome: allowed
      decisions: {report-pii: wouldBlock}
      neverReleased: [jo@example.com]
`)
	if r.Failed != 2 {
		t.Fatalf("want both runs to fail on neverReleased, got:\n%s", text(r, true))
	}
	for _, res := range r.Results {
		if len(res.Mismatches) != 1 || res.Mismatches[0].Field != "neverReleased[0]" {
			t.Errorf("%s: mismatches %+v", res.Run, res.Mismatches)
		}
	}
}

func TestRemoteClassifiersAnswerFromTheCasesFile(t *testing.T) {
	r := runCases(t, head+`
pod: {labels: {app: forum}}
classifiers:
  judge: {scores: {}}
cases:
  - name: a toxic prompt warns
    classifiers:
      judge:
        - whenContains: idiot
          scores: {toxic: 0.9}
        - scores: {toxic: 0.1}
    request:
      messages: [{role: user, content: "you idiot"}]
    expect: {outcome: warned, warnings: [warn-toxic], decisions: {warn-toxic: warned}}
  - name: a calm prompt passes
    request:
      messages: [{role: user, content: "hello"}]
    expect: {outcome: allowed, warnings: []}
  - name: a failed judge fails closed
    classifiers: {judge: {error: TIMEOUT}}
    request:
      messages: [{role: user, content: "hello"}]
    expect: {outcome: failed, code: TIMEOUT, guardrail: warn-toxic, phase: Input}
`)
	if !r.OK() {
		t.Fatalf("report:\n%s", text(r, true))
	}
}

func TestCasesThatCannotRunSayWhatToDo(t *testing.T) {
	r := runCases(t, head+`
pod: {labels: {app: forum}}
cases:
  - name: no verdict
    request:
      messages: [{role: user, content: "hello"}]
  - name: unknown category
    classifiers: {judge: {scores: {rude: 1}}}
    request:
      messages: [{role: user, content: "hello"}]
  - name: guardrail not selecting
    pod: {labels: {app: other}}
    guardrails: [warn-toxic]
    answer: {text: "hi"}
  - name: no applicable verdict
    classifiers: {judge: [{whenContains: zzz, scores: {}}]}
    request:
      messages: [{role: user, content: "hello"}]
`)
	if r.Errors != 4 {
		t.Fatalf("want 4 errors, got:\n%s", text(r, true))
	}
	for i, want := range []string{
		"the Guardrail warn-toxic uses the remote classifier default/judge: give its verdict under classifiers.judge",
		`case unknown category: classifiers.judge.scores.rude: classifier default/judge has no category "rude" (it has: toxic)`,
		"guardrails[0]: Guardrail warn-toxic does not select the pod (namespace default, labels {app=other})",
		"no verdict of classifier default/judge applies to a text it judged: add one without whenContains",
	} {
		if got := r.Results[i].Error; !strings.Contains(got, want) {
			t.Errorf("case %d: error %q, want it to contain %q", i, got, want)
		}
	}
}

func TestABadCasesFileIsRefusedNamingTheField(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unknown field": {head + "cases:\n  - name: x\n    answer: {text: a}\n    expect: {outcom: blocked}\n", `unknown field "outcom"`},
		"bad outcome":   {head + "cases:\n  - name: x\n    answer: {text: a}\n    expect: {outcome: block}\n", `cases[0].expect.outcome: "block" is not one of allowed`},
		"no content":    {head + "cases:\n  - name: x\n", "cases[0]: give a request, an answer, or both"},
		"bad delta":     {head + "cases:\n  - name: x\n    answer: {text: a, deltas: [0]}\n", "cases[0].answer.deltas[0]: 0 is not a delta size"},
		"bad family":    {head + "cases:\n  - name: x\n    request: {family: gemini, body: '{}'}\n", `cases[0].request.family: "gemini" is not one of chat`},
		"wrong kind":    {"apiVersion: v1\nkind: ConfigMap\ncases:\n  - name: x\n    answer: {text: a}\n", "apiVersion and kind: want cli.guardrail.dev/v1alpha1 PolicyTest"},
		"reason without block": {head + "cases:\n  - name: x\n    answer: {text: a}\n    expect: {reason: no}\n",
			"reason, guardrail and phase describe a stop"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPoliciesThatDoNotCompileAreReportedWithTheirFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, `apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: g}
spec:
  mode: Enforce
  classifierRef: {name: missing}
  threshold: 1
  action: Block
  reason: r
`)
	_, err := LoadPolicies([]string{dir}, false, nil)
	if err == nil || !strings.Contains(err.Error(), bad+": Guardrail default/g: spec.classifierRef.name: Not found") {
		t.Errorf("error: %v", err)
	}
}

func TestLeakedFindsAPartOfAtLeastHalfTheText(t *testing.T) {
	for _, tc := range []struct{ never, released, want string }{
		{"ghp_8vKpZq2mW4xR7tY1nB3c", "token ghp_8vKpZq2mW4x and then", "ghp_8vKpZq2m"},
		{"ghp_8vKpZq2mW4xR7tY1nB3c", "token ghp_8vK and then", ""},
		{"jo@example.com", "[REDACTED:email]", ""},
		{"jo@example.com", "mail jo@example.com", "jo@example.com"},
	} {
		if got := leaked(tc.never, tc.released); got != tc.want {
			t.Errorf("leaked(%q, %q) = %q, want %q", tc.never, tc.released, got, tc.want)
		}
	}
}
