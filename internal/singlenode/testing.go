package singlenode

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// RequiredEnv names the variable that, when set (make test sets it), turns "this machine cannot run the cluster"
// from a skip into a failure: CI on these machines must never skip the cluster suites.
const RequiredEnv = "GUARDRAIL_CLUSTER_REQUIRED"

var (
	shared     *Cluster
	sharedSkip string
)

// Main runs a test binary's tests with a cluster for Get: the one `make cluster-up` started
// when it is running (left running afterwards), otherwise a private one brought up in a
// temporary state directory for this run and brought down after it. Use it as
//
//	func TestMain(m *testing.M) { os.Exit(singlenode.Main(m)) }
func Main(m *testing.M) int {
	RunSupervisorIfChild()
	ctx := context.Background()
	if c, err := Attach(DefaultLayout()); err == nil {
		shared = c
		return m.Run()
	}
	c, stop, err := Private(ctx)
	if err != nil {
		if _, ok := err.(unsupported); ok && os.Getenv(RequiredEnv) == "" {
			sharedSkip = err.Error()
			return m.Run()
		}
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		return 1
	}
	shared = c
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster down: %v\n", err)
		return 1
	}
	return code
}

// Get returns the cluster of Main, or skips the test (with the reason) where the machine
// cannot run one.
func Get(t testing.TB) *Cluster {
	t.Helper()
	if shared == nil {
		if sharedSkip == "" {
			t.Fatal("singlenode.Get needs TestMain to call singlenode.Main")
		}
		t.Skipf("no single-node cluster on this machine: %s", sharedSkip)
	}
	return shared
}

// unsupported is a reason this machine cannot run the cluster at all (as opposed to a
// cluster that failed to start).
type unsupported struct{ error }

// Private brings up a cluster in a new temporary state directory (any free loopback port)
// and returns it with the function that brings it down and removes the directory.
func Private(ctx context.Context) (*Cluster, func() error, error) {
	root := RepoRoot()
	if os.Geteuid() != 0 {
		return nil, nil, unsupported{fmt.Errorf("not root (the cluster creates namespaces, mounts and cgroups)")}
	}
	dir, err := os.MkdirTemp("", "guardrail-cluster-")
	if err != nil {
		return nil, nil, err
	}
	l := Layout{Root: root, State: dir}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, err := Up(ctx, l, Options{Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
	if err != nil {
		_ = Down(context.Background(), l)
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "cluster: private cluster up in %s (state %s)\n", time.Since(start).Round(time.Millisecond), dir)
	return c, func() error {
		if err := Down(context.Background(), l); err != nil {
			return err
		}
		return os.RemoveAll(dir)
	}, nil
}
