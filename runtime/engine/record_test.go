package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Decision records say where in the exchange each evaluation looked, as the decision log
// and the Events spell it, and how long it took in milliseconds.
func TestRecordsSayWhereAndHowLong(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	w.guardrail("g", w.classifier("c", f, withCategories("harm")),
		phases(policy.PhaseInput, policy.PhaseOutput, policy.PhaseToolCalls), threshold(0.5, policy.ActionBlock, nil),
		streaming(policy.Streaming{}))
	s, rec := w.session()
	ctx := context.Background()
	if _, err := s.Input(ctx, []Message{user("hello")}); err != nil {
		t.Fatal(err)
	}
	if _, v := stream(t, s, text0, "an answer", 4); v != nil {
		t.Fatalf("stopped: %+v", v)
	}
	for i, name := range []string{"a", "b"} {
		if _, err := s.Delta(ctx, call0(i), `{}`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EndToolCall(ctx, call0(i), name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, r := range rec.records {
		where = append(where, r.Phase.String()+" "+r.Where.String())
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"where":"`+r.Where.String()+`"`) {
			t.Errorf("record %s does not spell where as %q", b, r.Where)
		}
	}
	for _, want := range []string{"Input message[0].part[0]", "Stream choice[0].text", "Output choice[0].text",
		"ToolCalls choice[0].toolCall[0]", "ToolCalls choice[0].toolCall[1]", "ToolCalls choice[0].toolCalls"} {
		if !slices.Contains(where, want) {
			t.Errorf("no record at %q among %q", want, where)
		}
	}

	b, err := json.Marshal(Record{Guardrail: "team/g", Duration: 1500 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"durationMs":1.5,`) {
		t.Errorf("a 1.5 ms evaluation is recorded as %s", b)
	}
}
