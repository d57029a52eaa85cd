package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// bench is a running set-up: the three processes and the three ways to reach the provider.
type bench struct {
	cfg       *config
	dir       string
	removeDir bool
	guardBin  string
	policy    string

	provider, plain, guard *child
	children               []*child
	guardAdmin             string

	direct, plainT, guardT *target
	targets                []*target

	chatBody, streamBody []byte
	// wantChat and wantStream are the provider's answers, as direct requests get them.
	wantChat, wantStream []byte
}

// setUp starts the provider, the plain proxy and the guard and checks that each answers
// as the provider does. On error the returned bench (if any) must still be torn down.
func setUp(ctx context.Context, cfg *config) (*bench, error) {
	b := &bench{cfg: cfg, dir: cfg.workDir}
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "guardload-")
		if err != nil {
			return nil, err
		}
		b.dir, b.removeDir = dir, true
	} else if err := os.MkdirAll(b.dir, 0o750); err != nil { //nolint:gosec // the operator's own --work-dir
		return nil, err
	}
	b.guardBin = cfg.guardBin
	if b.guardBin == "" {
		bin, err := buildGuard(ctx, b.dir)
		if err != nil {
			return b, err
		}
		b.guardBin = bin
	}
	self, err := os.Executable()
	if err != nil {
		return b, err
	}

	b.provider, err = b.start("provider", nil, self, "provider", "--listen", "127.0.0.1:0",
		"--prompt-bytes", strconv.Itoa(cfg.promptBytes), "--stream-events", strconv.Itoa(cfg.streamEvents),
		"--event-delay", cfg.eventDelay.String())
	if err != nil {
		return b, err
	}
	providerAddr, err := b.provider.waitAddr(30 * time.Second)
	if err != nil {
		return b, err
	}
	providerURL := "http://" + providerAddr

	b.policy = filepath.Join(b.dir, "policy.yaml")
	if err := os.WriteFile(b.policy, []byte(policyYAML(cfg)), 0o600); err != nil { //nolint:gosec // in the operator's own --work-dir
		return b, err
	}
	var plainAddr string
	if cfg.baselineBin != "" {
		b.plain, plainAddr, _, err = b.startGuard(ctx, "baseline guard", cfg.baselineBin, cfg.plainEnv, providerURL)
	} else {
		b.plain, err = b.start("plain proxy", cfg.plainEnv, self, "plainproxy", "--listen", "127.0.0.1:0", "--upstream", providerURL)
		if err == nil {
			plainAddr, err = b.plain.waitAddr(10 * time.Second)
		}
	}
	if err != nil {
		return b, err
	}
	var guardAddr string
	if b.guard, guardAddr, b.guardAdmin, err = b.startGuard(ctx, "guard", b.guardBin, cfg.guardEnv, providerURL); err != nil {
		return b, err
	}

	b.direct = newTarget("direct", providerURL, nil)
	b.plainT = newTarget(cfg.plainName(), "http://"+plainAddr, b.plain)
	b.guardT = newTarget("guard", "http://"+guardAddr, b.guard)
	b.targets = []*target{b.direct, b.plainT, b.guardT}
	b.chatBody = chatRequest(cfg.promptBytes, false)
	b.streamBody = chatRequest(cfg.promptBytes, true)
	return b, b.preflight(ctx)
}

// startGuard starts the guard binary bin with the run's policy and waits until it is
// ready; it returns the process, its proxy address and its admin address.
func (b *bench) startGuard(ctx context.Context, name, bin string, env []string, providerURL string) (*child, string, string, error) {
	return b.startGuardOut(ctx, name, bin, env, providerURL, nil)
}

// startGuardOut is startGuard with the guard's stdout sent to out (when not nil) and
// extra flags added to its command line.
func (b *bench) startGuardOut(ctx context.Context, name, bin string, env []string, providerURL string, out *os.File, extra ...string) (*child, string, string, error) {
	addr, err := freePort(ctx)
	if err != nil {
		return nil, "", "", err
	}
	admin, err := freePort(ctx)
	if err != nil {
		return nil, "", "", err
	}
	args := append([]string{"--listen", addr, "--admin-listen", admin,
		"--openai-upstream", providerURL, "--anthropic-upstream", providerURL, "--policy-file", b.policy,
		"--log-level", "warn"}, extra...)
	c, err := startChildOut(name, bin, args, env, out)
	if err == nil {
		b.children = append(b.children, c)
	}
	if err != nil {
		return nil, "", "", err
	}
	return c, addr, admin, c.waitReady(ctx, "http://"+admin+"/readyz")
}

func (b *bench) start(name string, env []string, path string, args ...string) (*child, error) {
	c, err := startChild(name, path, args, env)
	if err != nil {
		return nil, err
	}
	b.children = append(b.children, c)
	return c, nil
}

// tearDown stops the children, the guard first (so that it is not left without its
// provider), and removes the temporary directory.
func (b *bench) tearDown() {
	for i := len(b.children) - 1; i >= 0; i-- {
		b.children[i].stop(10 * time.Second)
	}
	if b.removeDir {
		_ = os.RemoveAll(b.dir) //nolint:gosec // the temporary directory this run created
	}
}

// policyYAML is the guard's policy: the built-in default packs on Input and Output
// (and Stream with --stream-phase), enforcing.
func policyYAML(cfg *config) string {
	phases, streaming := "[Input, Output]", ""
	if cfg.streamPhase {
		phases = "[Input, Stream, Output]"
		streaming = fmt.Sprintf("  streaming:\n    evaluateEveryChars: %d\n", cfg.streamCadence)
	}
	return `apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata:
  name: builtin-defaults
spec:
  builtin:
    packs: [pii, secrets, prompt-injection]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata:
  name: default-packs
spec:
  mode: Enforce
  classifierRef:
    name: builtin-defaults
  phases: ` + phases + `
  threshold: 1
  action: Block
  reason: The default guardrail packs refused this content.
` + streaming
}

// policyDescription says in a line what the guard enforces.
func (b *bench) policyDescription() string {
	if b.cfg.streamPhase {
		return fmt.Sprintf("built-in packs pii, secrets, prompt-injection; Block; Input, Stream (every %d chars, default hold-back), Output; Enforce", b.cfg.streamCadence)
	}
	return "built-in packs pii, secrets, prompt-injection; Block; Input and Output; Enforce"
}

// preflight sends one chat request and one stream through each target and checks that the
// proxies answer with the provider's bytes — a workload that tripped a detector, or a
// proxy that does not work, would make every number meaningless.
func (b *bench) preflight(ctx context.Context) error {
	client := &http.Client{Transport: newTransport(), Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	for _, t := range b.targets {
		for _, streamed := range []bool{false, true} {
			body := b.chatBody
			if streamed {
				body = b.streamBody
			}
			got, err := post(ctx, client, t.url, body)
			if err != nil {
				return fmt.Errorf("preflight request to the %s: %w", t.name, err)
			}
			want := &b.wantChat
			if streamed {
				want = &b.wantStream
			}
			switch {
			case t == b.direct:
				*want = got
			case streamed && b.cfg.streamPhase:
				// Hold-back re-chunks the stream: its events differ, its end does not.
				if !bytes.HasSuffix(got, []byte("data: [DONE]\n\n")) || bytes.Contains(got, []byte("content_filter")) {
					return fmt.Errorf("preflight stream through the %s was changed or cut:\n%s", t.name, indent(string(got)))
				}
			case !bytes.Equal(got, *want):
				return fmt.Errorf("preflight: the %s answered differently from the provider (streamed: %v); a detector may have matched the workload:\n%s",
					t.name, streamed, indent(string(got)))
			}
		}
	}
	return nil
}

func post(ctx context.Context, client *http.Client, base string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer load-test")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, got)
	}
	return got, nil
}

// idleWait is how long the harness leaves a guard without requests before it reads its
// idle memory: past the guard's idle release (guardproc.IdleRelease, one to two seconds
// after the last request), so that the figure does not depend on the moment it is read.
const idleWait = 3 * time.Second

// measure runs the chat load, then the streaming load, each as a warm-up of every target
// followed by rounds of one slice per target, and gathers the report.
func (b *bench) measure(ctx context.Context) (*report, error) {
	cfg := b.cfg
	rep := &report{cfg: cfg, guardBin: b.guardBin, guardBuilt: cfg.guardBin == "", policy: b.policyDescription(),
		direct: b.direct, plain: b.plainT, guard: b.guardT,
		chatBytes: len(b.chatBody), answerBytes: len(b.wantChat), streamBytes: len(b.wantStream),
		loadBefore: loadAvg()}

	// Idle memory: the guard has loaded its policy and answered two requests.
	if err := sleep(ctx, idleWait); err != nil {
		return nil, err
	}
	var err error
	if rep.guardIdle, err = memStatus(b.guard.pid()); err != nil {
		return nil, err
	}
	if rep.plainIdle, err = memStatus(b.plain.pid()); err != nil {
		return nil, err
	}

	usage0, err := b.cpuUsage()
	if err != nil {
		return nil, err
	}
	sampler := startSampler(b.guard.pid(), b.plain.pid())
	defer sampler.stop() // on the error paths; stopping twice is harmless

	metricsURL := "http://" + b.guardAdmin + "/metrics"
	before, err := scrapeGuard(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	chatCheck := map[*target]check{b.direct: sameBody(b.wantChat), b.plainT: sameBody(b.wantChat), b.guardT: sameBody(b.wantChat)}
	streamCheck := map[*target]check{}
	for _, t := range b.targets {
		streamCheck[t] = completeStream
		if t == b.direct || !cfg.streamPhase {
			streamCheck[t] = sameBody(b.wantStream)
		}
	}
	rep.chat, err = b.phase(ctx, false, b.chatBody, cfg.rate, cfg.warmup, cfg.slice, chatCheck)
	if err != nil {
		return nil, err
	}
	afterChat, err := scrapeGuard(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	rep.chatGC = afterChat.gcCycles - before.gcCycles
	rep.stream, err = b.phase(ctx, true, b.streamBody, cfg.streamRate, cfg.streamWarmup, cfg.streamSlice, streamCheck)
	rep.guardLoad, rep.plainLoad = sampler.stop()
	if err != nil {
		return nil, err
	}

	usage1, err := b.cpuUsage()
	if err != nil {
		return nil, err
	}
	rep.machine = usage1.since(usage0)
	rep.loadAfter = loadAvg()
	if m, err := memStatus(b.guard.pid()); err == nil {
		rep.guardHWM = m.hwm
	}
	rep.metrics, err = scrapeGuard(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	rep.startup, rep.startupMax, err = b.measureStartup(ctx)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// phaseResult is one load (chat or stream) on every target: slices per round.
type phaseResult map[*target][]sliceResult

// phase runs a warm-up on each target, then rounds of one slice per target; the order
// rotates each round so that no target always follows the same one.
func (b *bench) phase(ctx context.Context, streamed bool, body []byte, rate int, warmup, slice time.Duration, ok map[*target]check) (phaseResult, error) {
	res := phaseResult{}
	if warmup > 0 {
		for _, t := range b.targets {
			if _, err := attack(ctx, t, streamed, body, rate, warmup, ok[t]); err != nil {
				return nil, err
			}
		}
	}
	for r := range b.cfg.rounds {
		for i := range b.targets {
			t := b.targets[(i+r)%len(b.targets)]
			if err := sleep(ctx, 200*time.Millisecond); err != nil { // let the previous slice's connections go quiet
				return nil, err
			}
			s, err := attack(ctx, t, streamed, body, rate, slice, ok[t])
			if err != nil {
				return nil, err
			}
			res[t] = append(res[t], s)
		}
	}
	return res, nil
}

// cpuUsage is a snapshot of the machine's CPU time and of the harness's processes'.
type cpuUsage struct {
	at      time.Time
	machine machineCPU
	ours    time.Duration
}

func (b *bench) cpuUsage() (cpuUsage, error) {
	m, err := readMachineCPU()
	if err != nil {
		return cpuUsage{}, err
	}
	u := cpuUsage{at: time.Now(), machine: m}
	for _, pid := range []int{os.Getpid(), b.provider.pid(), b.plain.pid(), b.guard.pid()} {
		d, err := cpuTime(pid)
		if err != nil {
			return cpuUsage{}, err
		}
		u.ours += d.total()
	}
	return u, nil
}

// machineLoad is how busy the machine was during the measurement.
type machineLoad struct {
	wall        time.Duration
	total, busy time.Duration // all CPUs
	ours        time.Duration // the harness, the provider, the plain proxy and the guard
}

func (u cpuUsage) since(before cpuUsage) machineLoad {
	return machineLoad{wall: u.at.Sub(before.at), total: u.machine.total - before.machine.total, busy: u.machine.busy - before.machine.busy,
		ours: u.ours - before.ours}
}

// sampler samples the resident memory of the guard and the plain proxy under load.
type sampler struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// peaks of VmRSS, in bytes
	guard, plain int64
}

func startSampler(guardPID, plainPID int) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{cancel: cancel}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := memStatus(guardPID); err == nil {
				s.guard = max(s.guard, m.rss)
			}
			if m, err := memStatus(plainPID); err == nil {
				s.plain = max(s.plain, m.rss)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends sampling and returns the peaks; it may be called more than once.
func (s *sampler) stop() (guard, plain int64) {
	s.cancel()
	s.wg.Wait()
	return s.guard, s.plain
}

// guardMetrics is what the guard's /metrics says it did: evaluations by phase and outcome,
// requests by outcome, and its Go runtime's garbage collections.
type guardMetrics struct {
	decisions map[string]float64 // "phase/outcome"
	requests  map[string]float64 // "family/outcome"
	gcCycles  float64
}

// scrapeGuard reads the guard's counters, to show that it judged what it was sent.
func scrapeGuard(ctx context.Context, url string) (guardMetrics, error) {
	m := guardMetrics{decisions: map[string]float64{}, requests: map[string]float64{}}
	// The guard's admin address on loopback, chosen by the harness.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil) //nolint:gosec // see above
	if err != nil {
		return m, err
	}
	resp, err := http.DefaultClient.Do(req) //nolint:gosec // see above
	if err != nil {
		return m, fmt.Errorf("reading the guard's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_gc_duration_seconds_count "); ok {
			m.gcCycles, _ = strconv.ParseFloat(v, 64)
			continue
		}
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "guard_decisions_total":
			m.decisions[label(labels, "phase")+"/"+label(labels, "outcome")] += v
		case "guard_requests_total":
			m.requests[label(labels, "family")+"/"+label(labels, "outcome")] += v
		}
	}
	if len(m.decisions) == 0 {
		return m, errors.New("the guard's metrics show no decision: it did not judge the load")
	}
	return m, nil
}

// label returns the value of a label in a Prometheus text-format label set.
func label(set, name string) string {
	_, v, ok := strings.Cut(","+set, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
