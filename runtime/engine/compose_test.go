package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Remote evaluations of one round run concurrently: a request judged by three remote
// classifiers waits for the slowest, not for their sum. Each fake here answers only once
// all three were called, and fails after a while otherwise, so that sequential
// evaluations fail the request.
func TestRemoteEvaluationsRunConcurrently(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(3)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	barrier := func() *fake {
		return &fake{answer: func(ctx context.Context, _ classify.Input) (classify.Result, error) {
			arrived.Done()
			select {
			case <-all:
				return classify.Result{Scores: []float64{0}}, nil
			case <-time.After(2 * time.Second):
				return classify.Result{}, errors.New("the other evaluations never started")
			}
		}}
	}
	w := &world{}
	for _, name := range []string{"a", "b", "c"} {
		c := w.classifier(name, barrier(), withCategories("harm"))
		w.guardrail(name, c, threshold(0.5, policy.ActionBlock, nil))
	}
	s, _ := w.session()
	res, err := s.Input(context.Background(), []Message{user("hello")})
	if err != nil || res.Stop != nil {
		t.Fatalf("err %v, verdict %+v; want the three evaluations to meet", err, res.Stop)
	}
}

// Truncation to maxInputChars counts characters and never splits one, whichever way the
// window is cut: "Ā" is two bytes, the second of which (0x80) is not a character start.
func TestTruncationKeepsWholeCharacters(t *testing.T) {
	cases := []struct {
		name string
		st   policy.Streaming
	}{
		{"a cumulative window, cut from its start", policy.Streaming{}},
		{"a chunk window, cut after rendering", policy.Streaming{ChunkWindow: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{}
			f := answering(classify.Result{Scores: []float64{0}})
			c := w.classifier("judge", f, withCategories("harm"))
			w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), maxChars(3), streaming(tc.st))
			s, _ := w.session()
			if _, err := s.Delta(context.Background(), text0, "abcĀxy"); err != nil {
				t.Fatal(err)
			}
			if got := f.texts(); len(got) != 1 || got[0] != "Āxy" {
				t.Fatalf("sent %q, want the last three characters %q", got, "Āxy")
			}
		})
	}
}

// A judge segmenting by sentences is sent the complete sentences only: a redaction that an
// earlier sanitizer made right where the next sentence starts is not part of the window.
func TestSentenceWindowStopsBeforeARedactionStartingTheNextSentence(t *testing.T) {
	w := &world{}
	tok := w.classifier("builtin", tokens(), withCategories("token"), withSpans(tokenHint))
	w.guardrail("redact", tok, phases(), threshold(0.5, policy.ActionRedact, nil), streaming(policy.Streaming{HoldBack: policy.HoldBackPending}))
	f := answering(classify.Result{Scores: []float64{0}})
	judge := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("sentences", judge, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{Sentences: true}))
	s, _ := w.session()
	if _, err := s.Delta(context.Background(), text0, "Hi.\ntk_abcdefghij rest"); err != nil {
		t.Fatal(err)
	}
	if got := f.texts(); len(got) != 1 || got[0] != "Hi.\n" {
		t.Fatalf("sent %q, want the complete sentence %q", got, "Hi.\n")
	}
}

// A whole text (here an input message) is truncated to its first maxInputChars
// characters, counting "Ā" as one.
func TestHeadTruncationCountsCharacters(t *testing.T) {
	w := &world{}
	f := answering(classify.Result{Scores: []float64{0}})
	w.guardrail("g", w.classifier("judge", f, withCategories("harm")), threshold(0.5, policy.ActionBlock, nil), maxChars(2))
	s, _ := w.session()
	if _, err := s.Input(context.Background(), []Message{user("Āxyz")}); err != nil {
		t.Fatal(err)
	}
	if got := f.texts(); len(got) != 1 || got[0] != "Āx" {
		t.Fatalf("sent %q, want the first two characters %q", got, "Āx")
	}
}
