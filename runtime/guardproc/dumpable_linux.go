package guardproc

import "syscall"

// Undumpable marks the guard's process not dumpable (prctl PR_SET_DUMPABLE 0): its memory,
// which holds the model providers' credentials of keyless apps, cannot then be read
// through /proc/PID/mem or ptrace by another process of the same user (an app container
// running as the guard's UID, or sharing its process namespace) without CAP_SYS_PTRACE,
// and it leaves no core dump. The credential is never on disk (runtime/controlplane).
func Undumpable() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
