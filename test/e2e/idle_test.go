package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// An app sends a burst of calls through its guard with the official SDK and then goes
// quiet, as most apps behind a sidecar do most of the time: the guard returns what the
// burst used to the operating system once, and says so in its metrics.
func TestAGuardReturnsItsMemoryWhenTheAppGoesQuiet(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t, piiClassifier("pii"),
		guardrail("redact-pii", "pii", phases(v1alpha1.PhaseInput, v1alpha1.PhaseOutput), action(v1alpha1.ActionRedact)),
	), upstream(p.URL))
	const releases = "guard_idle_memory_releases_total"
	if n := g.metric(releases); n != 0 {
		t.Fatalf("%s = %v before any call", releases, n)
	}

	c := openaiClient(g)
	// About 16 KiB of prose a prompt: the burst allocates several times the 4 MiB the
	// guard waits for.
	prompt := strings.Repeat("Summarise the quarterly report for the board, section by section. ", 250)
	for i := range 120 {
		if _, err := c.Chat.Completions.New(t.Context(), chatParams(prompt)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	busy := vmRSS(t, g)

	deadline := time.Now().Add(waitTimeout)
	for g.metric(releases) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still 0 %s after the last call", releases, waitTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("VmRSS %d KiB after the burst, %d KiB once released", busy, vmRSS(t, g))

	// Quiet on: one release per quiet spell, not one a second.
	time.Sleep(3 * time.Second)
	if n := g.metric(releases); n != 1 {
		t.Fatalf("%s = %v after one quiet spell, want 1", releases, n)
	}
}

// vmRSS is the guard process's resident memory, in KiB.
func vmRSS(t *testing.T, g *guard) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(g.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
