package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// guardBin is the guard binary under test, built once by TestMain with buildFlags.
var (
	guardBin   string
	buildFlags []string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if bin := os.Getenv("GUARD_BIN"); bin != "" {
		guardBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "guard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	guardBin = filepath.Join(dir, "guard")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append(append([]string{"build"}, buildFlags...), "-o", guardBin,
		"github.com/guardrail-dev/guardrail-operator/cmd/guard")
	build := exec.CommandContext(ctx, "go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the guard:", err)
		return 1
	}
	return m.Run()
}
