package fakeclassifiers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	fake "github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
)

func post(t *testing.T, url, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestAFakeAnswersItsQueueThenItsRespondFunction(t *testing.T) {
	f := fake.NewWebhook().
		Enqueue(fake.Status(503), fake.RateLimited("7")).
		Respond(func(r fake.Request) fake.Reply {
			return fake.WebhookScores(fake.Scores{"len": float64(len(r.Text()))})
		})
	srv := f.Start(t)
	want := []struct {
		status int
		body   string
	}{
		{503, `"server_error"`},
		{429, `"server_error"`},
		{200, `{"scores":{"len":5}}`},
	}
	for i, w := range want {
		status, body, h := post(t, srv.URL, `{"text":"hello"}`)
		if status != w.status || !strings.Contains(body, w.body) {
			t.Errorf("reply %d = %d %s, want %d with %s", i, status, body, w.status, w.body)
		}
		if status == 429 && h.Get("Retry-After") != "7" {
			t.Errorf("Retry-After = %q, want 7", h.Get("Retry-After"))
		}
	}
	reqs := f.Requests()
	if f.Count() != 3 || reqs[0].Header.Get("Authorization") != "Bearer t" || reqs[2].Text() != "hello" {
		t.Errorf("recorded %d requests: %+v", f.Count(), reqs)
	}
}

func TestAFakeWithoutAScriptRefusesTheRequest(t *testing.T) {
	srv := fake.NewJudge().Start(t)
	if status, body, _ := post(t, srv.URL, `{"messages":[{"role":"user","content":"x"}]}`); status != 400 || !strings.Contains(body, "no reply scripted") {
		t.Errorf("reply = %d %s, want 400 saying no reply was scripted", status, body)
	}
	if status, _, _ := post(t, srv.URL, `{"messages":[]}`); status != 400 {
		t.Errorf("a request without a user message got %d, want 400", status)
	}
}

func TestTheFakesDecodeTheirWireFormats(t *testing.T) {
	cases := []struct {
		name      string
		fake      *fake.Fake
		body      string
		texts     []string
		parts     []fake.Part
		system    string
		replyWith fake.Reply
	}{
		{"a moderation batch has one text per input", fake.NewModeration(), `{"input":["a","b"]}`,
			[]string{"a", "b"}, nil, "", fake.ModerationScores(fake.Scores{"x": 0.7}, fake.Scores{"x": 0.1})},
		{"a moderation content-part input has its text and images", fake.NewModeration(),
			`{"input":[{"type":"text","text":"cap"},{"type":"image_url","image_url":{"url":"u"}}]}`,
			[]string{"cap"}, []fake.Part{{Type: "image", URL: "u"}}, "", fake.ModerationScores(fake.Scores{"x": 0})},
		{"a judge request has its system prompt and user parts", fake.NewJudge(),
			`{"messages":[{"role":"system","content":"judge"},{"role":"user","content":[{"type":"text","text":"t"},` +
				`{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}},{"type":"file","file":{"file_id":"f1"}}]}]}`,
			[]string{"t"}, []fake.Part{{Type: "audio", URL: "AA"}, {Type: "file", URL: "f1"}}, "judge", fake.JudgeText("safe")},
		{"a webhook request has its text and parts", fake.NewWebhook(),
			`{"text":"w","parts":[{"type":"image","url":"i"}],"categories":[{"id":"x"}]}`,
			[]string{"w"}, []fake.Part{{Type: "image", URL: "i"}}, "", fake.WebhookAnswers(fake.Answers{"q": fake.AnswerRefusal()})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.fake.Enqueue(tc.replyWith).Start(t)
			status, body, _ := post(t, srv.URL, tc.body)
			if status != 200 || body != tc.replyWith.Body {
				t.Errorf("reply = %d %s, want 200 %s", status, body, tc.replyWith.Body)
			}
			r := tc.fake.Requests()[0]
			if !slices.Equal(r.Texts, tc.texts) || !slices.Equal(r.Parts, tc.parts) || r.System != tc.system {
				t.Errorf("decoded %q %v %q, want %q %v %q", r.Texts, r.Parts, r.System, tc.texts, tc.parts, tc.system)
			}
		})
	}
}

func TestJudgeRepliesAreChatCompletions(t *testing.T) {
	var reply struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(fake.JudgeJSON(fake.Scores{"a": 0.5}).Body), &reply); err != nil {
		t.Fatal(err)
	}
	if m := reply.Choices[0].Message; m.Content == nil || *m.Content != `{"a":0.5}` || m.Refusal != nil {
		t.Errorf("JudgeJSON message = %+v, want the JSON as content", m)
	}
	if err := json.Unmarshal([]byte(fake.JudgeRefusal("no").Body), &reply); err != nil {
		t.Fatal(err)
	}
	if m := reply.Choices[0].Message; m.Content != nil || m.Refusal == nil || *m.Refusal != "no" {
		t.Errorf("JudgeRefusal message = %+v, want a refusal and no content", m)
	}
	if body := fake.ModerationScores(fake.Scores{"v": fake.Literal("1e999")}).Body; !strings.Contains(body, `"v":1e999`) {
		t.Errorf("a literal was not sent verbatim: %s", body)
	}
}

func TestHangingAndDelayedRepliesEndWithTheRequest(t *testing.T) {
	f := fake.NewWebhook().Enqueue(fake.Hang(), fake.WebhookScores(nil).After(time.Hour))
	srv := f.Start(t)
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"text":""}`))
		start := time.Now()
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			t.Error("a hanging reply arrived")
		}
		cancel()
		if time.Since(start) > time.Second {
			t.Error("the client waited past its deadline")
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for f.InFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if f.InFlight() != 0 || f.MaxInFlight() != 1 {
		t.Errorf("in flight %d (max %d), want the handlers ended", f.InFlight(), f.MaxInFlight())
	}
}
