package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The harness measures processes through Linux's /proc, as a kubelet's cAdvisor would.

// clockTick is the unit of /proc/<pid>/stat times: USER_HZ, which Linux fixes at 100 for
// user space whatever the kernel's HZ.
const clockTick = 10 * time.Millisecond

// cpuTimes is the CPU time a process has used (all its threads), in user space and in
// the kernel on its behalf, in clock ticks; and run, the same total to the nanosecond, from
// the scheduler (/proc/<pid>/task/*/schedstat), when the kernel keeps it. A slice of the
// stream load costs the guard ~0.1 s of CPU, so ticks alone would leave a few percent of
// error in a ratio; total uses run unless a reading went without it (noRun).
type cpuTimes struct {
	user, sys, run time.Duration
	noRun          bool
	// calls is the read and write system calls the process made (/proc/<pid>/io syscr and
	// syscw: read, recv, write, send and their kin, every thread's, exited ones too), or -1
	// when the kernel does not count them.
	calls int64
	// slices is how many times the process's threads were put on a CPU (the third field
	// of schedstat): each is a thread woken or resumed after a preemption. It counts with
	// run, and is meaningless when noRun is set.
	slices int64
}

func (c cpuTimes) total() time.Duration {
	if c.noRun {
		return c.user + c.sys
	}
	return c.run
}

func (c cpuTimes) sub(d cpuTimes) cpuTimes {
	return cpuTimes{c.user - d.user, c.sys - d.sys, c.run - d.run, c.noRun || d.noRun || c.run < d.run, unknownOr(c, d, c.calls-d.calls), c.slices - d.slices}
}

func (c cpuTimes) add(d cpuTimes) cpuTimes {
	return cpuTimes{c.user + d.user, c.sys + d.sys, c.run + d.run, c.noRun || d.noRun, unknownOr(c, d, c.calls+d.calls), c.slices + d.slices}
}

// unknownOr is n, or -1 when either reading has no system call count.
func unknownOr(c, d cpuTimes, n int64) int64 {
	if c.calls < 0 || d.calls < 0 {
		return -1
	}
	return n
}

// cpuTime returns the CPU time a process has used.
func cpuTime(pid int) (cpuTimes, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)) //nolint:gosec // a pid, not a path
	if err != nil {
		return cpuTimes{}, err
	}
	c, err := parseStatCPU(b)
	if err != nil {
		return cpuTimes{}, err
	}
	c.run, c.slices, c.noRun = runTime(pid)
	c.calls = ioCalls(pid)
	return c, nil
}

// ioCalls returns the read and write system calls of a process (syscr + syscw of
// /proc/<pid>/io), or -1 when they cannot be read.
func ioCalls(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)) //nolint:gosec // a pid, not a path
	if err != nil {
		return -1
	}
	return parseIOCalls(b)
}

func parseIOCalls(b []byte) int64 {
	var sum int64
	found := 0
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		if !ok || !bytes.Equal(k, []byte("syscr")) && !bytes.Equal(k, []byte("syscw")) {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			return -1
		}
		sum += n
		found++
	}
	if found != 2 {
		return -1
	}
	return sum
}

// runTime sums the time on CPU of a process's threads from their schedstat (first field,
// nanoseconds) and the times they were put on a CPU (third field); missing is true when
// the kernel does not keep it or a thread went away while it read. A thread that exits
// takes its time with it, which the Go runtime's threads do not do while a program runs.
func runTime(pid int) (sum time.Duration, slices int64, missing bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0, true
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name())) //nolint:gosec // a pid and a task id
		if err != nil {
			return 0, 0, true
		}
		f := bytes.Fields(b)
		if len(f) < 3 {
			return 0, 0, true
		}
		ns, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		n, err2 := strconv.ParseInt(string(f[2]), 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, true
		}
		sum += time.Duration(ns)
		slices += n
	}
	return sum, slices, false
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces, so fields are counted from
// the last ')'.
func parseStatCPU(b []byte) (cpuTimes, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return cpuTimes{}, fmt.Errorf("unexpected /proc stat line %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return cpuTimes{}, fmt.Errorf("unexpected /proc stat line %q", b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return cpuTimes{}, fmt.Errorf("unexpected /proc stat line %q", b)
	}
	return cpuTimes{user: time.Duration(utime) * clockTick, sys: time.Duration(stime) * clockTick, noRun: true, calls: -1}, nil
}

// memory is what /proc/<pid>/status says of a process's resident memory, in bytes.
type memory struct {
	rss, hwm int64
}

func memStatus(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid)) //nolint:gosec // a pid, not a path
	if err != nil {
		return memory{}, err
	}
	defer func() { _ = f.Close() }()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			m.rss, err = parseKB(line)
		case strings.HasPrefix(line, "VmHWM:"):
			m.hwm, err = parseKB(line)
		}
		if err != nil {
			return memory{}, err
		}
	}
	return m, sc.Err()
}

// parseKB parses a "Name:   1234 kB" line of /proc/<pid>/status.
func parseKB(line string) (int64, error) {
	f := strings.Fields(line)
	if len(f) != 3 || f[2] != "kB" {
		return 0, fmt.Errorf("unexpected /proc status line %q", line)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	return n << 10, err
}

// machineCPU is the machine's busy and total CPU time from /proc/stat (all CPUs).
type machineCPU struct {
	busy, total time.Duration
}

func readMachineCPU() (machineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var m machineCPU
	// user nice system idle iowait irq softirq steal [guest guest_nice, already in user]
	for i, s := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("unexpected /proc/stat line %q", line)
		}
		d := time.Duration(n) * clockTick
		m.total += d
		if i != 3 && i != 4 { // idle, iowait
			m.busy += d
		}
	}
	return m, nil
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
