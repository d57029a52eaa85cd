package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

const canary = "CANARY-b7e1"

// TestNoContentInDecisionRecords plants a canary in every message, delta, tool call and
// snapshot, and in a classifier's error message, and proves no decision record carries it.
func TestNoContentInDecisionRecords(t *testing.T) {
	var w world
	all := []policy.Phase{policy.PhaseInput, policy.PhaseStream, policy.PhaseOutput, policy.PhaseToolCalls}
	w.guardrail("redact", w.classifier("builtin", words(canary), withCategories("canary"), withSpans(len(canary))),
		phases(policy.PhaseInput, policy.PhaseOutput), threshold(0.5, policy.ActionRedact, nil))
	w.guardrail("warn", w.classifier("judge", words("CANARY"), withCategories("caps")),
		phases(all...), threshold(0.5, policy.ActionWarn, nil), rule("mentions", "scores['caps'] > 0.5", policy.ActionWarn, ""))
	w.guardrail("report", w.classifier("judge2", words(canary), withCategories("canary")),
		phases(all...), threshold(0.5, policy.ActionBlock, nil), reportMode(), streaming(policy.Streaming{EvaluateEveryChars: 7}))
	leaky := &fake{answer: func(_ context.Context, in classify.Input) (classify.Result, error) {
		return classify.Result{}, errors.New("backend echoed: " + in.Text)
	}}
	w.guardrail("broken", w.classifier("remote", leaky, withCategories("x")), phases(all...), threshold(0.5, policy.ActionBlock, nil), failOpen())

	var recs []Record
	ctx := context.Background()
	ids := IDs{Pod: "app-0", RequestID: "req-1", TraceID: "trace", SpanID: "span", Model: "gpt"}
	s := w.engine().NewSession(Options{IDs: ids, Record: func(r Record) { recs = append(recs, r) }})
	in, err := s.Input(ctx, []Message{message("system", "sys "+canary), user("user " + canary), {Role: RoleUser, Parts: []Part{
		{Modality: classify.Text, Text: canary}, image("https://example.com/" + canary + ".png")}}})
	if err != nil || in.Stop != nil {
		t.Fatal(err, in.Stop)
	}
	deltas := []string{"abc " + canary[:4], canary[4:] + " and then", " " + canary}
	for _, d := range deltas {
		for _, ch := range []content.Channel{text0, reasoning0} {
			if _, err := s.Delta(ctx, ch, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Snapshot(ctx, object0, `{"k":"`+canary+`"}`); err != nil {
		t.Fatal(err)
	}
	if step, err := s.Finish(ctx); err != nil || step.Stop != nil {
		t.Fatal(err, step.Stop)
	}
	s = w.engine().NewSession(Options{IDs: ids, Record: func(r Record) { recs = append(recs, r) }})
	for _, d := range deltas {
		if _, err := s.Delta(ctx, call0(0), d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.EndToolCall(ctx, call0(0), "tool_"+canary); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	s = w.engine().NewSession(Options{IDs: ids, Record: func(r Record) { recs = append(recs, r) }})
	if _, err := s.Output(ctx, []Content{{Channel: text0, Text: canary}, {Channel: call0(0), Name: canary, Text: `{"a":"` + canary + `"}`}}); err != nil {
		t.Fatal(err)
	}

	if len(recs) < 20 {
		t.Fatalf("only %d records: the test would prove nothing", len(recs))
	}
	seen := map[guardv1.Outcome]bool{}
	for _, r := range recs {
		seen[r.Outcome] = true
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), canary) || strings.Contains(string(b), "CANARY") || strings.Contains(string(b), "description") {
			t.Errorf("record carries content: %s", b)
		}
	}
	for _, o := range []guardv1.Outcome{guardv1.OutcomeRedacted, guardv1.OutcomeWarned, guardv1.OutcomeWouldBlock, guardv1.OutcomeNotInspected} {
		if !seen[o] {
			t.Errorf("no %s record among %d: the canary was not judged", o, len(recs))
		}
	}
	var sample []byte
	sample, _ = json.Marshal(recs[0])
	for _, field := range []string{`"guardrail"`, `"generation"`, `"classifier"`, `"phase"`, `"where"`, `"outcome"`, `"mode"`, `"durationMs"`, `"requestId":"req-1"`, `"traceId"`} {
		if !strings.Contains(string(sample), field) {
			t.Errorf("record %s lacks %s", sample, field)
		}
	}
}
