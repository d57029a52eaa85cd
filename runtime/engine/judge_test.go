package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// ruleGuard builds a guardrail and its classifier for judge tests.
func ruleGuard(copts []classifierOption, gopts ...guardrailOption) (*policy.Guardrail, *policy.Classifier) {
	var w world
	c := w.classifier("judge", nil, copts...)
	return w.guardrail("g", c, gopts...), c
}

func answer(p float64) classify.Answer {
	return classify.Answer{Type: classify.Answered, Probability: p}
}
func choice(v string) classify.Answer    { return classify.Answer{Type: classify.Answered, Choice: v} }
func scoreAns(v float64) classify.Answer { return classify.Answer{Type: classify.Answered, Score: v} }

var refusal = classify.Answer{Type: classify.Refused}

func TestJudge(t *testing.T) {
	three := []classifierOption{withCategories("hate", "violence", "personal-document")}
	topic := []classifierOption{withQuestion("topic", policy.QuestionChoice, "billing", "account", "other")}
	quality := []classifierOption{withQuestion("quality", policy.QuestionScore)}
	safety := []classifierOption{withQuestion("unsafe", policy.QuestionBoolean, "true", "false")}
	topicRule := rule("off-topic", "answers.topic.type == 'refusal' || answers.topic.choice == 'other'", policy.ActionBlock,
		"This assistant only handles billing and account questions")
	qualityRule := rule("low-quality", "answers.quality.score < 1.0", policy.ActionStrip, "")
	safetyRule := rule("unsafe", "answers.unsafe.type == 'refusal' || answers.unsafe.probability > 0.8", policy.ActionBlock,
		"Message rejected by safety policy")

	cases := []struct {
		name       string
		copts      []classifierOption
		gopts      []guardrailOption
		res        classify.Result
		wantAction policy.Action
		wantReason string
		want       []Finding
	}{
		{name: "a score equal to the threshold matches", copts: three,
			gopts: []guardrailOption{threshold(0.9, policy.ActionBlock, nil)}, res: classify.Result{Scores: []float64{0.9, 0, 0}},
			wantAction: policy.ActionBlock, wantReason: "g says no", want: []Finding{{Kind: FindingCategory, Name: "hate", Score: 0.9, Threshold: 0.9}}},
		{name: "threshold 0 matches every score, 0 included", copts: three,
			gopts: []guardrailOption{threshold(0, policy.ActionWarn, nil, "violence")}, res: classify.Result{Scores: []float64{0, 0, 0}},
			wantAction: policy.ActionWarn, wantReason: "g says no", want: []Finding{{Kind: FindingCategory, Name: "violence", Score: 0, Threshold: 0}}},
		{name: "threshold 1 matches a score of exactly 1", copts: three,
			gopts: []guardrailOption{threshold(1, policy.ActionBlock, nil)}, res: classify.Result{Scores: []float64{0.999999, 1, 0}},
			wantAction: policy.ActionBlock, wantReason: "g says no", want: []Finding{{Kind: FindingCategory, Name: "violence", Score: 1, Threshold: 1}}},
		{name: "a score below the threshold does not match", copts: three,
			gopts: []guardrailOption{threshold(0.9, policy.ActionBlock, nil)}, res: classify.Result{Scores: []float64{0.89, 0, 0}}},
		{name: "a per-category override replaces the threshold for its category only", copts: three,
			gopts: []guardrailOption{threshold(0.8, policy.ActionBlock, map[string]float64{"personal-document": 0.95})},
			res:   classify.Result{Scores: []float64{0.8, 0, 0.9}}, wantAction: policy.ActionBlock, wantReason: "g says no",
			want: []Finding{{Kind: FindingCategory, Name: "hate", Score: 0.8, Threshold: 0.8}}},
		{name: "a per-category override matches on equality (0.9 >= 0.9)", copts: three,
			gopts: []guardrailOption{threshold(0.8, policy.ActionWarn, map[string]float64{"personal-document": 0.9})},
			res:   classify.Result{Scores: []float64{0, 0, 0.9}}, wantAction: policy.ActionWarn, wantReason: "g says no",
			want: []Finding{{Kind: FindingCategory, Name: "personal-document", Score: 0.9, Threshold: 0.9}}},
		{name: "categories outside the guardrail's subset never match", copts: three,
			gopts: []guardrailOption{threshold(0.5, policy.ActionBlock, nil, "violence")}, res: classify.Result{Scores: []float64{1, 0, 1}}},
		{name: "a refused category matches by default", copts: three,
			gopts: []guardrailOption{threshold(0.5, policy.ActionBlock, nil)},
			res:   classify.Result{Scores: []float64{0, 0, 0}, Refusals: []bool{false, true, false}}, wantAction: policy.ActionBlock, wantReason: "g says no",
			want: []Finding{{Kind: FindingCategory, Name: "violence", Threshold: 0.5, Refused: true}}},
		{name: "a refused category does not match with refusal Ignore", copts: three,
			gopts: []guardrailOption{threshold(0.5, policy.ActionBlock, nil), refusalIgnored()},
			res:   classify.Result{Scores: []float64{0, 0, 0}, Refusals: []bool{false, true, false}}},
		{name: "findings come in the classifier's authored order, then rules in authored order", copts: three,
			gopts: []guardrailOption{threshold(0.5, policy.ActionWarn, nil),
				rule("zz-first", "scores['violence'] > 0.1", policy.ActionWarn, "r1"), rule("aa-second", "scores['hate'] > 0.1", policy.ActionWarn, "r2")},
			res: classify.Result{Scores: []float64{0.6, 0.7, 0}}, wantAction: policy.ActionWarn, wantReason: "g says no",
			want: []Finding{{Kind: FindingCategory, Name: "hate", Score: 0.6, Threshold: 0.5}, {Kind: FindingCategory, Name: "violence", Score: 0.7, Threshold: 0.5},
				{Kind: FindingRule, Name: "zz-first"}, {Kind: FindingRule, Name: "aa-second"}}},
		{name: "the strongest action wins and gives its reason", copts: three,
			gopts: []guardrailOption{threshold(0.5, policy.ActionRedact, nil),
				rule("warn", "scores['hate'] > 0.1", policy.ActionWarn, "warned"), rule("strip", "scores['hate'] > 0.2", policy.ActionStrip, "stripped")},
			res: classify.Result{Scores: []float64{0.6, 0, 0}, Spans: []classify.Span{{Start: 0, End: 1}}}, wantAction: policy.ActionStrip, wantReason: "stripped",
			want: []Finding{{Kind: FindingCategory, Name: "hate", Score: 0.6, Threshold: 0.5}, {Kind: FindingRule, Name: "warn"}, {Kind: FindingRule, Name: "strip"}}},
		{name: "topic scoping: a choice of other blocks with the authored reason", copts: topic, gopts: []guardrailOption{topicRule},
			res: classify.Result{Answers: []classify.Answer{choice("other")}}, wantAction: policy.ActionBlock,
			wantReason: "This assistant only handles billing and account questions", want: []Finding{{Kind: FindingRule, Name: "off-topic"}}},
		{name: "topic scoping: a refusal blocks", copts: topic, gopts: []guardrailOption{topicRule},
			res: classify.Result{Answers: []classify.Answer{refusal}}, wantAction: policy.ActionBlock,
			wantReason: "This assistant only handles billing and account questions", want: []Finding{{Kind: FindingRule, Name: "off-topic"}}},
		{name: "topic scoping: a billing question passes", copts: topic, gopts: []guardrailOption{topicRule},
			res: classify.Result{Answers: []classify.Answer{choice("billing")}}},
		{name: "quality gate: a score below 1 strips", copts: quality, gopts: []guardrailOption{qualityRule},
			res: classify.Result{Answers: []classify.Answer{scoreAns(0.5)}}, wantAction: policy.ActionStrip, wantReason: "g says no",
			want: []Finding{{Kind: FindingRule, Name: "low-quality"}}},
		{name: "quality gate: a score of 1 passes", copts: quality, gopts: []guardrailOption{qualityRule},
			res: classify.Result{Answers: []classify.Answer{scoreAns(1)}}},
		{name: "probability gate: a probability above 0.8 blocks", copts: safety, gopts: []guardrailOption{safetyRule},
			res: classify.Result{Answers: []classify.Answer{answer(0.81)}}, wantAction: policy.ActionBlock,
			wantReason: "Message rejected by safety policy", want: []Finding{{Kind: FindingRule, Name: "unsafe"}}},
		{name: "probability gate: a probability of 0.8 passes", copts: safety, gopts: []guardrailOption{safetyRule},
			res: classify.Result{Answers: []classify.Answer{answer(0.8)}}},
		{name: "probability gate: a refusal is treated as unsafe", copts: safety, gopts: []guardrailOption{safetyRule},
			res: classify.Result{Answers: []classify.Answer{refusal}}, wantAction: policy.ActionBlock,
			wantReason: "Message rejected by safety policy", want: []Finding{{Kind: FindingRule, Name: "unsafe"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, c := ruleGuard(tc.copts, tc.gopts...)
			if err := validate(g, c, tc.res, 10); err != nil {
				t.Fatalf("validate: %v", err)
			}
			j, err := judge(g, c, tc.res)
			if err != nil {
				t.Fatalf("judge: %v", err)
			}
			if j.action != tc.wantAction || j.reason != tc.wantReason {
				t.Errorf("action %s reason %q, want %s %q", j.action, j.reason, tc.wantAction, tc.wantReason)
			}
			if !slices.Equal(j.findings, tc.want) {
				t.Errorf("findings %+v, want %+v", j.findings, tc.want)
			}
		})
	}
}

func TestValidateRejectsInvalidAnswers(t *testing.T) {
	cats := []classifierOption{withCategories("a", "b"), withQuestion("q", policy.QuestionChoice, "yes", "no")}
	ok := func() classify.Result {
		return classify.Result{Scores: []float64{0, 1}, Answers: []classify.Answer{choice("yes")}}
	}
	cases := []struct {
		name  string
		edit  func(*classify.Result)
		gopts []guardrailOption
	}{
		{name: "a NaN score", edit: func(r *classify.Result) { r.Scores[0] = math.NaN() }},
		{name: "an infinite score", edit: func(r *classify.Result) { r.Scores[0] = math.Inf(1) }},
		{name: "a score of 1.5", edit: func(r *classify.Result) { r.Scores[1] = 1.5 }},
		{name: "a negative score", edit: func(r *classify.Result) { r.Scores[1] = -0.1 }},
		{name: "a missing category key", edit: func(r *classify.Result) { r.Scores = r.Scores[:1] }},
		{name: "an extra category key", edit: func(r *classify.Result) { r.Scores = append(r.Scores, 0) }},
		{name: "scores when the guardrail uses only rules but not one per category", gopts: []guardrailOption{rule("r", "true", policy.ActionWarn, "")},
			edit: func(r *classify.Result) { r.Scores = r.Scores[:1] }},
		{name: "refusals that do not match the scores", edit: func(r *classify.Result) { r.Refusals = []bool{true} }},
		{name: "a missing answer", edit: func(r *classify.Result) { r.Answers = nil }},
		{name: "an extra answer", edit: func(r *classify.Result) { r.Answers = append(r.Answers, choice("no")) }},
		{name: "a probability of 1.5", edit: func(r *classify.Result) {
			r.Answers[0] = classify.Answer{Type: classify.Answered, Choice: "yes", Probability: 1.5}
		}},
		{name: "a NaN answer score", edit: func(r *classify.Result) {
			r.Answers[0] = classify.Answer{Type: classify.Answered, Choice: "yes", Score: math.NaN()}
		}},
		{name: "an answer score of 1.5", edit: func(r *classify.Result) {
			r.Answers[0] = classify.Answer{Type: classify.Answered, Choice: "yes", Score: 1.5}
		}},
		{name: "a choice outside the criteria", edit: func(r *classify.Result) { r.Answers[0] = choice("maybe") }},
		{name: "an unknown answer type", edit: func(r *classify.Result) { r.Answers[0].Type = 7 }},
		{name: "a span past the end of the text", edit: func(r *classify.Result) { r.Spans = []classify.Span{{Start: 5, End: 11}} }},
		{name: "a span that ends before it starts", edit: func(r *classify.Result) { r.Spans = []classify.Span{{Start: 5, End: 4}} }},
		{name: "a span of an unknown category", edit: func(r *classify.Result) { r.Spans = []classify.Span{{Start: 0, End: 1, Category: 2}} }},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is an invalid answer", func(t *testing.T) {
			g, c := ruleGuard(cats, append([]guardrailOption{threshold(0.5, policy.ActionBlock, nil)}, tc.gopts...)...)
			if len(tc.gopts) > 0 {
				g.Categories = nil
			}
			if err := validate(g, c, ok(), 10); err != nil {
				t.Fatalf("the unedited result is invalid: %v", err)
			}
			res := ok()
			tc.edit(&res)
			err := validate(g, c, res, 10)
			var ce *classify.Error
			if !errors.As(err, &ce) || ce.Code != classify.CodeInvalidAnswer {
				t.Fatalf("got %v, want an INVALID_ANSWER error", err)
			}
		})
	}
	t.Run("no scores at all are valid when the guardrail uses only rules over answers", func(t *testing.T) {
		g, c := ruleGuard(cats, rule("r", "answers.q.choice == 'no'", policy.ActionBlock, ""))
		if err := validate(g, c, classify.Result{Answers: []classify.Answer{choice("no")}}, 0); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a rule that cannot be evaluated is an invalid answer", func(t *testing.T) {
		g, c := ruleGuard([]classifierOption{withCategories("a")}, rule("r", "answers.missing.probability > 0.5", policy.ActionBlock, ""))
		_, err := judge(g, c, classify.Result{Scores: []float64{0}})
		if classify.CodeOf(err) != classify.CodeInvalidAnswer {
			t.Fatalf("got %v, want INVALID_ANSWER", err)
		}
	})
}

// The bounds of a valid answer are inclusive: what lies exactly on them is valid.
func TestValidateAcceptsAnswersOnTheBounds(t *testing.T) {
	cats := []classifierOption{withCategories("a", "b"), withQuestion("q", policy.QuestionChoice, "yes", "no")}
	cases := []struct {
		name  string
		copts []classifierOption
		res   classify.Result
	}{
		{name: "a span over the whole text, of the first category", copts: cats,
			res: classify.Result{Scores: []float64{1, 0}, Answers: []classify.Answer{choice("yes")}, Spans: []classify.Span{{Start: 0, End: 10, Category: 0}}}},
		{name: "an empty span", copts: cats,
			res: classify.Result{Scores: []float64{1, 0}, Answers: []classify.Answer{choice("yes")}, Spans: []classify.Span{{Start: 4, End: 4, Category: 1}}}},
		{name: "a probability and a score of exactly 0 and 1", copts: cats,
			res: classify.Result{Scores: []float64{0, 1}, Answers: []classify.Answer{{Type: classify.Answered, Choice: "no", Probability: 1, Score: 0}}}},
		{name: "any choice of a choice question without criteria", copts: []classifierOption{withQuestion("q", policy.QuestionChoice)},
			res: classify.Result{Answers: []classify.Answer{choice("anything")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is valid", func(t *testing.T) {
			g, c := ruleGuard(tc.copts)
			if err := validate(g, c, tc.res, 10); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEffectOf(t *testing.T) {
	cases := []struct {
		name          string
		j             judgment
		t             target
		want          policy.Action
		wantEscalated bool
	}{
		{name: "Strip on an ordinary part strips", j: judgment{action: policy.ActionStrip}, want: policy.ActionStrip},
		{name: "Strip on a required part escalates to Block", j: judgment{action: policy.ActionStrip}, t: target{required: true},
			want: policy.ActionBlock, wantEscalated: true},
		{name: "Strip on a tool call acts as Block", j: judgment{action: policy.ActionStrip}, t: target{tool: true},
			want: policy.ActionBlock, wantEscalated: true},
		{name: "Redact on a tool call acts as Block", j: judgment{action: policy.ActionRedact, spans: []classify.Span{{}}}, t: target{tool: true},
			want: policy.ActionBlock, wantEscalated: true},
		{name: "Redact with a matched category without spans acts as Block", j: judgment{action: policy.ActionRedact, unspanned: true},
			want: policy.ActionBlock, wantEscalated: true},
		{name: "Redact on a required part redacts", j: judgment{action: policy.ActionRedact}, t: target{required: true}, want: policy.ActionRedact},
		{name: "Warn on a tool call warns", j: judgment{action: policy.ActionWarn}, t: target{tool: true}, want: policy.ActionWarn},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, esc := effectOf(&tc.j, tc.t)
			if a != tc.want || esc != tc.wantEscalated {
				t.Errorf("got %s escalated=%v, want %s escalated=%v", a, esc, tc.want, tc.wantEscalated)
			}
		})
	}
}

// TestSeedExamplesEndToEnd runs the reference documents' examples through a session.
func TestSeedExamplesEndToEnd(t *testing.T) {
	ctx := context.Background()
	t.Run("topic scoping refuses an off-topic request with the authored reason", func(t *testing.T) {
		var w world
		c := w.classifier("topic", answering(classify.Result{Answers: []classify.Answer{choice("other")}}),
			withQuestion("topic", policy.QuestionChoice, "billing", "account", "other"))
		w.guardrail("topic", c, phases(policy.PhaseInput), rule("off-topic",
			"answers.topic.type == 'refusal' || answers.topic.choice == 'other'", policy.ActionBlock,
			"This assistant only handles billing and account questions"))
		s, _ := w.session()
		res, err := s.Input(ctx, []Message{user("what is the weather?")})
		if err != nil || verdictString(res.Stop) != "blocked:This assistant only handles billing and account questions" {
			t.Fatalf("stop %+v err %v", res.Stop, err)
		}
	})
	t.Run("a quality gate strips low-quality reasoning and escalates on the answer", func(t *testing.T) {
		var w world
		c := w.classifier("quality", answering(classify.Result{Answers: []classify.Answer{scoreAns(0)}}),
			withQuestion("quality", policy.QuestionScore))
		w.guardrail("quality", c, phases(policy.PhaseOutput), rule("low-quality", "answers.quality.score < 1.0", policy.ActionStrip, ""))
		s, rec := w.session()
		res, err := s.Output(ctx, []Content{{Channel: reasoning0, Text: "hmm"}, {Channel: text0, Text: "meh"}})
		if err != nil || res.Stop == nil || !slices.Equal(outcomes(rec), []string{"team/quality:Output:stripped", "team/quality:Output:blocked(escalated)"}) {
			t.Fatalf("stop %+v records %v", res.Stop, outcomes(rec))
		}
	})
	t.Run("a probability gate treats a refusal as unsafe", func(t *testing.T) {
		var w world
		c := w.classifier("safety", answering(classify.Result{Answers: []classify.Answer{refusal}}),
			withQuestion("unsafe", policy.QuestionBoolean, "true", "false"))
		w.guardrail("safety", c, phases(policy.PhaseInput), rule("unsafe",
			"answers.unsafe.type == 'refusal' || answers.unsafe.probability > 0.8", policy.ActionBlock, "Message rejected by safety policy"))
		s, _ := w.session()
		res, _ := s.Input(ctx, []Message{user("hi")})
		if verdictString(res.Stop) != "blocked:Message rejected by safety policy" {
			t.Fatalf("stop %+v", res.Stop)
		}
	})
	t.Run("per-category overrides block on equality for media categories", func(t *testing.T) {
		var w world
		c := w.classifier("media", answering(classify.Result{Scores: []float64{0.2, 0.9}}), withCategories("graphic-violence", "personal-document"),
			withClassifierModalities(classify.Text, classify.Image, classify.File))
		w.guardrail("upload-safety", c, phases(policy.PhaseInput), modalities(classify.Image, classify.File),
			threshold(0.8, policy.ActionBlock, map[string]float64{"personal-document": 0.9}))
		s, rec := w.session()
		res, _ := s.Input(ctx, []Message{{Role: RoleUser, Parts: []Part{{Text: "look"}, image("https://x/y.png")}}})
		if res.Stop == nil || len(rec.records) != 1 ||
			!slices.Equal(rec.records[0].Findings, []Finding{{Kind: FindingCategory, Name: "personal-document", Score: 0.9, Threshold: 0.9}}) {
			t.Fatalf("stop %+v records %+v", res.Stop, rec.records)
		}
	})
}
