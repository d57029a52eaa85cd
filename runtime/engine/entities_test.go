package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/test/entities"
)

// detectorEngine compiles the pii and secrets packs and one Enforce guardrail on Stream
// and Output, as a user writes it: streaming with the given cadence and hold-back (nil:
// unset, the hold-back follows pending matches).
func detectorEngine(t testing.TB, action spec.Action, cadence int32, holdBack *spec.IntOrString) *engine.Engine {
	t.Helper()
	e, _ := compileDetectors(t, action, cadence, holdBack, spec.PackPII, spec.PackSecrets)
	return e
}

// TestDetectorsNeverReleaseAnEntityInPart is the zero-leak property with the real built-in
// detectors: entities of every kind and of varying length, whose prefixes already match,
// planted at random offsets in prose and streamed in deltas of every size from 1 to 32
// bytes, under the default hold-back, Unbounded and an integer one. Redacted, the client
// gets exactly the non-streamed redaction, so no 8 bytes of an entity the detectors find
// reach the client; blocked, nothing of it; with nothing planted, the upstream text byte
// for byte. The detectors must find every generated value whole but for at most one random
// password in ten (generic-secret's identifier heuristic; the figure is logged).
func TestDetectorsNeverReleaseAnEntityInPart(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 8))
	unbounded, fixed := spec.FromString("Unbounded"), spec.FromInt32(300)
	holdBacks := []*spec.IntOrString{nil, nil, &unbounded, &fixed}
	engines := map[string]*engine.Engine{}
	get := func(action spec.Action, cadence int32, hb *spec.IntOrString) *engine.Engine {
		key := fmt.Sprint(action, cadence, hb)
		if engines[key] == nil {
			engines[key] = detectorEngine(t, action, cadence, hb)
		}
		return engines[key]
	}
	missed, planted := map[string]int{}, map[string]int{}
	defer func() {
		// Random passwords of 12 to 50 characters from 66 symbols: the generic-secret
		// detector tells some of them from identifiers wrongly (isWordlike). Every other
		// kind is found whole every time.
		for kind, n := range missed {
			t.Logf("missed whole: %s %d of %d", kind, n, planted[kind])
			if kind != "generic-secret" || 10*n > planted[kind] {
				t.Errorf("the detectors missed %d of %d %s values whole", n, planted[kind], kind)
			}
		}
	}()
	for size := 1; size <= 32; size++ {
		for _, kind := range entities.Kinds {
			es := []entities.Entity{entities.New(rng, kind), entities.New(rng, entities.Kinds[rng.IntN(len(entities.Kinds))])}
			txt := entities.Plant(rng, 10+rng.IntN(40), es...)
			cadence := []int32{0, 0, 16}[rng.IntN(3)]
			hb := holdBacks[rng.IntN(len(holdBacks))]
			name := fmt.Sprintf("%s, delta %d, cadence %d, hold-back %v", kind, size, cadence, hb)

			// What a non-streamed answer gets is the reference.
			e := get(spec.ActionRedact, cadence, hb)
			s := e.NewSession(engine.Options{})
			res, err := s.Output(context.Background(), []engine.Content{{Channel: content.Channel{Kind: content.Text}, Text: txt.Text}})
			if err != nil || res.Stop != nil {
				t.Fatalf("%s: non-streamed: %v %+v", name, err, res.Stop)
			}
			want := res.Contents[0].Text
			found := txt.Entities[:0:0]
			for _, e := range txt.Entities {
				planted[e.Kind]++
				if piece := (entities.Text{Entities: []entities.Entity{e}}).Leaked(want, 8); piece != "" {
					// A detector miss, not a streaming leak: recall is the corpus tests'
					// to measure. The stream must still equal the whole judgement.
					missed[e.Kind]++
					t.Logf("%s: the detectors miss %q even whole", name, piece)
					continue
				}
				found = append(found, e)
			}
			txt.Entities = found

			got, stop := stream(t, e, entities.Split(txt.Text, size))
			if stop != nil {
				t.Fatalf("%s: stopped: %+v", name, stop)
			}
			if piece := txt.Leaked(got, 8); piece != "" {
				t.Fatalf("%s: %q reached the client in\n%q", name, piece, got)
			}
			if got != want {
				t.Fatalf("%s: streamed\n%q\nnot streamed\n%q", name, got, want)
			}

			got, stop = stream(t, get(spec.ActionBlock, cadence, hb), entities.Split(txt.Text, size))
			if stop == nil && len(txt.Entities) > 0 {
				t.Fatalf("%s: Block did not block", name)
			}
			if piece := txt.Leaked(got, 8); piece != "" || !strings.HasPrefix(txt.Text, got) {
				t.Fatalf("%s: Block released %q", name, got)
			}

			clean := entities.Prose(rng, 30+rng.IntN(60))
			if got, stop := stream(t, e, entities.Split(clean, size)); stop != nil || got != clean {
				t.Fatalf("%s: with nothing to find released %q, want %q", name, got, clean)
			}
		}
	}
}

func FuzzDetectorsNeverReleaseAnEntityInPart(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(0))
	f.Add(uint64(7), uint8(1), uint8(13))
	f.Add(uint64(42), uint8(31), uint8(5))
	e := detectorEngine(f, spec.ActionRedact, 0, nil)
	f.Fuzz(func(t *testing.T, seed uint64, size, kind uint8) {
		rng := rand.New(rand.NewPCG(seed, seed>>3))
		txt := entities.Plant(rng, 5+rng.IntN(30), entities.New(rng, entities.Kinds[int(kind)%len(entities.Kinds)]))
		res, err := e.NewSession(engine.Options{}).Output(context.Background(), []engine.Content{{Channel: content.Channel{Kind: content.Text}, Text: txt.Text}})
		if err != nil || res.Stop != nil {
			t.Fatalf("non-streamed: %v %+v", err, res.Stop)
		}
		got, stop := stream(t, e, entities.Split(txt.Text, 1+int(size)%32))
		if stop != nil {
			t.Fatalf("stopped: %+v", stop)
		}
		if want := res.Contents[0].Text; got != want {
			t.Fatalf("streamed\n%q\nnot streamed\n%q", got, want)
		}
		if piece := txt.Leaked(got, 8); piece != "" && txt.Leaked(res.Contents[0].Text, 8) == "" {
			t.Fatalf("%q reached the client in %q", piece, got)
		}
	})
}
