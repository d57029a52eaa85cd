package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// A policy is compiled once per generation of the sets it is part of: the rebuilds a
// relabel causes (the same Guardrails, Classifier and generations) compile nothing;
// an edit of the Guardrail compiles its set again, once.
func TestRebuildsOfAnUnchangedSetCompileNothing(t *testing.T) {
	c, _ := relabelFixture(t)
	b := &builder{cache: c, secrets: c}
	h := newHub(b.build, time.Millisecond, logr.Discard(), serverMetrics)
	defer h.stop()
	ctx := context.Background()
	var changed <-chan struct{}
	get := func(i int) *built {
		t.Helper()
		sel, app := relabel(i)
		snap, ch, err := h.get(ctx, "shop", sel)
		if err != nil || snap.enforced != app+"=1" && snap.enforced != app+"=2" {
			t.Fatalf("relabel %d: %v %q", i, err, snap.enforced)
		}
		changed = ch
		return snap
	}
	// touch wakes the subscriber as a change in the namespace does, and waits for it.
	touch := func() {
		t.Helper()
		h.touch("shop")
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatal("the hub did not wake the subscriber")
		}
	}
	get(9) // app=api: one set
	get(0) // app=web: the other
	compiles := func() int {
		b.compiled.mu.Lock()
		defer b.compiled.mu.Unlock()
		return b.compiled.compiles
	}
	if n := compiles(); n != 2 {
		t.Fatalf("two policy sets compiled %d times, want 2", n)
	}
	for i := 1; i <= 30; i++ {
		touch()
		get(i)
	}
	if n := compiles(); n != 2 {
		t.Errorf("30 rebuilds of the two unchanged sets compiled %d times in all, want still 2", n)
	}
	g := &v1alpha1.Guardrail{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "web"}, g); err != nil {
		t.Fatal(err)
	}
	g.Spec.Reason = "Refused by the new web"
	g.Generation = 2
	if err := c.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	touch()
	if snap := get(31); snap.enforced != "web=2" {
		t.Fatalf("after the edit the snapshot enforces %q, want web=2", snap.enforced)
	}
	if n := compiles(); n != 3 {
		t.Errorf("an edit of one Guardrail: %d compiles in all, want 3 (its set once more)", n)
	}
}
