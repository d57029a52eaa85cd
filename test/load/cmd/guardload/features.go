package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// guardload features (issue 44): what the guard's optional features cost a call. The
// same provider, request mix and policy as the main mode, reached directly, through the
// plain reverse proxy, and through four guard processes of the same binary, each a
// configuration: no optional feature; the audit log (--audit-log, every line written,
// stdout to a file as a container runtime writes it); tracing (OTLP http/protobuf,
// always_on, to a receiver in the harness's process); and both. All six targets are
// measured in the same interleaved rounds, so the machine's drift falls on each alike.
// Targets: each guard's added p50 within 1.2x the plain proxy's, and its idle RSS at most
// 16 MiB.

const (
	featuresAddedFactor = 1.2
	featuresIdleRSS     = 16 << 20
)

// featureSet is one guard configuration of the features mode.
type featureSet struct {
	name           string
	audit, tracing bool
}

var featureSets = []featureSet{
	{"guard, no optional feature", false, false},
	{"guard + audit log", true, false},
	{"guard + tracing", false, true},
	{"guard + audit log + tracing", true, true},
}

// featureGuard is one running guard configuration.
type featureGuard struct {
	featureSet
	t         *target
	service   string // OTEL_SERVICE_NAME, when tracing
	auditPath string
	admin     string
	idle      memory  // after start: preflight answered, first spans exported
	after     memory  // idle again after the load
	served    float64 // requests, by its guard_requests_total, whole run
	spans     int64   // received, whole run
}

type featuresConfig struct {
	config
	streams   bool
	auditRate string
}

func parseFeaturesFlags(args []string) (featuresConfig, error) {
	var c featuresConfig
	fs := flag.NewFlagSet("guardload features", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "Usage: guardload features [flags]\n\n"+
			"Measures the guard with and without its audit log and tracing against a plain reverse\n"+
			"proxy and the provider itself, in interleaved slices. Run it from the module root. Flags:\n\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.guardBin, "guard-bin", "", "Guard binary to measure; empty builds ./cmd/guard into the work directory.")
	fs.Func("guard-env", "KEY=VALUE added to every guard's environment (repeatable).", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return errors.New("want KEY=VALUE")
		}
		c.guardEnv = append(c.guardEnv, v)
		return nil
	})
	fs.Func("procs", "GOMAXPROCS of the guards and the plain proxy (default: the machine's CPUs).", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return errors.New("want a positive number")
		}
		c.guardEnv = append(c.guardEnv, "GOMAXPROCS="+v)
		c.plainEnv = append(c.plainEnv, "GOMAXPROCS="+v)
		return nil
	})
	fs.StringVar(&c.workDir, "work-dir", "", "Directory for the policy file, the built guard and the audit logs; empty means a temporary directory, removed at exit.")
	fs.IntVar(&c.rate, "rate", 500, "Requests per second of the non-streamed chat load, per target.")
	fs.DurationVar(&c.slice, "slice", 3*time.Second, "Duration of one measured slice of the chat load on one target.")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "Unmeasured chat load on each target before the first round.")
	fs.IntVar(&c.rounds, "rounds", 4, "Rounds; each round runs one slice on each of the six targets, in a rotating order.")
	fs.IntVar(&c.promptBytes, "prompt-bytes", 2048, "Size of the user prompt of each request, in bytes of English prose.")
	fs.BoolVar(&c.streams, "streams", true, "Also run the streaming load (the main mode's second phase).")
	fs.IntVar(&c.streamRate, "stream-rate", 20, "Streams per second of the streaming load, per target.")
	fs.DurationVar(&c.streamSlice, "stream-slice", 3*time.Second, "Duration of one measured slice of the streaming load on one target.")
	fs.DurationVar(&c.streamWarmup, "stream-warmup", time.Second, "Unmeasured streaming load on each target before the first round.")
	fs.IntVar(&c.streamEvents, "stream-events", 200, "Text deltas of each streamed answer.")
	fs.StringVar(&c.auditRate, "audit-log-rate", "0", "The guards' --audit-log-rate; 0 writes every line.")
	fs.BoolVar(&c.strict, "strict", false, "Exit with status 1 when a target is missed, not only when requests fail.")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.rate <= 0 || c.streamRate <= 0 || c.rounds <= 0:
		return c, errors.New("--rate, --stream-rate and --rounds must be positive")
	case c.slice <= 0 || c.streamSlice <= 0 || c.warmup < 0 || c.streamWarmup < 0:
		return c, errors.New("--slice and --stream-slice must be positive, warm-ups not negative")
	case c.promptBytes < 64 || c.streamEvents < 1:
		return c, errors.New("--prompt-bytes must be at least 64 and --stream-events at least 1")
	}
	return c, nil
}

func runFeatures(ctx context.Context, args []string, out io.Writer) error {
	fc, err := parseFeaturesFlags(args)
	if err != nil {
		return err
	}
	userEnv := fc.guardEnv
	// The first guard, started by setUp, has no optional feature whatever the harness's
	// environment says.
	fc.guardEnv = append(append([]string(nil), userEnv...), "OTEL_SDK_DISABLED=true")
	cfg := &fc.config

	sink, err := startSpanSink(ctx)
	if err != nil {
		return err
	}
	defer sink.close()

	b, err := setUp(ctx, cfg)
	if b != nil {
		defer b.tearDown()
	}
	if err != nil {
		return err
	}
	providerURL := b.direct.url
	guards := []*featureGuard{{featureSet: featureSets[0], t: b.guardT, admin: b.guardAdmin}}
	b.guardT.name = featureSets[0].name
	for i, fs := range featureSets[1:] {
		g := &featureGuard{featureSet: fs}
		env := append([]string(nil), userEnv...)
		if fs.tracing {
			g.service = fmt.Sprintf("guardload-%d", i+1)
			env = append(env, "OTEL_SDK_DISABLED=false", "OTEL_TRACES_EXPORTER=otlp",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+sink.url, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
				"OTEL_TRACES_SAMPLER=always_on", "OTEL_SERVICE_NAME="+g.service)
		} else {
			env = append(env, "OTEL_SDK_DISABLED=true")
		}
		var extra []string
		var stdout *os.File
		if fs.audit {
			g.auditPath = filepath.Join(b.dir, fmt.Sprintf("audit-%d.jsonl", i+1))
			if stdout, err = os.Create(g.auditPath); err != nil {
				return err
			}
			extra = []string{"--audit-log", "--audit-log-rate=" + fc.auditRate}
		}
		proc, addr, admin, err := b.startGuardOut(ctx, fs.name, b.guardBin, env, providerURL, stdout, extra...)
		if stdout != nil {
			_ = stdout.Close() // the guard has its own descriptor
		}
		if err != nil {
			return err
		}
		g.t, g.admin = newTarget(fs.name, "http://"+addr, proc), admin
		guards = append(guards, g)
	}
	b.targets = []*target{b.direct, b.plainT}
	for _, g := range guards {
		b.targets = append(b.targets, g.t)
	}
	if err := b.preflight(ctx); err != nil {
		return err
	}

	rep := &featuresReport{cfg: &fc, b: b, guards: guards, sink: sink, loadBefore: loadAvg()}
	// Idle: every guard has answered its preflight and every traced guard's first batch
	// of spans has reached the receiver.
	for _, g := range guards {
		if g.tracing {
			if err := sink.waitFor(ctx, g.service, 20*time.Second); err != nil {
				return err
			}
		}
	}
	if err := sleep(ctx, idleWait); err != nil {
		return err
	}
	if rep.plainIdle, err = memStatus(b.plain.pid()); err != nil {
		return err
	}
	for _, g := range guards {
		if g.idle, err = memStatus(g.t.proc.pid()); err != nil {
			return err
		}
	}

	m0, err := rep.usage()
	if err != nil {
		return err
	}
	checks := map[*target]check{}
	streamChecks := map[*target]check{}
	for _, t := range b.targets {
		checks[t], streamChecks[t] = sameBody(b.wantChat), sameBody(b.wantStream)
	}
	if rep.chat, err = b.phase(ctx, false, b.chatBody, cfg.rate, cfg.warmup, cfg.slice, checks); err != nil {
		return err
	}
	if fc.streams {
		if rep.stream, err = b.phase(ctx, true, b.streamBody, cfg.streamRate, cfg.streamWarmup, cfg.streamSlice, streamChecks); err != nil {
			return err
		}
	}
	m1, err := rep.usage()
	if err != nil {
		return err
	}
	rep.machine = m1.since(m0)
	rep.loadAfter = loadAvg()

	// Idle again: the last batch of spans exported (the batch processor's delay is 5 s).
	if err := sleep(ctx, 6*time.Second); err != nil {
		return err
	}
	for _, g := range guards {
		if g.after, err = memStatus(g.t.proc.pid()); err != nil {
			return err
		}
		if g.auditPath != "" {
			rep.auditLines = append(rep.auditLines, countLines(g.auditPath))
		}
		m, err := scrapeGuard(ctx, "http://"+g.admin+"/metrics")
		if err != nil {
			return err
		}
		for _, n := range m.requests {
			g.served += n
		}
		g.spans = sink.counts()[g.service]
	}
	rep.exportErrors = sink.bad()

	rep.print(out)
	if n := rep.failedRequests(); n > 0 {
		for _, c := range b.children {
			_, _ = fmt.Fprintf(out, "\nstderr of the %s:\n%s\n", c.name, indent(c.stderr.String()))
		}
		return fmt.Errorf("%d requests failed or were answered unexpectedly: the numbers above are not valid", n)
	}
	if fc.strict && !rep.allPass() {
		return errors.New("targets missed")
	}
	return nil
}

// countLines returns the lines of a file, or -1 when it cannot be read.
func countLines(path string) int {
	f, err := os.Open(path) //nolint:gosec // a file of the run's own work directory
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }()
	n, buf := 0, make([]byte, 256<<10)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte("\n"))
		if err != nil {
			return n
		}
	}
}

// spanSink is an OTLP/HTTP traces receiver (http/protobuf, gzip or not) that counts the
// spans of each service.name and keeps nothing else.
type spanSink struct {
	url string
	srv *http.Server

	mu      sync.Mutex
	spans   map[string]int64
	changed chan struct{}
	errors  int64
}

func startSpanSink(ctx context.Context) (*spanSink, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &spanSink{url: "http://" + ln.Addr().String() + "/v1/traces", spans: map[string]int64{}, changed: make(chan struct{}, 1)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *spanSink) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, 64<<20)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			s.fail(w)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err != nil || proto.Unmarshal(raw, &req) != nil {
		s.fail(w)
		return
	}
	s.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			s.spans[service] += int64(len(ss.GetSpans()))
		}
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

func (s *spanSink) fail(w http.ResponseWriter) {
	s.mu.Lock()
	s.errors++
	s.mu.Unlock()
	http.Error(w, "not an OTLP traces request", http.StatusBadRequest)
}

func (s *spanSink) counts() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.spans))
	for k, v := range s.spans {
		out[k] = v
	}
	return out
}

func (s *spanSink) bad() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors
}

// waitFor waits until the receiver has spans of service.
func (s *spanSink) waitFor(ctx context.Context, service string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if s.counts()[service] > 0 {
			return nil
		}
		select {
		case <-s.changed:
		case <-deadline.C:
			return fmt.Errorf("no span of %s reached the receiver within %s", service, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *spanSink) close() {
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(shutdownCtx)
}

// featuresReport is what the features mode measured.
type featuresReport struct {
	cfg    *featuresConfig
	b      *bench
	guards []*featureGuard
	sink   *spanSink

	loadBefore, loadAfter string
	machine               machineLoad
	plainIdle             memory

	chat, stream phaseResult
	auditLines   []int // per audit guard, in order
	exportErrors int64
}

// usage is a snapshot of the machine's CPU time and the run's processes'.
func (r *featuresReport) usage() (cpuUsage, error) {
	m, err := readMachineCPU()
	if err != nil {
		return cpuUsage{}, err
	}
	u := cpuUsage{at: time.Now(), machine: m}
	pids := []int{os.Getpid()}
	for _, c := range r.b.children {
		pids = append(pids, c.pid())
	}
	for _, pid := range pids {
		d, err := cpuTime(pid)
		if err != nil {
			return cpuUsage{}, err
		}
		u.ours += d.total()
	}
	return u, nil
}

// featureVerdict is one guard configuration against the targets.
type featureVerdict struct {
	ratio50, ratio99 float64
	p50OK, rssOK     bool
}

func (r *featuresReport) verdict(g *featureGuard) featureVerdict {
	d, p, l := summarize(r.chat[r.b.direct]), summarize(r.chat[r.b.plainT]), summarize(r.chat[g.t])
	v := featureVerdict{ratio50: ratioOf(l.p50-d.p50, p.p50-d.p50), ratio99: ratioOf(l.p99-d.p99, p.p99-d.p99)}
	v.p50OK = v.ratio50 <= featuresAddedFactor && (p.p50 > d.p50 || l.p50 <= d.p50)
	v.rssOK = g.idle.rss <= featuresIdleRSS
	return v
}

func ratioOf(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// ratioText is a/b, or "n/a" when the plain proxy added nothing to compare with.
func ratioText(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", ratioOf(a, b))
}

func (r *featuresReport) allPass() bool {
	for _, g := range r.guards {
		if v := r.verdict(g); !v.p50OK || !v.rssOK {
			return false
		}
	}
	return true
}

func (r *featuresReport) failedRequests() int {
	n := 0
	for _, ph := range []phaseResult{r.chat, r.stream} {
		for _, slices := range ph {
			for _, s := range slices {
				for _, k := range s.errors {
					n += k
				}
			}
		}
	}
	return n
}

func (r *featuresReport) print(out io.Writer) {
	c, b := r.cfg, r.b
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	line := func(format string, a ...any) { _, _ = fmt.Fprintf(w, format+"\n", a...) }
	line("guardload features: the guard with and without its audit log and tracing, vs a plain reverse proxy and the provider itself")
	line("guard:\t%s", b.guardBin)
	line("policy:\t%s", b.policyDescription())
	line("audit log:\t--audit-log --audit-log-rate=%s, stdout to a file in the work directory", c.auditRate)
	line("tracing:\tOTLP http/protobuf to a receiver in this process (%s), OTEL_TRACES_SAMPLER=always_on", r.sink.url)
	line("machine:\t%d CPUs; load average %s before, %s after", runtime.NumCPU(), r.loadBefore, r.loadAfter)
	if m := r.machine; m.total > 0 {
		line("\tduring the %s measured: machine %.0f%% busy; this benchmark's processes %.0f%%, other processes %.0f%% (of all CPUs)",
			m.wall.Round(time.Second), pct(m.busy, m.total), pct(m.ours, m.total), pct(max(m.busy-m.ours, 0), m.total))
	}
	line("")

	line("Non-streamed chat: %d rps per target, %d x %s interleaved slices per target (+%s warm-up)", c.rate, c.rounds, c.slice, c.warmup)
	line("\trequests\terrors\tp50\tp99\tadded p50\tadded p99\tadded p50 / plain's\tadded p99 / plain's\tCPU s per 1,000")
	d, p := summarize(r.chat[b.direct]), summarize(r.chat[b.plainT])
	for _, t := range b.targets {
		l := summarize(r.chat[t])
		a50, a99, r50, r99, cpu := "-", "-", "-", "-", "-"
		if t != b.direct {
			a50, a99 = signed(l.p50-d.p50), signed(l.p99-d.p99)
			r50, r99 = ratioText(l.p50-d.p50, p.p50-d.p50), ratioText(l.p99-d.p99, p.p99-d.p99)
			cpu = fmt.Sprintf("%.3f", cpuPer1000(l))
		}
		line("%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s", t.name, l.ok+l.errors, l.errors, ms(l.p50), ms(l.p99), a50, a99, r50, r99, cpu)
	}
	line("")

	if c.streams {
		line("Streamed chat: %d text deltas per stream, %d streams/s per target, %d x %s interleaved slices per target (+%s warm-up)",
			c.streamEvents, c.streamRate, c.rounds, c.streamSlice, c.streamWarmup)
		line("\tstreams\terrors\tlast event p50\tlast event p99\tadded p50\tadded p99\tadded p50 / plain's\tCPU ms per stream")
		ds, ps := summarizeStreams(r.stream[b.direct]), summarizeStreams(r.stream[b.plainT])
		for _, t := range b.targets {
			s := summarizeStreams(r.stream[t])
			a50, a99, r50, cpu := "-", "-", "-", "-"
			if t != b.direct {
				a50, a99 = signed(s.last50-ds.last50), signed(s.last99-ds.last99)
				r50 = ratioText(s.last50-ds.last50, ps.last50-ds.last50)
				cpu = fmt.Sprintf("%.2f", per(s.cpu.total(), s.streams+s.errors)*1000)
			}
			line("%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s", t.name, s.streams+s.errors, s.errors, ms(s.last50), ms(s.last99), a50, a99, r50, cpu)
		}
		line("")
	}

	line("Memory\tRSS idle after start\tRSS idle after the load\tpeak (VmHWM)")
	line("%s\t%s\t\t", b.plainT.name, mib(r.plainIdle.rss))
	for _, g := range r.guards {
		line("%s\t%s\t%s\t%s", g.name, mib(g.idle.rss), mib(g.after.rss), mib(g.after.hwm))
	}
	line("")

	ai := 0
	for _, g := range r.guards {
		parts := []string{fmt.Sprintf("%.0f requests served (guard_requests_total)", g.served)}
		if g.audit {
			parts = append(parts, fmt.Sprintf("%d audit lines written (%.2f per request)", r.auditLines[ai], float64(r.auditLines[ai])/max(g.served, 1)))
			ai++
		}
		if g.tracing {
			parts = append(parts, fmt.Sprintf("%d spans received (%.2f per request)", g.spans, float64(g.spans)/max(g.served, 1)))
		}
		line("%s:\t%s", g.name, strings.Join(parts, "; "))
	}
	if r.exportErrors > 0 {
		line("receiver: %d exports it could not read", r.exportErrors)
	}
	line("")

	line("Targets (issue 44)\tadded p50 <= %.1fx plain's\tidle RSS <= %s\t", featuresAddedFactor, mib(featuresIdleRSS))
	for _, g := range r.guards {
		v := r.verdict(g)
		line("%s\t%.2fx %s\t%s %s\t", g.name, v.ratio50, passFail(v.p50OK), mib(g.idle.rss), passFail(v.rssOK))
	}
	if n := r.failedRequests(); n > 0 {
		line("")
		line("ERRORS in measured slices: %d", n)
		for _, t := range b.targets {
			for _, ph := range []phaseResult{r.chat, r.stream} {
				for k, n := range summarize(ph[t]).errorKinds {
					line("  %s: %d x %s", t.name, n, k)
				}
			}
		}
	}
	_ = w.Flush()
}
