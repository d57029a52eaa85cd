package guardproc

import (
	"syscall"
	"testing"
)

func TestTheGuardMakesItsProcessUndumpable(t *testing.T) {
	if err := Undumpable(); err != nil {
		t.Fatal(err)
	}
	v, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if v != 0 {
		t.Errorf("PR_GET_DUMPABLE is %d after Undumpable, want 0: a process of the same user could read the credentials in memory", v)
	}
}
