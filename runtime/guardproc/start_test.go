package guardproc

import (
	"runtime/debug"
	"testing"
)

func TestStartRefusesAnUnknownLevelAndSetsNothing(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	if _, err := Start("loud"); err == nil {
		t.Fatal("--log-level=loud accepted")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("a refused start set GOGC to %d", got)
	}
}

func TestStartSetsGOGCUnlessTheEnvironmentDoes(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	t.Setenv("GOGC", "")
	log, err := Start("warn")
	if err != nil || log == nil {
		t.Fatalf("Start(warn): %v", err)
	}
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: the collector runs at %d, want %d", got, gcPercent)
	}
	t.Setenv("GOGC", "100")
	if _, err := Start("info"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 in the environment: the collector runs at %d", got)
	}
}
