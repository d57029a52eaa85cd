package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The guard holds its ModelProviders' credentials in memory (keyless apps): it makes its
// process undumpable at start, so that a process of the same user without CAP_SYS_PTRACE
// (an app container running as the guard's UID) cannot read that memory through
// /proc/PID/mem. The kernel shows it in the owner of /proc/PID/mem: root for an
// undumpable process, the process's own user otherwise.

const undumpablePolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words}
spec:
  builtin:
    keywords: [{category: birds, words: [flamingo]}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: no-flamingo}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input]
  threshold: 0.5
  action: Block
`

// appUID is the user the pods' containers run as (the chart's and the samples').
const appUID = 65532

func TestTheGuardsMemoryIsNotReadableByAProcessOfItsUser(t *testing.T) {
	if os.Getuid() != 0 {
		// The test runs as the guard's user: opening the guard's memory must fail.
		g := startGuard(t, undumpablePolicy)
		f, err := os.Open("/proc/" + strconv.Itoa(g.cmd.Process.Pid) + "/mem")
		if err == nil {
			_ = f.Close()
			t.Fatal("a process of the guard's user opened its memory")
		}
		return
	}
	// As root: the guard and a control process run as appUID; root reads the owners.
	// Not t.TempDir: its parent is private to root.
	dir, err := os.MkdirTemp("", "guard-undumpable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the other user must reach the binary
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "guard")
	b, err := os.ReadFile(guardBin) //nolint:gosec // the binary under test
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil { //nolint:gosec // an executable
		t.Fatal(err)
	}
	policyPath := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyPath, []byte(undumpablePolicy), 0o644); err != nil { //nolint:gosec // read by the other user
		t.Fatal(err)
	}
	asApp := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: appUID, Gid: appUID}}

	guard := exec.Command(bin, "--policy-file", policyPath, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	guard.SysProcAttr = asApp
	stderr, err := guard.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = guard.Process.Kill(); _ = guard.Wait() })
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"msg":"Guard listening"`) {
				listening <- true
			}
		}
		listening <- false
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatal("the guard exited before listening")
		}
	case <-time.After(waitTimeout):
		t.Fatal("the guard did not start listening")
	}

	control := exec.Command("sleep", "30")
	control.SysProcAttr = asApp
	if err := control.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = control.Process.Kill(); _ = control.Wait() })

	if got := memOwner(t, control.Process.Pid); got != appUID {
		t.Fatalf("a dumpable process of user %d has its memory owned by %d: the check below would prove nothing", appUID, got)
	}
	if got := memOwner(t, guard.Process.Pid); got != 0 {
		t.Errorf("the guard's /proc/PID/mem is owned by %d, want root (0): a process of user %d could read the credentials in its memory", got, appUID)
	}
}

// memOwner returns the owner of /proc/pid/mem.
func memOwner(t *testing.T, pid int) uint32 {
	t.Helper()
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}
