// Command mcpload measures the latency the guard adds to an MCP tools/call: the same
// calls, made with the official Go SDK's client, to test/fakemcp's server directly and
// through the real guard binary fronting it (--mcp-upstream), interleaved in rounds so that
// both see the same machine. The guard judges each call's arguments (ToolCalls) and its
// result (ToolResults) with the built-in default packs; the text is clean prose, so every
// call is inspected and allowed. Figures go to test/load/README.md ("MCP").
//
//	go run ./test/load/cmd/mcpload                   # about a minute
//	go run ./test/load/cmd/mcpload -h                # rounds, durations, sizes
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guardrail-dev/guardrail-operator/test/fakemcp"
)

// policy judges tool calls and tool results with the built-in default packs.
const policy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: builtin}
spec:
  builtin:
    packs: [pii, secrets, prompt-injection]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: tools}
spec:
  mode: Enforce
  classifierRef: {name: builtin}
  phases: [ToolCalls, ToolResults]
  threshold: 1
  action: Block
  reason: Blocked.
`

// prose is ordinary English that no detector matches.
const prose = "The committee met on a grey morning to review the plans for the new library wing. " +
	"Several members asked whether the reading rooms would stay open during construction, and the " +
	"architect explained that the work would proceed in phases so that quiet study could continue. "

type options struct {
	guardBin    string
	rounds      int
	duration    time.Duration
	concurrency int
	textBytes   int
}

func main() {
	var o options
	flag.StringVar(&o.guardBin, "guard-bin", "", "Guard binary to measure (built from ./cmd/guard when empty).")
	flag.IntVar(&o.rounds, "rounds", 3, "Rounds; each measures direct, then guarded.")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "Length of each measurement.")
	flag.IntVar(&o.concurrency, "concurrency", 4, "Client sessions calling at once, each one call at a time.")
	flag.IntVar(&o.textBytes, "text-bytes", 1024, "Bytes of the echo tool's text argument (and so of its result).")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "mcpload:", err) //nolint:forbidigo // a command's error
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "mcpload-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if o.guardBin == "" {
		o.guardBin = filepath.Join(dir, "guard")
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s", "-o", o.guardBin, "./cmd/guard") //nolint:gosec // a fixed command
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building the guard: %v\n%s", err, out)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	server := &http.Server{Handler: fakemcp.New().Handler(false), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(ln) }()
	defer func() { _ = server.Close() }()
	direct := "http://" + ln.Addr().String() + "/mcp"

	guarded, stopGuard, err := startGuard(ctx, o.guardBin, dir, direct)
	if err != nil {
		return err
	}
	defer stopGuard()

	text := strings.Repeat(prose, o.textBytes/len(prose)+1)[:o.textBytes]
	all := map[string][]time.Duration{}
	for r := range o.rounds {
		for _, target := range []struct{ name, url string }{{"direct", direct}, {"guarded", guarded}} {
			lat, err := measure(ctx, target.url, text, o)
			if err != nil {
				return fmt.Errorf("%s: %w", target.name, err)
			}
			all[target.name] = append(all[target.name], lat...)
			fmt.Printf("round %d %-8s %6d calls  p50 %s  p99 %s\n", r+1, target.name, len(lat), pct(lat, 50), pct(lat, 99)) //nolint:forbidigo // the report
		}
	}
	d, g := all["direct"], all["guarded"]
	fmt.Printf("\ntools/call, %d B argument and result, %d sessions, %d rounds of %s\n", o.textBytes, o.concurrency, o.rounds, o.duration) //nolint:forbidigo // the report
	fmt.Printf("%-8s %8s %10s %10s %10s\n", "", "calls", "p50", "p90", "p99")                                                              //nolint:forbidigo // the report
	for _, row := range []struct {
		name string
		lat  []time.Duration
	}{{"direct", d}, {"guarded", g}} {
		fmt.Printf("%-8s %8d %10s %10s %10s\n", row.name, len(row.lat), pct(row.lat, 50), pct(row.lat, 90), pct(row.lat, 99)) //nolint:forbidigo // the report
	}
	fmt.Printf("%-8s %8s %10s %10s %10s\n", "added", "", pct(g, 50)-pct(d, 50), pct(g, 90)-pct(d, 90), pct(g, 99)-pct(d, 99)) //nolint:forbidigo // the report
	return nil
}

// measure calls the echo tool from o.concurrency sessions for o.duration and returns the
// latency of every call; a call whose answer is not its text is an error.
func measure(ctx context.Context, url, text string, o options) ([]time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	deadline := time.Now().Add(o.duration)
	for range o.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
				return
			}
			defer func() { _ = cs.Close() }()
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": text}})
				d := time.Since(start)
				if err == nil && (res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text) {
					b, _ := json.Marshal(res)
					err = fmt.Errorf("unexpected result %s", b)
				}
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
					return
				}
				mine = append(mine, d)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, firstErr
}

func pct(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(time.Microsecond)
}

// startGuard runs the guard fronting upstream as "workspace" and returns its MCP URL once
// it is ready.
func startGuard(ctx context.Context, bin, dir, upstream string) (string, func(), error) {
	policyPath := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyPath, []byte(policy), 0o600); err != nil {
		return "", nil, err
	}
	proxyPort, adminPort, err := freePort(ctx), freePort(ctx), error(nil)
	cmd := exec.CommandContext(ctx, bin, "--policy-file", policyPath, //nolint:gosec // the binary under test
		"--listen", fmt.Sprintf("127.0.0.1:%d", proxyPort), "--admin-listen", fmt.Sprintf("127.0.0.1:%d", adminPort),
		"--mcp-upstream", "workspace="+upstream, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err = cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }
	for deadline := time.Now().Add(30 * time.Second); ; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/readyz", adminPort), nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("the guard did not become ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp/workspace", proxyPort), stop, nil
}

func freePort(ctx context.Context) int {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}
