package engine

import (
	"math"
	"slices"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// judgment is what one valid classifier result decides under one guardrail, before the
// phase and the mode say what the decision does (see effectOf).
type judgment struct {
	// action is the strongest matched action: Block > Strip > Redact > Pseudonymize > Warn
	// > allow.
	action policy.Action
	// reason is the authored reason of the first finding with the strongest action.
	reason   string
	findings []Finding
	// spans are the result's spans of matched categories (for Redact).
	spans []classify.Span
	// unspanned is set when a matched category has no span, so Redact cannot remove it.
	unspanned bool
}

func (j *judgment) raise(a policy.Action, reason string) {
	if a.Stronger(j.action) {
		j.action, j.reason = a, reason
	}
}

// validate checks a result against the classifier's authored categories and questions: exactly one score per category when the guardrail uses categories (and
// none or exactly one each otherwise), one answer per question, every score finite and
// within [0,1], spans inside the judged text. Anything else is an invalid answer. Messages
// name indices, never content.
func validate(g *policy.Guardrail, c *policy.Classifier, res classify.Result, textLen int) error {
	n := len(c.Categories)
	if len(res.Scores) != n && (len(g.Categories) > 0 || len(res.Scores) != 0) {
		return classify.Errorf(classify.CodeInvalidAnswer, "%d scores for %d categories", len(res.Scores), n)
	}
	if res.Refusals != nil && len(res.Refusals) != len(res.Scores) {
		return classify.Errorf(classify.CodeInvalidAnswer, "%d refusals for %d scores", len(res.Refusals), len(res.Scores))
	}
	for i, s := range res.Scores {
		if !validScore(s) {
			return classify.Errorf(classify.CodeInvalidAnswer, "score %d is not a number within [0,1]", i)
		}
	}
	if len(res.Answers) != len(c.Questions) {
		return classify.Errorf(classify.CodeInvalidAnswer, "%d answers for %d questions", len(res.Answers), len(c.Questions))
	}
	for i, a := range res.Answers {
		if err := validateAnswer(&c.Questions[i], a); err != nil {
			return classify.Errorf(classify.CodeInvalidAnswer, "answer %d: %s", i, err)
		}
	}
	for i, sp := range res.Spans {
		if sp.Start < 0 || sp.Start > sp.End || sp.End > textLen || sp.Category < 0 || sp.Category >= n {
			return classify.Errorf(classify.CodeInvalidAnswer, "span %d is outside the text or its categories", i)
		}
	}
	return nil
}

type answerError string

func (e answerError) Error() string { return string(e) }

func validateAnswer(q *policy.Question, a classify.Answer) error {
	switch a.Type {
	case classify.Refused:
		return nil
	case classify.Answered:
	default:
		return answerError("unknown answer type")
	}
	if !validScore(a.Probability) {
		return answerError("probability is not a number within [0,1]")
	}
	// A score question's levels map evenly onto [0,1] (API: QuestionScore).
	if !validScore(a.Score) {
		return answerError("score is not a number within [0,1]")
	}
	if q.Type == policy.QuestionChoice && len(q.Criteria) > 0 &&
		!slices.ContainsFunc(q.Criteria, func(c policy.Criterion) bool { return c.Value == a.Choice }) {
		return answerError("choice is not one of the criteria")
	}
	return nil
}

func validScore(s float64) bool { return !math.IsNaN(s) && s >= 0 && s <= 1 }

// judge applies the guardrail's category rules (score >= threshold; a refusal matches unless
// refusal: Ignore) and CEL rules to a validated result. Findings come in the classifier's
// authored category order, then rules in authored order. A rule that cannot be evaluated is
// an invalid answer.
func judge(g *policy.Guardrail, c *policy.Classifier, res classify.Result) (judgment, error) {
	var j judgment
	for _, cr := range g.Categories {
		score := res.Scores[cr.Index]
		refused := res.Refusals != nil && res.Refusals[cr.Index]
		switch {
		case refused && !g.RefusalMatches:
			continue
		case !refused && score < cr.Threshold:
			continue
		}
		j.findings = append(j.findings, Finding{Kind: FindingCategory, Name: cr.ID, Score: score, Threshold: cr.Threshold, Refused: refused})
		j.raise(g.Action, g.Reason)
		spanned := false
		for _, sp := range res.Spans {
			if sp.Category == cr.Index {
				j.spans = append(j.spans, sp)
				spanned = true
			}
		}
		j.unspanned = j.unspanned || !spanned
	}
	if len(g.Rules) == 0 {
		return j, nil
	}
	act := policy.NewActivation(c, res)
	for _, r := range g.Rules {
		ok, err := r.Match(act)
		if err != nil {
			// The CEL error names the rule and the missing key, never content.
			return judgment{}, &classify.Error{Code: classify.CodeInvalidAnswer, Err: err}
		}
		if !ok {
			continue
		}
		j.findings = append(j.findings, Finding{Kind: FindingRule, Name: r.Name})
		reason := r.Reason
		if reason == "" {
			reason = g.Reason
		}
		j.raise(r.Action, reason)
	}
	return j, nil
}

// target says what kind of content an evaluation judged, which changes what a decision does.
type target struct {
	// tool: a tool call, which cannot be rewritten: Strip and Redact act as Block.
	tool bool
	// required: dropping the content would leave nothing (the only user message, the
	// whole final output): Strip escalates to Block.
	required bool
}

// effectOf turns a judgment into the action that applies to the content and whether it
// escalated: Redact acts as Block when a matched category has no span to
// redact; on a tool call Strip and Redact act as Block; Strip on a required part escalates
// to Block. The returned action is what Enforce does and what Report would have done.
func effectOf(j *judgment, t target) (policy.Action, bool) {
	switch a := j.action; {
	case (a == policy.ActionRedact || a == policy.ActionPseudonymize) && (t.tool || j.unspanned):
		return policy.ActionBlock, true
	case a == policy.ActionStrip && (t.tool || t.required):
		return policy.ActionBlock, true
	default:
		return a, false
	}
}
