package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// fake is a scripted classifier: answer decides each result; the inputs it was sent are
// kept in order.
type fake struct {
	mu     sync.Mutex
	inputs []classify.Input
	answer func(ctx context.Context, in classify.Input) (classify.Result, error)
}

func (f *fake) Classify(ctx context.Context, in classify.Input) (classify.Result, error) {
	f.mu.Lock()
	f.inputs = append(f.inputs, in)
	f.mu.Unlock()
	return f.answer(ctx, in)
}

func (f *fake) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.inputs))
	for i, in := range f.inputs {
		out[i] = in.Text
	}
	return out
}

func (f *fake) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.inputs)
}

// answering returns a fake that always answers res.
func answering(res classify.Result) *fake {
	return &fake{answer: func(context.Context, classify.Input) (classify.Result, error) { return res, nil }}
}

// words returns a fake for a classifier whose category i matches wherever words[i] occurs:
// score 1 and a span per occurrence, like a built-in detector. With in.More it reports as
// Open the earliest end of the text that is a proper prefix of a word (an occurrence that
// may still be arriving).
func words(ws ...string) *fake {
	return &fake{answer: func(_ context.Context, in classify.Input) (classify.Result, error) {
		res := classify.Result{Scores: make([]float64, len(ws)), Open: len(in.Text)}
		if in.More {
			res.Open = openPrefix(in.Text, ws)
		}
		for i, w := range ws {
			for off := 0; ; {
				j := strings.Index(in.Text[off:], w)
				if j < 0 {
					break
				}
				res.Scores[i] = 1
				res.Spans = append(res.Spans, classify.Span{Start: off + j, End: off + j + len(w), Category: i})
				off += j + len(w)
			}
		}
		return res, nil
	}}
}

// openPrefix returns the earliest i such that text[i:] is a proper, nonempty prefix of one
// of ws, or len(text).
func openPrefix(text string, ws []string) int {
	for i := range len(text) {
		for _, w := range ws {
			if rest := text[i:]; len(rest) < len(w) && strings.HasPrefix(w, rest) {
				return i
			}
		}
	}
	return len(text)
}

// world builds classifiers, backends and guardrails for a test.
type world struct {
	classifiers []*policy.Classifier
	backends    map[string]classify.Classifier
	guardrails  []*policy.Guardrail
}

type classifierOption func(*policy.Classifier)

func withCategories(ids ...string) classifierOption {
	return func(c *policy.Classifier) {
		for _, id := range ids {
			c.Categories = append(c.Categories, policy.Category{ID: id, Description: "description of " + id})
		}
	}
}

func withQuestion(id string, typ policy.QuestionType, values ...string) classifierOption {
	return func(c *policy.Classifier) {
		q := policy.Question{ID: id, Type: typ}
		for _, v := range values {
			q.Criteria = append(q.Criteria, policy.Criterion{Value: v, Description: "means " + v})
		}
		c.Questions = append(c.Questions, q)
	}
}

func withSpans(hint int) classifierOption {
	return func(c *policy.Classifier) { c.Spans, c.HoldBackHint = true, hint }
}

func withClassifierModalities(ms ...classify.Modality) classifierOption {
	return func(c *policy.Classifier) {
		c.Modalities = 0
		for _, m := range ms {
			c.Modalities = c.Modalities.With(m)
		}
	}
}

func (w *world) classifier(name string, backend classify.Classifier, opts ...classifierOption) *policy.Classifier {
	c := &policy.Classifier{Key: "team/" + name, Namespace: "team", Name: name, Generation: 1,
		Backend: policy.BackendWebhook, Modalities: classify.ModalitySet(0).With(classify.Text)}
	for _, o := range opts {
		o(c)
	}
	w.classifiers = append(w.classifiers, c)
	if w.backends == nil {
		w.backends = map[string]classify.Classifier{}
	}
	if backend != nil {
		w.backends[c.Key] = backend
	}
	return c
}

type guardrailOption func(*policy.Guardrail, *policy.Classifier)

// threshold adds category rules for every category of the classifier (or those listed in
// only), with per-category overrides.
func threshold(t float64, action policy.Action, overrides map[string]float64, only ...string) guardrailOption {
	return func(g *policy.Guardrail, c *policy.Classifier) {
		g.Action = action
		for i, cat := range c.Categories {
			if len(only) > 0 && !contains(only, cat.ID) {
				continue
			}
			th := t
			if o, ok := overrides[cat.ID]; ok {
				th = o
			}
			g.Categories = append(g.Categories, policy.CategoryRule{Index: i, ID: cat.ID, Threshold: th})
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func rule(name, expr string, action policy.Action, reason string) guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) {
		r, err := policy.NewRule(name, expr, action, reason)
		if err != nil {
			panic(err)
		}
		g.Rules = append(g.Rules, r)
	}
}

func phases(ps ...policy.Phase) guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) {
		g.Phases = 0
		for _, p := range ps {
			g.Phases = g.Phases.With(p)
		}
	}
}

func streaming(st policy.Streaming) guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) {
		g.Phases = g.Phases.With(policy.PhaseStream)
		g.Streaming = st
	}
}

func reportMode() guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) { g.Mode = policy.ModeReport }
}

func failOpen() guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) { g.FailOpen = true }
}

func withTimeout(d time.Duration) guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) { g.Timeout = d }
}

func maxChars(n int) guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) { g.MaxInputChars = n }
}

func allMessages() guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) { g.AllMessages = true }
}

func priority(p int32) guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) { g.Priority = p }
}

func unsupportedPolicy(u policy.Unsupported) guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) { g.Unsupported = u }
}

func refusalIgnored() guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) { g.RefusalMatches = false }
}

func modalities(ms ...classify.Modality) guardrailOption {
	return func(g *policy.Guardrail, _ *policy.Classifier) {
		g.Modalities = 0
		for _, m := range ms {
			g.Modalities = g.Modalities.With(m)
		}
	}
}

// guardrail adds an Enforce guardrail on [Input, Output] judging text, failing closed.
func (w *world) guardrail(name string, c *policy.Classifier, opts ...guardrailOption) *policy.Guardrail {
	g := &policy.Guardrail{Key: "team/" + name, Namespace: "team", Name: name, Generation: 3, Classifier: c.Key,
		Mode: policy.ModeEnforce, Phases: policy.PhaseSet(0).With(policy.PhaseInput).With(policy.PhaseOutput),
		Modalities: classify.ModalitySet(0).With(classify.Text), RefusalMatches: true, Reason: name + " says no"}
	for _, o := range opts {
		o(g, c)
	}
	w.guardrails = append(w.guardrails, g)
	return g
}

func (w *world) engine() *Engine {
	return New(Config{Guardrails: w.guardrails, Classifiers: w.classifiers, Backends: BackendMap(w.backends)})
}

// recorder collects decision records.
type recorder struct{ records []Record }

func (r *recorder) add(rec Record) { r.records = append(r.records, rec) }

func (w *world) session() (*Session, *recorder) {
	rec := &recorder{}
	return w.engine().NewSession(Options{IDs: IDs{Pod: "app-0", RequestID: "req-1", Model: "gpt"}, Record: rec.add}), rec
}

// stream feeds text to ch in deltas of the given sizes in characters (cycling), then ends
// the channel, and returns what was released and the verdict, if any.
func stream(t *testing.T, s *Session, ch content.Channel, text string, sizes ...int) (string, *Verdict) {
	t.Helper()
	var out strings.Builder
	rs := []rune(text)
	for i, k := 0, 0; i < len(rs); k++ {
		n := min(sizes[k%len(sizes)], len(rs)-i)
		step, err := s.Delta(context.Background(), ch, string(rs[i:i+n]))
		if err != nil {
			t.Fatalf("Delta: %v", err)
		}
		collect(&out, step, ch)
		if step.Stop != nil {
			return out.String(), step.Stop
		}
		i += n
	}
	step, err := s.EndChannel(context.Background(), ch)
	if err != nil {
		t.Fatalf("EndChannel: %v", err)
	}
	collect(&out, step, ch)
	return out.String(), step.Stop
}

func collect(out *strings.Builder, step Step, ch content.Channel) {
	for _, c := range step.Release {
		if c.Channel == ch {
			out.Write(c.Text)
		}
	}
}

func user(text string) Message {
	return Message{Role: RoleUser, Parts: []Part{{Modality: classify.Text, Text: text}}}
}

func message(role, text string) Message {
	return Message{Role: role, Parts: []Part{{Modality: classify.Text, Text: text}}}
}

var (
	text0      = content.Channel{Choice: 0, Kind: content.Text}
	reasoning0 = content.Channel{Choice: 0, Kind: content.Reasoning}
	object0    = content.Channel{Choice: 0, Kind: content.Object}
)

func call0(i int) content.Channel {
	return content.Channel{Choice: 0, Kind: content.ToolCall, Index: i}
}
