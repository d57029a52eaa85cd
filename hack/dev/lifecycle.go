package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// preflight checks what the run needs before it starts anything: root and the cluster's
// host requirements, no other make dev, free loopback ports.
func (d *dev) preflight() error {
	if err := singlenode.Preflight(d.l); err != nil {
		if os.Geteuid() != 0 {
			return fmt.Errorf("%v.\n\nmake dev runs the product on a real single-node cluster, which needs root here.\n"+
				"Without root, `make dev-lite` runs the operator on an embedded kube-apiserver and etcd,\n"+
				"with one local guard process playing an injected pod (no kubelet)", err)
		}
		return err
	}
	if pid, ok := devRunning(d.o.dir); ok {
		return fmt.Errorf("make dev is already running (pid %d); stop it with make dev-down", pid)
	}
	for _, p := range []int{d.o.guardPort, d.o.adminPort, d.o.provPort} {
		if err := portFree(p); err != nil {
			return fmt.Errorf("loopback port %d is taken (%v); pick others with DEV_FLAGS='-guard-port N -admin-port N -provider-port N'", p, err)
		}
	}
	return nil
}

// holdPIDFile writes this run's pid for make dev-down; unlock removes it.
func (d *dev) holdPIDFile() (unlock func(), err error) {
	if err := os.MkdirAll(d.o.dir, 0o750); err != nil {
		return nil, err
	}
	if err := os.WriteFile(pidFile(d.o.dir), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, err
	}
	return func() { _ = os.Remove(pidFile(d.o.dir)) }, nil
}

func portFree(p int) error {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return err
	}
	return l.Close()
}

func pidFile(dir string) string { return filepath.Join(dir, "pid") }

// devRunning reports the pid of a running make dev, from its pid file.
func devRunning(dir string) (int, bool) {
	b, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// down stops a running make dev (SIGTERM, as Ctrl-C would) and waits until it has stopped
// what it started.
func down(dir string) error {
	pid, ok := devRunning(dir)
	if !ok {
		msg := "make dev is not running"
		if _, up := singlenode.Running(singlenode.DefaultLayout()); up {
			msg += "; the single-node cluster is (make cluster-down stops it)"
		}
		fmt.Fprintln(os.Stderr, msg)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if _, ok := devRunning(dir); !ok {
			fmt.Fprintln(os.Stderr, "make dev stopped")
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("make dev (pid %d) still running after 3 minutes", pid)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
