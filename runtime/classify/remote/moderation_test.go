package remote_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/remote"
	fake "github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
)

func TestModerationMapsCategoryScoresInAuthoredOrder(t *testing.T) {
	f := fake.NewModeration().Enqueue(fake.ModerationScores(fake.Scores{
		"hate": 0.25, "violence": 0.75, "self-harm/intent": 0.5, "sexual": 0.0,
	}))
	srv := f.Start(t)
	c := moderationSpec(srv.URL, token(secretToken))
	c.CategoryNames = []string{"violence", "hate"}
	res, err := classifyText(newClassifier(t, c), "a text to judge")
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.75, 0.25}; !slices.Equal(res.Scores, want) {
		t.Errorf("scores = %v, want %v", res.Scores, want)
	}
	req := f.Requests()[0]
	var body struct {
		Model string `json:"model"`
		Input any    `json:"input"`
	}
	if err := req.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "omni-moderation-latest" || body.Input != "a text to judge" {
		t.Errorf("request = %+v, want the model and the text as a string input", body)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer "+secretToken {
		t.Errorf("Authorization = %q, want the bearer token", got)
	}
}

func TestModerationRenamedCategoriesReadTheEndpointNames(t *testing.T) {
	f := fake.NewModeration().Enqueue(fake.ModerationScores(fake.Scores{"self-harm/intent": 0.5, "violence/graphic": 1}))
	srv := f.Start(t)
	c := moderationSpec(srv.URL, categories("self-harm", "gore"))
	c.CategoryNames = []string{"self-harm/intent", "violence/graphic"}
	res, err := classifyText(newClassifier(t, c), "x")
	if err != nil || !slices.Equal(res.Scores, []float64{0.5, 1}) {
		t.Fatalf("Classify = %v, %v; want [0.5 1]", res.Scores, err)
	}
}

func TestModerationSendsImagesAsContentParts(t *testing.T) {
	f := fake.NewModeration().Enqueue(fake.ModerationScores(fake.Scores{"violence": 0.1, "hate": 0.2}))
	srv := f.Start(t)
	k := newClassifier(t, moderationSpec(srv.URL, modalities(classify.Text, classify.Image)))
	in := classify.Input{Text: "caption", Parts: []classify.Part{{Modality: classify.Image, URL: "https://img.example/cat.png"}}}
	if _, err := k.Classify(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Input []map[string]any `json:"input"`
	}
	if err := f.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	want := `[{"text":"caption","type":"text"},{"image_url":{"url":"https://img.example/cat.png"},"type":"image_url"}]`
	if got, _ := json.Marshal(body.Input); string(got) != want {
		t.Errorf("input = %s, want %s", got, want)
	}
}

func TestModerationRejectsModalitiesItCannotSend(t *testing.T) {
	f := fake.NewModeration()
	srv := f.Start(t)
	image := classify.Part{Modality: classify.Image, URL: "https://img.example/secret-cat.png"}
	audio := classify.Part{Modality: classify.Audio, URL: "data:audio/wav;base64,AAAA"}
	cases := []struct {
		name  string
		specs []spec
		in    classify.Input
	}{
		{"an image part is unsupported when the classifier does not declare images", nil, classify.Input{Parts: []classify.Part{image}}},
		{"audio is unsupported by the moderation format even when declared",
			[]spec{modalities(classify.Text, classify.Audio)}, classify.Input{Parts: []classify.Part{audio}}},
		{"text is unsupported by an image-only classifier", []spec{modalities(classify.Image)}, classify.Input{Text: "hello"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newClassifier(t, moderationSpec(srv.URL, tc.specs...)).Classify(context.Background(), tc.in)
			wantCode(t, err, classify.CodeUnsupported, image.URL)
		})
	}
	if f.Count() != 0 {
		t.Errorf("%d requests sent for unsupported input, want none", f.Count())
	}
}

func TestModerationBatchSendsOneRequestWithResultsInOrder(t *testing.T) {
	f := fake.NewModeration().Respond(func(r fake.Request) fake.Reply {
		var out []fake.Scores
		for _, text := range r.Texts {
			out = append(out, fake.Scores{"violence": float64(len(text)) / 10, "hate": 0})
		}
		return fake.ModerationScores(out...)
	})
	srv := f.Start(t)
	m, err := remote.NewModeration(moderationSpec(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.ClassifyBatch(context.Background(), []classify.Input{{Text: "a"}, {Text: "abc"}, {Text: "abcde"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0.1, 0.3, 0.5} {
		if res[i].Scores[0] != want {
			t.Errorf("result %d violence = %v, want %v", i, res[i].Scores[0], want)
		}
	}
	if f.Count() != 1 || !slices.Equal(f.Requests()[0].Texts, []string{"a", "abc", "abcde"}) {
		t.Errorf("requests = %d with inputs %v, want one with the three texts", f.Count(), f.Requests()[0].Texts)
	}
}

func TestModerationBatchSendsOnlyCacheMissesAndImagesApart(t *testing.T) {
	f := fake.NewModeration().Respond(func(r fake.Request) fake.Reply {
		out := make([]fake.Scores, len(r.Texts))
		for i := range out {
			out[i] = fake.Scores{"violence": 0.5, "hate": 0.5}
		}
		return fake.ModerationScores(out...)
	})
	srv := f.Start(t)
	m, err := remote.NewModeration(moderationSpec(srv.URL, cached(time.Minute, 10), modalities(classify.Text, classify.Image)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Classify(context.Background(), classify.Input{Text: "seen"}); err != nil {
		t.Fatal(err)
	}
	img := classify.Input{Parts: []classify.Part{{Modality: classify.Image, URL: "data:image/png;base64,AA"}}}
	res, err := m.ClassifyBatch(context.Background(), []classify.Input{{Text: "seen"}, {Text: "new"}, img})
	if err != nil || len(res) != 3 {
		t.Fatalf("ClassifyBatch = %d results, %v", len(res), err)
	}
	reqs := f.Requests()
	if len(reqs) != 3 || !slices.Equal(reqs[1].Texts, []string{"new"}) || len(reqs[2].Parts) != 1 {
		t.Errorf("requests = %d, want the single call, then [new] as an array, then the image alone", len(reqs))
	}
}

func TestModerationInvalidAnswers(t *testing.T) {
	cases := []struct {
		name  string
		reply fake.Reply
	}{
		{"a body that is not JSON is invalid", fake.Raw(`{"results": [`)},
		{"a score of 1e999 is invalid", fake.ModerationScores(fake.Scores{"violence": fake.Literal("1e999"), "hate": 0.1})},
		{"a score sent as a string is invalid", fake.ModerationScores(fake.Scores{"violence": "0.5", "hate": 0.1})},
		{"a null score is invalid", fake.ModerationScores(fake.Scores{"violence": nil, "hate": 0.1})},
		{"a score above 1 is invalid", fake.ModerationScores(fake.Scores{"violence": 1.5, "hate": 0.1})},
		{"a negative score is invalid", fake.ModerationScores(fake.Scores{"violence": -0.1, "hate": 0.1})},
		{"a missing mapped category is invalid", fake.ModerationScores(fake.Scores{"violence": 0.2})},
		{"two results for one input are invalid", fake.ModerationScores(fake.Scores{"violence": 0, "hate": 0}, fake.Scores{"violence": 0, "hate": 0})},
		{"no results are invalid", fake.Raw(`{"id":"x","results":[]}`)},
		{"a result without category_scores is invalid", fake.Raw(`{"results":[{"flagged":false}]}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fake.NewModeration().Enqueue(tc.reply)
			srv := f.Start(t)
			_, err := classifyText(newClassifier(t, moderationSpec(srv.URL, retries(3))), "the judged text")
			wantCode(t, err, classify.CodeInvalidAnswer, "the judged text")
			if f.Count() != 1 {
				t.Errorf("%d requests, want 1: an invalid answer is not retried", f.Count())
			}
		})
	}
}

func TestNewRejectsConfigurationsTheCompilerWouldReject(t *testing.T) {
	cases := []struct {
		name string
		c    remote.Config
	}{
		{"a builtin classifier is not remote", remote.Config{Kind: "builtin", URL: "http://127.0.0.1:1"}},
		{"a moderation classifier needs one name per category", func() remote.Config {
			c := moderationSpec("http://127.0.0.1:1/v1/moderations")
			c.CategoryNames = nil
			return c
		}()},
		{"a url must be http or https", moderationSpec("ftp://127.0.0.1/v1/moderations")},
		{"a judge needs a known format", judgeSpec("http://127.0.0.1:1", "yaml")},
		{"a webhook CA bundle must hold a certificate", func() remote.Config {
			c := webhookSpec("https://127.0.0.1:1/judge")
			c.CABundle = []byte("not pem")
			return c
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := remote.New(tc.c); err == nil {
				t.Fatal("New succeeded, want an error")
			}
		})
	}
}
