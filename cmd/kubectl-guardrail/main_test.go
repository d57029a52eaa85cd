package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// TestMain removes the plugin binary the tests built (pluginBinary).
func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// pluginBinary builds kubectl-guardrail once for the tests that run it as a user does.
func pluginBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubectl-guardrail-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "kubectl-guardrail")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput() //nolint:gosec,noctx // a fixed build of this package
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return binary
}

// runPlugin runs the built plugin in the repository's root and returns its stdout,
// stderr and exit code.
func runPlugin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), pluginBinary(t), args...) //nolint:gosec // the binary this test built
	cmd.Dir = envtestutil.RepoRoot()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// The shipped samples pass their shipped cases: what `make test` checks of them.
func TestTheSamplesPassTheirCases(t *testing.T) {
	out, stderr, code := runPlugin(t, "test", "-f", "config/samples", "-f", "config/samples/remote", "--cases", "config/samples/tests/cases.yaml")
	if code != 0 || !strings.Contains(out, " passed, 0 failed, 0 errors") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	// The cases file names the same policies: without -f it reads them itself.
	out2, _, code := runPlugin(t, "test", "--cases", "config/samples/tests/cases.yaml")
	if code != 0 || lastLine(out2) != lastLine(out) {
		t.Errorf("without -f: exit %d, %q; with: %q", code, lastLine(out2), lastLine(out))
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// A case the samples do not meet makes the command fail with the mismatch, in text and
// in JSON.
func TestAFailingCaseExitsNonZeroWithTheDiff(t *testing.T) {
	cases := filepath.Join(t.TempDir(), "cases.yaml")
	if err := os.WriteFile(cases, []byte(`apiVersion: cli.guardrail.dev/v1alpha1
kind: PolicyTest
cases:
  - name: an address is expected to pass, but the sample redacts it
    guardrails: [redact-pii-secrets]
    answer: {text: "Write to jo@example.com.", deltas: [4]}
    expect: {outcome: allowed}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := runPlugin(t, "test", "-f", "config/samples/pii-secrets-redaction.yaml", "--cases", cases)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"FAIL   an address is expected to pass, but the sample redacts it [not streamed]",
		"FAIL   an address is expected to pass, but the sample redacts it [streamed, 4-character deltas]",
		"outcome     want  allowed\n                   got   redacted",
		"Test summary: 0 passed, 2 failed, 0 errors (1 cases)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	js, _, code := runPlugin(t, "test", "-f", "config/samples/pii-secrets-redaction.yaml", "--cases", cases, "-o", "json")
	if code != 1 || !strings.Contains(js, `"failed": 2`) || !strings.Contains(js, `"field": "outcome"`) {
		t.Errorf("json (exit %d):\n%s", code, js)
	}
}

func TestBadInputSaysWhatToDo(t *testing.T) {
	_, stderr, code := runPlugin(t, "test", "-f", "config/samples/pii-secrets-redaction.yaml")
	if code != 1 || !strings.Contains(stderr, `required flag(s) "cases" not set`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	_, stderr, code = runPlugin(t, "test", "--cases", "config/samples/tests/cases.yaml", "-o", "xml")
	if code != 1 || !strings.Contains(stderr, `--output "xml" is not supported: use one of [text json yaml]`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestCompletionScriptsAreGenerated(t *testing.T) {
	for _, shell := range []string{"bash", "zsh"} {
		out, stderr, code := runPlugin(t, "completion", shell)
		if code != 0 || !strings.Contains(out, "kubectl-guardrail") {
			t.Errorf("%s: exit %d %s", shell, code, stderr)
		}
	}
}

// A cases file in a temporary directory names its policies by absolute path, as a CI job
// that generates it does: they are read where they are, not under the cases file's
// directory.
func TestACasesFileNamesItsPoliciesByAbsolutePath(t *testing.T) {
	policies, err := filepath.Abs(filepath.Join("..", "..", "config", "samples", "pii-secrets-redaction.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := filepath.Join(t.TempDir(), "cases.yaml")
	if err := os.WriteFile(cases, []byte(`apiVersion: cli.guardrail.dev/v1alpha1
kind: PolicyTest
policies: [`+policies+`]
pod: {namespace: default, labels: {app: chat}}
cases:
  - name: an address is redacted
    answer: {text: "Write to jo@example.com.", deltas: [3]}
    expect: {outcome: redacted, answer: "Write to [REDACTED:email]."}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runPlugin(t, "test", "--cases", cases)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if got := lastLine(out); !strings.Contains(got, "2 passed, 0 failed") {
		t.Errorf("summary %q", got)
	}
}
