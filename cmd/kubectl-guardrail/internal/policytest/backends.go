package policytest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/builtin"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// newBuiltin builds the in-process backend of a compiled built-in classifier, as the
// guard's proxy does (runtime/proxy/backend.go, which does not export it).
func newBuiltin(c *policy.Classifier) (classify.Classifier, error) {
	cfg := builtin.Config{Detectors: c.Builtin.Detectors}
	for _, p := range c.Builtin.Patterns {
		cfg.Patterns = append(cfg.Patterns, builtin.Pattern(p))
	}
	for _, kw := range c.Builtin.Keywords {
		cfg.Keywords = append(cfg.Keywords, builtin.KeywordSet(kw))
	}
	return builtin.New(cfg)
}

// stub is a remote classifier that answers from the cases file.
type stub struct {
	key      string
	verdicts []compiledVerdict
	// missed is set when no verdict applied to a text (the engine may call concurrently).
	missed atomic.Bool
}

type compiledVerdict struct {
	when string
	res  classify.Result
	err  *classify.Error
}

// newStub checks s against the classifier c and prepares its answers; errors name the
// field at p.
func newStub(c *policy.Classifier, s Stub, p string) (*stub, error) {
	out := &stub{key: c.Key}
	for i, v := range s {
		vp := p
		if len(s) > 1 {
			vp = fmt.Sprintf("%s[%d]", p, i)
		}
		cv := compiledVerdict{when: v.WhenContains}
		if v.Error != "" {
			cv.err = classify.Errorf(classify.Code(v.Error), "stubbed by the cases file")
			out.verdicts = append(out.verdicts, cv)
			continue
		}
		if len(c.Categories) > 0 {
			cv.res.Scores = make([]float64, len(c.Categories))
		}
		for id, score := range v.Scores {
			i := c.CategoryIndex(id)
			if i < 0 {
				return nil, fmt.Errorf("%s.scores.%s: classifier %s has no category %q (it has: %s)", vp, id, c.Key, id, categoryIDs(c))
			}
			if score < 0 || score > 1 {
				return nil, fmt.Errorf("%s.scores.%s: %v is not a score in [0, 1]", vp, id, score)
			}
			cv.res.Scores[i] = score
		}
		for _, id := range v.Refused {
			i := c.CategoryIndex(id)
			if i < 0 {
				return nil, fmt.Errorf("%s.refused: classifier %s has no category %q (it has: %s)", vp, c.Key, id, categoryIDs(c))
			}
			if cv.res.Refusals == nil {
				cv.res.Refusals = make([]bool, len(c.Categories))
			}
			cv.res.Refusals[i], cv.res.Scores[i] = true, 0
		}
		if len(c.Questions) > 0 {
			cv.res.Answers = make([]classify.Answer, len(c.Questions))
			for i, q := range c.Questions {
				a, ok := v.Answers[q.ID]
				if !ok {
					return nil, fmt.Errorf("%s.answers.%s: required: classifier %s asks question %q (a %s question)", vp, q.ID, c.Key, q.ID, q.Type)
				}
				ans, err := stubAnswer(q, a, fmt.Sprintf("%s.answers.%s", vp, q.ID))
				if err != nil {
					return nil, err
				}
				cv.res.Answers[i] = ans
			}
		}
		for id := range v.Answers {
			if c.QuestionIndex(id) < 0 {
				return nil, fmt.Errorf("%s.answers.%s: classifier %s asks no question %q", vp, id, c.Key, id)
			}
		}
		out.verdicts = append(out.verdicts, cv)
	}
	return out, nil
}

func stubAnswer(q policy.Question, a StubAnswer, p string) (classify.Answer, error) {
	if a.Type == "refusal" {
		if a.Probability != nil || a.Choice != "" || a.Score != nil {
			return classify.Answer{}, fmt.Errorf("%s: a refusal has no probability, choice or score", p)
		}
		return classify.Answer{Type: classify.Refused}, nil
	}
	switch q.Type {
	case policy.QuestionBoolean:
		if a.Probability == nil || *a.Probability < 0 || *a.Probability > 1 {
			return classify.Answer{}, fmt.Errorf("%s.probability: required in [0, 1] for a boolean question (or type: refusal)", p)
		}
		return classify.Answer{Probability: *a.Probability}, nil
	case policy.QuestionScore:
		if a.Score == nil || *a.Score < 0 || *a.Score > 1 {
			return classify.Answer{}, fmt.Errorf("%s.score: required in [0, 1] for a score question (or type: refusal)", p)
		}
		return classify.Answer{Score: *a.Score}, nil
	}
	values := make([]string, len(q.Criteria))
	for i, c := range q.Criteria {
		values[i] = c.Value
	}
	if !slices.Contains(values, a.Choice) {
		return classify.Answer{}, fmt.Errorf("%s.choice: %q is not one of %s (or type: refusal)", p, a.Choice, strings.Join(values, ", "))
	}
	return classify.Answer{Choice: a.Choice}, nil
}

func categoryIDs(c *policy.Classifier) string {
	ids := make([]string, len(c.Categories))
	for i, cat := range c.Categories {
		ids[i] = cat.ID
	}
	sort.Strings(ids)
	return strings.Join(ids, ", ")
}

// Classify implements classify.Classifier.
func (s *stub) Classify(ctx context.Context, in classify.Input) (classify.Result, error) {
	if err := ctx.Err(); err != nil {
		return classify.Result{}, err
	}
	for _, v := range s.verdicts {
		if v.when != "" && !strings.Contains(in.Text, v.when) {
			continue
		}
		if v.err != nil {
			return classify.Result{}, v.err
		}
		r := v.res
		r.Scores = slices.Clone(r.Scores)
		r.Refusals = slices.Clone(r.Refusals)
		r.Answers = slices.Clone(r.Answers)
		return r, nil
	}
	// The cases file is incomplete: the run reports it as an error, not as the
	// evaluation failure the engine records.
	s.missed.Store(true)
	return classify.Result{}, classify.Errorf(classify.CodeClassifierFailed, "no stubbed verdict applies")
}
