package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

func image(url string) Part {
	return Part{Modality: classify.Image, Media: classify.Part{Modality: classify.Image, URL: url}}
}

func TestInputPhase(t *testing.T) {
	type want struct {
		calls    []string
		stop     string // "" | "blocked:<reason>" | "failed:<code>"
		texts    []string
		dropped  []bool // per message
		outcomes []string
		warnings []string
	}
	cases := []struct {
		name string
		msgs []Message
		// build adds guardrails to the world.
		build func(w *world)
		want  want
	}{
		{name: "messages Last judges only the last message",
			msgs: []Message{message("system", "be nice"), user("hello there")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("forbidden"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil))
			},
			want: want{calls: []string{"hello there"}, texts: []string{"be nice", "hello there"}, dropped: []bool{false, false},
				outcomes: []string{"team/g:Input:allowed"}}},
		{name: "messages All judges every message, one call per text part",
			msgs: []Message{message("system", "be nice"), {Role: RoleUser, Parts: []Part{{Text: "one"}, {Text: "two"}}}},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("forbidden"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil), allMessages())
			},
			want: want{calls: []string{"be nice", "one", "two"}, texts: []string{"be nice", "one", "two"}, dropped: []bool{false, false},
				outcomes: []string{"team/g:Input:allowed", "team/g:Input:allowed", "team/g:Input:allowed"}}},
		{name: "a part with no text makes no classifier call",
			msgs: []Message{message("system", "  \n"), user("")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("x"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil), allMessages())
			},
			want: want{texts: []string{"  \n", ""}, dropped: []bool{false, false}}},
		{name: "Block refuses the request with the guardrail's reason",
			msgs: []Message{user("say forbidden things")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("forbidden"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil))
			},
			want: want{calls: []string{"say forbidden things"}, stop: "blocked:g says no", outcomes: []string{"team/g:Input:blocked"}}},
		{name: "Strip drops the offending message and keeps the request",
			msgs: []Message{message("system", "forbidden system prompt"), user("hello")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("forbidden"), withCategories("bad")), threshold(0.5, policy.ActionStrip, nil), allMessages())
			},
			want: want{calls: []string{"forbidden system prompt", "hello"}, texts: []string{"forbidden system prompt", "hello"},
				dropped: []bool{true, false}, outcomes: []string{"team/g:Input:stripped", "team/g:Input:allowed"}}},
		{name: "Strip of the only user message escalates to Block",
			msgs: []Message{message("system", "be nice"), user("forbidden")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("forbidden"), withCategories("bad")), threshold(0.5, policy.ActionStrip, nil))
			},
			want: want{calls: []string{"forbidden"}, stop: "blocked:g says no", outcomes: []string{"team/g:Input:blocked(escalated)"}}},
		{name: "Redact replaces the matched spans in the part",
			msgs: []Message{user("my card is 4111 and my mail is a@b")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("4111", "a@b"), withCategories("card", "email"), withSpans(0)), threshold(0.5, policy.ActionRedact, nil))
			},
			want: want{calls: []string{"my card is 4111 and my mail is a@b"}, texts: []string{"my card is [REDACTED:card] and my mail is [REDACTED:email]"},
				dropped: []bool{false}, outcomes: []string{"team/g:Input:redacted"}}},
		{name: "Warn passes and names the guardrail for the response header",
			msgs: []Message{user("forbidden")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("forbidden"), withCategories("bad")), threshold(0.5, policy.ActionWarn, nil))
			},
			want: want{calls: []string{"forbidden"}, texts: []string{"forbidden"}, dropped: []bool{false},
				outcomes: []string{"team/g:Input:warned"}, warnings: []string{"team/g"}}},
		{name: "Report mode records wouldBlock and leaves the request untouched",
			msgs: []Message{user("forbidden")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("forbidden"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil), reportMode())
			},
			want: want{calls: []string{"forbidden"}, texts: []string{"forbidden"}, dropped: []bool{false}, outcomes: []string{"team/g:Input:wouldBlock"}}},
		{name: "Report mode records wouldRedact and leaves the text as it is",
			msgs: []Message{user("mail a@b")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("a@b"), withCategories("email"), withSpans(0)), threshold(0.5, policy.ActionRedact, nil), reportMode())
			},
			want: want{calls: []string{"mail a@b"}, texts: []string{"mail a@b"}, dropped: []bool{false}, outcomes: []string{"team/g:Input:wouldRedact"}}},
		{name: "maxInputChars truncates the text sent and records a partial inspection",
			msgs: []Message{user("0123456789")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("x"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil), maxChars(4))
			},
			want: want{calls: []string{"0123"}, texts: []string{"0123456789"}, dropped: []bool{false}, outcomes: []string{"team/g:Input:allowed(partial)"}}},
		{name: "an excluded modality makes no call and passes with no finding",
			msgs: []Message{{Role: RoleUser, Parts: []Part{image("https://img")}}},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("x"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil))
			},
			want: want{texts: []string{""}, dropped: []bool{false}}},
		{name: "a selected modality the classifier inspects is sent as a part",
			msgs: []Message{{Role: RoleUser, Parts: []Part{image("https://img")}}},
			build: func(w *world) {
				c := w.classifier("c", answering(classify.Result{Scores: []float64{1}}), withCategories("bad"), withClassifierModalities(classify.Text, classify.Image))
				w.guardrail("g", c, threshold(0.5, policy.ActionBlock, nil), modalities(classify.Image))
			},
			want: want{calls: []string{""}, stop: "blocked:g says no", outcomes: []string{"team/g:Input:blocked"}}},
		{name: "unsupported Block blocks a part the classifier cannot inspect",
			msgs: []Message{{Role: RoleUser, Parts: []Part{{Text: "hi"}, image("https://img")}}},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("x"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil),
					modalities(classify.Text, classify.Image), unsupportedPolicy(policy.UnsupportedBlock))
			},
			want: want{calls: []string{"hi"}, stop: "blocked:g says no", outcomes: []string{"team/g:Input:allowed", "team/g:Input:blocked"}}},
		{name: "unsupported Warn warns with a notInspected finding",
			msgs: []Message{{Role: RoleUser, Parts: []Part{image("https://img")}}},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("x"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil),
					modalities(classify.Image), unsupportedPolicy(policy.UnsupportedWarn))
			},
			want: want{texts: []string{""}, dropped: []bool{false}, outcomes: []string{"team/g:Input:warned"}, warnings: []string{"team/g"}}},
		{name: "unsupported Allow passes and records notInspected",
			msgs: []Message{{Role: RoleUser, Parts: []Part{image("https://img")}}},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("x"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil),
					modalities(classify.Image), unsupportedPolicy(policy.UnsupportedAllow))
			},
			want: want{texts: []string{""}, dropped: []bool{false}, outcomes: []string{"team/g:Input:notInspected"}}},
		{name: "unsupported unset is an UNSUPPORTED failure that fails closed",
			msgs: []Message{{Role: RoleUser, Parts: []Part{image("https://img")}}},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", words("x"), withCategories("bad")), threshold(0.5, policy.ActionBlock, nil), modalities(classify.Image))
			},
			want: want{stop: "failed:UNSUPPORTED", outcomes: []string{"team/g:Input:failed"}}},
		{name: "a guardrail whose classifier has no backend refuses traffic",
			msgs: []Message{user("hello")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", nil, withCategories("bad")), threshold(0.5, policy.ActionBlock, nil))
			},
			want: want{stop: "failed:CLASSIFIER_FAILED", outcomes: []string{"team/g:Input:failed"}}},
		{name: "a guardrail whose classifier has no backend passes traffic as notInspected when it fails open",
			msgs: []Message{user("hello")},
			build: func(w *world) {
				w.guardrail("g", w.classifier("c", nil, withCategories("bad")), threshold(0.5, policy.ActionBlock, nil), failOpen())
			},
			want: want{texts: []string{"hello"}, dropped: []bool{false}, outcomes: []string{"team/g:Input:notInspected"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w world
			tc.build(&w)
			s, rec := w.session()
			res, err := s.Input(context.Background(), tc.msgs)
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, c := range w.backends {
				calls = append(calls, c.(*fake).texts()...)
			}
			if !slices.Equal(calls, tc.want.calls) {
				t.Errorf("calls %q, want %q", calls, tc.want.calls)
			}
			if got := verdictString(res.Stop); got != tc.want.stop {
				t.Errorf("stop %q, want %q", got, tc.want.stop)
			}
			var texts []string
			var dropped []bool
			for _, m := range res.Messages {
				dropped = append(dropped, m.Dropped)
				for _, p := range m.Parts {
					texts = append(texts, p.Text)
				}
			}
			if !slices.Equal(texts, tc.want.texts) || !slices.Equal(dropped, tc.want.dropped) {
				t.Errorf("messages %q dropped %v, want %q dropped %v", texts, dropped, tc.want.texts, tc.want.dropped)
			}
			if got := outcomes(rec); !slices.Equal(got, tc.want.outcomes) {
				t.Errorf("records %v, want %v", got, tc.want.outcomes)
			}
			if got := s.Warnings(); !slices.Equal(got, tc.want.warnings) {
				t.Errorf("warnings %v, want %v", got, tc.want.warnings)
			}
		})
	}
}

func verdictString(v *Verdict) string {
	switch {
	case v == nil:
		return ""
	case v.Kind == Failed:
		return "failed:" + string(v.Code)
	}
	return "blocked:" + v.Reason
}

// outcomes spells records as guardrail:phase:outcome, with (escalated) and (partial).
func outcomes(rec *recorder) []string {
	var out []string
	for _, r := range rec.records {
		s := r.Guardrail + ":" + r.Phase.String() + ":" + string(r.Outcome)
		if r.Escalated {
			s += "(escalated)"
		}
		if r.Partial {
			s += "(partial)"
		}
		out = append(out, s)
	}
	return out
}

func TestComposition(t *testing.T) {
	t.Run("sanitizers run first by priority then name, each seeing the previous one's output, then the others on the sanitized text", func(t *testing.T) {
		var w world
		emails := words("a@b")
		cards := words("4111")
		checker := words("zzz")
		other := words("zzz")
		w.guardrail("z-check", w.classifier("checker", checker, withCategories("x")), threshold(0.5, policy.ActionBlock, nil))
		w.guardrail("a-check", w.classifier("other", other, withCategories("x")), threshold(0.5, policy.ActionWarn, nil))
		w.guardrail("b-cards", w.classifier("cards", cards, withCategories("card"), withSpans(0)), threshold(0.5, policy.ActionRedact, nil), priority(1))
		w.guardrail("c-emails", w.classifier("emails", emails, withCategories("email"), withSpans(0)), threshold(0.5, policy.ActionRedact, nil), priority(1))
		w.guardrail("z-first", w.classifier("first", words("zzz"), withCategories("x"), withSpans(0)), threshold(0.5, policy.ActionStrip, nil), priority(-5))
		s, rec := w.session()
		res, err := s.Input(context.Background(), []Message{user("card 4111 mail a@b")})
		if err != nil || res.Stop != nil {
			t.Fatal(err, res.Stop)
		}
		if got, want := cards.texts(), []string{"card 4111 mail a@b"}; !slices.Equal(got, want) {
			t.Errorf("b-cards saw %q, want %q", got, want)
		}
		if got, want := emails.texts(), []string{"card [REDACTED:card] mail a@b"}; !slices.Equal(got, want) {
			t.Errorf("c-emails saw %q, want %q", got, want)
		}
		sanitized := "card [REDACTED:card] mail [REDACTED:email]"
		if !slices.Equal(checker.texts(), []string{sanitized}) || !slices.Equal(other.texts(), []string{sanitized}) {
			t.Errorf("the others saw %q and %q, want the sanitized text", checker.texts(), other.texts())
		}
		if got := res.Messages[0].Parts[0].Text; got != sanitized {
			t.Errorf("sent upstream %q, want %q", got, sanitized)
		}
		want := []string{"team/z-first:Input:allowed", "team/b-cards:Input:redacted", "team/c-emails:Input:redacted",
			"team/a-check:Input:allowed", "team/z-check:Input:allowed"}
		if got := outcomes(rec); !slices.Equal(got, want) {
			t.Errorf("records %v, want sanitizers in run order then the others by key %v", got, want)
		}
	})
	t.Run("any Block wins and warnings add up", func(t *testing.T) {
		var w world
		for _, name := range []string{"w1", "w2"} {
			w.guardrail(name, w.classifier(name, words("bad"), withCategories("x")), threshold(0.5, policy.ActionWarn, nil))
		}
		w.guardrail("b", w.classifier("b", words("bad"), withCategories("x")), threshold(0.5, policy.ActionBlock, nil))
		s, rec := w.session()
		res, err := s.Input(context.Background(), []Message{user("bad")})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stop == nil || res.Stop.Guardrail != "team/b" {
			t.Fatalf("stop %+v, want team/b's block", res.Stop)
		}
		if got := outcomes(rec); !slices.Equal(got, []string{"team/b:Input:blocked", "team/w1:Input:warned", "team/w2:Input:warned"}) {
			t.Errorf("records %v", got)
		}
		if got := s.Warnings(); !slices.Equal(got, []string{"team/w1", "team/w2"}) {
			t.Errorf("warnings %v", got)
		}
	})
	t.Run("a message without parts is passed on, not dropped", func(t *testing.T) {
		var w world
		w.guardrail("g", w.classifier("c", words("bad"), withCategories("x")), threshold(0.5, policy.ActionStrip, nil), allMessages())
		s, _ := w.session()
		res, err := s.Input(context.Background(), []Message{{Role: "assistant"}, user("fine")})
		if err != nil || res.Stop != nil {
			t.Fatalf("err %v, stop %+v", err, res.Stop)
		}
		if len(res.Messages) != 2 || res.Messages[0].Dropped || res.Messages[1].Dropped {
			t.Fatalf("messages %+v, want both kept", res.Messages)
		}
	})
	t.Run("a block wins over a failure of another guardrail", func(t *testing.T) {
		var w world
		w.guardrail("a-fails", w.classifier("broken", nil, withCategories("x")), threshold(0.5, policy.ActionBlock, nil))
		w.guardrail("b-blocks", w.classifier("b", words("bad"), withCategories("x")), threshold(0.5, policy.ActionBlock, nil))
		s, _ := w.session()
		res, _ := s.Input(context.Background(), []Message{user("bad")})
		if res.Stop == nil || res.Stop.Kind != Blocked || res.Stop.Guardrail != "team/b-blocks" {
			t.Fatalf("stop %+v, want the block", res.Stop)
		}
	})
	t.Run("the order of records does not depend on which concurrent evaluation finishes first", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			var w world
			for _, name := range []string{"d", "c", "b", "a"} {
				w.guardrail(name, w.classifier(name, words(strings.Repeat("x", i%3+1)), withCategories("x")), threshold(0.5, policy.ActionWarn, nil))
			}
			s, rec := w.session()
			if _, err := s.Input(context.Background(), []Message{user("xx")}); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range rec.records {
				keys = append(keys, r.Guardrail)
			}
			if !slices.IsSorted(keys) || len(keys) != 4 {
				t.Fatalf("records in order %v, want by key", keys)
			}
		}
	})
}

// messages: Last judges the last message that still has a part not dropped: a message
// whose parts all arrive dropped is skipped.
func TestLastMessageSkipsDroppedParts(t *testing.T) {
	var w world
	w.guardrail("g", w.classifier("c", words("bad"), withCategories("x")), threshold(0.5, policy.ActionBlock, nil))
	s, _ := w.session()
	dropped := Message{Role: RoleUser, Parts: []Part{{Modality: classify.Text, Text: "fine", Dropped: true}}}
	res, err := s.Input(context.Background(), []Message{user("bad"), dropped})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop == nil || res.Stop.Kind != Blocked {
		t.Fatalf("stop %+v, want the block of the last message with a part left", res.Stop)
	}
}

// Adjacent entities are two markers, not one: within one answer, and whichever of two
// guardrails redacts first.
func TestAdjacentRedactionsStayApart(t *testing.T) {
	cases := []struct {
		name  string
		build func(w *world)
	}{
		{"one answer", func(w *world) {
			w.guardrail("g", w.classifier("c", words("foo", "bar"), withCategories("x", "y"), withSpans(8)),
				phases(policy.PhaseInput), threshold(0.5, policy.ActionRedact, nil))
		}},
		{"the later entity first", func(w *world) {
			w.guardrail("a", w.classifier("c1", words("bar"), withCategories("y"), withSpans(8)),
				phases(policy.PhaseInput), threshold(0.5, policy.ActionRedact, nil))
			w.guardrail("b", w.classifier("c2", words("foo"), withCategories("x"), withSpans(8)),
				phases(policy.PhaseInput), threshold(0.5, policy.ActionRedact, nil))
		}},
		{"the earlier entity first", func(w *world) {
			w.guardrail("a", w.classifier("c1", words("foo"), withCategories("x"), withSpans(8)),
				phases(policy.PhaseInput), threshold(0.5, policy.ActionRedact, nil))
			w.guardrail("b", w.classifier("c2", words("bar"), withCategories("y"), withSpans(8)),
				phases(policy.PhaseInput), threshold(0.5, policy.ActionRedact, nil))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w world
			tc.build(&w)
			s, _ := w.session()
			res, err := s.Input(context.Background(), []Message{user("say foobar now")})
			if err != nil || res.Stop != nil {
				t.Fatalf("Input: %v %+v", err, res.Stop)
			}
			if got, want := res.Messages[0].Parts[0].Text, "say [REDACTED:x][REDACTED:y] now"; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}
