package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/load/workload"
)

// guardload linear (issue 15, "linear streams"): the guard's CPU per streamed character
// must not grow with the length of the answer. For each policy — the built-in packs
// together and each alone, on the Stream phase with the streaming defaults (every delta
// judged, hold-back following pending matches) and Output, and the three on Stream
// alone — one guard process is sent answers of 10 KB to 3 MB in deltas of --event-chars,
// about 3 MB of answer text per size, in --rounds interleaved rounds (each round streams
// its share of every size, the sizes in a rotated order, so that the machine's drift
// during a run falls on every size alike), and its CPU time is read from /proc around each
// size's share. A size's figure is its CPU over all rounds per KB. PASS when no size costs
// more than 1.5× per character than any smaller one (growth); max/min is printed too.
// Every answer must arrive whole: a lost or changed character fails the run.

// linearPolicies are the guard configurations measured.
var linearPolicies = []struct{ name, packs, phases string }{
	{"pii, secrets, prompt-injection", "[pii, secrets, prompt-injection]", "[Stream, Output]"},
	{"pii", "[pii]", "[Stream, Output]"},
	{"secrets", "[secrets]", "[Stream, Output]"},
	{"prompt-injection", "[prompt-injection]", "[Stream, Output]"},
	{"all three, Stream only", "[pii, secrets, prompt-injection]", "[Stream]"},
}

// linearWarmup is how many answers of the first size each guard streams before measuring.
const linearWarmup = 50

// linearMaxGrowth is the target: the per-character CPU of a size over that of any smaller
// size.
const linearMaxGrowth = 1.5

type linearConfig struct {
	guardBin   string
	sizes      []int
	eventChars int
	perSize    int
	rounds     int
	strict     bool
}

func runLinear(ctx context.Context, args []string, out io.Writer) error {
	var cfg linearConfig
	fs := flag.NewFlagSet("guardload linear", flag.ContinueOnError)
	fs.StringVar(&cfg.guardBin, "guard-bin", "", "Guard binary to measure; empty builds ./cmd/guard.")
	sizes := fs.String("sizes", "10000,100000,1000000,3000000", "Answer sizes in bytes of text, comma-separated, increasing.")
	fs.IntVar(&cfg.eventChars, "event-chars", 32, "Characters of text per streamed delta.")
	fs.IntVar(&cfg.perSize, "text-per-size", 3000000, "Bytes of answer text streamed at each size (a small answer is repeated), so that each figure rests on enough CPU time to read.")
	fs.IntVar(&cfg.rounds, "rounds", 3, "Interleaved rounds; each streams its share of --text-per-size at every size (at least one answer).")
	fs.BoolVar(&cfg.strict, "strict", false, "Exit with status 1 when a policy misses the target.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.rounds < 1 {
		return errors.New("--rounds must be at least 1")
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < cfg.eventChars {
			return fmt.Errorf("--sizes: %q", s)
		}
		if len(cfg.sizes) > 0 && n <= cfg.sizes[len(cfg.sizes)-1] {
			return fmt.Errorf("--sizes: %d after %d: give the sizes in increasing order", n, cfg.sizes[len(cfg.sizes)-1])
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	dir, err := os.MkdirTemp("", "guardload-linear-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if cfg.guardBin == "" {
		if cfg.guardBin, err = buildGuard(ctx, dir); err != nil {
			return err
		}
	}

	prov := newLongProvider(cfg.eventChars)
	for _, size := range cfg.sizes { // rendered before the server reads them concurrently
		prov.stream(size)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: prov, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	providerURL := "http://" + ln.Addr().String()

	_, _ = fmt.Fprintf(out, "Linear streams: guard CPU per streamed character, answers of %s in %d-character deltas (%s of text per size in %d interleaved rounds)\n",
		sizeList(cfg.sizes), cfg.eventChars, human(cfg.perSize), cfg.rounds)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "packs (streaming defaults)\t"
	for _, s := range cfg.sizes {
		header += human(s) + " µs/KB\t"
	}
	_, _ = fmt.Fprintln(tw, header+"growth\tmax/min\tpeak RSS\ttarget\t")
	pass := true
	for _, p := range linearPolicies {
		row, ok, err := measureLinear(ctx, &cfg, dir, providerURL, prov, p.name, linearPolicyYAML(p.packs, p.phases))
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		pass = pass && ok
		_, _ = fmt.Fprintln(tw, row)
	}
	_ = tw.Flush()
	if cfg.strict && !pass {
		return errors.New("linear streams: target missed")
	}
	return nil
}

// measureLinear runs one guard with the packs and streams every size through it.
func measureLinear(ctx context.Context, cfg *linearConfig, dir, providerURL string, prov *longProvider, name, policyYAML string) (string, bool, error) {
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(policyYAML), 0o600); err != nil {
		return "", false, err
	}
	addr, err := freePort(ctx)
	if err != nil {
		return "", false, err
	}
	admin, err := freePort(ctx)
	if err != nil {
		return "", false, err
	}
	g, err := startChild("guard", cfg.guardBin, []string{"--listen", addr, "--admin-listen", admin,
		"--openai-upstream", providerURL, "--policy-file", policy, "--log-level", "warn"}, nil)
	if err != nil {
		return "", false, err
	}
	defer g.stop(10 * time.Second)
	if err := g.waitReady(ctx, "http://"+admin+"/readyz"); err != nil {
		return "", false, err
	}
	client := &http.Client{Transport: newTransport()}
	// Warm-up, not measured: a fresh process pays for its first requests (page faults, the
	// heap growing to its working size), which would be charged to the first size.
	for range linearWarmup {
		if err := streamOnce(ctx, client, "http://"+addr, prov.text(cfg.sizes[0])); err != nil {
			return "", false, fmt.Errorf("warm-up: %w", err)
		}
	}
	// cpu[i] and chars[i] add up what size i cost over the rounds.
	cpu := make([]time.Duration, len(cfg.sizes))
	chars := make([]int, len(cfg.sizes))
	for r := range cfg.rounds {
		for k := range cfg.sizes {
			i := (r + k) % len(cfg.sizes)
			size := cfg.sizes[i]
			reps := max(1, cfg.perSize/cfg.rounds/size)
			before, err := cpuTime(g.pid())
			if err != nil {
				return "", false, err
			}
			for range reps {
				if err := streamOnce(ctx, client, "http://"+addr, prov.text(size)); err != nil {
					return "", false, fmt.Errorf("a %s answer: %w", human(size), err)
				}
			}
			after, err := cpuTime(g.pid())
			if err != nil {
				return "", false, err
			}
			cpu[i] += after.sub(before).total()
			chars[i] += reps * size
		}
	}
	perKB := make([]float64, len(cfg.sizes))
	row := name + "\t"
	for i := range cfg.sizes {
		perKB[i] = float64(cpu[i].Microseconds()) / (float64(chars[i]) / 1000)
		row += fmt.Sprintf("%.0f\t", perKB[i])
	}
	m, err := memStatus(g.pid())
	if err != nil {
		return "", false, err
	}
	growth, spread := linearGrowth(perKB)
	ok := growth <= linearMaxGrowth
	return row + fmt.Sprintf("%.2f×\t%.2f×\t%.1f MiB\t%s ≤ %.1f×\t", growth, spread, float64(m.hwm)/(1<<20), passFail(ok), linearMaxGrowth), ok, nil
}

// linearGrowth returns, for per-character costs by increasing size, the most a size costs
// over any smaller one (1 when none costs more) and the most expensive over the cheapest.
func linearGrowth(perKB []float64) (growth, spread float64) {
	growth = 1
	lo, hi := perKB[0], perKB[0]
	for j, c := range perKB {
		for _, smaller := range perKB[:j] {
			growth = max(growth, c/smaller)
		}
		lo, hi = min(lo, c), max(hi, c)
	}
	return growth, hi / lo
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func linearPolicyYAML(packs, phases string) string {
	return `apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata:
  name: builtin
spec:
  builtin:
    packs: ` + packs + `
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata:
  name: long-answers
spec:
  mode: Enforce
  classifierRef:
    name: builtin
  phases: ` + phases + `
  threshold: 1
  action: Block
  reason: blocked
`
}

// streamOnce asks for a streamed answer of want and checks that exactly want arrives.
func streamOnce(ctx context.Context, client *http.Client, base, want string) error {
	body := fmt.Sprintf(`{"model":"long","stream":true,"messages":[{"role":"user","content":"Write %d characters."}]}`, len(want))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var got strings.Builder
	got.Grow(len(want))
	if err := readChatStream(resp.Body, func(text string) { got.WriteString(text) }); err != nil {
		return err
	}
	if got.String() != want {
		return fmt.Errorf("the answer arrived changed: %d characters, want %d", got.Len(), len(want))
	}
	return nil
}

// longProvider streams a chat completion whose text is the first n bytes of a long prose
// answer, n read from the prompt ("Write N characters."), in deltas of eventChars. The
// stream of each size is rendered once, before serving.
type longProvider struct {
	eventChars int
	prose      string
	streams    map[int][]byte
}

func newLongProvider(eventChars int) *longProvider {
	return &longProvider{eventChars: eventChars, streams: map[int][]byte{}}
}

// text is the answer of n characters.
func (p *longProvider) text(n int) string {
	if len(p.prose) < n {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(workload.AnswerProse)
			b.WriteString(" ")
		}
		p.prose = b.String()
	}
	return p.prose[:n]
}

func (p *longProvider) stream(n int) {
	if _, ok := p.streams[n]; ok {
		return
	}
	text := p.text(n)
	var b bytes.Buffer
	chunk := func(delta, finish string) {
		d, _ := json.Marshal(delta)
		f := "null"
		if finish != "" {
			f = strconv.Quote(finish)
		}
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-long","object":"chat.completion.chunk","created":1700000000,"model":"long","choices":[{"index":0,"delta":{"content":%s},"finish_reason":%s}]}`+"\n\n", d, f)
	}
	b.WriteString(`data: {"id":"chatcmpl-long","object":"chat.completion.chunk","created":1700000000,"model":"long","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := 0; i < len(text); i += p.eventChars {
		chunk(text[i:min(i+p.eventChars, len(text))], "")
	}
	b.WriteString(`data: {"id":"chatcmpl-long","object":"chat.completion.chunk","created":1700000000,"model":"long","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	p.streams[n] = b.Bytes()
}

func (p *longProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var n int
	if _, err := fmt.Sscanf(req.Messages[0].Content, "Write %d characters.", &n); err != nil || n <= 0 {
		http.Error(w, "bad prompt", http.StatusBadRequest)
		return
	}
	s, ok := p.streams[n]
	if !ok {
		http.Error(w, "size not prepared", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = w.Write(s)
}

func human(n int) string {
	switch {
	case n >= 1000000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + " MB"
	case n >= 1000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', -1, 64) + " KB"
	}
	return strconv.Itoa(n) + " B"
}

func sizeList(sizes []int) string {
	s := make([]string, len(sizes))
	for i, n := range sizes {
		s[i] = human(n)
	}
	return strings.Join(s, ", ")
}
