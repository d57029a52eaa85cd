package policy

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// The seeds' own examples, as CEL rules.
func TestRuleMatch(t *testing.T) {
	topic := &Classifier{Questions: []Question{{ID: "topic", Type: QuestionChoice}}}
	unsafe := &Classifier{Questions: []Question{{ID: "unsafe", Type: QuestionBoolean}}}
	quality := &Classifier{Questions: []Question{{ID: "quality", Type: QuestionScore}}}
	scored := &Classifier{Categories: []Category{{ID: "credit-card"}, {ID: "violence"}}}
	answer := func(a classify.Answer) classify.Result { return classify.Result{Answers: []classify.Answer{a}} }
	refusal := answer(classify.Answer{Type: classify.Refused})

	const topicRule = "answers.topic.type == 'refusal' || answers.topic.choice == 'other'"
	const probabilityRule = "answers.unsafe.type == 'refusal' || answers.unsafe.probability > 0.8"
	tests := []struct {
		name string
		c    *Classifier
		expr string
		res  classify.Result
		want bool
	}{
		{"topic scoping blocks a message about something else", topic, topicRule, answer(classify.Answer{Choice: "other"}), true},
		{"topic scoping blocks a refusal", topic, topicRule, refusal, true},
		{"topic scoping passes a billing question", topic, topicRule, answer(classify.Answer{Choice: "billing"}), false},
		{"a quality gate strips a partial answer", quality, "answers.quality.score < 1.0", answer(classify.Answer{Score: 0.5}), true},
		{"a quality gate keeps a complete answer", quality, "answers.quality.score < 1.0", answer(classify.Answer{Score: 1}), false},
		{"a probability gate blocks above 0.8", unsafe, probabilityRule, answer(classify.Answer{Probability: 0.81}), true},
		{"a probability gate passes at exactly 0.8", unsafe, probabilityRule, answer(classify.Answer{Probability: 0.8}), false},
		{"a probability gate treats a refusal as unsafe", unsafe, probabilityRule, refusal, true},
		{"a refusal's probability reads as zero", unsafe, "answers.unsafe.probability == 0.0", refusal, true},
		{"scores are read by category id", scored, "scores['credit-card'] >= 0.9", classify.Result{Scores: []float64{0.9, 0}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRule("r", tt.expr, ActionBlock, "reason")
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Match(NewActivation(tt.c, tt.res))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRuleErrors(t *testing.T) {
	t.Run("reading an answer the result lacks is an evaluation error, not a match", func(t *testing.T) {
		r, _ := NewRule("r", "answers.topic.choice == 'other'", ActionBlock, "x")
		if _, err := r.Match(NewActivation(&Classifier{}, classify.Result{})); err == nil {
			t.Fatal("want an error")
		}
	})
	t.Run("a NaN score is an evaluation error, not a silent pass", func(t *testing.T) {
		r, _ := NewRule("r", "scores['x'] > 0.5", ActionBlock, "x")
		got, err := r.Match(NewActivation(&Classifier{Categories: []Category{{ID: "x"}}}, classify.Result{Scores: []float64{math.NaN()}}))
		if err == nil || got {
			t.Fatalf("got %v, %v; want an error", got, err)
		}
	})
	t.Run("an expression that does not compile is an error saying why", func(t *testing.T) {
		for expr, want := range map[string]string{
			"answers.topic.choice ==":     "Syntax error",
			"answers.topic.chioce == 'x'": "undefined field 'chioce'",
		} {
			if _, err := NewRule("r", expr, ActionBlock, "x"); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err = %v, want one containing %q", expr, err, want)
			}
		}
	})
	t.Run("a result shorter than the classifier exposes what it has", func(t *testing.T) {
		c := &Classifier{Categories: []Category{{ID: "x"}, {ID: "y"}},
			Questions: []Question{{ID: "topic", Type: QuestionChoice}, {ID: "unsafe", Type: QuestionBoolean}}}
		act := NewActivation(c, classify.Result{Scores: []float64{0.7}, Answers: []classify.Answer{{Choice: "other"}}})
		for _, expr := range []string{"answers.topic.choice == 'other'", "scores['x'] > 0.5", "!has(answers.unsafe) && !has(scores.y)"} {
			r, err := NewRule("r", expr, ActionBlock, "x")
			if err != nil {
				t.Fatal(err)
			}
			if got, err := r.Match(act); err != nil || !got {
				t.Errorf("%s: got %v, %v; want a match", expr, got, err)
			}
		}
	})
	t.Run("a rule read back from JSON is compiled again", func(t *testing.T) {
		r, _ := NewRule("r", "scores['x'] > 0.5", ActionStrip, "why")
		b, _ := json.Marshal(r)
		var back Rule
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		got, err := back.Match(NewActivation(&Classifier{Categories: []Category{{ID: "x"}}}, classify.Result{Scores: []float64{0.6}}))
		if err != nil || !got || back.Action != ActionStrip {
			t.Fatalf("got %v, %v, %v", got, err, back.Action)
		}
	})
}
