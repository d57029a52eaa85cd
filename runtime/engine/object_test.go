package engine

import (
	"context"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// snapshots feeds each snapshot to the object channel, then ends it, and returns every
// snapshot released (each replaces the one before) and the verdict, if any.
func snapshots(t *testing.T, s *Session, snaps ...string) ([]string, *Verdict) {
	t.Helper()
	ctx := context.Background()
	var released []string
	take := func(step Step) {
		for _, c := range step.Release {
			if !c.Replace {
				t.Errorf("an object chunk must replace the previous snapshot")
			}
			released = append(released, string(c.Text))
		}
	}
	for _, snap := range snaps {
		step, err := s.Snapshot(ctx, object0, snap)
		if err != nil {
			t.Fatal(err)
		}
		take(step)
		if step.Stop != nil {
			return released, step.Stop
		}
	}
	step, err := s.EndChannel(ctx, object0)
	if err != nil {
		t.Fatal(err)
	}
	take(step)
	return released, step.Stop
}

// The object of a JSON response is the whole output: the Output phase judges its final
// snapshot when the channel ends, and what it decides is what the client gets last.
func TestObjectEndIsJudgedByTheOutputPhase(t *testing.T) {
	t.Run("a redaction replaces the last snapshot the client has", func(t *testing.T) {
		var w world
		c := w.classifier("detector", words("hunter2"), withCategories("password"), withSpans(16))
		w.guardrail("g", c, phases(policy.PhaseOutput), threshold(0.5, policy.ActionRedact, nil))
		s, _ := w.session()
		released, v := snapshots(t, s, `{"pw":"hun`, `{"pw":"hunter2"}`)
		if v != nil {
			t.Fatalf("stopped with %+v, want the object redacted", v)
		}
		if len(released) == 0 {
			t.Fatal("nothing was released")
		}
		if got, want := released[len(released)-1], `{"pw":"[REDACTED:password]"}`; got != want {
			t.Errorf("the client's last snapshot is %q, want %q (released %q)", got, want, released)
		}
	})
	t.Run("a block ends the response", func(t *testing.T) {
		var w world
		c := w.classifier("detector", words("hunter2"), withCategories("password"))
		w.guardrail("g", c, phases(policy.PhaseOutput), threshold(0.5, policy.ActionBlock, nil))
		s, _ := w.session()
		// The Output phase alone does not hold a stream back (the Stream phase does): the
		// client may have the object already, and learns at its end that it was refused.
		_, v := snapshots(t, s, `{"pw":"hun`, `{"pw":"hunter2"}`)
		if v == nil || v.Kind != Blocked {
			t.Fatalf("verdict %+v, want a block", v)
		}
	})
	t.Run("a snapshot the Stream phase skipped is judged at the end", func(t *testing.T) {
		var w world
		c := w.classifier("detector", words("hunter2"), withCategories("password"))
		w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{MaxEvaluations: 1}))
		s, _ := w.session()
		// maxEvaluations lets the second snapshot out unjudged (a partial inspection); the
		// end judges it.
		_, v := snapshots(t, s, `{"pw":"`, `{"pw":"hunter2"}`)
		if v == nil || v.Kind != Blocked {
			t.Fatalf("verdict %+v, want a block from the end's evaluation", v)
		}
	})
}
