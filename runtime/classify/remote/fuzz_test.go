package remote

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// The fuzz tests feed arbitrary bytes to every parser of classifier answers. A parser
// never panics; it returns an INVALID_ANSWER error or a result that satisfies the
// invariants the engine relies on (checkResult).

var (
	fuzzIDs       = []string{"violence", "hate", "self-harm"}
	fuzzQuestions = []Question{
		{ID: "onTopic", Type: QuestionBoolean, Criteria: []Criterion{{Value: "true"}, {Value: "false"}}},
		{ID: "tone", Type: QuestionChoice, Criteria: []Criterion{{Value: "friendly"}, {Value: "hostile"}}},
		{ID: "severity", Type: QuestionScore, Criteria: []Criterion{{Value: "low"}, {Value: "high"}}},
	}
)

// checkResult fails unless err is an INVALID_ANSWER or res has exactly one finite score
// within [0,1] per category (0 when refused), refusals absent or one per category, and
// exactly one valid answer per question.
func checkResult(t *testing.T, res classify.Result, err error, categories int, qs []Question) {
	t.Helper()
	if err != nil {
		var ce *classify.Error
		if !errors.As(err, &ce) || ce.Code != classify.CodeInvalidAnswer {
			t.Fatalf("error = %v, want INVALID_ANSWER", err)
		}
		return
	}
	if len(res.Scores) != categories {
		t.Fatalf("%d scores for %d categories", len(res.Scores), categories)
	}
	if res.Refusals != nil && len(res.Refusals) != categories {
		t.Fatalf("%d refusals for %d categories", len(res.Refusals), categories)
	}
	for i, s := range res.Scores {
		if !unit(s) || (res.Refusals != nil && res.Refusals[i] && s != 0) {
			t.Fatalf("score %d = %v", i, s)
		}
	}
	if len(res.Answers) != len(qs) {
		t.Fatalf("%d answers for %d questions", len(res.Answers), len(qs))
	}
	for i, a := range res.Answers {
		q := qs[i]
		switch {
		case a.Type == classify.Refused:
			if a != (classify.Answer{Type: classify.Refused}) {
				t.Fatalf("refusal %d carries a value: %+v", i, a)
			}
		case a.Type != classify.Answered:
			t.Fatalf("answer %d has type %d", i, a.Type)
		case q.Type == QuestionBoolean && (!unit(a.Probability) || a.Choice != "" || a.Score != 0),
			q.Type == QuestionChoice && (!isCriterion(&q, a.Choice) || a.Probability != 0 || a.Score != 0),
			q.Type == QuestionScore && (!unit(a.Score) || a.Probability != 0 || a.Choice != ""):
			t.Fatalf("answer %d to a %s question is invalid: %+v", i, q.Type, a)
		}
	}
}

func unit(f float64) bool { return !math.IsNaN(f) && f >= 0 && f <= 1 }

func FuzzModerationReply(f *testing.F) {
	for _, seed := range []string{
		`{"id":"m","results":[{"flagged":true,"category_scores":{"violence":0.9,"hate":0,"self-harm":1e-3,"sexual":0.2}}]}`,
		`{"results":[{"category_scores":{"violence":1e999,"hate":0,"self-harm":0}}]}`,
		`{"results":[{"category_scores":{"violence":"0.5","hate":null,"self-harm":-0}}]}`,
		`{"results":[{"category_scores":{"violence":0.1,"hate":0.2,"self-harm":0.3}},{"category_scores":{}}]}`,
		`{"results":null}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(seed), uint8(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		n = n%3 + 1
		results, err := parseModeration(body, fuzzIDs, int(n))
		if err != nil {
			checkResult(t, classify.Result{}, err, len(fuzzIDs), nil)
			return
		}
		if len(results) != int(n) {
			t.Fatalf("%d results for %d inputs", len(results), n)
		}
		for _, res := range results {
			checkResult(t, res, nil, len(fuzzIDs), nil)
		}
	})
}

func FuzzJudgeReply(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"message":{"content":"{\"violence\":0.5,\"hate\":0,\"self-harm\":1}"}}]}`,
		`{"choices":[{"message":{"content":null,"refusal":"I can't"}}]}`,
		`{"choices":[{"message":{"content":"{\"onTopic\":{\"type\":\"answer\",\"probability\":0.5},\"tone\":{\"type\":\"refusal\"},\"severity\":{\"type\":\"answer\",\"score\":1}}"}}]}`,
		`{"choices":[]}`, `{"choices":[{"message":{}}]}`, `null`, `{"choices":[{"message":{"content":"safe"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	categories := &scoresJudge{ids: fuzzIDs}
	questions := &scoresJudge{questions: fuzzQuestions}
	guard := &llamaGuard{n: len(fuzzIDs)}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := categories.result(body)
		checkResult(t, res, err, len(fuzzIDs), nil)
		res, err = questions.result(body)
		checkResult(t, res, err, 0, fuzzQuestions)
		res, err = guard.result(body)
		checkResult(t, res, err, len(fuzzIDs), nil)
	})
}

func FuzzJudgeContent(f *testing.F) {
	for _, seed := range []string{
		`{"violence":0.5,"hate":0,"self-harm":1}`,
		"```json\n{\"violence\":0.5,\"hate\":0,\"self-harm\":1}\n```",
		`{"violence":0.5,"hate":0,"self-harm":1,"spam":0}`,
		`{"violence":1e999,"hate":"0","self-harm":-1}`,
		`{"onTopic":{"type":"answer","probability":0.9},"tone":{"type":"answer","choice":"hostile"},"severity":{"type":"answer","score":0.25}}`,
		`{"onTopic":{"type":"refusal"},"tone":{"type":"answer","choice":"sarcastic"},"severity":{"type":"answer","score":2}}`,
		`{"onTopic":{"type":"answer","probability":0.9,"score":0.1},"tone":null,"severity":[]}`,
		`{}`, `[]`, `"x"`, ``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		res, err := parseJudgeContent(content, fuzzIDs, nil)
		checkResult(t, res, err, len(fuzzIDs), nil)
		res, err = parseJudgeContent(content, nil, fuzzQuestions)
		checkResult(t, res, err, 0, fuzzQuestions)
	})
}

func FuzzLlamaGuard(f *testing.F) {
	for _, seed := range []string{"safe", "unsafe\nS1,S3", "\n\nunsafe\nS2, S3\n", "unsafe", "unsafe\nS0", "unsafe\nS+1",
		"unsafe\nS4", "unsafe\nS1\nS2", "Safe", "safe\n", "unsafe\nS1,,S2", "unsafe\nS99999999999999999999"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		res, err := parseLlamaGuard(content, len(fuzzIDs))
		checkResult(t, res, err, len(fuzzIDs), nil)
		if slices.ContainsFunc(res.Scores, func(s float64) bool { return s != 0 && s != 1 }) {
			t.Fatalf("llamaGuard scores %v are not 0 or 1", res.Scores)
		}
	})
}

func FuzzWebhookReply(f *testing.F) {
	for _, seed := range []string{
		`{"scores":{"violence":0.3,"hate":1,"self-harm":0}}`,
		`{"scores":{"violence":0.3},"refusals":["hate","self-harm","hate"]}`,
		`{"scores":{"violence":0.3,"hate":1,"self-harm":0},"refusals":["spam"]}`,
		`{"answers":{"onTopic":{"type":"answer","probability":0.9},"tone":{"type":"answer","choice":"friendly"},"severity":{"type":"refusal"}}}`,
		`{"answers":{"onTopic":{"type":"answer","probability":1e999}},"scores":{}}`,
		`{"scores":null}`, `{"scores":[]}`, `{}`, `[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := parseWebhook(body, fuzzIDs, nil)
		checkResult(t, res, err, len(fuzzIDs), nil)
		res, err = parseWebhook(body, nil, fuzzQuestions)
		checkResult(t, res, err, 0, fuzzQuestions)
	})
}
