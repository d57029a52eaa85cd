package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

func TestOutputPhase(t *testing.T) {
	cases := []struct {
		name     string
		contents []Content
		action   policy.Action
		texts    []string
		dropped  []bool
		stop     string
		outcomes []string
	}{
		{name: "Block replaces the result with the verdict", action: policy.ActionBlock,
			contents: []Content{{Channel: text0, Text: "a bad answer"}},
			stop:     "blocked:g says no", outcomes: []string{"team/g:Output:blocked"}},
		{name: "Strip of the answer escalates to Block: it is the whole final output", action: policy.ActionStrip,
			contents: []Content{{Channel: reasoning0, Text: "thinking"}, {Channel: text0, Text: "a bad answer"}},
			stop:     "blocked:g says no", outcomes: []string{"team/g:Output:allowed", "team/g:Output:blocked(escalated)"}},
		{name: "Strip of reasoning drops it and keeps the answer", action: policy.ActionStrip,
			contents: []Content{{Channel: reasoning0, Text: "bad thoughts"}, {Channel: text0, Text: "fine"}},
			texts:    []string{"bad thoughts", "fine"}, dropped: []bool{true, false},
			outcomes: []string{"team/g:Output:stripped", "team/g:Output:allowed"}},
		{name: "Strip of an object escalates to Block", action: policy.ActionStrip,
			contents: []Content{{Channel: object0, Text: `{"x":"bad"}`}},
			stop:     "blocked:g says no", outcomes: []string{"team/g:Output:blocked(escalated)"}},
		{name: "Redact rewrites the answer", action: policy.ActionRedact,
			contents: []Content{{Channel: text0, Text: "a bad answer"}},
			texts:    []string{"a [REDACTED:bad] answer"}, dropped: []bool{false}, outcomes: []string{"team/g:Output:redacted"}},
		{name: "each choice is judged on its own", action: policy.ActionRedact,
			contents: []Content{{Channel: text0, Text: "bad"}, {Channel: content.Channel{Choice: 1}, Text: "good"}},
			texts:    []string{"[REDACTED:bad]", "good"}, dropped: []bool{false, false},
			outcomes: []string{"team/g:Output:redacted", "team/g:Output:allowed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w world
			w.guardrail("g", w.classifier("c", words("bad"), withCategories("bad"), withSpans(0)), threshold(0.5, tc.action, nil))
			s, rec := w.session()
			res, err := s.Output(context.Background(), tc.contents)
			if err != nil {
				t.Fatal(err)
			}
			if got := verdictString(res.Stop); got != tc.stop {
				t.Errorf("stop %q, want %q", got, tc.stop)
			}
			var texts []string
			var dropped []bool
			for _, c := range res.Contents {
				texts, dropped = append(texts, c.Text), append(dropped, c.Dropped)
			}
			if !slices.Equal(texts, tc.texts) || !slices.Equal(dropped, tc.dropped) {
				t.Errorf("contents %q %v, want %q %v", texts, dropped, tc.texts, tc.dropped)
			}
			if got := outcomes(rec); !slices.Equal(got, tc.outcomes) {
				t.Errorf("records %v, want %v", got, tc.outcomes)
			}
		})
	}
}

func TestToolCalls(t *testing.T) {
	toolGuard := func(action policy.Action, ws ...string) (*world, *fake) {
		w := &world{}
		f := words(ws...)
		w.guardrail("g", w.classifier("c", f, withCategories("bad"), withSpans(0)), phases(policy.PhaseToolCalls), threshold(0.5, action, nil))
		return w, f
	}
	t.Run("a non-streamed response's calls are judged alone, then together", func(t *testing.T) {
		w, f := toolGuard(policy.ActionBlock, "rm -rf")
		s, rec := w.session()
		res, err := s.Output(context.Background(), []Content{
			{Channel: text0, Text: "calling"},
			{Channel: call0(0), Name: "ls", Text: `{"dir":"/"}`},
			{Channel: call0(1), Name: "sh", Text: `not json`},
		})
		if err != nil || res.Stop != nil {
			t.Fatal(err, res.Stop)
		}
		want := []string{`{"name":"ls","arguments":{"dir":"/"}}`, `{"name":"sh","arguments":"not json"}`,
			`[{"name":"ls","arguments":{"dir":"/"}},{"name":"sh","arguments":"not json"}]`}
		if got := f.texts(); !slices.Equal(got, want) {
			t.Errorf("judged %q, want %q", got, want)
		}
		if got := outcomes(rec); !slices.Equal(got, []string{"team/g:ToolCalls:allowed", "team/g:ToolCalls:allowed", "team/g:ToolCalls:allowed"}) {
			t.Errorf("records %v", got)
		}
		if rec.records[2].Where.String() != "choice[0].toolCalls" {
			t.Errorf("the together record is at %s", rec.records[2].Where)
		}
	})
	t.Run("a streamed call is withheld until Finish and released whole", func(t *testing.T) {
		w, f := toolGuard(policy.ActionBlock, "rm -rf")
		s, _ := w.session()
		ctx := context.Background()
		for _, d := range []string{`{"pa`, `th":"/tmp`, `"}`} {
			if step, _ := s.Delta(ctx, call0(0), d); len(step.Release) != 0 {
				t.Fatalf("released %q of an incomplete call", step.Release[0].Text)
			}
		}
		if step, _ := s.EndToolCall(ctx, call0(0), "ls"); len(step.Release) != 0 {
			t.Fatalf("released a call before the choice's calls were judged together")
		}
		if got := f.texts(); !slices.Equal(got, []string{`{"name":"ls","arguments":{"path":"/tmp"}}`}) {
			t.Errorf("judged %q", got)
		}
		step, err := s.Finish(ctx)
		if err != nil || step.Stop != nil {
			t.Fatal(err, step.Stop)
		}
		if len(step.Release) != 1 || string(step.Release[0].Text) != `{"path":"/tmp"}` || step.Release[0].Channel != call0(0) {
			t.Fatalf("released %+v, want the whole arguments", step.Release)
		}
		if f.calls() != 1 {
			t.Errorf("a single call was judged together too: %d calls", f.calls())
		}
	})
	t.Run("a block on the calls together withholds every call", func(t *testing.T) {
		w := &world{}
		// Matches only when both calls are present: the calls judged together.
		f := words(`"a"},{"name":"b"`)
		w.guardrail("g", w.classifier("c", f, withCategories("combo")), phases(policy.PhaseToolCalls), threshold(0.5, policy.ActionBlock, nil))
		s, rec := w.session()
		ctx := context.Background()
		for i, name := range []string{"a", "b"} {
			if _, err := s.Delta(ctx, call0(i), `"`+name+`"`); err != nil {
				t.Fatal(err)
			}
			if step, _ := s.EndToolCall(ctx, call0(i), name); step.Stop != nil {
				t.Fatalf("call %d alone was blocked", i)
			}
		}
		step, _ := s.Finish(ctx)
		if step.Stop == nil || len(step.Release) != 0 {
			t.Fatalf("Finish released %d chunks, stop %+v: want every call withheld and a block", len(step.Release), step.Stop)
		}
		if got := outcomes(rec); !slices.Equal(got, []string{"team/g:ToolCalls:allowed", "team/g:ToolCalls:allowed", "team/g:ToolCalls:blocked"}) {
			t.Errorf("records %v", got)
		}
	})
	t.Run("Strip and Redact on a tool call act as Block and keep the reason", func(t *testing.T) {
		for _, action := range []policy.Action{policy.ActionStrip, policy.ActionRedact} {
			w, _ := toolGuard(action, "secret")
			s, rec := w.session()
			ctx := context.Background()
			if _, err := s.Delta(ctx, call0(0), `{"k":"secret"}`); err != nil {
				t.Fatal(err)
			}
			step, _ := s.EndToolCall(ctx, call0(0), "f")
			if step.Stop == nil || step.Stop.Reason != "g says no" || !rec.records[0].Escalated {
				t.Errorf("%s: stop %+v records %v, want an escalated block", action, step.Stop, outcomes(rec))
			}
		}
	})
	t.Run("Stream-phase Redact on a tool call's arguments acts as Block", func(t *testing.T) {
		var w world
		streamGuard(&w, "g", policy.ActionRedact, policy.Streaming{}, "secret")
		s, rec := w.session()
		step, _ := s.Delta(context.Background(), call0(0), `{"k":"secret"}`)
		if step.Stop == nil || !slices.Equal(outcomes(rec), []string{"team/g:Stream:blocked(escalated)"}) {
			t.Errorf("stop %+v records %v", step.Stop, outcomes(rec))
		}
	})
	t.Run("tool calls of a guardrail without the Stream, Output or ToolCalls phase are not judged but still withheld until Finish", func(t *testing.T) {
		var w world
		f := words("x")
		w.guardrail("g", w.classifier("c", f, withCategories("x")), threshold(0.5, policy.ActionBlock, nil), phases(policy.PhaseInput))
		s, _ := w.session()
		ctx := context.Background()
		if step, _ := s.Delta(ctx, call0(0), `{}`); len(step.Release) != 0 {
			t.Fatal("released a call before Finish")
		}
		step, _ := s.Finish(ctx)
		if len(step.Release) != 1 || f.calls() != 0 {
			t.Fatalf("released %d, calls %d", len(step.Release), f.calls())
		}
	})
}

func TestSessionMisuse(t *testing.T) {
	var w world
	streamGuard(&w, "g", policy.ActionBlock, policy.Streaming{}, "bad")
	s, _ := w.session()
	ctx := context.Background()
	if _, err := s.Delta(ctx, object0, "{}"); err != ErrWrongChannel {
		t.Errorf("Delta on the object channel: %v", err)
	}
	if _, err := s.Snapshot(ctx, text0, "{}"); err != ErrWrongChannel {
		t.Errorf("Snapshot on a text channel: %v", err)
	}
	if _, err := s.EndChannel(ctx, call0(0)); err != ErrWrongChannel {
		t.Errorf("EndChannel on a tool call: %v", err)
	}
	if _, err := s.EndToolCall(ctx, text0, "f"); err != ErrWrongChannel {
		t.Errorf("EndToolCall on a text channel: %v", err)
	}
	if _, err := s.EndChannel(ctx, text0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delta(ctx, text0, "more"); err != ErrChannelEnded {
		t.Errorf("Delta after EndChannel: %v", err)
	}
	if _, err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx); err != ErrFinished {
		t.Errorf("Finish twice: %v", err)
	}
	if _, err := s.Delta(ctx, reasoning0, "x"); err != ErrFinished {
		t.Errorf("Delta after Finish: %v", err)
	}
	blocked, _ := w.session()
	step, _ := blocked.Delta(ctx, text0, "bad")
	again, err := blocked.Delta(ctx, text0, "more")
	if step.Stop == nil || again.Stop != step.Stop || err != nil {
		t.Errorf("after a stop every call returns it: %+v %v", again, err)
	}
}

func TestCallerContextEndingIsNotAFailure(t *testing.T) {
	var w world
	f := &fake{answer: words("x").answer}
	w.guardrail("g", w.classifier("c", f, withCategories("x")), threshold(0.5, policy.ActionBlock, nil))
	s, rec := w.session()
	ctx, cancel := context.WithCancel(context.Background())
	f.answer = func(ctx context.Context, _ classify.Input) (classify.Result, error) {
		cancel()
		return classify.Result{}, ctx.Err()
	}
	_, err := s.Input(ctx, []Message{user("hello")})
	if err != context.Canceled || len(rec.records) != 0 {
		t.Errorf("err %v, records %v: want the caller's error and no decision", err, outcomes(rec))
	}
}

// The Output phase of a long stream is sent the kept head of what was released and the
// text still buffered after it; a span it reports after the head redacts exactly the
// entity, which a Stream guardrail's hold-back still withheld.
func TestOutputPhaseRedactsAfterTheKeptHead(t *testing.T) {
	var w world
	w.guardrail("a-hold", w.classifier("judge", answering(classify.Result{Scores: []float64{0}}), withCategories("harm")),
		phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{HoldBack: 200}), maxChars(300))
	w.guardrail("b-output", w.classifier("detector", words("hunter2"), withCategories("password"), withSpans(16)),
		phases(policy.PhaseOutput), threshold(0.5, policy.ActionRedact, nil), maxChars(20000))
	text := letters(9000) + " hunter2 " + letters(60)
	s, _ := w.session()
	got, v := stream(t, s, text0, text, 50)
	if v != nil {
		t.Fatalf("stopped: %+v", v)
	}
	if want := strings.Replace(text, "hunter2", "[REDACTED:password]", 1); got != want {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("released text differs from the redacted text at byte %d: got …%q, want …%q", i, got[max(0, i-10):min(len(got), i+40)], want[max(0, i-10):min(len(want), i+40)])
	}
	if len(s.chans[text0].head) == 0 {
		t.Fatal("no head was kept: the test does not reach the kept-head path")
	}
}

// A block of the tool calls of a non-streamed answer comes with the rest of the answer as
// the Output phase left it (redactions applied): a stream would have sent that text before
// the calls, so both forms can end with it and the reason.
func TestToolCallBlockKeepsWhatTheOutputPhaseAllowed(t *testing.T) {
	var w world
	w.guardrail("tools", w.classifier("c", words("rm -rf"), withCategories("danger"), withSpans(0)),
		phases(policy.PhaseToolCalls), threshold(0.5, policy.ActionBlock, nil))
	w.guardrail("pii", w.classifier("d", words("555-0100"), withCategories("phone"), withSpans(16)),
		phases(policy.PhaseOutput), threshold(0.5, policy.ActionRedact, nil))
	s, _ := w.session()
	res, err := s.Output(context.Background(), []Content{
		{Channel: text0, Text: "Calling 555-0100."},
		{Channel: call0(0), Name: "shell", Text: `{"command":"rm -rf /"}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop == nil || res.Stop.Phase != policy.PhaseToolCalls {
		t.Fatalf("stop %+v, want a ToolCalls block", res.Stop)
	}
	if len(res.Contents) != 2 || res.Contents[0].Text != "Calling [REDACTED:phone]." {
		t.Fatalf("contents %+v, want the redacted text beside the block", res.Contents)
	}

	// Any other block replaces everything: no contents come with it.
	var w2 world
	w2.guardrail("pii", w2.classifier("d", words("555-0100"), withCategories("phone")),
		phases(policy.PhaseOutput), threshold(0.5, policy.ActionBlock, nil))
	s2, _ := w2.session()
	res, err = s2.Output(context.Background(), []Content{{Channel: text0, Text: "Calling 555-0100."}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop == nil || res.Contents != nil {
		t.Fatalf("an Output-phase block returned %+v", res)
	}
}

// TestToolCallArgumentsOneRuleStreamedOrNot: what reaches a tool does not depend on
// whether the client streamed. A guardrail that judges answers (Stream and
// Output, or Output alone) judges a tool call's arguments in a non-streamed answer as in a
// streamed one, and Redact, which cannot rewrite a call, blocks it in both.
func TestToolCallArgumentsOneRuleStreamedOrNot(t *testing.T) {
	args := `{"to":"jane.doe@example.com","body":"the invoice"}`
	for _, ps := range [][]policy.Phase{{policy.PhaseStream, policy.PhaseOutput}, {policy.PhaseOutput}} {
		for _, action := range []policy.Action{policy.ActionRedact, policy.ActionBlock, policy.ActionStrip} {
			name := fmt.Sprintf("%v %v", ps, action)
			newWorld := func() *world {
				var w world
				w.guardrail("g", w.classifier("c", words("jane.doe@example.com"), withCategories("email"), withSpans(0)),
					threshold(0.5, action, nil), phases(ps...))
				return &w
			}
			s, _ := newWorld().session()
			res, err := s.Output(context.Background(), []Content{{Channel: call0(0), Name: "send_mail", Text: args}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop == nil || res.Stop.Kind != Blocked {
				t.Errorf("%s: non-streamed: the call went to the client (stop %+v)", name, res.Stop)
			}
			s, _ = newWorld().session()
			ctx := context.Background()
			var stop *Verdict
			for _, d := range []string{args[:9], args[9:20], args[20:]} {
				step, err := s.Delta(ctx, call0(0), d)
				if err != nil {
					t.Fatal(err)
				}
				if stop = step.Stop; stop != nil {
					break
				}
			}
			if stop == nil {
				step, _ := s.EndToolCall(ctx, call0(0), "send_mail")
				stop = step.Stop
			}
			if stop == nil {
				step, _ := s.Finish(ctx)
				stop = step.Stop
			}
			if stop == nil || stop.Kind != Blocked {
				t.Errorf("%s: streamed: the call went to the client (stop %+v)", name, stop)
			}
		}
	}
	t.Run("arguments that match nothing pass in both modes", func(t *testing.T) {
		var w world
		w.guardrail("g", w.classifier("c", words("jane.doe@example.com"), withCategories("email"), withSpans(0)),
			threshold(0.5, policy.ActionRedact, nil))
		s, rec := w.session()
		res, _ := s.Output(context.Background(), []Content{{Channel: call0(0), Name: "send_mail", Text: `{"to":"ops"}`}})
		if res.Stop != nil || len(res.Contents) != 1 || res.Contents[0].Text != `{"to":"ops"}` {
			t.Errorf("stop %+v contents %+v", res.Stop, res.Contents)
		}
		if !slices.Equal(outcomes(rec), []string{"team/g:Output:allowed"}) {
			t.Errorf("records %v: the arguments were not judged by the Output phase", outcomes(rec))
		}
	})
}
