package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// failures are the ways an evaluation fails, with the code each must record.
var failures = []struct {
	name   string
	code   classify.Code
	answer func(ctx context.Context) (classify.Result, error)
}{
	{"error", classify.CodeClassifierFailed, func(context.Context) (classify.Result, error) {
		return classify.Result{}, errors.New("connection refused")
	}},
	{"timeout", classify.CodeTimeout, func(ctx context.Context) (classify.Result, error) {
		<-ctx.Done()
		return classify.Result{}, ctx.Err()
	}},
	{"NaN score", classify.CodeInvalidAnswer, func(context.Context) (classify.Result, error) {
		return classify.Result{Scores: []float64{math.NaN(), 0}}, nil
	}},
	{"score 1.5", classify.CodeInvalidAnswer, func(context.Context) (classify.Result, error) {
		return classify.Result{Scores: []float64{1.5, 0}}, nil
	}},
	{"missing key", classify.CodeInvalidAnswer, func(context.Context) (classify.Result, error) {
		return classify.Result{Scores: []float64{0}}, nil
	}},
	{"extra key", classify.CodeInvalidAnswer, func(context.Context) (classify.Result, error) {
		return classify.Result{Scores: []float64{0, 0, 0}}, nil
	}},
	{"malformed", classify.CodeInvalidAnswer, func(context.Context) (classify.Result, error) {
		return classify.Result{}, classify.Errorf(classify.CodeInvalidAnswer, "answer is not valid JSON")
	}},
}

// failingAfter answers validly ok times, then fails as fail does.
func failingAfter(ok int, fail func(context.Context) (classify.Result, error)) *fake {
	n := 0
	return &fake{answer: func(ctx context.Context, _ classify.Input) (classify.Result, error) {
		if n++; n <= ok {
			return classify.Result{Scores: []float64{0, 0}}, nil
		}
		return fail(ctx)
	}}
}

// outcomeOfCell is what a cell's run observed.
type outcomeOfCell struct {
	stop *Verdict
	// released is what the client got (streamed phases), or what is sent on (Input, Output).
	released string
	// releasedBefore is what had been released before the failing evaluation.
	releasedBefore string
	all            string
}

func runPhase(t *testing.T, s *Session, phase policy.Phase) outcomeOfCell {
	t.Helper()
	ctx := context.Background()
	switch phase {
	case policy.PhaseInput:
		res, err := s.Input(ctx, []Message{user("hello world")})
		if err != nil {
			t.Fatal(err)
		}
		out := outcomeOfCell{stop: res.Stop, all: "hello world"}
		if res.Stop == nil {
			out.released = res.Messages[0].Parts[0].Text
		}
		return out
	case policy.PhaseOutput:
		res, err := s.Output(ctx, []Content{{Channel: text0, Text: "an answer"}})
		if err != nil {
			t.Fatal(err)
		}
		out := outcomeOfCell{stop: res.Stop, all: "an answer"}
		if res.Stop == nil {
			out.released = res.Contents[0].Text
		}
		return out
	case policy.PhaseStream:
		// Three deltas, hold-back 5: the first two evaluations pass, the third fails.
		var released strings.Builder
		out := outcomeOfCell{all: "aaaaabbbbbccccc"}
		for _, d := range []string{"aaaaa", "bbbbb", "ccccc"} {
			before := released.String()
			step, err := s.Delta(ctx, text0, d)
			if err != nil {
				t.Fatal(err)
			}
			collect(&released, step, text0)
			if step.Stop != nil {
				out.stop, out.releasedBefore = step.Stop, before
				break
			}
		}
		if out.stop == nil {
			step, err := s.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			collect(&released, step, text0)
			out.stop = step.Stop
		}
		out.released = released.String()
		return out
	case policy.PhaseToolCalls:
		var released strings.Builder
		out := outcomeOfCell{all: `{"q":1}`}
		if _, err := s.Delta(ctx, call0(0), `{"q":1}`); err != nil {
			t.Fatal(err)
		}
		step, err := s.EndToolCall(ctx, call0(0), "search")
		if err != nil {
			t.Fatal(err)
		}
		collect(&released, step, call0(0))
		if out.stop = step.Stop; out.stop == nil {
			step, _ = s.Finish(ctx)
			collect(&released, step, call0(0))
			out.stop = step.Stop
		}
		out.released = released.String()
		return out
	}
	panic("unknown phase")
}

func TestFailureMatrix(t *testing.T) {
	phaseList := []policy.Phase{policy.PhaseInput, policy.PhaseStream, policy.PhaseOutput, policy.PhaseToolCalls}
	for _, f := range failures {
		for _, phase := range phaseList {
			for _, open := range []bool{false, true} {
				for _, mode := range []policy.Mode{policy.ModeEnforce, policy.ModeReport} {
					name := fmt.Sprintf("%s at %s with failurePolicy %s in %s mode", f.name, phase, map[bool]string{false: "Closed", true: "Open"}[open], mode)
					t.Run(name, func(t *testing.T) {
						var w world
						ok := 0
						if phase == policy.PhaseStream {
							ok = 2
						}
						c := w.classifier("c", failingAfter(ok, f.answer), withCategories("a", "b"))
						opts := []guardrailOption{phases(phase), threshold(0.5, policy.ActionBlock, nil), withTimeout(5 * time.Millisecond)}
						if phase == policy.PhaseStream {
							opts = append(opts, streaming(policy.Streaming{HoldBack: 5}))
						}
						if open {
							opts = append(opts, failOpen())
						}
						g := w.guardrail("g", c, opts...)
						g.Mode = mode
						s, rec := w.session()
						got := runPhase(t, s, phase)

						last := rec.records[len(rec.records)-1]
						wantOutcome := guardv1.OutcomeFailed
						if open {
							wantOutcome = guardv1.OutcomeNotInspected
						}
						if last.Outcome != wantOutcome || last.Code != f.code || last.Phase != phase || last.Mode != mode {
							t.Errorf("record %s %s %s %s, want %s %s %s %s", last.Outcome, last.Code, last.Phase, last.Mode, wantOutcome, f.code, phase, mode)
						}
						if open {
							if got.stop != nil || got.released != got.all {
								t.Errorf("failing open: stop %+v, released %q, want everything released", got.stop, got.released)
							}
							return
						}
						// Closed, in either mode: the content stops with the fixed failure.
						if got.stop == nil || got.stop.Kind != Failed || got.stop.Code != f.code || got.stop.Reason != FailureMessage ||
							got.stop.Guardrail != "team/g" || got.stop.Phase != phase {
							t.Fatalf("stop %+v, want a %s failure of team/g at %s", got.stop, f.code, phase)
						}
						if got.released != got.releasedBefore {
							t.Errorf("released %q after the failure, want only what was released before: %q", got.released, got.releasedBefore)
						}
					})
				}
			}
		}
	}
}

func TestTimeoutIsPerEvaluation(t *testing.T) {
	var w world
	slow := &fake{answer: func(ctx context.Context, _ classify.Input) (classify.Result, error) {
		select {
		case <-ctx.Done():
			return classify.Result{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
			return classify.Result{Scores: []float64{0}}, nil
		}
	}}
	w.guardrail("g", w.classifier("c", slow, withCategories("a")), phases(), threshold(0.5, policy.ActionBlock, nil),
		streaming(policy.Streaming{}), withTimeout(200*time.Millisecond))
	s, rec := w.session()
	// Five evaluations of 20ms each take longer than one timeout, and none times out.
	if _, stop := stream(t, s, text0, "abcde", 1); stop != nil {
		t.Fatalf("stop %+v", stop)
	}
	for _, r := range rec.records {
		if r.Outcome != guardv1.OutcomeAllowed || r.Duration < 20*time.Millisecond {
			t.Errorf("record %s took %s", r.Outcome, r.Duration)
		}
	}
}

func TestClassifierPanicIsAFailure(t *testing.T) {
	var w world
	w.guardrail("g", w.classifier("c", &fake{answer: func(context.Context, classify.Input) (classify.Result, error) { panic("boom") }},
		withCategories("a")), threshold(0.5, policy.ActionBlock, nil))
	s, _ := w.session()
	res, err := s.Input(context.Background(), []Message{user("hi")})
	if err != nil || res.Stop == nil || res.Stop.Code != classify.CodeClassifierFailed {
		t.Fatalf("res %+v err %v, want a CLASSIFIER_FAILED failure", res, err)
	}
}
