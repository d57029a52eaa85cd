package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// waitTimeout bounds every event-driven wait of the suite: generous, because the machine
// may be loaded; a healthy run never comes near it.
const waitTimeout = 30 * time.Second

// guard is a running guard process.
type guard struct {
	t *testing.T
	// URL is the proxy's base URL (no /v1); Admin the admin listener's.
	URL, Admin string
	policyPath string
	cmd        *exec.Cmd
	stderr     lockedBuffer
	exited     chan struct{}
}

// guardConfig is how a guard is started; see the guardOpt functions.
type guardConfig struct {
	openai, anthropic string
	args, env         []string
	// subscribed guards take their policy from the control plane, not a file.
	subscribed bool
	// noWait returns as soon as the guard listens, ready or not.
	noWait bool
}

type guardOpt func(*guardConfig)

// upstream points both API families at one provider URL.
func upstream(url string) guardOpt {
	return func(c *guardConfig) { c.openai, c.anthropic = url, url }
}

// flags adds command-line flags.
func flags(args ...string) guardOpt {
	return func(c *guardConfig) { c.args = append(c.args, args...) }
}

// env adds environment variables (NAME=value), e.g. classifier credentials.
func env(vars ...string) guardOpt {
	return func(c *guardConfig) { c.env = append(c.env, vars...) }
}

// subscribedTo has the guard subscribe to a control plane instead of reading a file.
func subscribedTo(url, tokenFile, caFile, snapshotDir string) guardOpt {
	return func(c *guardConfig) {
		c.subscribed = true
		c.args = append(c.args, "--control-plane", url, "--token-file", tokenFile, "--ca-file", caFile,
			"--snapshot-dir", snapshotDir)
	}
}

// noWait returns from startGuard once the guard listens, before it is ready.
func noWait() guardOpt { return func(c *guardConfig) { c.noWait = true } }

// startGuard starts the guard binary with policy on loopback ports it picks itself (the
// "Guard listening" log line says which), and returns once /readyz reports the policy
// loaded. The process is stopped (SIGTERM) when the test ends.
func startGuard(t *testing.T, policy string, opts ...guardOpt) *guard {
	t.Helper()
	cfg := guardConfig{openai: "http://127.0.0.1:1", anthropic: "http://127.0.0.1:1"}
	for _, o := range opts {
		o(&cfg)
	}
	g := &guard{t: t, policyPath: filepath.Join(t.TempDir(), "policy.yaml"), exited: make(chan struct{})}
	args := []string{
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--openai-upstream", cfg.openai, "--anthropic-upstream", cfg.anthropic,
		"--shutdown-grace", "5s", "--log-level", "debug",
	}
	if !cfg.subscribed {
		g.writePolicy(policy)
		args = append(args, "--policy-file", g.policyPath, "--policy-interval", "50ms")
	}
	args = append(args, cfg.args...)
	g.cmd = exec.Command(guardBin, args...)
	g.cmd.Env = append(os.Environ(), cfg.env...)
	addrs := make(chan [2]string, 1)
	// A Writer rather than a pipe: Wait returns only once everything logged was copied.
	g.cmd.Stderr = &logWriter{g: g, addrs: addrs}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.cmd.Wait(); close(g.exited) }()
	t.Cleanup(g.stop)

	select {
	case a := <-addrs:
		g.URL, g.Admin = "http://"+a[0], "http://"+a[1]
	case <-g.exited:
		t.Fatalf("guard exited before listening:\n%s", g.logs())
	case <-time.After(waitTimeout):
		t.Fatalf("guard did not start listening:\n%s", g.logs())
	}
	if !cfg.noWait {
		g.waitReady()
	}
	return g
}

// logWriter keeps the guard's JSON log in g.stderr and reports the listening addresses.
type logWriter struct {
	g       *guard
	addrs   chan<- [2]string
	partial []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.g.stderr.write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		var rec struct{ Msg, Proxy, Admin string }
		if json.Unmarshal(w.partial[:i], &rec) == nil && rec.Msg == "Guard listening" {
			w.addrs <- [2]string{rec.Proxy, rec.Admin}
		}
		w.partial = w.partial[i+1:]
	}
}

// stop sends SIGTERM and waits for the process; it kills it if the grace period is over.
func (g *guard) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(waitTimeout):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
	if strings.Contains(g.logs(), "WARNING: DATA RACE") {
		g.t.Error("the guard binary reported a data race")
	}
	if g.t.Failed() {
		g.t.Logf("guard log:\n%s", g.logs())
	}
}

// logs returns what the guard logged so far.
func (g *guard) logs() string { return g.stderr.String() }

// writePolicy replaces the policy file atomically (write, then rename), as a ConfigMap
// update does.
func (g *guard) writePolicy(policy string) {
	g.t.Helper()
	tmp := g.policyPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(policy), 0o600); err != nil {
		g.t.Fatal(err)
	}
	if err := os.Rename(tmp, g.policyPath); err != nil {
		g.t.Fatal(err)
	}
}

// readyz returns the status of /readyz and the policy version it reports.
func (g *guard) readyz() (int, string) {
	resp, err := http.Get(g.Admin + "/readyz")
	if err != nil {
		return 0, ""
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "ok policy"))
}

// waitReady waits for /readyz to answer 200 and returns the policy version.
func (g *guard) waitReady() string {
	g.t.Helper()
	var version string
	eventually(g.t, "the guard to be ready", func() bool {
		var status int
		status, version = g.readyz()
		return status == http.StatusOK
	})
	return version
}

// waitVersion waits for /readyz to report a policy version other than old.
func (g *guard) waitVersion(old string) string {
	g.t.Helper()
	var version string
	eventually(g.t, "the new policy to be applied", func() bool {
		var status int
		status, version = g.readyz()
		return status == http.StatusOK && version != old
	})
	return version
}

// metrics returns the Prometheus exposition of /metrics.
func (g *guard) metrics() string {
	g.t.Helper()
	resp, err := http.Get(g.Admin + "/metrics")
	if err != nil {
		g.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return string(b)
}

// metric returns the value of one series, written as in the exposition
// (`name{label="value"}`), or 0 when it is absent.
func (g *guard) metric(series string) float64 {
	g.t.Helper()
	return metricValue(g.metrics(), series)
}

func metricValue(exposition, series string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}

// eventually polls cond every 20ms until it holds; the test fails after waitTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testContext is a context bounded by waitTimeout, cancelled when the test ends.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// lockedBuffer is a bytes buffer safe for one writer and concurrent readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) write(p []byte) {
	l.mu.Lock()
	l.b = append(l.b, p...)
	l.mu.Unlock()
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// errAs is errors.As returning the target.
func errAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}

// samplePolicy returns one of the policy files users start from (config/samples).
func samplePolicy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), "config", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
