package remote

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// This file holds the validation shared by every backend's answer parser:
// scores are JSON numbers, finite and within [0,1]; an answer object has exactly
// the authored keys; malformed JSON is an invalid answer. Messages name categories and
// questions by their authored ids (configuration, not content) and never quote the reply.

// invalid returns an INVALID_ANSWER error.
func invalid(format string, args ...any) error {
	return classify.Errorf(classify.CodeInvalidAnswer, format, args...)
}

// present reports whether a member was sent with a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// unitNumber parses a JSON number that is finite and within [0,1]. Strings, null, and
// numbers that overflow a float64 (1e999) are rejected.
func unitNumber(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
		return 0, false
	}
	return f, true
}

// object decodes a JSON object into its raw members. Anything else is an invalid answer.
func object(data []byte, what string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, invalid("%s is not a JSON object", what)
	}
	return obj, nil
}

// scoresOf maps an object of scores onto names in order. A refused name (refused[i]) may
// be missing and scores 0. With exact, a member that is not one of the names is an
// invalid answer; without it (a moderation endpoint reports all its categories) others
// are ignored.
func scoresOf(obj map[string]json.RawMessage, names []string, refused []bool, exact bool) ([]float64, error) {
	scores := make([]float64, len(names))
	known := 0
	for i, name := range names {
		raw, ok := obj[name]
		if ok {
			known++
		}
		isRefused := refused != nil && refused[i]
		switch {
		case !ok && isRefused:
		case !ok:
			return nil, invalid("no score for category %q", name)
		default:
			f, valid := unitNumber(raw)
			if !valid {
				return nil, invalid("the score of category %q is not a number within [0,1]", name)
			}
			if !isRefused {
				scores[i] = f
			}
		}
	}
	if exact && len(obj) > known {
		return nil, invalid("%d score keys are not categories", len(obj)-known)
	}
	return scores, nil
}

// wireAnswer is an answer as judges and webhooks send it. Members a contract does not
// name are ignored.
type wireAnswer struct {
	Type        string          `json:"type"`
	Probability json.RawMessage `json:"probability"`
	Choice      json.RawMessage `json:"choice"`
	Score       json.RawMessage `json:"score"`
}

// answersOf maps an object of answers onto the questions in authored order: exactly one
// member per question, none other.
func answersOf(obj map[string]json.RawMessage, qs []Question) ([]classify.Answer, error) {
	out := make([]classify.Answer, len(qs))
	for i := range qs {
		raw, ok := obj[qs[i].ID]
		if !ok {
			return nil, invalid("no answer to question %q", qs[i].ID)
		}
		a, err := answerOf(raw, &qs[i])
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	if len(obj) > len(qs) {
		return nil, invalid("%d answer keys are not questions", len(obj)-len(qs))
	}
	return out, nil
}

// answerOf validates one answer: a refusal carries nothing else; an answer carries
// exactly the member of its question's type (probability for boolean, a criterion value
// as choice, a score within [0,1]).
func answerOf(raw json.RawMessage, q *Question) (classify.Answer, error) {
	var w wireAnswer
	if err := json.Unmarshal(raw, &w); err != nil || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return classify.Answer{}, invalid("the answer to question %q is not an object", q.ID)
	}
	p, c, s := present(w.Probability), present(w.Choice), present(w.Score)
	switch w.Type {
	case "refusal":
		if p || c || s {
			return classify.Answer{}, invalid("the refusal of question %q carries a value", q.ID)
		}
		return classify.Answer{Type: classify.Refused}, nil
	case "answer":
	default:
		return classify.Answer{}, invalid("the answer to question %q has no type answer or refusal", q.ID)
	}
	a := classify.Answer{Type: classify.Answered}
	var ok bool
	switch q.Type {
	case QuestionBoolean:
		a.Probability, ok = unitNumber(w.Probability)
		ok = ok && !c && !s
	case QuestionChoice:
		ok = json.Unmarshal(w.Choice, &a.Choice) == nil && isCriterion(q, a.Choice) && !p && !s
	case QuestionScore:
		a.Score, ok = unitNumber(w.Score)
		ok = ok && !p && !c
	}
	if !ok {
		return classify.Answer{}, invalid("the answer to %s question %q is not valid", q.Type, q.ID)
	}
	return a, nil
}

func isCriterion(q *Question, v string) bool {
	for _, c := range q.Criteria {
		if c.Value == v {
			return true
		}
	}
	return false
}

// refusedResult is the result of a judge that refused the whole request: every category
// refused (scores 0) or every question refused.
func refusedResult(categories, questions int) classify.Result {
	var res classify.Result
	if categories > 0 {
		res.Scores = make([]float64, categories)
		res.Refusals = make([]bool, categories)
		for i := range res.Refusals {
			res.Refusals[i] = true
		}
	}
	if questions > 0 {
		res.Answers = make([]classify.Answer, questions)
		for i := range res.Answers {
			res.Answers[i].Type = classify.Refused
		}
	}
	return res
}

// categoryIDs returns the authored category ids in order.
func categoryIDs(cs []Category) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

// member is one member of an ordered JSON object.
type member struct {
	key   string
	value any
}

// ordered is a JSON object whose members keep their order, so that prompts and schemas
// list categories and questions in authored order.
type ordered []member

// MarshalJSON implements json.Marshaler.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
