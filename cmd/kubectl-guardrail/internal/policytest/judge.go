package policytest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// This file is what `kubectl guardrail eval` (internal/policyeval) runs: one text at a
// time through one Guardrail at one phase, with the guard's engine and the backends
// `kubectl guardrail test` builds (built-in classifiers for real, remote ones stubbed),
// so that what it counts is what the guard would find.

// EvalGuardrailName is the name of the Guardrail eval compiles when it measures a
// Classifier alone.
const EvalGuardrailName = "kubectl-guardrail-eval"

// DefaultEvalThreshold is the threshold of every category when eval measures a
// Classifier alone and no threshold is given.
const DefaultEvalThreshold = 0.5

// Target says what eval measures: a Guardrail of the policies (its categories, thresholds,
// CEL rules and limits), or a Classifier alone (every category, or Categories, at
// Threshold). With neither named, the policies' only Guardrail, or, when they hold none,
// their only Classifier.
type Target struct {
	// Guardrail is a name or namespace/name.
	Guardrail string
	// Classifier is a name or namespace/name.
	Classifier string
	// Threshold and Categories apply to a Classifier alone.
	Threshold  *float64
	Categories []string
	// Phase is Input, ToolResults, Output or Stream; empty for the Guardrail's first of
	// Input, Output, ToolResults, Stream (Input for a Classifier alone).
	Phase string
	// DeltaSize is the size in characters of the deltas of the Stream phase.
	DeltaSize int
}

// DefaultDeltaSize is Target.DeltaSize when it is 0.
const DefaultDeltaSize = 16

// Judge runs texts through one Guardrail at one phase with the guard's engine. It judges
// one text at a time: it is not safe for concurrent use.
type Judge struct {
	// Guardrail is the Guardrail as authored (for a Classifier alone, the one eval
	// compiled); it is judged in Report mode, at Phase only.
	Guardrail  *policy.Guardrail
	Classifier *policy.Classifier
	Phase      policy.Phase
	DeltaSize  int
	// Synthesized is set when a Classifier is measured alone.
	Synthesized bool

	eng  *engine.Engine
	line *lineBackend // remote classifiers only
}

// lineBackend answers for a remote classifier with the verdict of the line being judged.
type lineBackend struct{ cur *stub }

func (b *lineBackend) Classify(ctx context.Context, in classify.Input) (classify.Result, error) {
	return b.cur.Classify(ctx, in)
}

// evalPhases are the phases eval can judge a text at, in the order a default is chosen.
var evalPhases = []policy.Phase{policy.PhaseInput, policy.PhaseOutput, policy.PhaseToolResults, policy.PhaseStream}

// NewJudge selects the target in p and prepares the engine that judges it.
func NewJudge(p *Policies, t Target) (*Judge, error) {
	snap := p.Snapshot
	j := &Judge{DeltaSize: t.DeltaSize}
	if j.DeltaSize == 0 {
		j.DeltaSize = DefaultDeltaSize
	}
	if j.DeltaSize < 0 {
		return nil, fmt.Errorf("--delta-size: %d is not a size in characters (1 or more)", t.DeltaSize)
	}
	var phase *policy.Phase
	if t.Phase != "" {
		ph, ok := parseEvalPhase(t.Phase)
		if !ok {
			return nil, fmt.Errorf("--phase %q: eval judges a text at Input, ToolResults, Output or Stream", t.Phase)
		}
		phase = &ph
	}
	switch {
	case t.Guardrail != "" && t.Classifier != "":
		return nil, fmt.Errorf("give --guardrail or --classifier, not both: a Guardrail names its Classifier")
	case t.Guardrail != "":
		g, err := find(t.Guardrail, "Guardrail", guardrailKeys(snap))
		if err != nil {
			return nil, err
		}
		j.Guardrail = snap.Guardrails[slices.IndexFunc(snap.Guardrails, func(x *policy.Guardrail) bool { return x.Key == g })]
	case t.Classifier != "":
		c, err := find(t.Classifier, "Classifier", classifierKeys(snap))
		if err != nil {
			return nil, err
		}
		j.Classifier = snap.Classifier(c)
	case len(snap.Guardrails) == 1:
		j.Guardrail = snap.Guardrails[0]
	case len(snap.Guardrails) > 1:
		return nil, fmt.Errorf("the policies hold %d Guardrails: name one with --guardrail (%s), or a Classifier with --classifier", len(snap.Guardrails), strings.Join(guardrailKeys(snap), ", "))
	case len(snap.Classifiers) == 1:
		j.Classifier = snap.Classifiers[0]
	case len(snap.Classifiers) == 0:
		return nil, fmt.Errorf("no Classifier or Guardrail in %s", strings.Join(p.Files, ", "))
	default:
		return nil, fmt.Errorf("the policies hold %d Classifiers: name one with --classifier (%s)", len(snap.Classifiers), strings.Join(classifierKeys(snap), ", "))
	}

	if j.Guardrail != nil && (t.Threshold != nil || len(t.Categories) > 0) {
		return nil, fmt.Errorf("--threshold and --categories measure a Classifier alone: Guardrail %s has its own (measure its Classifier with --classifier %s)", j.Guardrail.Key, j.Guardrail.Classifier)
	}
	if j.Guardrail != nil {
		j.Classifier = snap.Classifier(j.Guardrail.Classifier)
		if phase == nil {
			for _, ph := range evalPhases {
				if j.Guardrail.Phases.Has(ph) {
					phase = &ph
					break
				}
			}
			if phase == nil {
				return nil, fmt.Errorf("the Guardrail %s judges tool calls only (phases: ToolCalls): eval judges a text at Input, ToolResults, Output or Stream", j.Guardrail.Key)
			}
		} else if !j.Guardrail.Phases.Has(*phase) {
			return nil, fmt.Errorf("--phase %s: Guardrail %s does not judge it (phases: %s)", *phase, j.Guardrail.Key, phaseList(j.Guardrail.Phases))
		}
	} else {
		if phase == nil {
			ph := policy.PhaseInput
			phase = &ph
		}
		g, err := synthesize(j.Classifier, t, *phase)
		if err != nil {
			return nil, err
		}
		j.Guardrail, j.Synthesized = g, true
	}
	j.Phase = *phase

	// Judged in Report mode, at the one phase: every finding is recorded and nothing stops
	// the text, so a stream is judged to its end whatever the Guardrail's action.
	judged := *j.Guardrail
	judged.Mode = policy.ModeReport
	judged.Phases = policy.PhaseSet(0).With(j.Phase)
	var backend classify.Classifier
	if j.Classifier.Backend == policy.BackendBuiltin {
		b, err := newBuiltin(j.Classifier)
		if err != nil {
			return nil, fmt.Errorf("classifier %s: %w", j.Classifier.Key, err)
		}
		backend = b
	} else {
		j.line = &lineBackend{}
		backend = j.line
	}
	j.eng = engine.New(engine.Config{
		Guardrails:  []*policy.Guardrail{&judged},
		Classifiers: snap.Classifiers,
		Backends:    engine.BackendMap(map[string]classify.Classifier{j.Classifier.Key: backend}),
	})
	return j, nil
}

// synthesize compiles, with the guard's compiler, the Guardrail that measures classifier
// c alone: its categories (or t.Categories) at t.Threshold.
func synthesize(c *policy.Classifier, t Target, phase policy.Phase) (*policy.Guardrail, error) {
	th := DefaultEvalThreshold
	if t.Threshold != nil {
		th = *t.Threshold
	}
	if th < 0 || th > 1 {
		return nil, fmt.Errorf("--threshold: %v is not a score in [0, 1]", th)
	}
	if len(c.Categories) == 0 {
		return nil, fmt.Errorf("classifier %s asks questions and has no categories: measure a Guardrail whose CEL rules read its answers (--guardrail)", c.Key)
	}
	for _, id := range t.Categories {
		if c.CategoryIndex(id) < 0 {
			return nil, fmt.Errorf("--categories: classifier %s has no category %q (it has: %s)", c.Key, id, categoryIDs(c))
		}
	}
	score := spec.Score(th)
	obj := &policy.GuardrailObject{
		ObjectMeta: policy.ObjectMeta{Name: EvalGuardrailName, Namespace: c.Namespace},
		Spec: spec.GuardrailSpec{
			Mode:          spec.ModeReport,
			ClassifierRef: spec.LocalObjectReference{Name: c.Name},
			Phases:        []spec.Phase{spec.Phase(phase.String())},
			Categories:    t.Categories,
			Threshold:     &score,
			Action:        spec.ActionBlock,
			Reason:        "kubectl guardrail eval",
		},
	}
	g, err := policy.CompileGuardrail(obj, c)
	if err != nil {
		return nil, fmt.Errorf("measuring classifier %s alone: %w", c.Key, err)
	}
	return g, nil
}

func parseEvalPhase(s string) (policy.Phase, bool) {
	for _, ph := range evalPhases {
		if strings.EqualFold(s, ph.String()) {
			return ph, true
		}
	}
	return 0, false
}

func phaseList(s policy.PhaseSet) string {
	var out []string
	for ph := policy.PhaseInput; ph <= policy.PhaseToolResults; ph++ {
		if s.Has(ph) {
			out = append(out, ph.String())
		}
	}
	return strings.Join(out, ", ")
}

func guardrailKeys(s *policy.Snapshot) []string {
	out := make([]string, len(s.Guardrails))
	for i, g := range s.Guardrails {
		out[i] = g.Key
	}
	return out
}

func classifierKeys(s *policy.Snapshot) []string {
	out := make([]string, len(s.Classifiers))
	for i, c := range s.Classifiers {
		out[i] = c.Key
	}
	return out
}

// find resolves a name or namespace/name among keys.
func find(name, kind string, keys []string) (string, error) {
	var found []string
	for _, k := range keys {
		if k == name || strings.HasSuffix(k, "/"+name) && !strings.Contains(name, "/") {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no %s %s in the policies (they hold: %s)", kind, name, orNone(keys))
	}
	return "", fmt.Errorf("%s %s is ambiguous: give its namespace (%s)", kind, name, strings.Join(found, ", "))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Labels are what a judgment can find, in order: the categories the Guardrail judges, in
// the classifier's authored order, then the names of its CEL rules.
func (j *Judge) Labels() []string {
	var out []string
	for _, c := range j.Guardrail.Categories {
		out = append(out, c.ID)
	}
	for _, r := range j.Guardrail.Rules {
		if !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}

// Known reports whether id is a category of the classifier, judged or not.
func (j *Judge) Known(id string) bool { return j.Classifier.CategoryIndex(id) >= 0 }

// Remote reports whether the classifier is remote: each text needs its verdict.
func (j *Judge) Remote() bool { return j.line != nil }

// LineVerdict is the verdict a remote classifier gives for one text.
type LineVerdict struct{ s *stub }

// Verdict checks a remote classifier's verdict for one text, as a cases file's verdict is
// checked; errors name the field at path.
func (j *Judge) Verdict(s Stub, path string) (*LineVerdict, error) {
	if errs := s.validate(path); len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	st, err := newStub(j.Classifier, s, path)
	if err != nil {
		return nil, err
	}
	return &LineVerdict{s: st}, nil
}

// Judgment is what the guard found in one text.
type Judgment struct {
	// Found are the categories and CEL rules that matched, in the order of Labels.
	Found []string
	// Code is set when an evaluation failed (TIMEOUT, CLASSIFIER_FAILED, ...).
	Code classify.Code
}

// Judge runs text through the Guardrail at the phase: as the last user message (Input),
// a tool's result (ToolResults), an answer not streamed (Output) or streamed in deltas of
// DeltaSize characters (Stream). v is the remote classifier's verdict (nil for a built-in
// one).
func (j *Judge) Judge(ctx context.Context, text string, v *LineVerdict) (Judgment, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	if j.line != nil {
		if v == nil {
			return Judgment{}, fmt.Errorf("classifier %s is remote: the text needs its verdict", j.Classifier.Key)
		}
		j.line.cur = v.s
		v.s.missed.Store(false)
	}
	found := map[string]bool{}
	var code classify.Code
	s := j.eng.NewSession(engine.Options{Record: func(rec engine.Record) {
		if rec.Code != "" && code == "" {
			code = rec.Code
		}
		for _, f := range rec.Findings {
			if f.Kind == engine.FindingCategory || f.Kind == engine.FindingRule {
				found[f.Name] = true
			}
		}
	}})
	defer s.End()
	var err error
	switch j.Phase {
	case policy.PhaseInput, policy.PhaseToolResults:
		role, tool := engine.RoleUser, j.Phase == policy.PhaseToolResults
		if tool {
			role = "tool"
		}
		_, err = s.Input(ctx, []engine.Message{{Role: role, Parts: []engine.Part{{Modality: classify.Text, Text: text, ToolResult: tool}}}})
	case policy.PhaseOutput:
		err = answerWhole(ctx, s, &Answer{Text: text}, &observed{})
	case policy.PhaseStream:
		err = answerStreamed(ctx, s, &Answer{Text: text}, j.DeltaSize, &observed{})
	default:
		err = fmt.Errorf("phase %s is not judged by eval", j.Phase)
	}
	if err != nil {
		return Judgment{}, err
	}
	if j.line != nil && v.s.missed.Load() {
		return Judgment{}, fmt.Errorf("no entry of the verdict applies to the text: add one without whenContains")
	}
	out := Judgment{Code: code}
	for _, l := range j.Labels() {
		if found[l] {
			out.Found = append(out.Found, l)
		}
	}
	return out, nil
}
