// Package policytest runs `kubectl guardrail test`: it compiles Classifier and Guardrail
// manifests with the guard's own compiler (runtime/policy, read as the guard reads a
// policy file, runtime/policysource), runs the guard's engine (runtime/engine) over the
// requests and answers of a cases file, and compares what happened with what each case
// expects. Built-in classifiers run for real; remote ones answer with the verdicts the
// cases file gives (no network is used).
//
// A case runs once not streamed and once per delta size it lists; each run is a test that
// passes or fails on its own, and the report names the run that failed.
package policytest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// APIVersion and Kind of a cases file. The group is not guardrail.dev, so that a cases
// file beside the policies is skipped by the policy decoder, as a Namespace would be.
const (
	APIVersion = "cli.guardrail.dev/v1alpha1"
	Kind       = "PolicyTest"
)

// File is a cases file.
type File struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name,omitempty"`
	} `json:"metadata,omitempty"`
	// Policies are files or directories of manifests, relative to the cases file, used
	// when the command names none (-f).
	Policies []string `json:"policies,omitempty"`
	// Pod is the pod every case runs in, unless the case names its own.
	Pod *Pod `json:"pod,omitempty"`
	// Classifiers are the stub verdicts of remote classifiers for every case, by name
	// (or namespace/name); a case's own entries replace them.
	Classifiers map[string]Stub `json:"classifiers,omitempty"`
	Cases       []Case          `json:"cases"`

	// dir is the directory of the file, for Policies.
	dir  string
	path string
}

// Pod says which Guardrails apply: those of its namespace whose selector matches its
// labels, as the guard of that pod would enforce them.
type Pod struct {
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Case is one fixture: a request and/or an answer, and what is expected of them.
type Case struct {
	Name string `json:"name"`
	Pod  *Pod   `json:"pod,omitempty"`
	// Guardrails, when set, keeps only these (by name, or namespace/name) of those the
	// pod selects.
	Guardrails  []string        `json:"guardrails,omitempty"`
	Classifiers map[string]Stub `json:"classifiers,omitempty"`
	Request     *Request        `json:"request,omitempty"`
	Answer      *Answer         `json:"answer,omitempty"`
	Expect      Expect          `json:"expect"`
}

// Request is what the app sends: messages, or a provider's raw request body.
type Request struct {
	Messages []Message `json:"messages,omitempty"`
	// Family and Body: a raw request body of an API family (chat, responses, messages,
	// embeddings), read by the guard's own wire layer.
	Family string `json:"family,omitempty"`
	Body   string `json:"body,omitempty"`
}

// Message is one message of a request. Role tool marks a tool result (the ToolResults
// phase judges it).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Answer is what the model answers: text and tool calls, judged not streamed and, at
// each of Deltas, streamed.
type Answer struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Deltas are delta sizes in characters: the answer is also streamed at each.
	Deltas []int `json:"deltas,omitempty"`
	// StreamOnly skips the not-streamed run.
	StreamOnly bool `json:"streamOnly,omitempty"`
}

// ToolCall is a tool call of the answer: a function name and its arguments (JSON text).
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Expect is what a case expects of every run. Unset fields are not checked, but for
// Outcome, which defaults to allowed.
type Expect struct {
	// Outcome is the run's outcome: blocked or failed when the content was stopped;
	// otherwise the strongest action an Enforce guardrail took (stripped, redacted,
	// pseudonymized, warned), or allowed.
	Outcome string `json:"outcome,omitempty"`
	// Reason must be part of the block's reason.
	Reason string `json:"reason,omitempty"`
	// Guardrail is the name (or namespace/name) of the guardrail that stopped the content.
	Guardrail string `json:"guardrail,omitempty"`
	// Phase where the content was stopped: Input, Stream, Output, ToolCalls, ToolResults.
	Phase string `json:"phase,omitempty"`
	// Code of a fail-closed evaluation failure (outcome failed).
	Code string `json:"code,omitempty"`
	// Upstream is the text of each message the provider receives (parts joined by a
	// newline; dropped messages left out).
	Upstream []string `json:"upstream,omitempty"`
	// Answer is the answer text the client receives; with a block, the text released
	// before the reason.
	Answer *string `json:"answer,omitempty"`
	// ToolCalls are the tool calls the client receives.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// NeverReleased are texts no part of which may reach the client in the answer.
	NeverReleased []string `json:"neverReleased,omitempty"`
	// Decisions maps a guardrail (name or namespace/name) to an outcome of its decision
	// records: allowed (none but allowed), notEvaluated (no record), or one outcome a
	// record had (redacted, wouldBlock, notInspected, ...).
	Decisions map[string]string `json:"decisions,omitempty"`
	// Warnings are the guardrails that warned (the X-Guardrail-Warnings header).
	Warnings []string `json:"warnings,omitempty"`
}

// Outcomes a case can expect.
var outcomes = []string{"allowed", "warned", "pseudonymized", "redacted", "stripped", "blocked", "failed"}

// decisionOutcomes are what Expect.Decisions accepts.
var decisionOutcomes = []string{"allowed", "notEvaluated", "warned", "stripped", "redacted", "blocked", "failed",
	"notInspected", "wouldWarn", "wouldStrip", "wouldRedact", "wouldBlock", "pseudonymized", "wouldPseudonymize"}

var phases = []string{"Input", "Stream", "Output", "ToolCalls", "ToolResults"}

var families = map[string]wire.Family{
	"chat": wire.FamilyChat, "responses": wire.FamilyResponses, "messages": wire.FamilyMessages, "embeddings": wire.FamilyEmbeddings,
}

// maxCasesFile bounds a cases file.
const maxCasesFile = 8 << 20

// ReadFile reads and checks a cases file.
func ReadFile(path string) (*File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxCasesFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxCasesFile)
	}
	b, err := os.ReadFile(path) //nolint:gosec // the user's own cases file
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.path, f.dir = path, filepath.Dir(path)
	return f, nil
}

// Parse decodes and checks a cases file. Unknown fields are errors, so that a misspelt
// expectation is not silently unchecked.
func Parse(b []byte) (*File, error) {
	var f File
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, err
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

func (f *File) validate() error {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if f.APIVersion != APIVersion || f.Kind != Kind {
		add("apiVersion and kind: want %s %s, got %q %q", APIVersion, Kind, f.APIVersion, f.Kind)
	}
	if len(f.Cases) == 0 {
		add("cases: at least one case is required")
	}
	for name, s := range f.Classifiers {
		errs = append(errs, s.validate("classifiers."+name)...)
	}
	seen := map[string]bool{}
	for i := range f.Cases {
		errs = append(errs, f.Cases[i].validate(fmt.Sprintf("cases[%d]", i), seen)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n  "))
	}
	return nil
}

func (c *Case) validate(p string, seen map[string]bool) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(p+format, args...)) }
	switch {
	case c.Name == "":
		add(".name: required")
	case seen[c.Name]:
		add(".name: %q is used by another case", c.Name)
	}
	seen[c.Name] = true
	if c.Request == nil && c.Answer == nil {
		add(": give a request, an answer, or both")
	}
	if r := c.Request; r != nil {
		switch {
		case len(r.Messages) > 0 && (r.Family != "" || r.Body != ""):
			add(".request: give messages, or family and body, not both")
		case len(r.Messages) == 0 && r.Body == "":
			add(".request: give messages, or family and body")
		case r.Body != "" && families[r.Family] == 0:
			add(".request.family: %q is not one of chat, responses, messages, embeddings", r.Family)
		}
		for i, m := range r.Messages {
			if m.Role == "" {
				add(".request.messages[%d].role: required (system, user, assistant or tool)", i)
			}
		}
	}
	if a := c.Answer; a != nil {
		if a.Text == "" && len(a.ToolCalls) == 0 {
			add(".answer: give text, toolCalls, or both")
		}
		for i, d := range a.Deltas {
			if d < 1 {
				add(".answer.deltas[%d]: %d is not a delta size (1 or more characters)", i, d)
			}
		}
		if a.StreamOnly && len(a.Deltas) == 0 {
			add(".answer.streamOnly: needs deltas to stream at")
		}
		for i, tc := range a.ToolCalls {
			if tc.Name == "" {
				add(".answer.toolCalls[%d].name: required", i)
			}
		}
	}
	e := &c.Expect
	if e.Outcome == "" {
		e.Outcome = "allowed"
	}
	if !slices.Contains(outcomes, e.Outcome) {
		add(".expect.outcome: %q is not one of %s", e.Outcome, strings.Join(outcomes, ", "))
	}
	stopped := e.Outcome == "blocked" || e.Outcome == "failed"
	if !stopped && (e.Reason != "" || e.Guardrail != "" || e.Phase != "") {
		add(".expect: reason, guardrail and phase describe a stop: they need outcome blocked or failed")
	}
	if e.Code != "" && e.Outcome != "failed" {
		add(".expect.code: needs outcome failed")
	}
	if e.Phase != "" && !slices.Contains(phases, e.Phase) {
		add(".expect.phase: %q is not one of %s", e.Phase, strings.Join(phases, ", "))
	}
	if c.Request == nil && e.Upstream != nil {
		add(".expect.upstream: needs a request")
	}
	if c.Answer == nil && (e.Answer != nil || e.ToolCalls != nil || e.NeverReleased != nil) {
		add(".expect: answer, toolCalls and neverReleased need an answer")
	}
	for g, o := range e.Decisions {
		if !slices.Contains(decisionOutcomes, o) {
			add(".expect.decisions.%s: %q is not one of %s", g, o, strings.Join(decisionOutcomes, ", "))
		}
	}
	for name, s := range c.Classifiers {
		errs = append(errs, s.validate(p+".classifiers."+name)...)
	}
	return errs
}

// Stub is the verdict of a remote classifier: one verdict, or a list whose first entry
// whose WhenContains is in the judged text applies (an entry without it always applies).
type Stub []Verdict

// Verdict is what a stubbed classifier answers.
type Verdict struct {
	// WhenContains limits the verdict to texts that contain it.
	WhenContains string `json:"whenContains,omitempty"`
	// Scores by category id; categories not named score 0.
	Scores map[string]float64 `json:"scores,omitempty"`
	// Refused lists categories the judge refused to score.
	Refused []string `json:"refused,omitempty"`
	// Answers by question id.
	Answers map[string]StubAnswer `json:"answers,omitempty"`
	// Error makes the call fail with this code: CLASSIFIER_FAILED, TIMEOUT, INVALID_ANSWER.
	Error string `json:"error,omitempty"`
}

// StubAnswer is a judge's answer to a question: type refusal, or the probability,
// choice or score its question type asks for.
type StubAnswer struct {
	Type        string   `json:"type,omitempty"`
	Probability *float64 `json:"probability,omitempty"`
	Choice      string   `json:"choice,omitempty"`
	Score       *float64 `json:"score,omitempty"`
}

// UnmarshalJSON accepts one verdict or a list of them.
func (s *Stub) UnmarshalJSON(b []byte) error {
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "[") {
		var list []Verdict
		if err := strictJSON(b, &list); err != nil {
			return err
		}
		*s = list
		return nil
	}
	var one Verdict
	if err := strictJSON(b, &one); err != nil {
		return err
	}
	*s = Stub{one}
	return nil
}

func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func (s Stub) validate(p string) []string {
	var errs []string
	if len(s) == 0 {
		errs = append(errs, p+": give a verdict (scores, answers or error)")
	}
	for i, v := range s {
		vp := p
		if len(s) > 1 {
			vp = fmt.Sprintf("%s[%d]", p, i)
		}
		switch v.Error {
		case "", "CLASSIFIER_FAILED", "TIMEOUT", "INVALID_ANSWER":
		default:
			errs = append(errs, fmt.Sprintf("%s.error: %q is not one of CLASSIFIER_FAILED, TIMEOUT, INVALID_ANSWER", vp, v.Error))
		}
		for q, a := range v.Answers {
			if a.Type != "" && a.Type != "answer" && a.Type != "refusal" {
				errs = append(errs, fmt.Sprintf("%s.answers.%s.type: %q is not answer or refusal", vp, q, a.Type))
			}
		}
	}
	return errs
}
