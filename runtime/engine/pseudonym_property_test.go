package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/builtin"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/test/entities"
)

// pseudonymizeEngine compiles the pii and secrets packs under a Pseudonymize guardrail on
// Input and ToolResults, as a user writes it; with redactOutput, a second guardrail on
// the same classifier redacts Stream and Output (what it judges is the placeholder text,
// so the restored values are not redacted again).
func pseudonymizeEngine(t testing.TB, redactOutput bool) *engine.Engine {
	t.Helper()
	one := spec.Score(1)
	guardrails := []policy.GuardrailObject{{
		ObjectMeta: policy.ObjectMeta{Namespace: "ns", Name: "mask"},
		Spec: spec.GuardrailSpec{Mode: spec.ModeEnforce, ClassifierRef: spec.LocalObjectReference{Name: "detectors"},
			Phases: []spec.Phase{spec.PhaseInput, spec.PhaseToolResults}, Threshold: &one, Action: spec.ActionPseudonymize, Reason: "masked"},
	}}
	if redactOutput {
		guardrails = append(guardrails, policy.GuardrailObject{
			ObjectMeta: policy.ObjectMeta{Namespace: "ns", Name: "redact"},
			Spec: spec.GuardrailSpec{Mode: spec.ModeEnforce, ClassifierRef: spec.LocalObjectReference{Name: "detectors"},
				Phases: []spec.Phase{spec.PhaseStream, spec.PhaseOutput}, Threshold: &one, Action: spec.ActionRedact, Reason: "redacted"},
		})
	}
	snap, err := policy.Compile(policy.Sources{
		Classifiers: []policy.ClassifierObject{{
			ObjectMeta: policy.ObjectMeta{Namespace: "ns", Name: "detectors"},
			Spec:       spec.ClassifierSpec{Builtin: &spec.BuiltinBackend{Packs: []spec.BuiltinPack{spec.PackPII, spec.PackSecrets}}},
		}},
		Guardrails: guardrails,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := snap.Classifiers[0]
	det, err := builtin.New(builtin.Config{Detectors: c.Builtin.Detectors})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Guardrails: snap.Guardrails, Classifiers: snap.Classifiers,
		Backends: engine.BackendMap(map[string]classify.Classifier{c.Key: det})})
}

func textMessage(role, text string, toolResult bool) engine.Message {
	return engine.Message{Role: role, Parts: []engine.Part{{Modality: classify.Text, Text: text, ToolResult: toolResult}}}
}

// echoArgs is what an echoing provider puts in a tool call: the text as a JSON string,
// escaped as Go escapes HTML (\u003c, \u003e) or not.
func echoArgs(text string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(map[string]string{"note": text})
	return strings.TrimSuffix(b.String(), "\n")
}

// TestPseudonymizedPromptsEchoBackRestored is the property of reversible masking with the
// real built-in detectors: random prompts with entities of every built-in kind in a system
// prompt, a user message and a tool result (one value repeated across all three). The
// provider receives no 8 bytes of any entity the detectors find, and no whole value at
// all; a provider that echoes what it received — as answer text and as a tool call's
// arguments — gives the client exactly the original text, streamed in deltas of every
// size from 1 to 32 bytes and not streamed, with or without an Output Redact guardrail on
// the same detectors. The detectors' own misses (random passwords the generic-secret
// heuristic takes for identifiers; a rare generated token a secret detector declines) are
// recall, which the corpus tests measure: they are logged and bounded to one in ten, and
// the restoration must still be exact.
func TestPseudonymizedPromptsEchoBackRestored(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 9))
	ctx := context.Background()
	engines := []*engine.Engine{pseudonymizeEngine(t, false), pseudonymizeEngine(t, true)}
	missed, planted := map[string]int{}, map[string]int{}
	defer func() {
		for kind, n := range missed {
			t.Logf("missed: %s %d of %d", kind, n, planted[kind])
			if 10*n > planted[kind] {
				t.Errorf("the detectors missed %d of %d %s values", n, planted[kind], kind)
			}
		}
	}()
	for size := 1; size <= 32; size++ {
		for _, kind := range entities.Kinds {
			shared := entities.New(rng, entities.Kinds[rng.IntN(len(entities.Kinds))])
			system := entities.Plant(rng, 5+rng.IntN(10), shared)
			userText := entities.Plant(rng, 10+rng.IntN(30), entities.New(rng, kind), shared,
				entities.New(rng, entities.Kinds[rng.IntN(len(entities.Kinds))]))
			tool := entities.Plant(rng, 5+rng.IntN(10), entities.New(rng, kind), shared)
			msgs := []engine.Message{textMessage("system", system.Text, false), textMessage(engine.RoleUser, userText.Text, false),
				textMessage("tool", tool.Text, true)}
			all := entities.Text{Entities: append(append(append([]entities.Entity{}, system.Entities...), userText.Entities...), tool.Entities...)}
			e := engines[size%2]
			name := fmt.Sprintf("%s, delta %d, redact output %v", kind, size, size%2 == 1)

			s := e.NewSession(engine.Options{})
			in, err := s.Input(ctx, msgs)
			if err != nil || in.Stop != nil {
				t.Fatalf("%s: Input: %v %+v", name, err, in.Stop)
			}
			var sent strings.Builder
			for _, m := range in.Messages {
				sent.WriteString(m.Parts[0].Text + "\n")
			}
			found := all.Entities[:0:0]
			for _, en := range all.Entities {
				planted[en.Kind]++
				if strings.Contains(sent.String(), en.Value) {
					missed[en.Kind]++
					continue
				}
				found = append(found, en)
			}
			if piece := (entities.Text{Entities: found}).Leaked(sent.String(), 8); piece != "" {
				t.Fatalf("%s: %q reached the provider in\n%s", name, piece, sent.String())
			}
			echo := "You said: " + in.Messages[1].Parts[0].Text
			want := "You said: " + userText.Text

			got, stop := streamEcho(t, s, content.Channel{Kind: content.Text}, entities.Split(echo, size))
			if stop != nil || got != want {
				t.Fatalf("%s: streamed (stop %+v) echo %q\n%q\nwant\n%q", name, stop, echo, got, want)
			}
			for _, html := range []bool{true, false} {
				s2 := e.NewSession(engine.Options{})
				if _, err := s2.Input(ctx, msgs); err != nil {
					t.Fatal(err)
				}
				call := content.Channel{Kind: content.ToolCall}
				got, stop := streamEcho(t, s2, call, entities.Split(echoArgs(in.Messages[1].Parts[0].Text, html), size))
				var args map[string]string
				if stop != nil || json.Unmarshal([]byte(got), &args) != nil || args["note"] != userText.Text {
					t.Fatalf("%s: tool call (HTML escaped %v) got\n%s\nwant the note\n%q", name, html, got, userText.Text)
				}
			}
			s3 := e.NewSession(engine.Options{})
			if _, err := s3.Input(ctx, msgs); err != nil {
				t.Fatal(err)
			}
			out, err := s3.Output(ctx, []engine.Content{{Channel: content.Channel{Kind: content.Text}, Text: echo},
				{Channel: content.Channel{Kind: content.ToolCall}, Name: "note", Text: echoArgs(in.Messages[1].Parts[0].Text, true)}})
			if err != nil || out.Stop != nil || out.Contents[0].Text != want {
				t.Fatalf("%s: not streamed: %v %+v\n%q\nwant\n%q", name, err, out.Stop, out.Contents[0].Text, want)
			}
			if out.Contents[1].Text != echoArgs(userText.Text, false) && out.Contents[1].Text != echoArgs(userText.Text, true) {
				var args map[string]string
				if json.Unmarshal([]byte(out.Contents[1].Text), &args) != nil || args["note"] != userText.Text {
					t.Fatalf("%s: not streamed tool call %s", name, out.Contents[1].Text)
				}
			}
		}
	}
}

// streamEcho streams deltas on ch and finishes the stream; it returns what ch released.
func streamEcho(t *testing.T, s *engine.Session, ch content.Channel, deltas []string) (string, *engine.Verdict) {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	take := func(step engine.Step, err error) *engine.Verdict {
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range step.Release {
			if c.Channel == ch {
				out.Write(c.Text)
			}
		}
		return step.Stop
	}
	for _, d := range deltas {
		if v := take(s.Delta(ctx, ch, d)); v != nil {
			return out.String(), v
		}
	}
	if ch.Kind == content.ToolCall {
		if v := take(s.EndToolCall(ctx, ch, "note")); v != nil {
			return out.String(), v
		}
	}
	v := take(s.Finish(ctx))
	return out.String(), v
}
