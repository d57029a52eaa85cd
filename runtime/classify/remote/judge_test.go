package remote_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/remote"
	fake "github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
)

// chatBody is the part of a judge request the tests read.
type chatBody struct {
	Model          string `json:"model"`
	ResponseFormat struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func TestJudgeScoresCategoriesWithAStrictSchema(t *testing.T) {
	f := fake.NewJudge().Enqueue(fake.JudgeJSON(fake.Scores{"violence": 0.9, "hate": 0, "self-harm": 0.125}))
	srv := f.Start(t)
	res, err := classifyText(newClassifier(t, judgeSpec(srv.URL, remote.JudgeScores)), "content under judgment")
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.9, 0, 0.125}; !slices.Equal(res.Scores, want) || res.Refusals != nil {
		t.Errorf("result = %+v, want scores %v and no refusals", res, want)
	}
	req := f.Requests()[0]
	if req.Text() != "content under judgment" {
		t.Errorf("user message = %q, want the judged text", req.Text())
	}
	sys := req.System
	order := []string{"Be strict.", "violence: about violence", "hate: about hate", "self-harm: about self-harm"}
	for i := 1; i < len(order); i++ {
		if a, b := strings.Index(sys, order[i-1]), strings.Index(sys, order[i]); a < 0 || b < a {
			t.Errorf("system prompt does not list %q before %q:\n%s", order[i-1], order[i], sys)
		}
	}
	var body chatBody
	if err := req.Decode(&body); err != nil {
		t.Fatal(err)
	}
	rf := body.ResponseFormat
	if body.Model != "judge-1" || rf.Type != "json_schema" || rf.JSONSchema.Name != "guardrail_scores" || !rf.JSONSchema.Strict {
		t.Errorf("request = %+v, want model judge-1 and a strict json_schema named guardrail_scores", body)
	}
	wantSchema := `{"type":"object","properties":{"violence":{"type":"number","minimum":0,"maximum":1},` +
		`"hate":{"type":"number","minimum":0,"maximum":1},"self-harm":{"type":"number","minimum":0,"maximum":1}},` +
		`"required":["violence","hate","self-harm"],"additionalProperties":false}`
	if string(rf.JSONSchema.Schema) != wantSchema {
		t.Errorf("schema = %s\nwant %s", rf.JSONSchema.Schema, wantSchema)
	}
}

func TestJudgeAnswersQuestionsOfEachType(t *testing.T) {
	f := fake.NewJudge().Enqueue(fake.JudgeJSON(fake.Answers{
		"onTopic":  fake.AnswerProbability(0.8),
		"tone":     fake.AnswerChoice("hostile"),
		"severity": fake.AnswerScore(0.5),
	}), fake.JudgeJSON(fake.Answers{
		"onTopic": fake.AnswerRefusal(), "tone": fake.AnswerChoice("neutral"), "severity": fake.AnswerRefusal(),
	}))
	srv := f.Start(t)
	k := newClassifier(t, judgeSpec(srv.URL, remote.JudgeScores, questions(boolean, choice, score)))
	res, err := classifyText(k, "how do I sear a steak")
	if err != nil {
		t.Fatal(err)
	}
	want := []classify.Answer{{Probability: 0.8}, {Choice: "hostile"}, {Score: 0.5}}
	if !slices.Equal(res.Answers, want) || res.Scores != nil {
		t.Errorf("answers = %+v, want %+v", res.Answers, want)
	}
	res, err = classifyText(k, "again")
	if err != nil {
		t.Fatal(err)
	}
	want = []classify.Answer{{Type: classify.Refused}, {Choice: "neutral"}, {Type: classify.Refused}}
	if !slices.Equal(res.Answers, want) {
		t.Errorf("answers = %+v, want refusals around the choice %+v", res.Answers, want)
	}
	var body chatBody
	if err := f.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	schema := string(body.ResponseFormat.JSONSchema.Schema)
	for _, want := range []string{
		`"required":["onTopic","tone","severity"]`,
		`"choice":{"type":"string","enum":["friendly","neutral","hostile"]}`,
		`"probability":{"type":"number","minimum":0,"maximum":1}`,
		`{"type":"object","properties":{"type":{"type":"string","enum":["refusal"]}},"required":["type"],"additionalProperties":false}`,
	} {
		if !strings.Contains(schema, want) {
			t.Errorf("schema lacks %s:\n%s", want, schema)
		}
	}
	if sys := f.Requests()[0].System; !strings.Contains(sys, "Is it about cooking?") || !strings.Contains(sys, "- hostile: aggressive") {
		t.Errorf("system prompt lacks the questions' instructions and criteria:\n%s", sys)
	}
}

func TestJudgeStructuredOutputRefusalRefusesEverything(t *testing.T) {
	f := fake.NewJudge().Enqueue(fake.JudgeRefusal("I can't help with that."), fake.JudgeRefusal("No."))
	srv := f.Start(t)
	res, err := classifyText(newClassifier(t, judgeSpec(srv.URL, remote.JudgeScores)), "x")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Refusals, []bool{true, true, true}) || !slices.Equal(res.Scores, []float64{0, 0, 0}) {
		t.Errorf("result = %+v, want every category refused with score 0", res)
	}
	res, err = classifyText(newClassifier(t, judgeSpec(srv.URL, remote.JudgeScores, questions(boolean, choice))), "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := []classify.Answer{{Type: classify.Refused}, {Type: classify.Refused}}; !slices.Equal(res.Answers, want) {
		t.Errorf("answers = %+v, want every question refused", res.Answers)
	}
}

func TestJudgeLlamaGuard(t *testing.T) {
	cases := []struct {
		name  string
		reply string
		want  []float64
	}{
		{"safe scores every category 0", "safe", []float64{0, 0, 0}},
		{"unsafe with S1,S3 scores the first and third categories 1", "unsafe\nS1,S3", []float64{1, 0, 1}},
		{"white space around the verdict and the codes is ignored", "\n\nunsafe\nS2, S3\n", []float64{0, 1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fake.NewJudge().Enqueue(fake.JudgeText(tc.reply))
			srv := f.Start(t)
			res, err := classifyText(newClassifier(t, judgeSpec(srv.URL, remote.JudgeLlamaGuard)), "judge me")
			if err != nil || !slices.Equal(res.Scores, tc.want) {
				t.Fatalf("Classify = %v, %v; want %v", res.Scores, err, tc.want)
			}
			prompt := f.Requests()[0].Text()
			for _, want := range []string{"S1: violence. about violence\nS2: hate. about hate\nS3: self-harm. about self-harm\n", "User: judge me\n"} {
				if !strings.Contains(prompt, want) {
					t.Errorf("prompt lacks %q:\n%s", want, prompt)
				}
			}
		})
	}
}

func TestJudgeSendsMediaAsStandardContentParts(t *testing.T) {
	f := fake.NewJudge().Respond(func(fake.Request) fake.Reply {
		return fake.JudgeJSON(fake.Scores{"violence": 0, "hate": 0, "self-harm": 0})
	})
	srv := f.Start(t)
	k := newClassifier(t, judgeSpec(srv.URL, remote.JudgeScores, modalities(classify.Text, classify.Image, classify.Audio, classify.File)))
	in := classify.Input{Text: "look", Parts: []classify.Part{
		{Modality: classify.Image, URL: "https://img.example/a.png"},
		{Modality: classify.Audio, URL: "data:audio/mpeg;base64,SUQz"},
		{Modality: classify.File, URL: "file-abc123"},
		{Modality: classify.File, URL: "data:application/pdf;base64,JVBE"},
	}}
	if _, err := k.Classify(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := f.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://img.example/a.png"}},` +
		`{"type":"input_audio","input_audio":{"data":"SUQz","format":"mp3"}},{"type":"file","file":{"file_id":"file-abc123"}},` +
		`{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE"}}]`
	if got := string(body.Messages[1].Content); got != want {
		t.Errorf("user content = %s\nwant %s", got, want)
	}

	for _, p := range []classify.Part{
		{Modality: classify.Audio, URL: "https://media.example/secret.mp3"},
		{Modality: classify.File, URL: "https://media.example/secret.pdf"},
	} {
		_, err := k.Classify(context.Background(), classify.Input{Parts: []classify.Part{p}})
		wantCode(t, err, classify.CodeUnsupported, p.URL)
	}
	_, err := newClassifier(t, judgeSpec(srv.URL, remote.JudgeScores)).Classify(context.Background(), in)
	wantCode(t, err, classify.CodeUnsupported, "img.example")
	if f.Count() != 1 {
		t.Errorf("%d requests, want only the supported one", f.Count())
	}
}

func TestJudgeInvalidAnswers(t *testing.T) {
	full := fake.Scores{"violence": 0.1, "hate": 0.2, "self-harm": 0.3}
	with := func(k string, v any) fake.Scores {
		s := fake.Scores{}
		for key, val := range full {
			s[key] = val
		}
		if v == nil {
			delete(s, k)
		} else {
			s[k] = v
		}
		return s
	}
	cases := []struct {
		name   string
		format remote.JudgeFormat
		specs  []spec
		reply  fake.Reply
	}{
		{"a body that is not JSON is invalid", remote.JudgeScores, nil, fake.Raw("<html>")},
		{"a reply without choices is invalid", remote.JudgeScores, nil, fake.Raw(`{"choices":[]}`)},
		{"content that is not JSON is invalid", remote.JudgeScores, nil, fake.JudgeText(`{"violence": 0.1,`)},
		{"content that is a JSON array is invalid", remote.JudgeScores, nil, fake.JudgeText(`[0.1, 0.2, 0.3]`)},
		{"a missing category is invalid", remote.JudgeScores, nil, fake.JudgeJSON(with("hate", nil))},
		{"an extra key is invalid", remote.JudgeScores, nil, fake.JudgeJSON(with("spam", 0.5))},
		{"a score of 1e999 is invalid", remote.JudgeScores, nil, fake.JudgeJSON(with("hate", fake.Literal("1e999")))},
		{"a score as a string is invalid", remote.JudgeScores, nil, fake.JudgeJSON(with("hate", "0.2"))},
		{"a score above 1 is invalid", remote.JudgeScores, nil, fake.JudgeJSON(with("hate", 2))},
		{"a probability above 1 is invalid", remote.JudgeScores, []spec{questions(boolean)},
			fake.JudgeJSON(fake.Answers{"onTopic": fake.AnswerProbability(1.01)})},
		{"a choice outside the criteria is invalid", remote.JudgeScores, []spec{questions(choice)},
			fake.JudgeJSON(fake.Answers{"tone": fake.AnswerChoice("sarcastic")})},
		{"a score answer to a boolean question is invalid", remote.JudgeScores, []spec{questions(boolean)},
			fake.JudgeJSON(fake.Answers{"onTopic": fake.AnswerScore(0.5)})},
		{"a refusal with a probability is invalid", remote.JudgeScores, []spec{questions(boolean)},
			fake.JudgeJSON(fake.Answers{"onTopic": map[string]any{"type": "refusal", "probability": 0.5}})},
		{"an answer of unknown type is invalid", remote.JudgeScores, []spec{questions(boolean)},
			fake.JudgeJSON(fake.Answers{"onTopic": map[string]any{"type": "maybe"}})},
		{"an answer to an unknown question is invalid", remote.JudgeScores, []spec{questions(boolean)},
			fake.JudgeJSON(fake.Answers{"onTopic": fake.AnswerProbability(0.5), "other": fake.AnswerRefusal()})},
		{"a missing answer is invalid", remote.JudgeScores, []spec{questions(boolean, score)},
			fake.JudgeJSON(fake.Answers{"onTopic": fake.AnswerProbability(0.5)})},
		{"a llamaGuard verdict other than safe or unsafe is invalid", remote.JudgeLlamaGuard, nil, fake.JudgeText("probably fine")},
		{"unsafe without categories is invalid", remote.JudgeLlamaGuard, nil, fake.JudgeText("unsafe")},
		{"unsafe naming a category beyond Sn is invalid", remote.JudgeLlamaGuard, nil, fake.JudgeText("unsafe\nS4")},
		{"a llamaGuard reply with extra lines is invalid", remote.JudgeLlamaGuard, nil, fake.JudgeText("unsafe\nS1\nbecause")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fake.NewJudge().Enqueue(tc.reply)
			srv := f.Start(t)
			_, err := classifyText(newClassifier(t, judgeSpec(srv.URL, tc.format, tc.specs...)), "judged words")
			wantCode(t, err, classify.CodeInvalidAnswer, "judged words")
		})
	}
}
