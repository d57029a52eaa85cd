package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process the harness started: the provider, the plain proxy or the guard.
type child struct {
	name   string
	cmd    *exec.Cmd
	stderr *tail
	stdout *firstLine
	done   chan struct{} // closed when the process has exited
	err    error         // its exit status, valid after done
}

// startChild starts a process. Its stderr is kept (the last 16 KiB) for error messages;
// the first line of its stdout is kept for waitAddr. env is added to the harness's
// environment. The process is killed if the harness dies without stopping it.
func startChild(name, path string, args, env []string) (*child, error) {
	return startChildOut(name, path, args, env, nil)
}

// startChildOut is startChild with the child's stdout sent to out when it is not nil (the
// guard's audit log, as a container runtime sends it to a file), in which case waitAddr
// cannot be used.
func startChildOut(name, path string, args, env []string, out *os.File) (*child, error) {
	// A child is stopped by its stop method rather than a context, so that a cancelled
	// harness stops it with SIGTERM and a grace period rather than SIGKILL.
	cmd := exec.Command(path, args...) //nolint:gosec,noctx // the harness's own binaries
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), env...)
	c := &child{name: name, cmd: cmd, stderr: &tail{max: 16 << 10}, stdout: &firstLine{line: make(chan string, 1)},
		done: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = c.stderr, c.stdout
	if out != nil {
		cmd.Stdout = out
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s: %w", name, err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// exited describes how a child ended, with the end of its stderr.
func (c *child) exited() error {
	return fmt.Errorf("the %s exited (%v); its stderr ends with:\n%s", c.name, c.err, indent(c.stderr.String()))
}

// stop sends SIGTERM, waits up to grace, then kills.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// waitAddr waits for the "ADDR host:port" line a role prints when it listens.
func (c *child) waitAddr(timeout time.Duration) (string, error) {
	select {
	case l := <-c.stdout.line:
		if addr, ok := strings.CutPrefix(strings.TrimSpace(l), "ADDR "); ok {
			return addr, nil
		}
		return "", fmt.Errorf("the %s printed %q instead of its address", c.name, l)
	case <-c.done:
		return "", c.exited()
	case <-time.After(timeout):
		return "", fmt.Errorf("the %s did not listen within %s; its stderr ends with:\n%s", c.name, timeout, indent(c.stderr.String()))
	}
}

// waitReady polls url until it answers 200.
func (c *child) waitReady(ctx context.Context, url string) error {
	const timeout = 30 * time.Second
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return c.exited()
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %s was not ready at %s within %s; its stderr ends with:\n%s", c.name, url, timeout, indent(c.stderr.String()))
		}
	}
}

// freePort returns a loopback address with a port that was free a moment ago (for the
// guard, which takes its addresses as flags).
func freePort(ctx context.Context) (string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// buildGuard builds cmd/guard of the module around the working directory into dir,
// as the container image builds it (Dockerfile): static, trimmed, without the symbol
// table. A cgo build maps libc and the dynamic loader too, about 1.7 MiB more resident.
func buildGuard(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module (go env GOMOD): %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run guardload inside the guardrail-operator module, or pass --guard-bin")
	}
	bin := filepath.Join(dir, "guard")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s", "-o", bin, "./cmd/guard") //nolint:gosec // a fixed command
	cmd.Dir = filepath.Dir(gomod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("CGO_ENABLED=0 go build -trimpath -ldflags=-s ./cmd/guard: %w\n%s", err, indent(string(out)))
	}
	return bin, nil
}

// firstLine delivers the first line written to it and discards the rest.
type firstLine struct {
	b    []byte
	sent bool
	line chan string
}

// Write is called by one goroutine of os/exec at a time.
func (f *firstLine) Write(p []byte) (int, error) {
	if !f.sent {
		f.b = append(f.b, p...)
		if i := bytes.IndexByte(f.b, '\n'); i >= 0 {
			f.line <- string(f.b[:i])
			f.sent, f.b = true, nil
		}
	}
	return len(p), nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (nothing)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
