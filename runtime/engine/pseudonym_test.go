package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

const (
	jo  = "jo@example.com"
	ann = "ann.lee@example.org"
)

// lexicon returns a fake span-capable classifier that finds each word as its category,
// and the categories in order of first appearance.
func lexicon(pairs ...string) (*fake, []string) {
	var ws, cats []string
	var idx []int
	for i := 0; i < len(pairs); i += 2 {
		k := -1
		for j, c := range cats {
			if c == pairs[i] {
				k = j
			}
		}
		if k < 0 {
			k, cats = len(cats), append(cats, pairs[i])
		}
		ws, idx = append(ws, pairs[i+1]), append(idx, k)
	}
	f := words(ws...)
	inner := f.answer
	f.answer = func(ctx context.Context, in classify.Input) (classify.Result, error) {
		res, err := inner(ctx, in)
		scores := make([]float64, len(cats))
		for i := range res.Spans {
			res.Spans[i].Category = idx[res.Spans[i].Category]
			scores[res.Spans[i].Category] = 1
		}
		res.Scores = scores
		return res, err
	}
	return f, cats
}

// pseudoWorld is a lexicon (email: jo and ann; person: Ann Lee) under a Pseudonymize
// guardrail on Input and ToolResults, judging every message.
func pseudoWorld(opts ...guardrailOption) *world {
	w := &world{}
	f, cats := lexicon("email", jo, "email", ann, "person", "Ann Lee")
	c := w.classifier("pii", f, withCategories(cats...), withSpans(30))
	opts = append([]guardrailOption{threshold(1, policy.ActionPseudonymize, nil), phases(policy.PhaseInput, policy.PhaseToolResults), allMessages()}, opts...)
	w.guardrail("mask", c, opts...)
	return w
}

func sentTexts(res InputResult) []string {
	var out []string
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			out = append(out, p.Text)
		}
	}
	return out
}

func TestPseudonymizeInput(t *testing.T) {
	ctx := context.Background()
	t.Run("the same value gets the same placeholder in every message, system prompt and tool results included", func(t *testing.T) {
		s, rec := pseudoWorld().session()
		res, err := s.Input(ctx, []Message{
			message("system", "Reply to "+jo+" only."),
			user("Write to " + jo + " and to " + ann + ", cc Ann Lee."),
			{Role: "tool", Parts: []Part{{Modality: classify.Text, Text: `{"owner":"` + ann + `"}`, ToolResult: true}}},
		})
		if err != nil || res.Stop != nil {
			t.Fatalf("Input: %v %+v", err, res.Stop)
		}
		got := strings.Join(sentTexts(res), " | ")
		// ToolResults runs first: the tool's value is numbered first.
		want := `Reply to <EMAIL_2> only. | Write to <EMAIL_2> and to <EMAIL_1>, cc <PERSON_1>. | {"owner":"<EMAIL_1>"}`
		if got != want {
			t.Fatalf("sent\n%s\nwant\n%s", got, want)
		}
		var counts []string
		for _, r := range rec.records {
			if r.Outcome == guardv1.OutcomeAllowed {
				continue // the tool result judged again by the Input phase: masked already
			}
			if r.Outcome != guardv1.OutcomePseudonymized {
				t.Errorf("record outcome %s", r.Outcome)
			}
			for _, f := range r.Findings {
				counts = append(counts, f.Name+"="+itoa(f.Count))
			}
			b, _ := json.Marshal(r)
			if strings.Contains(string(b), "example") || strings.Contains(string(b), "Ann") {
				t.Errorf("a record carries a value: %s", b)
			}
		}
		if got := strings.Join(counts, ","); got != "email=1,email=1,email=2,person=1" {
			t.Errorf("finding counts = %s", got)
		}
	})
	t.Run("a placeholder the client wrote is never given to a value, nor restored", func(t *testing.T) {
		s, _ := pseudoWorld().session()
		res, _ := s.Input(ctx, []Message{user("I typed <EMAIL_1> and <email_2> myself; mail " + jo)})
		if got := sentTexts(res)[0]; got != "I typed <EMAIL_1> and <email_2> myself; mail <EMAIL_3>" {
			t.Fatalf("sent %q", got)
		}
		out, err := s.Output(ctx, []Content{{Channel: text0, Text: "<EMAIL_1>, <EMAIL_2> and <EMAIL_3>"}})
		if err != nil || out.Stop != nil {
			t.Fatal(err, out.Stop)
		}
		if got := out.Contents[0].Text; got != "<EMAIL_1>, <EMAIL_2> and "+jo {
			t.Fatalf("answer %q", got)
		}
	})
	t.Run("Report mode counts wouldPseudonymize and changes nothing", func(t *testing.T) {
		s, rec := pseudoWorld(reportMode()).session()
		msgs := []Message{user("mail " + jo)}
		res, _ := s.Input(ctx, msgs)
		if got := sentTexts(res)[0]; got != "mail "+jo {
			t.Fatalf("sent %q", got)
		}
		if len(rec.records) != 1 || rec.records[0].Outcome != guardv1.OutcomeWouldPseudonymize || rec.records[0].Findings[0].Count != 1 {
			t.Fatalf("records %+v", rec.records)
		}
		if got, _ := stream(t, s, text0, "to <EMAIL_1>", 3); got != "to <EMAIL_1>" {
			t.Fatalf("Report mode restored %q", got)
		}
	})
	t.Run("past the bound a value is redacted, not sent", func(t *testing.T) {
		s, _ := pseudoWorld().session()
		s.vault = &vault{}
		for i := range maxPseudonyms {
			s.vault.assign("email", "filler"+itoa(i), false)
		}
		res, _ := s.Input(ctx, []Message{user("mail " + jo)})
		if got := sentTexts(res)[0]; got != "mail [REDACTED:email]" {
			t.Fatalf("sent %q", got)
		}
	})
	t.Run("a value bare in a part no detector matched is masked too, inside a word as well", func(t *testing.T) {
		w := &world{}
		// Finds the value only after "token=", as an assignment detector does.
		f := &fake{answer: func(_ context.Context, in classify.Input) (classify.Result, error) {
			res := classify.Result{Scores: []float64{0}, Open: len(in.Text)}
			if i := strings.Index(in.Text, "token=s3cr3tvalue"); i >= 0 {
				res.Scores[0] = 1
				res.Spans = []classify.Span{{Start: i + 6, End: i + 17}}
			}
			return res, nil
		}}
		c := w.classifier("secret", f, withCategories("secret"), withSpans(30))
		w.guardrail("mask", c, threshold(1, policy.ActionPseudonymize, nil), phases(policy.PhaseInput), allMessages())
		s, _ := w.session()
		res, _ := s.Input(ctx, []Message{user("token=s3cr3tvalue"), user("it was s3cr3tvalue, not s3cr3tvaluex")})
		got := strings.Join(sentTexts(res), " | ")
		if got != "token=<SECRET_1> | it was <SECRET_1>, not <SECRET_1>x" {
			t.Fatalf("sent %q", got)
		}
	})
	t.Run("an MCP tool result, which no answer of its exchange restores, is not masked", func(t *testing.T) {
		s, rec := pseudoWorld().session()
		res, err := s.ToolResults(ctx, []Message{{Role: "tool", Parts: []Part{{Modality: classify.Text, Text: "owner " + jo, ToolResult: true}}}})
		if err != nil || res.Stop != nil || sentTexts(res)[0] != "owner "+jo || len(rec.records) != 0 {
			t.Fatalf("%v %+v %q %+v", err, res.Stop, sentTexts(res), rec.records)
		}
	})
	t.Run("the history's tool-call arguments lose the values masked elsewhere, escaped as JSON", func(t *testing.T) {
		w := &world{}
		f, cats := lexicon("person", `Jo "JD" Doe`, "email", jo)
		c := w.classifier("pii", f, withCategories(cats...), withSpans(30))
		w.guardrail("mask", c, threshold(1, policy.ActionPseudonymize, nil), phases(policy.PhaseInput), allMessages())
		s, _ := w.session()
		calls := []string{`{"to":"` + jo + `","name":"Jo \"JD\" Doe","cc":"x` + jo + `"}`}
		msgs := []Message{user(`Mail Jo "JD" Doe at ` + jo), {Role: "assistant", Calls: calls}}
		res, err := s.Input(ctx, msgs)
		if err != nil || res.Stop != nil {
			t.Fatal(err, res.Stop)
		}
		if got := res.Messages[1].Calls[0]; got != `{"to":"<EMAIL_1>","name":"<PERSON_1>","cc":"x<EMAIL_1>"}` {
			t.Fatalf("arguments %s", got)
		}
		if msgs[1].Calls[0] != calls[0] {
			t.Fatal("the caller's messages were changed")
		}
	})
	t.Run("End drops the mapping", func(t *testing.T) {
		s, _ := pseudoWorld().session()
		_, _ = s.Input(ctx, []Message{user("mail " + jo)})
		s.End()
		if s.vault != nil {
			t.Fatal("the vault outlived End")
		}
	})
}

func TestRestoreAnswer(t *testing.T) {
	ctx := context.Background()
	session := func(t *testing.T) *Session {
		t.Helper()
		s, _ := pseudoWorld().session()
		if _, err := s.Input(ctx, []Message{user("Write to " + jo + " and " + ann + " about it.")}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	answer := "Dear <EMAIL_1>, <email_2> and <EMAIL_9> (< EMAIL_1 >, <EMAIL_01>, <EMAIL_1, <div>) <EMAIL_2>"
	want := "Dear " + jo + ", " + ann + " and <EMAIL_9> (< EMAIL_1 >, <EMAIL_01>, <EMAIL_1, <div>) " + ann
	t.Run("a non-streamed answer: exact and case-folded placeholders restored, mangled and invented ones left", func(t *testing.T) {
		out, _ := session(t).Output(ctx, []Content{{Channel: text0, Text: answer}})
		if got := out.Contents[0].Text; got != want {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
	})
	for size := 1; size <= 32; size++ {
		if got, v := stream(t, session(t), text0, answer, size); v != nil || got != want {
			t.Fatalf("delta %d: got %q, want %q", size, got, want)
		}
	}
	t.Run("prose is released as it arrives; only a possible placeholder waits", func(t *testing.T) {
		s := session(t)
		for _, tc := range []struct{ delta, released string }{
			{"Hello there, ", "Hello there, "},
			{"dear <EM", "dear "},
			{"AIL_1", ""},
			{"> and <d", jo + " and <d"},
			{"iv> <EMAIL_2", "iv> "},
			{"x", "<EMAIL_2x"},
		} {
			step, err := s.Delta(ctx, text0, tc.delta)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			collect(&out, step, text0)
			if out.String() != tc.released {
				t.Fatalf("after %q released %q, want %q", tc.delta, out.String(), tc.released)
			}
		}
	})
	t.Run("tool-call arguments are restored inside their JSON strings, escaped spellings included", func(t *testing.T) {
		w := &world{}
		f, cats := lexicon("person", `"quoted" \ name`, "email", jo)
		c := w.classifier("pii", f, withCategories(cats...), withSpans(30))
		w.guardrail("mask", c, threshold(1, policy.ActionPseudonymize, nil), phases(policy.PhaseInput), allMessages())
		s, _ := w.session()
		_, _ = s.Input(ctx, []Message{user(`to "quoted" \ name at ` + jo)})
		args := `{"to":"\u003cEMAIL_1\u003e","name":"<PERSON_1>","cc":"\u003CEMAIL_1\u003E"}`
		var got strings.Builder
		for _, d := range []string{args[:9], args[9:15], args[15:]} {
			step, _ := s.Delta(ctx, call0(0), d)
			collect(&got, step, call0(0))
		}
		step, _ := s.EndToolCall(ctx, call0(0), "send")
		collect(&got, step, call0(0))
		step, _ = s.Finish(ctx)
		collect(&got, step, call0(0))
		var decoded map[string]string
		if err := json.Unmarshal([]byte(got.String()), &decoded); err != nil {
			t.Fatalf("restored arguments are not JSON: %v\n%s", err, got.String())
		}
		if decoded["to"] != jo || decoded["cc"] != jo || decoded["name"] != `"quoted" \ name` {
			t.Fatalf("decoded %v", decoded)
		}
	})
}

// TestPseudonymizeComposition: guardrails on the answer judge the provider's text
// (placeholders) on Stream and Output — a remote judge never receives a restored value, and
// a Redact there does not undo the masking — while ToolCalls judge the call as the tool
// will receive it (restored). A Block on the restored call gives only its reason.
func TestPseudonymizeComposition(t *testing.T) {
	ctx := context.Background()
	w := pseudoWorld()
	judge := answering(classify.Result{Scores: []float64{0}})
	jc := w.classifier("judge", judge, withCategories("harm"))
	w.guardrail("judge-answers", jc, threshold(0.5, policy.ActionBlock, nil), phases(policy.PhaseStream, policy.PhaseOutput))
	tools := words("@example.com")
	tc := w.classifier("destinations", tools, withCategories("external"), withSpans(20))
	w.guardrail("no-external-mail", tc, threshold(1, policy.ActionBlock, nil), phases(policy.PhaseToolCalls))
	s, rec := w.session()
	if _, err := s.Input(ctx, []Message{user("Write to " + jo + ".")}); err != nil {
		t.Fatal(err)
	}
	got, v := stream(t, s, text0, "Writing to <EMAIL_1> now.", 4)
	if v != nil || got != "Writing to "+jo+" now." {
		t.Fatalf("text %q %+v", got, v)
	}
	sentToJudge := strings.Join(judge.texts(), "\n")
	if strings.Contains(sentToJudge, jo) || !strings.Contains(sentToJudge, "<EMAIL_1>") {
		t.Fatalf("the answer's judge was sent %q", sentToJudge)
	}
	if _, err := s.Delta(ctx, call0(0), `{"to":"<EMAIL_1>"}`); err != nil {
		t.Fatal(err)
	}
	step, err := s.EndToolCall(ctx, call0(0), "send_mail")
	if err != nil || step.Stop == nil || step.Stop.Reason != "no-external-mail says no" || len(step.Release) != 0 {
		t.Fatalf("the restored call was not blocked: %v %+v", err, step)
	}
	if texts := tools.texts(); len(texts) != 1 || !strings.Contains(texts[0], jo) {
		t.Fatalf("the ToolCalls judge was sent %q", texts)
	}
	for _, r := range rec.records {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "example") {
			t.Fatalf("a record carries a value: %s", b)
		}
	}
}

// The object channel (a JSON response format) is restored as JSON, streamed snapshot by
// snapshot and not.
func TestRestoreObject(t *testing.T) {
	ctx := context.Background()
	w := &world{}
	f, cats := lexicon("person", `Jo "JD" Doe`)
	c := w.classifier("pii", f, withCategories(cats...), withSpans(30))
	w.guardrail("mask", c, threshold(1, policy.ActionPseudonymize, nil), phases(policy.PhaseInput), allMessages())
	s, _ := w.session()
	if _, err := s.Input(ctx, []Message{user(`Greet Jo "JD" Doe`)}); err != nil {
		t.Fatal(err)
	}
	var last string
	for _, snap := range []string{`{"to":"<PERS`, `{"to":"<PERSON_1>"`, `{"to":"<PERSON_1>"}`} {
		step, err := s.Snapshot(ctx, object0, snap)
		if err != nil || step.Stop != nil {
			t.Fatal(err, step.Stop)
		}
		for _, ch := range step.Release {
			last = string(ch.Text)
		}
	}
	if want := `{"to":"Jo \"JD\" Doe"}`; last != want {
		t.Fatalf("last snapshot %s, want %s", last, want)
	}
	out, err := s.Output(ctx, []Content{{Channel: object0, Text: `{"to":"<PERSON_1>"}`}})
	if err != nil || out.Contents[0].Text != `{"to":"Jo \"JD\" Doe"}` {
		t.Fatalf("%v %+v", err, out.Contents)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

var _ = content.Text
