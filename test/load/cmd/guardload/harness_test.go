package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/builtin"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/test/load/workload"
)

func TestWorkloadIsCleanForTheDefaultPacks(t *testing.T) {
	var detectors []string
	for _, pack := range []string{"pii", "secrets", "prompt-injection"} {
		detectors = append(detectors, builtin.Packs()[pack]...)
	}
	c, err := builtin.New(builtin.Config{Detectors: detectors})
	if err != nil {
		t.Fatal(err)
	}
	var answer strings.Builder
	for _, d := range answerDeltas(200) {
		answer.WriteString(d.Text)
	}
	for name, text := range map[string]string{"the prompt": workload.Prose(2048), "the answer": answer.String()} {
		t.Run(name+" matches no detector", func(t *testing.T) {
			res, err := c.Classify(context.Background(), classify.Input{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range res.Spans {
				t.Errorf("matched %q", text[s.Start:s.End])
			}
		})
	}
}

func TestPromptHasTheRequestedSize(t *testing.T) {
	for _, n := range []int{64, 2048, 5000} {
		if got := len(workload.Prose(n)); got > n || got < n-20 {
			t.Errorf("workload.Prose(%d) has %d bytes", n, got)
		}
	}
}

func TestTimedBodyNotesEachEventOnce(t *testing.T) {
	stream := "data: {\"a\":1}\n\n" + "data: {\"b\":2}\r\n\r\n" + ": comment\n\n" + "data: [DONE]\n\n"
	for name, r := range map[string]io.Reader{
		"in one read":       strings.NewReader(stream),
		"one byte per read": iotest.OneByteReader(strings.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			c := &eventClock{}
			b := &timedBody{rc: io.NopCloser(r), start: time.Now(), clock: c}
			if _, err := io.Copy(io.Discard, b); err != nil {
				t.Fatal(err)
			}
			_ = b.Close()
			got := c.take()
			if len(got) != 1 || len(got[0].arrivals) != 4 {
				t.Fatalf("got %v, want one stream of 4 events", got)
			}
		})
	}
}

func TestTimedBodyDropsStreamsNotReadToTheEnd(t *testing.T) {
	c := &eventClock{}
	b := &timedBody{rc: io.NopCloser(strings.NewReader("data: 1\n\ndata: 2\n\n")), start: time.Now(), clock: c}
	_, _ = b.Read(make([]byte, 4))
	_ = b.Close()
	if got := c.take(); len(got) != 0 {
		t.Fatalf("got %v, want nothing", got)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(ds, tc.q); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v", got)
	}
}

func TestParseStatCPUCountsFromTheLastParenthesis(t *testing.T) {
	line := []byte("4242 (guard (x) y) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 9 0 100 200 300")
	got, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if got.user != 2500*time.Millisecond || got.sys != 750*time.Millisecond {
		t.Errorf("got %+v, want user 2.5s, sys 750ms", got)
	}
	if _, err := parseStatCPU([]byte("garbage")); err == nil {
		t.Error("garbage parsed")
	}
}

// TestCPUTimeIsExactWhereTheKernelKeepsIt: a process's CPU time comes from its threads'
// schedstat to the nanosecond, not in 10 ms ticks; a reading without it makes any sum or
// difference it enters fall back to ticks.
func TestCPUTimeIsExactWhereTheKernelKeepsIt(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.noRun {
		t.Skip("this kernel keeps no schedstat")
	}
	// Spin until the kernel's own account (getrusage) says the process used 30 ms of CPU:
	// a wall-clock spin gets less CPU than its duration on a busy machine.
	start := rusageCPU(t)
	for x := 0; rusageCPU(t)-start < 30*time.Millisecond; x++ {
		for k := range 10000 {
			x += k & 1
		}
	}
	after, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	d := after.sub(before)
	if d.total() < 25*time.Millisecond || d.total()%clockTick == 0 {
		t.Errorf("30 ms of CPU measured %v: want at least 25 ms, to the nanosecond", d.total())
	}
	ticks := cpuTimes{user: 30 * time.Millisecond, sys: 10 * time.Millisecond, noRun: true}
	if got := d.add(ticks).total(); got != d.user+d.sys+40*time.Millisecond {
		t.Errorf("sum with a tick-only reading = %v, want the ticks' %v", got, d.user+d.sys+40*time.Millisecond)
	}
	if got := (cpuTimes{}).add(d).total(); got != d.total() {
		t.Errorf("zero + d = %v, want %v", got, d.total())
	}
}

// TestSystemCallsAndWakeUpsAreCounted: a process's read and write system calls come from
// /proc/<pid>/io and its times on a CPU from its threads' schedstat; the test makes 200 of
// each kind itself (pipe writes and reads, and sleeps) and finds at least as many counted.
func TestSystemCallsAndWakeUpsAreCounted(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.calls < 0 || before.noRun {
		t.Skip("this kernel counts no system calls per process or keeps no schedstat")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(); _ = w.Close() }()
	var b [1]byte
	for range 100 {
		if _, err := w.Write(b[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		// The thread itself sleeps (not only the goroutine): it goes back on a CPU after.
		// The Go runtime's preemption signals may interrupt the sleep (EINTR): sleep again.
		for {
			err := syscall.Nanosleep(&syscall.Timespec{Nsec: 100_000}, nil)
			if err == nil {
				break
			}
			if err != syscall.EINTR {
				t.Fatal(err)
			}
		}
	}
	after, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	d := after.sub(before)
	if d.calls < 200 {
		t.Errorf("200 reads and writes counted as %d system calls", d.calls)
	}
	if d.slices < 100 {
		t.Errorf("100 sleeps counted as %d times on a CPU", d.slices)
	}
	if got := callsPer(d, 2); got == "-" {
		t.Error("callsPer shows nothing for a counted reading")
	}
	if got := callsPer(d.sub(cpuTimes{calls: -1}), 2); got != "-" {
		t.Errorf("callsPer = %q for a difference with an uncounted reading, want -", got)
	}
}

func TestParseIOCallsSumsReadsAndWrites(t *testing.T) {
	io := []byte("rchar: 6976\nwchar: 12\nsyscr: 10\nsyscw: 3\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
	if got := parseIOCalls(io); got != 13 {
		t.Errorf("parseIOCalls = %d, want 13", got)
	}
	for _, bad := range []string{"", "syscr: 10\n", "syscr: x\nsyscw: 1\n"} {
		if got := parseIOCalls([]byte(bad)); got != -1 {
			t.Errorf("parseIOCalls(%q) = %d, want -1", bad, got)
		}
	}
}

// rusageCPU is the CPU time the process has used, user and system, as getrusage reports it.
func rusageCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestLabelReadsOneLabelOfASet(t *testing.T) {
	set := `guardrail="default/default-packs",outcome="allowed",phase="Input"`
	for name, want := range map[string]string{"guardrail": "default/default-packs", "outcome": "allowed", "phase": "Input", "family": ""} {
		if got := label(set, name); got != want {
			t.Errorf("label %s = %q, want %q", name, got, want)
		}
	}
}

func TestFirstLineDeliversTheAddressAcrossWrites(t *testing.T) {
	f := &firstLine{line: make(chan string, 1)}
	for _, p := range []string{"ADDR 127.0.0.1:", "4242\nmore\n", "and more\n"} {
		if _, err := f.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-f.line; got != "ADDR 127.0.0.1:4242" {
		t.Errorf("got %q", got)
	}
}

func TestPolicyCompilesToTheDefaultPacksOnTheChosenPhases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    config
		stream bool
	}{
		{"Input and Output", config{}, false},
		{"with --stream-phase, Stream too", config{streamPhase: true, streamCadence: 64}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(path, []byte(policyYAML(&tc.cfg)), 0o600); err != nil {
				t.Fatal(err)
			}
			snap, err := (&policysource.File{Path: path}).Load()
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Guardrails) != 1 || len(snap.Classifiers) != 1 {
				t.Fatalf("got %d guardrails and %d classifiers, want one of each", len(snap.Guardrails), len(snap.Classifiers))
			}
			g := snap.Guardrails[0]
			if !g.Phases.Has(policy.PhaseInput) || !g.Phases.Has(policy.PhaseOutput) || g.Phases.Has(policy.PhaseStream) != tc.stream {
				t.Errorf("phases %v", g.Phases)
			}
			var want []string
			for _, pack := range []string{"pii", "secrets", "prompt-injection"} {
				want = append(want, builtin.Packs()[pack]...)
			}
			if got := snap.Classifiers[0].Builtin.Detectors; !slices.Equal(got, want) {
				t.Errorf("detectors %v, want %v", got, want)
			}
		})
	}
}
