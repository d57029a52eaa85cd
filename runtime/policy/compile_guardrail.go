package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/field"
)

// CompileGuardrail compiles one Guardrail against its compiled Classifier. The returned
// error is an *Error whose Reason tells a broken spec (InvalidSpec) from a Guardrail that
// does not fit its Classifier (ClassifierMismatch).
func CompileGuardrail(g *GuardrailObject, c *Classifier) (*Guardrail, error) {
	sp := field.NewPath("spec")
	s := &g.Spec
	out := &Guardrail{
		Key: Key(g.Namespace, g.Name), Namespace: g.Namespace, Name: g.Name, Generation: g.Generation,
		Classifier: c.Key, Selector: cloneSelector(s.Selector), Reason: s.Reason,
		Priority: deref(s.Priority), Cluster: g.Kind == KindClusterGuardrail,
	}
	var invalid, mismatch field.ErrorList

	mode, ok := ModeOf(s.Mode)
	if !ok {
		invalid = append(invalid, field.NotSupported(sp.Child("mode"), s.Mode, []string{"Enforce", "Report"}))
	}
	out.Mode = mode
	invalid = append(invalid, checkSelector(out.Selector, sp.Child("selector"))...)
	if s.Reason == "" {
		invalid = append(invalid, field.Required(sp.Child("reason"), "the message a blocked caller receives"))
	}

	phases := s.Phases
	if len(phases) == 0 {
		phases = []spec.Phase{spec.PhaseInput, spec.PhaseOutput}
	}
	for i, p := range phases {
		switch p {
		case spec.PhaseInput:
			out.Phases = out.Phases.With(PhaseInput)
		case spec.PhaseStream:
			out.Phases = out.Phases.With(PhaseStream)
		case spec.PhaseOutput:
			out.Phases = out.Phases.With(PhaseOutput)
		case spec.PhaseToolCalls:
			out.Phases = out.Phases.With(PhaseToolCalls)
		case spec.PhaseToolResults:
			out.Phases = out.Phases.With(PhaseToolResults)
		default:
			invalid = append(invalid, field.NotSupported(sp.Child("phases").Index(i), p, []string{"Input", "Stream", "Output", "ToolCalls", "ToolResults"}))
		}
	}
	var ms field.ErrorList
	out.Modalities, ms = compileModalities(s.Modalities, sp.Child("modalities"))
	invalid = append(invalid, ms...)

	ci, cm := compileCategoryRules(out, s, c, sp)
	invalid, mismatch = append(invalid, ci...), append(mismatch, cm...)
	ri, rm := compileRules(out, s, c, sp.Child("rules"))
	invalid, mismatch = append(invalid, ri...), append(mismatch, rm...)
	if len(s.Rules) == 0 && s.Threshold == nil {
		invalid = append(invalid, field.Required(sp.Child("threshold"),
			"a guardrail needs a rule: set spec.threshold and spec.action (category rules) or spec.rules (CEL rules)"))
	}

	switch s.Refusal {
	case "", spec.RefusalMatch:
		out.RefusalMatches = true
	case spec.RefusalIgnore:
	default:
		invalid = append(invalid, field.NotSupported(sp.Child("refusal"), s.Refusal, []string{"Match", "Ignore"}))
	}
	switch s.Unsupported {
	case "":
		out.Unsupported = UnsupportedFail
	case spec.UnsupportedBlock:
		out.Unsupported = UnsupportedBlock
	case spec.UnsupportedWarn:
		out.Unsupported = UnsupportedWarn
	case spec.UnsupportedAllow:
		out.Unsupported = UnsupportedAllow
	default:
		invalid = append(invalid, field.NotSupported(sp.Child("unsupported"), s.Unsupported, []string{"Block", "Warn", "Allow"}))
	}
	switch s.FailurePolicy {
	case "", spec.FailClosed:
	case spec.FailOpen:
		out.FailOpen = true
	default:
		invalid = append(invalid, field.NotSupported(sp.Child("failurePolicy"), s.FailurePolicy, []string{"Closed", "Open"}))
	}
	switch s.Messages {
	case "", spec.MessagesLast:
	case spec.MessagesAll:
		out.AllMessages = true
	default:
		invalid = append(invalid, field.NotSupported(sp.Child("messages"), s.Messages, []string{"Last", "All"}))
	}
	if s.Timeout != nil {
		if s.Timeout.Duration < 0 {
			invalid = append(invalid, field.Invalid(sp.Child("timeout"), s.Timeout.String(), "must not be negative"))
		}
		out.Timeout = s.Timeout.Duration
	}
	out.MaxInputChars = int(deref(s.MaxInputChars))
	invalid = append(invalid, compileStreaming(out, s, c, sp.Child("streaming"))...)

	if len(invalid) > 0 {
		return nil, &Error{Kind: "Guardrail", Key: out.Key, Reason: spec.ReasonInvalidSpec, Errs: append(invalid, mismatch...)}
	}
	if len(mismatch) > 0 {
		return nil, &Error{Kind: "Guardrail", Key: out.Key, Reason: spec.ReasonClassifierMismatch, Errs: mismatch}
	}
	return out, nil
}

// compileCategoryRules resolves categories, threshold, thresholds and action against the
// classifier, in the classifier's authored order.
func compileCategoryRules(out *Guardrail, s *spec.GuardrailSpec, c *Classifier, sp *field.Path) (invalid, mismatch field.ErrorList) {
	usesCategories := s.Threshold != nil || len(s.Categories) > 0 || len(s.Thresholds) > 0 || s.Action != ""
	if !usesCategories {
		return nil, nil
	}
	if s.Threshold == nil {
		invalid = append(invalid, field.Required(sp.Child("threshold"),
			"spec.threshold is required when category rules are used (spec.categories, spec.thresholds or spec.action is set)"))
		return invalid, nil
	}
	if !validScore(float64(*s.Threshold)) {
		invalid = append(invalid, field.Invalid(sp.Child("threshold"), float64(*s.Threshold), "must be between 0 and 1"))
	}
	switch s.Action {
	case spec.ActionBlock:
		out.Action = ActionBlock
	case spec.ActionWarn:
		out.Action = ActionWarn
	case spec.ActionStrip:
		out.Action = ActionStrip
	case spec.ActionRedact:
		out.Action = ActionRedact
		if !c.Spans {
			mismatch = append(mismatch, field.Invalid(sp.Child("action"), s.Action,
				fmt.Sprintf("Redact needs a classifier that returns spans (builtin); classifier %s is a %s classifier", c.Name, c.Backend)))
		}
	case spec.ActionPseudonymize:
		out.Action = ActionPseudonymize
		invalid = append(invalid, pseudonymizePhases(s, sp)...)
		if !c.Spans {
			mismatch = append(mismatch, field.Invalid(sp.Child("action"), s.Action,
				fmt.Sprintf("Pseudonymize needs a classifier that returns spans (builtin); classifier %s is a %s classifier", c.Name, c.Backend)))
		}
		// The provider sees every message of the request, earlier turns included: a
		// value left in one of them would reach it however the last one was masked.
		out.AllMessages = true
	case "":
		invalid = append(invalid, field.Required(sp.Child("action"), "spec.action is required with spec.threshold"))
	default:
		invalid = append(invalid, field.NotSupported(sp.Child("action"), s.Action, []string{"Block", "Warn", "Strip", "Redact", "Pseudonymize"}))
	}
	if len(c.Categories) == 0 {
		mismatch = append(mismatch, field.Invalid(sp.Child("threshold"), float64(*s.Threshold),
			fmt.Sprintf("classifier %s has questions, not categories: use spec.rules", c.Name)))
		return invalid, mismatch
	}
	subset := map[string]bool{}
	for i, id := range s.Categories {
		if c.CategoryIndex(id) < 0 {
			mismatch = append(mismatch, field.NotFound(sp.Child("categories").Index(i),
				fmt.Sprintf("%s (classifier %s has %s)", id, c.Name, categoryList(c))))
		}
		subset[id] = true
	}
	overrides := map[string]float64{}
	for i, th := range s.Thresholds {
		p := sp.Child("thresholds").Index(i)
		switch {
		case c.CategoryIndex(th.Category) < 0:
			mismatch = append(mismatch, field.NotFound(p.Child("category"), fmt.Sprintf("%s (classifier %s has %s)", th.Category, c.Name, categoryList(c))))
		case len(subset) > 0 && !subset[th.Category]:
			invalid = append(invalid, field.Invalid(p.Child("category"), th.Category, "every category of spec.thresholds must be listed in spec.categories"))
		case !validScore(float64(th.Threshold)):
			invalid = append(invalid, field.Invalid(p.Child("threshold"), float64(th.Threshold), "must be between 0 and 1"))
		}
		overrides[th.Category] = float64(th.Threshold)
	}
	for i, cat := range c.Categories {
		if len(subset) > 0 && !subset[cat.ID] {
			continue
		}
		t := float64(*s.Threshold)
		if v, ok := overrides[cat.ID]; ok {
			t = v
		}
		out.Categories = append(out.Categories, CategoryRule{Index: i, ID: cat.ID, Threshold: t})
	}
	return invalid, mismatch
}

func categoryList(c *Classifier) string {
	ids := make([]string, len(c.Categories))
	for i := range c.Categories {
		ids[i] = c.Categories[i].ID
	}
	return strings.Join(ids, ", ")
}

// compileRules compiles and type-checks the CEL rules, and checks the answers and scores
// they read against the classifier's questions and categories.
func compileRules(out *Guardrail, s *spec.GuardrailSpec, c *Classifier, p *field.Path) (invalid, mismatch field.ErrorList) {
	names := map[string]bool{}
	for _, r := range s.Rules {
		rp := p.Key(r.Name)
		if names[r.Name] {
			invalid = append(invalid, field.Duplicate(rp.Child("name"), r.Name))
			continue
		}
		names[r.Name] = true
		var action Action
		switch r.Action {
		case "Block":
			action = ActionBlock
		case "Warn":
			action = ActionWarn
		case "Strip":
			action = ActionStrip
		default:
			invalid = append(invalid, field.NotSupported(rp.Child("action"), r.Action, []string{"Block", "Warn", "Strip"}))
			continue
		}
		prg, err := compileExpression(r.Expression)
		if err != nil {
			invalid = append(invalid, field.Invalid(rp.Child("expression"), r.Expression, err.Error()))
			continue
		}
		for _, q := range prg.KeyRefs("answers") {
			if c.QuestionIndex(q) < 0 {
				mismatch = append(mismatch, field.Invalid(rp.Child("expression"), r.Expression,
					fmt.Sprintf("answers.%s: classifier %s has no question %q", q, c.Name, q)))
			}
		}
		for _, id := range prg.KeyRefs("scores") {
			if c.CategoryIndex(id) < 0 {
				mismatch = append(mismatch, field.Invalid(rp.Child("expression"), r.Expression,
					fmt.Sprintf("scores[%q]: classifier %s has no category %q", id, c.Name, id)))
			}
		}
		reason := r.Reason
		if reason == "" {
			reason = s.Reason
		}
		out.Rules = append(out.Rules, &Rule{Name: r.Name, Expression: r.Expression, Action: action, Reason: reason, program: prg})
	}
	return invalid, mismatch
}

// compileStreaming resolves the cadence and hold-back. An unset holdBackChars follows the
// pending matches of a span-capable classifier and is 0 with any other:
// remote classifiers release up to a cadence of text before it is judged unless the user
// opts into a hold-back.
func compileStreaming(out *Guardrail, s *spec.GuardrailSpec, c *Classifier, p *field.Path) field.ErrorList {
	out.Streaming.HoldBack = 0
	if c.Spans {
		out.Streaming.HoldBack = HoldBackPending
	}
	st := s.Streaming
	if st == nil {
		return nil
	}
	var errs field.ErrorList
	if !out.Phases.Has(PhaseStream) {
		errs = append(errs, field.Forbidden(p, "spec.streaming applies to the Stream phase: add Stream to spec.phases or remove spec.streaming"))
	}
	out.Streaming.EvaluateEveryChars = int(deref(st.EvaluateEveryChars))
	out.Streaming.ChunkWindow = int(deref(st.ChunkWindow))
	out.Streaming.MaxEvaluations = int(deref(st.MaxEvaluations))
	for name, v := range map[string]int{"evaluateEveryChars": out.Streaming.EvaluateEveryChars,
		"chunkWindow": out.Streaming.ChunkWindow, "maxEvaluations": out.Streaming.MaxEvaluations} {
		if v < 0 {
			errs = append(errs, field.Invalid(p.Child(name), v, "must not be negative"))
		}
	}
	switch st.Segmentation {
	case "", spec.SegmentCumulative:
	case spec.SegmentSentences:
		out.Streaming.Sentences = true
		if out.Streaming.ChunkWindow > 0 {
			errs = append(errs, field.Invalid(p.Child("chunkWindow"), out.Streaming.ChunkWindow,
				"chunkWindow and segmentation Sentences are alternatives: set one"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("segmentation"), st.Segmentation, []string{"Cumulative", "Sentences"}))
	}
	if hb := st.HoldBackChars; hb != nil {
		switch {
		case hb.Type == spec.String && hb.StrVal == spec.HoldBackUnbounded:
			out.Streaming.HoldBack = HoldBackUnbounded
		case hb.Type == spec.Int && hb.IntVal >= 0:
			out.Streaming.HoldBack = int(hb.IntVal)
		default:
			errs = append(errs, field.Invalid(p.Child("holdBackChars"), hb.String(), "must be an integer >= 0 or Unbounded"))
		}
	}
	return errs
}

// cloneSelector copies a selector, so that a compiled Guardrail shares nothing with the
// object it was compiled from. A nil selector stays nil.
func cloneSelector(s *spec.LabelSelector) *spec.LabelSelector {
	if s == nil {
		return nil
	}
	out := &spec.LabelSelector{}
	if s.MatchLabels != nil {
		out.MatchLabels = make(map[string]spec.LabelValue, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			out.MatchLabels[k] = v
		}
	}
	for _, e := range s.MatchExpressions {
		e.Values = slices.Clone(e.Values)
		out.MatchExpressions = append(out.MatchExpressions, e)
	}
	return out
}

// pseudonymizePhases refuses Pseudonymize on a phase other than Input and ToolResults: it
// masks what the provider receives and restores the answer, so an answer phase (Stream,
// Output, ToolCalls) has nothing it could mask. Unset phases default to [Input, Output].
func pseudonymizePhases(s *spec.GuardrailSpec, sp *field.Path) field.ErrorList {
	const msg = "action Pseudonymize applies to the Input and ToolResults phases only: set spec.phases to [Input], [ToolResults] or both (the answer is restored, not judged, by it)"
	if len(s.Phases) == 0 {
		return field.ErrorList{field.Invalid(sp.Child("phases"), "[Input Output] (the default)", msg)}
	}
	var errs field.ErrorList
	for i, p := range s.Phases {
		if p != spec.PhaseInput && p != spec.PhaseToolResults {
			errs = append(errs, field.Invalid(sp.Child("phases").Index(i), p, msg))
		}
	}
	return errs
}

// ModeOf is the one place a Guardrail's spec.mode becomes what the guard does: Enforce
// acts, Report only records what it would have done. The compiler, the PolicyReport and
// the kubectl plugin all ask it. ok is false for a mode the API does not know (the
// compiler refuses it; the zero Mode is returned).
func ModeOf(m spec.Mode) (mode Mode, ok bool) {
	switch m {
	case spec.ModeEnforce:
		return ModeEnforce, true
	case spec.ModeReport:
		return ModeReport, true
	}
	return mode, false
}
