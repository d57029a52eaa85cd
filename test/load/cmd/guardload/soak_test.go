package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
)

func TestSoakPolicyCompiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(soakPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := (&policysource.File{Path: path}).Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Guardrails) != 4 {
		t.Fatalf("%d guardrails, want 4", len(snap.Guardrails))
	}
}

// TestSoakLevelsAreTheMediansOfTheirWindows and the bound fails growth beyond it only.
func TestSoakLevelsAreTheMediansOfTheirWindows(t *testing.T) {
	r := &soakReport{cfg: soakConfig{warmup: 10 * time.Second, window: 5 * time.Second, bound: 10}, elapsed: 40 * time.Second}
	for i := range 40 {
		smp := soakSample{at: time.Duration(i) * time.Second, heapGoal: 100 << 20, held: 50 << 20, goroutines: 50, fds: 40}
		if i >= 35 {
			smp.heapGoal, smp.held = 109<<20, 56<<20 // +9%, +12%
		}
		if i == 36 {
			smp.heapGoal = 500 << 20 // one spike: not the median
		}
		r.samples = append(r.samples, smp)
	}
	r.levels()
	if r.warm.heapGoal != 100<<20 || r.end.heapGoal != 109<<20 {
		t.Fatalf("warm %d, end %d", r.warm.heapGoal, r.end.heapGoal)
	}
	want := []bool{true, false, true, true}
	for i, c := range r.checks {
		if c.pass != want[i] {
			t.Errorf("%s: %s, pass %v", c.what, c.measured, c.pass)
		}
	}
}

func TestSoakScheduleFollowsTheWeights(t *testing.T) {
	kinds := soakKinds()
	counts := make([]int, len(kinds))
	for _, i := range soakSchedule(kinds) {
		counts[i]++
	}
	for i, k := range kinds {
		if counts[i] != k.weight {
			t.Errorf("%s: %d in the schedule, weight %d", k.name, counts[i], k.weight)
		}
	}
}
