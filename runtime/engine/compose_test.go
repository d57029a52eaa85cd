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
