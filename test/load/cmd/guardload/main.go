// Command guardload is the guard's load benchmark (issue 5): an open-loop, constant-rate
// load against the fake provider reached three ways — directly, through a plain
// httputil.ReverseProxy (the floor), and through the real guard binary enforcing the
// built-in default packs (pii, secrets, prompt-injection) on Input and Output — in
// interleaved slices of one run, and a table of added latency, per-event streaming cost,
// guard CPU per 1,000 requests and guard memory, with PASS/FAIL against the targets.
//
//	go run ./test/load/cmd/guardload            # from the module root; ~1.5 minutes
//	go run ./test/load/cmd/guardload -h         # durations, rates, sizes
//
// The provider and the plain proxy run as child processes of this binary ("guardload
// provider", "guardload plainproxy"), and the guard as its own binary, so that each one's
// CPU and memory are its own. Everything listens on 127.0.0.1. See test/load/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the command line of a benchmark run.
type config struct {
	guardBin string
	guardEnv []string
	plainEnv []string // the plain proxy's (saturate sets GOMAXPROCS=1 for both)
	// baselineBin, when set, is a guard binary measured in the plain proxy's place.
	baselineBin string
	workDir     string

	rate          int
	slice, warmup time.Duration
	rounds        int
	promptBytes   int

	streamRate                int
	streamSlice, streamWarmup time.Duration
	streamEvents              int
	eventDelay                time.Duration
	streamPhase               bool
	streamCadence             int

	strict bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "provider":
		err = runProvider(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "plainproxy":
		err = runPlainProxy(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "ttfc":
		err = runTTFC(ctx, os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == "large":
		err = runLarge(ctx, os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == "saturate":
		err = runSaturate(ctx, os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == "linear":
		err = runLinear(ctx, os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == "soak":
		err = runSoak(ctx, os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == "features":
		err = runFeatures(ctx, os.Args[2:], os.Stdout)
	default:
		var cfg config
		if cfg, err = parseFlags(os.Args[1:]); err == nil {
			err = run(ctx, &cfg, os.Stdout)
		}
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil && ctx.Err() != nil {
		err = errors.New("interrupted; the child processes were stopped")
	}
	if err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "guardload:", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("guardload", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "Usage: guardload [flags]\n\n"+
			"Measures the guard against a plain reverse proxy and the provider itself, at a constant\n"+
			"request rate, in interleaved slices. Run it from the module root. Flags:\n\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.guardBin, "guard-bin", "", "Guard binary to measure; empty builds ./cmd/guard into the work directory.")
	fs.Func("guard-env", "KEY=VALUE added to the guard's environment only (repeatable), e.g. GOMAXPROCS=1 or GOGC=200.", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return errors.New("want KEY=VALUE")
		}
		c.guardEnv = append(c.guardEnv, v)
		return nil
	})
	fs.Func("procs", "GOMAXPROCS of both the guard and the plain proxy (default: the machine's CPUs); 1 is what the injector gives a guard with the chart's default CPU request.", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return errors.New("want a positive number")
		}
		c.guardEnv = append(c.guardEnv, "GOMAXPROCS="+v)
		c.plainEnv = append(c.plainEnv, "GOMAXPROCS="+v)
		return nil
	})
	fs.StringVar(&c.baselineBin, "baseline-bin", "", "A guard binary to measure in the plain proxy's place, with the same policy and the plain proxy's environment: an A/B of two guards in one interleaved run, whose ratios read as the guard over the baseline.")
	fs.StringVar(&c.workDir, "work-dir", "", "Directory for the policy file and the built guard; empty means a temporary directory, removed at exit.")
	fs.IntVar(&c.rate, "rate", 500, "Requests per second of the non-streamed chat load, per target.")
	fs.DurationVar(&c.slice, "slice", 3*time.Second, "Duration of one measured slice of the chat load on one target.")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "Unmeasured chat load on each target before the first round.")
	fs.IntVar(&c.rounds, "rounds", 5, "Rounds; each round runs one slice on each target, in a rotating order.")
	fs.IntVar(&c.promptBytes, "prompt-bytes", 2048, "Size of the user prompt of each request, in bytes of English prose.")
	fs.IntVar(&c.streamRate, "stream-rate", 20, "Streams per second of the streaming load, per target.")
	fs.DurationVar(&c.streamSlice, "stream-slice", 3*time.Second, "Duration of one measured slice of the streaming load on one target.")
	fs.DurationVar(&c.streamWarmup, "stream-warmup", time.Second, "Unmeasured streaming load on each target before the first round.")
	fs.IntVar(&c.streamEvents, "stream-events", 200, "Text deltas of each streamed answer (the stream adds a role chunk, a finish chunk and [DONE]).")
	fs.DurationVar(&c.eventDelay, "event-delay", 0, "Delay before each event the provider streams; 0 sends a stream as fast as it is read, so that the per-event cost of each proxy adds up in the time to the last event.")
	fs.BoolVar(&c.streamPhase, "stream-phase", false, "Also apply the guardrail to the Stream phase (cadence --stream-cadence, hold-back from the classifier's hint), not only Input and Output.")
	fs.IntVar(&c.streamCadence, "stream-cadence", 64, "evaluateEveryChars of the Stream phase with --stream-phase.")
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

// run sets up the processes, runs the loads and prints the report.
func run(ctx context.Context, cfg *config, out io.Writer) error {
	b, err := setUp(ctx, cfg)
	if b != nil {
		defer b.tearDown()
	}
	if err != nil {
		return err
	}
	rep, err := b.measure(ctx)
	if err != nil {
		return err
	}
	rep.print(out)
	if n := rep.failedRequests(); n > 0 {
		for _, c := range b.children {
			_, _ = fmt.Fprintf(out, "\nstderr of the %s:\n%s\n", c.name, indent(c.stderr.String()))
		}
		return fmt.Errorf("%d requests failed or were answered unexpectedly: the numbers above are not valid", n)
	}
	if cfg.strict && !rep.allPass() {
		return errors.New("targets missed")
	}
	return nil
}

// plainName is what the report calls the target in the plain proxy's place.
func (c *config) plainName() string {
	if c.baselineBin != "" {
		return "baseline guard"
	}
	return "plain proxy"
}
